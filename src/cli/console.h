// Terminal I/O of the interactive CLI: colored output (llama.cpp's console
// colors), line input with editing and history through libedit when stdin is
// a terminal (plain getline(3) otherwise), and Ctrl-C handling as
// llama-completion does it: during generation Ctrl-C stops that generation,
// at the input prompt it ends the program.
#pragma once

#include <string>
#include <string_view>

namespace strix::cli {

enum class Display { kReset, kPrompt, kUserInput, kError };

class Console {
 public:
  // color: emit ANSI colors. Installs the SIGINT handler (see take_interrupt).
  explicit Console(bool color);
  ~Console();
  Console(const Console&) = delete;
  Console& operator=(const Console&) = delete;

  void set_display(Display d);
  // Writes to stdout and flushes (tokens appear as they are decoded).
  void write(std::string_view text);

  enum class Read { kLine, kEof, kInterrupted };
  // One user input after showing `prompt`. A line ending in '\' continues on
  // the next line (the backslash becomes a newline). The text has no trailing
  // newline. kInterrupted: Ctrl-C at the prompt.
  Read read_line(const std::string& prompt, std::string& out);

  bool stdin_is_tty() const { return tty_; }

 private:
  bool color_;
  bool tty_;
};

// True once after Ctrl-C was pressed outside the input prompt (and clears it).
// A second Ctrl-C before the first was taken ends the process (exit code 130).
bool take_interrupt();
// Whether stdout is a terminal that can show colors (TERM set and not "dumb").
bool stdout_can_color();

}  // namespace strix::cli
