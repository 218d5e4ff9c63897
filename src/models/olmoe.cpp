// olmoe (general.architecture = "olmoe"): OLMoE-1B-7B.
//
// Block: attention with RMS norms over the whole q and k projections
// ([n_embd] weights) before NEOX RoPE, no biases; a mixture-of-experts FFN:
// softmax router, top-k, the selected probabilities used as they are (no
// renormalisation), SiLU-gated experts. feed_forward_length is the
// per-expert width (llama.cpp's llm_build_olmoe).
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

class Olmoe : public Arch {
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

std::unique_ptr<Arch> load_olmoe(ModelLoader& ld, Hparams& hp) {
  const std::string& path = ld.file().splits()[0].path;
  read_common_hparams(ld, hp);
  read_moe_hparams(ld, hp);
  if (hp.n_ff_exp == 0) hp.n_ff_exp = hp.n_ff;  // olmoe's feed_forward_length is the expert width
  if (hp.n_ff_exp <= 0) throw Refusal(path + ": missing key olmoe.feed_forward_length");
  hp.rope.mode = RopeMode::kNeox;
  hp.rope_swa = hp.rope;
  if (hp.head_dim_k != hp.head_dim_v || hp.rope.n_rot != hp.head_dim_k) {
    throw Refusal(path + ": olmoe needs key_length == value_length == rope.dimension_count");
  }
  hp.kq_scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim_k));

  auto m = std::make_unique<Olmoe>();
  const int64_t d = hp.n_embd, kd = hp.k_dim();
  if (hp.q_dim() != d) throw Refusal(path + ": olmoe needs head_count * key_length == embedding_length");
  // llama.cpp sizes both q/k norms [n_embd], so the k projection must be n_embd wide too
  if (kd != d) throw Refusal(path + ": olmoe with head_count_kv != head_count (its k norm spans n_embd)");
  const EmbedHead head = load_embed_head(ld, hp, /*tied_ok=*/false);
  m->tok_embd = head.tok_embd;
  m->output_norm = head.output_norm;
  m->output = head.output;
  m->layers.resize(hp.n_layer);
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    Layer& L = m->layers[il];
    L.attn_norm = ld.tensor(p + "attn_norm.weight", {d}, WeightUse::kVector);
    // whole-vector q/k norms (before the heads are split)
    L.attn = load_attention(ld, p, hp, {.q_norm_dim = hp.q_dim(), .k_norm_dim = hp.k_dim()});
    L.ffn_norm = ld.tensor(p + "ffn_norm.weight", {d}, WeightUse::kVector);
    L.moe = load_moe_weights(ld, p, hp, false);
  }
  m->attn_cfg.qk_norm = graph::QkNorm::kFull;
  m->attn_cfg.rope = &hp.rope;
  m->attn_cfg.kq_scale = hp.kq_scale;
  m->moe_cfg.routing.gating = ops::MoeGating::kSoftmax;
  m->moe_cfg.routing.norm_weights = false;
  m->moe_cfg.act = graph::MoeAct::kSilu;
  return m;
}

}  // namespace strix
