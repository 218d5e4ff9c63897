// Per-architecture facts for `strix synth`: tiny default sizes, the GGUF hparam
// keys llama.cpp reads (as convert_hf_to_gguf.py writes them) and the tensor list
// llama.cpp's load_tensors creates (names and shapes, ne[0] first).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/writer.h"
#include "synth/synth.h"

namespace strix::synth {

// Resolved sizes of one model.
struct Hparams {
  int64_t n_layer = 0;
  int64_t n_embd = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;
  int64_t n_ff = 0;  // dense FFN width, or per-expert width for MoE
  int64_t n_expert = 0;
  int64_t n_expert_used = 0;
  int64_t n_ctx = 0;
  int64_t n_swa = 0;  // 0: none
  int64_t n_vocab = 0;
  float rms_eps = 1e-5f;
  float rope_base = 10000.0f;
  bool swa_given = false;  // --sliding-window was passed
};

// How a tensor is initialised and which dtype rule applies to it.
enum class TensorRole {
  kNorm,    // 1-D scale ~1: always F32
  kBias,    // small values: always F32 (also the 2-D per-expert biases)
  kSinks,   // attention sinks [n_head]: F32
  kEmbd,    // token embedding [n_embd, n_vocab]
  kOutput,  // lm head [n_embd, n_vocab]
  kWeight,  // 2-D projection [fan_in, fan_out]: the model --type
  kRouter,  // MoE router [n_embd, n_expert]: F32 as llama-quantize leaves it
  kExpert,  // 3-D expert stack [fan_in, fan_out, n_expert]: the expert type
};

struct TensorSpec {
  std::string name;
  std::vector<int64_t> ne;  // ggml order
  TensorRole role;
};

struct ArchSpec {
  const char* name;
  bool is_moe;
  bool tied_output;  // no output.weight: llama.cpp reuses token_embd
  // Fills unset sizes with the arch defaults and checks the combination;
  // throws Error naming the flag that does not fit.
  Hparams (*resolve)(const SynthOptions& opts);
  // Writes the {arch}.* keys (general.* and tokenizer.* are written elsewhere).
  void (*write_keys)(const Hparams& hp, GgufWriter& w);
  std::vector<TensorSpec> (*tensors)(const Hparams& hp);
};

// nullptr when unknown.
const ArchSpec* find_arch(std::string_view name);
const std::vector<const ArchSpec*>& all_archs();

}  // namespace strix::synth
