// Tensor-loading steps that several architecture files share word for word:
// the embedding / lm-head trio and the attention projections of one layer.
// What varies between architectures (fused QKV, biases, q/k norms, sinks) is
// spelled out by the caller in an AttnSpec, so each file still reads as the
// list of tensors its llama.cpp graph uses.
#pragma once

#include <string>

#include "graph/blocks.h"
#include "models/hparams.h"
#include "models/model.h"

namespace strix {

struct EmbedHead {
  Weight tok_embd;     // [n_embd, n_vocab], read by rows
  Weight output_norm;  // [n_embd]
  Weight output;       // output.weight, or tok_embd when tied
};

// token_embd.weight (hp.n_vocab is set from its rows), output_norm.weight and
// output.weight; without output.weight the embeddings serve as the lm head
// when `tied_ok`, else the missing tensor is refused by name.
EmbedHead load_embed_head(ModelLoader& ld, Hparams& hp, bool tied_ok = true);

enum class Need { kNo, kOptional, kRequired };

struct AttnSpec {
  bool fused_qkv = false;     // attn_qkv.weight may stand for attn_q/k/v.weight
  Need qkv_bias = Need::kNo;  // attn_q/k/v.bias (attn_qkv.bias when fused)
  Need out_bias = Need::kNo;  // attn_output.bias
  int64_t q_norm_dim = 0;     // > 0: attn_q_norm.weight of this length is required
  int64_t k_norm_dim = 0;     // > 0: attn_k_norm.weight of this length is required
  bool sinks = false;         // attn_sinks.weight [n_head] is required
};

// The attention tensors of layer prefix `p` ("blk.N.") with hp's shapes.
graph::AttnWeights load_attention(ModelLoader& ld, const std::string& p, const Hparams& hp, const AttnSpec& spec);

}  // namespace strix
