// What the mixture-of-experts architecture files share: the expert hparam
// keys and the per-layer router / expert tensors (llama.cpp's names and
// shapes), feeding graph::moe_ffn.
#pragma once

#include <string>

#include "graph/moe.h"
#include "models/hparams.h"
#include "models/model.h"

namespace strix {

// {arch}.expert_count and expert_used_count (both required, 0 < used <= count
// <= 512), and n_ff_exp = {arch}.expert_feed_forward_length (0 when absent:
// the architecture file picks its default).
void read_moe_hparams(ModelLoader& ld, Hparams& hp);

// blk.N.ffn_gate_inp / ffn_{gate,up,down}_exps (.weight), and with `biases`
// their .bias tensors (gpt-oss), required.
graph::MoeWeights load_moe_weights(ModelLoader& ld, const std::string& prefix, const Hparams& hp, bool biases);

}  // namespace strix
