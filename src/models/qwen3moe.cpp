// qwen3moe (general.architecture = "qwen3moe"): Qwen3-30B-A3B, Qwen3-235B-A22B,
// Qwen3-Coder MoE.
//
// Block: qwen3 attention (per-head RMS q/k norms before NEOX RoPE, no biases)
// and a mixture-of-experts FFN: softmax router, top-k, the selected weights
// renormalised to sum 1, SiLU-gated experts (llama.cpp's llm_build_qwen3moe).
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "graph/blocks.h"
#include "graph/moe.h"
#include "models/archs.h"
#include "models/moe_common.h"
#include "ops/cpu_ops.h"

namespace strix {

namespace {

struct Layer {
  Weight attn_norm, ffn_norm;
  graph::AttnWeights attn;
  graph::MoeWeights moe;
};

class Qwen3Moe : public Arch {
 public:
  Weight tok_embd, output_norm, output;
  std::vector<Layer> layers;
  graph::AttnConfig attn_cfg;
  graph::MoeConfig moe_cfg;

  void forward(Exec& e, Step& s) const override {
    const Hparams& hp = *s.hp;
    Workspace& ws = e.ws;
    const int64_t d = hp.n_embd;
    ops::get_rows(e, tok_embd, s.tokens, s.n_tokens, ws.x, d);
    for (int64_t il = 0; il < hp.n_layer; ++il) {
      const Layer& L = layers[il];
      ops::rms_norm(e, ws.x, s.n_tokens, d, d, ws.cur, d, fp(L.attn_norm), hp.norm_eps);
      graph::self_attention(e, s, il, L.attn, attn_cfg, ws.cur, d, ws.cur, d);
      if (il == hp.n_layer - 1 && s.n_outputs < s.n_tokens) {
        ops::gather_rows(e, ws.x, d, d, s.out_ids, s.n_outputs);
        ops::gather_rows(e, ws.cur, d, d, s.out_ids, s.n_outputs);
        s.n_tokens = s.n_outputs;
      }
      ops::add(e, ws.x, ws.cur, ws.x, s.n_tokens, d, d);
      ops::rms_norm(e, ws.x, s.n_tokens, d, d, ws.cur, d, fp(L.ffn_norm), hp.norm_eps);
      graph::moe_ffn(e, s, L.moe, moe_cfg, ws.cur, d, ws.cur, d);
      ops::add(e, ws.x, ws.cur, ws.x, s.n_tokens, d, d);
    }
    graph::lm_head(e, s, ws.x, s.n_tokens, output_norm, output, hp.norm_eps);
  }

 private:
  static const float* fp(const Weight& w) { return reinterpret_cast<const float*>(w.data); }
};

}  // namespace

std::unique_ptr<Arch> load_qwen3moe(ModelLoader& ld, Hparams& hp) {
  read_common_hparams(ld, hp);
  read_moe_hparams(ld, hp);
  if (hp.n_ff_exp == 0) hp.n_ff_exp = hp.n_ff / hp.n_expert_used;  // llama.cpp's default
  if (hp.n_ff_exp <= 0) throw Refusal(ld.file().splits()[0].path + ": missing key qwen3moe.expert_feed_forward_length");
  hp.rope.mode = RopeMode::kNeox;
  hp.rope_swa = hp.rope;
  if (hp.head_dim_k != hp.head_dim_v || hp.rope.n_rot != hp.head_dim_k) {
    throw Refusal(ld.file().splits()[0].path + ": qwen3moe needs key_length == value_length == rope.dimension_count");
  }
  hp.kq_scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim_k));

  auto m = std::make_unique<Qwen3Moe>();
  const int64_t d = hp.n_embd, qd = hp.q_dim(), kd = hp.k_dim(), vd = hp.v_dim();
  const GgufTensor* te = ld.file().find_tensor("token_embd.weight");
  if (!te) throw Refusal(ld.file().splits()[0].path + ": missing tensor token_embd.weight");
  hp.n_vocab = te->ne[1];
  m->tok_embd = ld.tensor("token_embd.weight", {d, hp.n_vocab}, WeightUse::kRows);
  m->output_norm = ld.tensor("output_norm.weight", {d}, WeightUse::kVector);
  m->output = ld.optional("output.weight", {d, hp.n_vocab});
  if (!m->output.present()) {
    m->output = m->tok_embd;  // tied embeddings
    ld.require_use(m->output, WeightUse::kMatmul);
  }
  m->layers.resize(hp.n_layer);
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    Layer& L = m->layers[il];
    L.attn_norm = ld.tensor(p + "attn_norm.weight", {d}, WeightUse::kVector);
    L.attn.wq = ld.tensor(p + "attn_q.weight", {d, qd});
    L.attn.wk = ld.tensor(p + "attn_k.weight", {d, kd});
    L.attn.wv = ld.tensor(p + "attn_v.weight", {d, vd});
    L.attn.wo = ld.tensor(p + "attn_output.weight", {qd, d});
    L.attn.q_norm = ld.tensor(p + "attn_q_norm.weight", {hp.head_dim_k}, WeightUse::kVector);
    L.attn.k_norm = ld.tensor(p + "attn_k_norm.weight", {hp.head_dim_k}, WeightUse::kVector);
    L.ffn_norm = ld.tensor(p + "ffn_norm.weight", {d}, WeightUse::kVector);
    L.moe = load_moe_weights(ld, p, hp, false);
  }
  m->attn_cfg.qk_norm = graph::QkNorm::kPerHead;
  m->attn_cfg.rope = &hp.rope;
  m->attn_cfg.kq_scale = hp.kq_scale;
  m->moe_cfg.routing.gating = ops::MoeGating::kSoftmax;
  m->moe_cfg.routing.norm_weights = true;
  m->moe_cfg.act = graph::MoeAct::kSilu;
  return m;
}

}  // namespace strix
