#include "download/progress.h"

#include <unistd.h>

#include <cstdio>
#include <utility>

namespace strix::download {

namespace {

std::string megabytes(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f MB", static_cast<double>(bytes) / 1e6);
  return buf;
}

}  // namespace

Progress::Progress(std::string name, uint64_t total, uint64_t done)
    : name_(std::move(name)), total_(total), done_(done), tty_(isatty(STDERR_FILENO) == 1) {
  if (tty_) {
    draw();
  } else {
    std::fprintf(stderr, "downloading %s (%s)%s\n", name_.c_str(), total_ ? megabytes(total_).c_str() : "size unknown",
                 done_ ? (", resuming at " + megabytes(done_)).c_str() : "");
  }
}

void Progress::advance(uint64_t n) {
  done_ += n;
  if (!tty_) return;
  // Redraw at most ~10 times a second: a terminal write per network chunk is slow.
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  draw();
}

void Progress::draw() {
  constexpr int kWidth = 30;
  if (total_ > 0) {
    const uint64_t shown = done_ < total_ ? done_ : total_;
    const int filled = static_cast<int>(kWidth * shown / total_);
    std::string bar(static_cast<size_t>(filled), '=');
    if (filled < kWidth) bar += '>';
    bar.resize(kWidth, ' ');
    std::fprintf(stderr, "\r%s [%s] %3d%% %s / %s\033[K", name_.c_str(), bar.c_str(),
                 static_cast<int>(100 * shown / total_), megabytes(shown).c_str(), megabytes(total_).c_str());
  } else {
    std::fprintf(stderr, "\r%s %s\033[K", name_.c_str(), megabytes(done_).c_str());
  }
  std::fflush(stderr);
}

void Progress::finish(bool ok) {
  if (finished_) return;
  finished_ = true;
  if (tty_) {
    draw();
    std::fputc('\n', stderr);
  } else if (ok) {
    std::fprintf(stderr, "downloaded %s (%s)\n", name_.c_str(), megabytes(done_).c_str());
  }
}

}  // namespace strix::download
