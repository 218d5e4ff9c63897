// `strix run` / `strix-cli` / `strix-completion`: load the model, then either
// complete the prompt (completion mode) or hold a conversation through the
// chat template (conversation mode), as llama-completion / llama-cli do.
#pragma once

#include "cli/args.h"

namespace strix::cli {

// Returns the process exit code (0, or 130 after Ctrl-C in completion mode).
// Throws strix::Error / Refusal with one sentence on bad input.
int run(CliParams& p);

}  // namespace strix::cli
