// strix: one binary, llama.cpp-shaped subcommands.
#include <cstdio>
#include <cstring>
#include <exception>
#include <algorithm>
#include <string>
#include <vector>

#include "apps/strix/commands.h"
#include "core/cpu_features.h"
#include "core/error.h"

namespace {

struct Command {
  const char* name;
  int (*run)(int, char**);
  const char* help;
};

const Command kCommands[] = {
    {"run", strix::app::cmd_run,
     "complete a prompt or chat, as llama-completion / llama-cli (also `strix -m FILE ...`, strix-cli, "
     "strix-completion)"},
    {"serve", strix::app::cmd_serve, "an OpenAI-compatible HTTP server, as llama-server (also strix-server)"},
    {"parity", strix::app::cmd_parity, "compare Strix's logits with libllama's on the same tokens"},
    {"bench", strix::app::cmd_bench, "measure pp/tg t/s as llama-bench (--compare: side by side with libllama)"},
    {"batched-bench", strix::app::cmd_batched_bench,
     "prompt and aggregate decode t/s of B concurrent sequences, as llama-batched-bench"},
    {"bench-serve", strix::app::cmd_bench_serve, "server engine under load vs libllama (decode t/s at N streams, shared-prefix TTFT)"},
    {"quantize", strix::app::cmd_quantize, "quantize a GGUF with the reference libllama (as llama-quantize)"},
    {"download", strix::app::cmd_download, "fetch a model from the Hugging Face hub into its cache (as -hf)"},
    {"inspect", strix::app::cmd_inspect, "show a GGUF file's metadata and tensor table (--json)"},
    {"synth", strix::app::cmd_synth, "write a tiny synthetic model of an architecture (seeded weights)"},
    {"tokenize", strix::app::cmd_tokenize, "tokenize text with a GGUF vocabulary (like llama-tokenize)"},
    {"apply-template", strix::app::cmd_apply_template, "render a chat template over a conversation (as HF transformers)"},
};

void usage(FILE* out) {
  std::fprintf(out, "usage: strix COMMAND [ARGS]\n\ncommands:\n");
  for (const auto& c : kCommands) std::fprintf(out, "  %-14s %s\n", c.name, c.help);
  std::fprintf(out, "  %-14s %s\n", "version", "build and CPU features (also --version)");
  std::fprintf(out, "\n`strix COMMAND -h` shows the flags of a command.\n");
}

}  // namespace

const char* strix::app::strix_version() { return "0.1.0"; }

int strix::app::count_arg(const std::string& tool, const std::string& flag, const std::string& v) {
  size_t used = 0;
  int x = 0;
  try {
    x = std::stoi(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || v.empty() || x < 0) {
    throw strix::Error(tool + ": " + flag + " needs a count >= 0, got '" + v + "'");
  }
  return x;
}

std::vector<int> strix::app::count_list_arg(const std::string& tool, const std::string& flag, const std::string& v) {
  std::vector<int> out;
  size_t at = 0;
  while (at <= v.size()) {
    const size_t end = std::min(v.find(',', at), v.size());
    out.push_back(count_arg(tool, flag, v.substr(at, end - at)));
    at = end + 1;
  }
  return out;
}

int print_version(int, char**) {
  std::printf("strix %s (built %s %s, %s)\n", strix::app::strix_version(), __DATE__, __TIME__, __VERSION__);
  std::printf("cpu: %s\n", strix::cpu_features().to_string().c_str());
  return 0;
}

// `strix-cli` / `strix-completion` (the build makes them as links to strix):
// llama.cpp's program names, both meaning `strix run`.
bool called_as_run_alias(const char* argv0) {
  const char* slash = std::strrchr(argv0, '/');
  const char* base = slash != nullptr ? slash + 1 : argv0;
  return std::strcmp(base, "strix-cli") == 0 || std::strcmp(base, "strix-completion") == 0;
}

int main(int argc, char** argv) {
  if (argc >= 1 && std::strcmp(std::strrchr(argv[0], '/') != nullptr ? std::strrchr(argv[0], '/') + 1 : argv[0],
                                "strix-server") == 0) {
    try {
      return strix::app::cmd_serve(argc, argv);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      return 1;
    }
  }
  if (argc >= 1 && called_as_run_alias(argv[0])) {
    try {
      return strix::app::cmd_run(argc, argv);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      return 1;
    }
  }
  if (argc >= 2 && (std::strcmp(argv[1], "--version") == 0 || std::strcmp(argv[1], "version") == 0)) {
    return print_version(argc, argv);
  }
  if (argc >= 2 && argv[1][0] == '-' && std::strcmp(argv[1], "-h") != 0 && std::strcmp(argv[1], "--help") != 0) {
    // `strix -m FILE -p ...`: the llama.cpp command shape runs a completion
    try {
      return strix::app::cmd_run(argc, argv);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      return 1;
    }
  }
  if (argc < 2 || std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 1 : 0;
  }
  for (const auto& c : kCommands) {
    if (std::strcmp(argv[1], c.name) == 0) {
      try {
        return c.run(argc - 1, argv + 1);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
      }
    }
  }
  std::fprintf(stderr, "error: unknown command '%s' (run `strix -h` for the list)\n", argv[1]);
  return 1;
}
