// The command line of `strix run` / `strix-cli` / `strix-completion`, with
// llama.cpp's flag names, defaults, environment variables (LLAMA_ARG_*) and
// help layout (common/arg.cpp). One table row per flag: its spellings, the
// value it takes, its env var, its help text and a handler that fills
// CliParams, so other front ends (the server) can reuse the same rows.
//
//   cli::CliParams p;
//   cli::parse_args(argc, argv, p);   // env first, then argv; throws strix::Error
//   if (p.help) std::fputs(cli::usage_text().c_str(), stdout);
//
// Unknown flags are an Error naming them; llama.cpp flags Strix knows but does
// not implement, and values it does not implement, are a Refusal naming them.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sampling/sampler.h"

namespace strix::cli {

// What the parsed command line asks for (llama.cpp's common_params subset).
struct CliParams {
  // model
  std::string model;
  std::string hf_repo, hf_file, hf_token;
  // prompt and I/O
  std::string prompt;
  std::string system_prompt;
  std::vector<std::string> antiprompt;  // -r
  std::string input_prefix, input_suffix;
  bool enable_chat_template = true;  // --in-prefix / --in-suffix switch it off, as llama.cpp
  int conversation = -1;             // -1 auto (on when a chat template exists), 0 off, 1 on
  bool single_turn = false;
  bool escape = true;
  bool display_prompt = true;
  bool verbose_prompt = false;
  bool log_disable = false;
  int color = -1;  // -1 auto (stdout is a terminal), 0 off, 1 on
  // chat template
  bool use_jinja = true;             // false (--no-jinja): only built-in format names
  std::string chat_template;         // --chat-template: Jinja source or a built-in name (chat/builtin_templates.h)
  std::string chat_template_kwargs;  // JSON object text
  std::string reasoning_format = "auto";
  int32_t reasoning_budget = -1;  // -1 unlimited, 0: thinking off (enable_thinking = false), N > 0: budget sampler
  std::string reasoning_budget_message;  // forced before the end-of-thinking tag when the budget is spent
  std::string json_schema;               // -j / -jf text (converted to GBNF when the converter exists)
  // context and compute
  int32_t n_predict = -1;
  int32_t n_ctx = 0;  // 0: the model's training context (llama.cpp's common_params default)
  int32_t n_batch = 2048;
  int32_t n_ubatch = 512;
  int32_t n_threads = 0;        // 0: all cores
  int32_t n_threads_batch = 0;  // 0: same as -t
  int32_t n_keep = 0;
  std::string n_gpu_layers = "auto";
  std::string flash_attn = "auto";
  std::string cache_type_k = "f16", cache_type_v = "f16";
  bool warmup = true;
  bool ctx_shift = false;  // --context-shift
  bool mlock = false;
  bool exact = false;  // --exact: ContextOptions::exact_numerics
  int mmap = -1;       // --mmap 1 / --no-mmap 0 / -1: read into huge pages when it fits (WeightMemory::kAuto)
  sampling::Params sampling;
  bool help = false;
};

enum class Section { kCommon, kSampling, kExample };

// One flag. names: positive spellings (first is the short one when there are
// several); neg_names: spellings that mean "off" for a boolean flag. A flag
// with a value_hint takes one value; a boolean flag's handler gets "1" or "0".
struct Option {
  std::vector<std::string> names;
  std::vector<std::string> neg_names;
  const char* value_hint = nullptr;
  const char* env = nullptr;
  Section section = Section::kCommon;
  std::string help;
  std::function<void(CliParams&, const std::string&)> handler;
};

// The table, built once (help texts quote the defaults of a fresh CliParams).
const std::vector<Option>& options();

// Applies LLAMA_ARG_* environment variables, then argv[1..argc). Throws Error
// (unknown flag, missing or malformed value) or Refusal (not implemented).
void parse_args(int argc, char** argv, CliParams& p);

// -h: every flag grouped as llama.cpp prints them ("----- common params -----").
std::string usage_text();

// llama.cpp's string_process_escapes: \n \r \t \' \" \\ \xHH (others kept as is).
std::string process_escapes(const std::string& text);

}  // namespace strix::cli
