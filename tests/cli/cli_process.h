// Running the strix binary as a subprocess for the CLI tests: argv (no shell
// quoting), stdin text, extra environment, captured stdout/stderr; and a
// pseudo-terminal session for the interactive tests.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace cli_test {

struct Result {
  int code = -1;  // exit status, or 128 + signal
  std::string out, err;
};

// Runs `exe args...` with `input` on stdin (then closed) and `env` added to the
// environment. Kills it after timeout_s seconds (the test then fails on code).
Result run(const std::string& exe, const std::vector<std::string>& args, const std::string& input = "",
           const std::vector<std::pair<std::string, std::string>>& env = {}, int timeout_s = 60);

// The strix binary under test, and the model every test uses.
std::string strix_binary();
std::string stories_model();  // "" when ../shared/data is absent

// A child on a pseudo-terminal (its stdin/stdout/stderr), for the tests that
// need a terminal: libedit line editing and Ctrl-C.
class Pty {
 public:
  Pty(const std::string& exe, const std::vector<std::string>& args,
      const std::vector<std::pair<std::string, std::string>>& env = {});
  ~Pty();
  // Reads until `needle` appears in what was read after position `from` of the
  // transcript (or timeout). Returns true when it appeared.
  bool wait_for(const std::string& needle, size_t from, int timeout_ms);
  void send(const std::string& bytes);
  // Waits for the child to exit; returns its status as Result::code.
  int wait_exit(int timeout_ms);
  const std::string& transcript() const { return transcript_; }

 private:
  bool read_some(int timeout_ms);
  bool reap();  // true once the child has exited (exit_code_ set)
  int fd_ = -1;
  int exit_code_ = -1;
  int pid_ = -1;
  std::string transcript_;
};

}  // namespace cli_test
