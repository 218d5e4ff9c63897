// The architecture files' entry points and the helpers they share. Each
// architecture lives in its own file (models/<arch>.cpp) and is listed once,
// in registry.cpp.
#pragma once

#include <memory>

#include "models/hparams.h"
#include "models/model.h"

namespace strix {

// Reads the keys every transformer has ({arch}.embedding_length, block_count,
// attention.head_count(_kv), key/value_length, layer_norm(_rms)_epsilon,
// feed_forward_length, context_length, rope.*), filling hp. RoPE scaling types
// none, linear and yarn are read here; others are refused naming the type.
// n_vocab comes from token_embd.weight.
void read_common_hparams(ModelLoader& ld, Hparams& hp, bool rms_norm = true);

// The attn_factor llama_context passes to ggml_rope_ext for r as
// read_common_hparams filled it: with YaRN (ext_factor != 0) the mscale
// product for factor 1 / freq_scale times rope.scaling.attn_factor, else
// r.attn_factor. Architecture files assign it after read_common_hparams.
float yarn_attn_factor(const RopeParams& r);

using ArchLoadFn = std::unique_ptr<Arch> (*)(ModelLoader& ld, Hparams& hp);

std::unique_ptr<Arch> load_llama(ModelLoader& ld, Hparams& hp);
std::unique_ptr<Arch> load_gemma3(ModelLoader& ld, Hparams& hp);
std::unique_ptr<Arch> load_qwen3moe(ModelLoader& ld, Hparams& hp);
std::unique_ptr<Arch> load_olmoe(ModelLoader& ld, Hparams& hp);
std::unique_ptr<Arch> load_gpt_oss(ModelLoader& ld, Hparams& hp);
std::unique_ptr<Arch> load_qwen2(ModelLoader& ld, Hparams& hp);
std::unique_ptr<Arch> load_qwen3(ModelLoader& ld, Hparams& hp);
std::unique_ptr<Arch> load_phi3(ModelLoader& ld, Hparams& hp);

}  // namespace strix
