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
#include "graph/decoder.h"
#include "graph/moe.h"
#include "models/archs.h"
#include "models/load_common.h"
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

  KeyRope key_rope(const Hparams&, int64_t, int64_t) const override {
    return {attn_cfg.rope, attn_cfg.rope_freq_factors};
  }
  void forward(Exec& e, Step& s) const override {
    graph::prenorm_decoder(
        e, s, tok_embd, layers, output_norm, output,
        [&](Exec& e, Step& s, int64_t il, const Layer& L) {
          graph::self_attention(e, s, il, L.attn, attn_cfg, e.ws.cur, s.hp->n_embd, e.ws.cur, s.hp->n_embd);
        },
        [&](Exec& e, Step& s, int64_t, const Layer& L) {
          graph::moe_ffn(e, s, L.moe, moe_cfg, e.ws.cur, s.hp->n_embd, e.ws.cur, s.hp->n_embd);
        });
  }
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
  const int64_t d = hp.n_embd;
  const EmbedHead head = load_embed_head(ld, hp);
  m->tok_embd = head.tok_embd;
  m->output_norm = head.output_norm;
  m->output = head.output;
  m->layers.resize(hp.n_layer);
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    Layer& L = m->layers[il];
    L.attn_norm = ld.tensor(p + "attn_norm.weight", {d}, WeightUse::kVector);
    L.attn = load_attention(ld, p, hp, {.q_norm_dim = hp.head_dim_k, .k_norm_dim = hp.head_dim_k});
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
