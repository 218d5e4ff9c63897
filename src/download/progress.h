// Download progress on stderr: a redrawn bar when stderr is a terminal, otherwise
// one line when a file starts and one when it ends (logs stay readable).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace strix::download {

class Progress {
 public:
  // total == 0: unknown size. `done` is what a resumed download already had.
  Progress(std::string name, uint64_t total, uint64_t done);
  void advance(uint64_t n);
  void finish(bool ok);

 private:
  void draw();

  std::string name_;
  uint64_t total_;
  uint64_t done_;
  bool tty_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace strix::download
