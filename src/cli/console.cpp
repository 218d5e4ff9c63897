// Console I/O and Ctrl-C (see console.h).
//
// Ctrl-C at the prompt: the handler jumps back into read_line() with
// siglongjmp, because a handler that returns would leave libedit (or
// getline) waiting for more input. libedit restores the terminal's cooked
// mode in its own handler before it re-raises the signal to ours, so the
// terminal is usable after the jump.
#include "cli/console.h"

#include <editline/readline.h>
#include <setjmp.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace strix::cli {

namespace {

sigjmp_buf g_prompt_jump;
volatile sig_atomic_t g_at_prompt = 0;
volatile sig_atomic_t g_interrupt = 0;

void on_sigint(int) {
  if (g_at_prompt != 0) {
    g_at_prompt = 0;
    siglongjmp(g_prompt_jump, 1);
  }
  if (g_interrupt != 0) {
    // the first Ctrl-C was not taken yet (a long prompt evaluation): give up now
    static const char kMsg[] = "\n";
    (void)!write(STDERR_FILENO, kMsg, sizeof(kMsg) - 1);
    _exit(130);
  }
  g_interrupt = 1;
}

}  // namespace

bool take_interrupt() {
  if (g_interrupt == 0) return false;
  g_interrupt = 0;
  return true;
}

bool stdout_can_color() {
  if (isatty(STDOUT_FILENO) == 0) return false;
  const char* term = std::getenv("TERM");
  return term != nullptr && std::strcmp(term, "dumb") != 0;
}

Console::Console(bool color) : color_(color), tty_(isatty(STDIN_FILENO) != 0) {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocked read returns
  sigaction(SIGINT, &sa, nullptr);
  if (tty_) {
    rl_readline_name = "strix";
    using_history();
  }
}

Console::~Console() {
  if (color_) std::fputs("\x1b[0m", stdout);
  std::fflush(stdout);
  signal(SIGINT, SIG_DFL);
}

void Console::set_display(Display d) {
  if (!color_) return;
  std::fflush(stdout);
  switch (d) {
    case Display::kReset:
      std::fputs("\x1b[0m", stdout);
      break;
    case Display::kPrompt:
      std::fputs("\x1b[33m", stdout);
      break;
    case Display::kUserInput:
      std::fputs("\x1b[1m\x1b[32m", stdout);
      break;
    case Display::kError:
      std::fputs("\x1b[1m\x1b[31m", stdout);
      break;
  }
  std::fflush(stdout);
}

void Console::write(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

Console::Read Console::read_line(const std::string& prompt, std::string& out) {
  out.clear();
  std::fflush(stdout);
  // Everything the jump may skip lives outside this frame's locals that change after sigsetjmp.
  static char* line = nullptr;
  static char* buf = nullptr;
  if (sigsetjmp(g_prompt_jump, 1) != 0) {
    std::free(buf);
    buf = nullptr;
    return Read::kInterrupted;
  }
  bool first = true;
  for (;;) {
    const std::string shown = first ? prompt : std::string();
    first = false;
    g_interrupt = 0;
    bool got = false;
    std::string text;
    if (tty_) {
      g_at_prompt = 1;
      line = readline(shown.c_str());
      g_at_prompt = 0;
      if (line != nullptr) {
        text = line;
        if (!text.empty()) add_history(line);
        std::free(line);
        line = nullptr;
        got = true;
      }
    } else {
      std::fputs(shown.c_str(), stdout);
      std::fflush(stdout);
      size_t cap = 0;
      g_at_prompt = 1;
      const ssize_t n = getline(&buf, &cap, stdin);
      g_at_prompt = 0;
      if (n >= 0) {
        text.assign(buf, static_cast<size_t>(n));
        if (!text.empty() && text.back() == '\n') text.pop_back();
        got = true;
      }
      std::free(buf);
      buf = nullptr;
    }
    if (!got) return out.empty() ? Read::kEof : Read::kLine;
    if (!text.empty() && text.back() == '\\') {
      text.pop_back();
      out += text + "\n";
      continue;
    }
    out += text;
    return Read::kLine;
  }
}

}  // namespace strix::cli
