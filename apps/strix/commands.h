// Subcommands of the one `strix` binary. Each returns the process exit code and
// reports errors by throwing strix::Error (printed by main as "error: ...", exit 1).
#pragma once

namespace strix::app {

int cmd_inspect(int argc, char** argv);  // cmd_inspect.cpp
int cmd_synth(int argc, char** argv);    // cmd_synth.cpp
int cmd_tokenize(int argc, char** argv);  // cmd_tokenize.cpp
int cmd_apply_template(int argc, char** argv);  // cmd_apply_template.cpp

}  // namespace strix::app
