// strix run / strix-cli / strix-completion: llama.cpp's command line (flags,
// defaults, LLAMA_ARG_* variables) over Strix's engine. The flag table is
// src/cli/args.cpp, the session src/cli/runner.cpp.
#include <cstdio>

#include "apps/strix/commands.h"
#include "cli/args.h"
#include "cli/runner.h"

namespace strix::app {

int cmd_run(int argc, char** argv) {
  cli::CliParams p;
  cli::parse_args(argc, argv, p);
  if (p.help) {
    std::printf(
        "usage: strix [run] -m FILE [options]   (also as strix-cli / strix-completion)\n\n"
        "Completion (the prompt, then the model's continuation) or, when the model has a chat template\n"
        "or with -cnv, a conversation. Flags, defaults and LLAMA_ARG_* variables are llama.cpp's;\n"
        "docs/CLI.md lists the differences.\n\n");
    std::fputs(cli::usage_text().c_str(), stdout);
    return 0;
  }
  return cli::run(p);
}

}  // namespace strix::app
