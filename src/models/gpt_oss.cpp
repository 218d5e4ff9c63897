// gpt-oss (general.architecture = "gpt-oss"): gpt-oss-20b, gpt-oss-120b.
//
// Block (llama.cpp's llm_build_openai_moe_iswa):
//   x += Wo·attn(rope(Wq·n + bq), rope(Wk·n + bk), Wv·n + bv) + bo, n = rmsnorm(x)·attn_norm,
//        with a learned per-head sink logit in the softmax, sliding-window
//        attention on the even layers (llama.cpp's set_swa_pattern(2)), NEOX
//        RoPE with YaRN scaling;
//   x += MoE(rmsnorm(x)·post_attention_norm): biased router, top-k by logit,
//        softmax over the selected logits, biased experts with SwiGLU-OAI
//        (clamped at 7, alpha 1.702), no renormalisation.
// The experts are MXFP4 in the released files.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "graph/blocks.h"
#include "graph/moe.h"
#include "models/archs.h"
#include "models/load_common.h"
#include "models/moe_common.h"
#include "ops/cpu_ops.h"

namespace strix {

namespace {

struct Layer {
  Weight attn_norm, post_norm;
  graph::AttnWeights attn;
  graph::MoeWeights moe;
};

class GptOss : public Arch {
 public:
  Weight tok_embd, output_norm, output;
  std::vector<Layer> layers;
  graph::AttnConfig attn_full, attn_swa;
  graph::MoeConfig moe_cfg;

  KeyRope key_rope(const Hparams& hp, int64_t il, int64_t) const override {
    const graph::AttnConfig& c = hp.is_swa(il) ? attn_swa : attn_full;
    return {c.rope, c.rope_freq_factors};
  }
  void forward(Exec& e, Step& s) const override {
    const Hparams& hp = *s.hp;
    Workspace& ws = e.ws;
    const int64_t d = hp.n_embd;
    ops::get_rows(e, tok_embd, s.tokens, s.n_tokens, ws.x, d);
    for (int64_t il = 0; il < hp.n_layer; ++il) {
      const Layer& L = layers[il];
      ops::rms_norm(e, ws.x, s.n_tokens, d, d, ws.cur, d, fp(L.attn_norm), hp.norm_eps);
      graph::self_attention(e, s, il, L.attn, hp.is_swa(il) ? attn_swa : attn_full, ws.cur, d, ws.cur, d);
      if (il == hp.n_layer - 1 && s.n_outputs < s.n_tokens) {
        ops::gather_rows(e, ws.x, d, d, s.out_ids, s.n_outputs);
        ops::gather_rows(e, ws.cur, d, d, s.out_ids, s.n_outputs);
        s.n_tokens = s.n_outputs;
      }
      ops::add(e, ws.x, ws.cur, ws.x, s.n_tokens, d, d);
      ops::rms_norm(e, ws.x, s.n_tokens, d, d, ws.cur, d, fp(L.post_norm), hp.norm_eps);
      graph::moe_ffn(e, s, L.moe, moe_cfg, ws.cur, d, ws.cur, d);
      ops::add(e, ws.x, ws.cur, ws.x, s.n_tokens, d, d);
    }
    graph::lm_head(e, s, ws.x, s.n_tokens, output_norm, output, hp.norm_eps);
  }

 private:
  static const float* fp(const Weight& w) { return reinterpret_cast<const float*>(w.data); }
};

}  // namespace

std::unique_ptr<Arch> load_gpt_oss(ModelLoader& ld, Hparams& hp) {
  const std::string& path = ld.file().splits()[0].path;
  read_common_hparams(ld, hp);
  read_moe_hparams(ld, hp);
  if (hp.n_ff_exp <= 0) throw Refusal(path + ": missing key gpt-oss.expert_feed_forward_length");
  hp.n_swa = ld.u32("attention.sliding_window");
  ld.refuse_unless("attention.sliding_window_pattern", 2, "a sliding-window pattern other than every other layer");
  // set_swa_pattern(2): layer il slides when il % 2 < 1
  for (int64_t il = 0; il < hp.n_layer; ++il) hp.swa_layers[il] = il % 2 == 0 ? 1 : 0;
  hp.attn_sinks = true;

  hp.rope.mode = RopeMode::kNeox;
  if (hp.rope.ext_factor != 0.0f) {
    // llama_context: yarn_attn_factor = get_mscale(factor) / (1 + 0.1 ln factor), which
    // cancels the magnitude factor ggml's rope applies itself (llama.cpp PR 17945)
    const float factor = 1.0f / hp.rope.freq_scale;
    float af = factor <= 1.0f ? 1.0f : 0.1f * 1.0f * std::log(factor) + 1.0f;
    af *= 1.0f / (1.0f + 0.1f * std::log(factor));
    hp.rope.attn_factor *= af;
  }
  hp.rope_swa = hp.rope;
  hp.rope_swa.freq_base = ld.f32_or("rope.freq_base_swa", hp.rope.freq_base);
  if (hp.head_dim_k != hp.head_dim_v || hp.rope.n_rot != hp.head_dim_k) {
    throw Refusal(path + ": gpt-oss needs key_length == value_length == rope.dimension_count");
  }
  hp.kq_scale = 1.0f / std::sqrt(static_cast<float>(hp.rope.n_rot));

  auto m = std::make_unique<GptOss>();
  const int64_t d = hp.n_embd;
  const EmbedHead head = load_embed_head(ld, hp, /*tied_ok=*/false);
  m->tok_embd = head.tok_embd;
  m->output_norm = head.output_norm;
  m->output = head.output;
  m->layers.resize(hp.n_layer);
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    Layer& L = m->layers[il];
    L.attn_norm = ld.tensor(p + "attn_norm.weight", {d}, WeightUse::kVector);
    L.post_norm = ld.tensor(p + "post_attention_norm.weight", {d}, WeightUse::kVector);
    L.attn = load_attention(ld, p, hp, {.qkv_bias = Need::kRequired, .out_bias = Need::kRequired, .sinks = true});
    L.moe = load_moe_weights(ld, p, hp, true);
  }
  m->attn_full.rope = &hp.rope;
  m->attn_full.kq_scale = hp.kq_scale;
  m->attn_swa = m->attn_full;
  m->attn_swa.rope = &hp.rope_swa;
  m->attn_swa.n_swa = hp.n_swa;
  m->moe_cfg.routing.gating = ops::MoeGating::kSoftmaxWeight;
  m->moe_cfg.routing.norm_weights = false;
  m->moe_cfg.act = graph::MoeAct::kSwigluOai;
  return m;
}

}  // namespace strix
