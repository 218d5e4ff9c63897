// `strix synth`: tiny synthetic models of a named architecture, with seeded
// random weights and a real vocabulary, that libllama loads and runs.
//
// The file holds exactly the hparam keys and tensors (names, shapes, dtypes) that
// llama.cpp's loader expects for the architecture (arch_specs.cpp), the tokenizer.*
// keys of a real vocabulary (vocab_import.cpp), and weights scaled so that the
// logits are peaked (std over the vocabulary ~3 at every position), which makes
// parity checks against libllama meaningful. Same options and seed -> byte-identical
// file on every run and platform (own splitmix64 + Box-Muller, no std::*_distribution).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace strix::synth {

// Every size is optional: unset means the architecture's tiny default.
struct SynthOptions {
  std::string arch;  // GGUF general.architecture: llama, qwen2, qwen3, qwen3moe, gemma3, phi3, olmoe, gpt-oss
  std::optional<int64_t> n_layer;
  std::optional<int64_t> n_embd;
  std::optional<int64_t> n_head;
  std::optional<int64_t> n_head_kv;
  std::optional<int64_t> head_dim;
  std::optional<int64_t> n_ff;  // dense FFN width; per-expert width for MoE archs
  std::optional<int64_t> n_expert;
  std::optional<int64_t> n_expert_used;
  std::optional<int64_t> n_ctx;
  std::optional<int64_t> n_swa;            // sliding window (gemma3, gpt-oss; phi3 writes it only when given)
  std::string type = "f32";                // type of the 2-D weights (ggml name: f32, f16, q8_0, q4_K ...)
  std::optional<std::string> expert_type;  // type of the 3-D expert tensors; default: mxfp4 for gpt-oss, else `type`
  std::string vocab;                       // GGUF file, tokenizer.json, its directory, or a short name; empty: default
  bool tied_output = false;                // drop output.weight (llama.cpp then reuses token_embd), as Llama 3.2 1B
  uint64_t seed = 0;
  std::string out;
};

// Parses the flags of `strix synth` (argv without the command name). Throws
// strix::Error naming the offending flag. Returns nullopt for -h / --help.
std::optional<SynthOptions> parse_synth_args(const std::vector<std::string>& args);
std::string synth_usage();

// Architecture names this generator knows, in a stable order.
std::vector<std::string> synth_arch_names();

struct SynthResult {
  std::string vocab_source;  // the file the vocabulary came from
  int64_t n_vocab = 0;
  size_t n_tensors = 0;
  uint64_t n_params = 0;
  uint32_t file_type = 0;  // general.file_type written
};

// Writes the model to opts.out. Throws Error on bad options, Refusal for a type
// whose quantizer Strix does not have (yet) or a tensor it cannot hold.
SynthResult synth_write(const SynthOptions& opts);

}  // namespace strix::synth
