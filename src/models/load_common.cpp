#include "models/load_common.h"

#include "core/error.h"

namespace strix {

EmbedHead load_embed_head(ModelLoader& ld, Hparams& hp, bool tied_ok) {
  const GgufTensor* te = ld.file().find_tensor("token_embd.weight");
  if (!te) throw Refusal(ld.file().splits()[0].path + ": missing tensor token_embd.weight");
  hp.n_vocab = te->ne[1];
  const int64_t d = hp.n_embd;
  EmbedHead h;
  h.tok_embd = ld.tensor("token_embd.weight", {d, hp.n_vocab}, WeightUse::kRows);
  h.output_norm = ld.tensor("output_norm.weight", {d}, WeightUse::kVector);
  if (!tied_ok) {
    h.output = ld.tensor("output.weight", {d, hp.n_vocab});
    return h;
  }
  h.output = ld.optional("output.weight", {d, hp.n_vocab});
  if (!h.output.present()) {
    h.output = h.tok_embd;  // tied embeddings
    ld.require_use(h.output, WeightUse::kMatmul);
  }
  return h;
}

namespace {

Weight bias(ModelLoader& ld, const std::string& name, int64_t n, Need need) {
  switch (need) {
    case Need::kNo:
      return Weight{};
    case Need::kOptional:
      return ld.optional(name, {n}, WeightUse::kVector);
    case Need::kRequired:
      break;
  }
  return ld.tensor(name, {n}, WeightUse::kVector);
}

}  // namespace

graph::AttnWeights load_attention(ModelLoader& ld, const std::string& p, const Hparams& hp, const AttnSpec& spec) {
  const int64_t d = hp.n_embd, qd = hp.q_dim(), kd = hp.k_dim(), vd = hp.v_dim();
  graph::AttnWeights a;
  if (spec.fused_qkv) a.wqkv = ld.optional(p + "attn_qkv.weight", {d, qd + kd + vd});
  if (a.wqkv.present()) {
    a.bqkv = bias(ld, p + "attn_qkv.bias", qd + kd + vd, spec.qkv_bias);
  } else {
    a.wq = ld.tensor(p + "attn_q.weight", {d, qd});
    a.wk = ld.tensor(p + "attn_k.weight", {d, kd});
    a.wv = ld.tensor(p + "attn_v.weight", {d, vd});
    a.bq = bias(ld, p + "attn_q.bias", qd, spec.qkv_bias);
    a.bk = bias(ld, p + "attn_k.bias", kd, spec.qkv_bias);
    a.bv = bias(ld, p + "attn_v.bias", vd, spec.qkv_bias);
  }
  a.wo = ld.tensor(p + "attn_output.weight", {hp.n_head * hp.head_dim_v, d});
  a.bo = bias(ld, p + "attn_output.bias", d, spec.out_bias);
  if (spec.q_norm_dim > 0) a.q_norm = ld.tensor(p + "attn_q_norm.weight", {spec.q_norm_dim}, WeightUse::kVector);
  if (spec.k_norm_dim > 0) a.k_norm = ld.tensor(p + "attn_k_norm.weight", {spec.k_norm_dim}, WeightUse::kVector);
  if (spec.sinks) a.sinks = ld.tensor(p + "attn_sinks.weight", {hp.n_head}, WeightUse::kVector);
  return a;
}

}  // namespace strix
