// llama (general.architecture = "llama"): Llama 1/2/3, Mistral-7B, TinyLlama,
// SmolLM and the many models converted as llama.
//
// Block: x += Wo·attn(rope(Wq·n), rope(Wk·n), Wv·n) with n = rmsnorm(x)·attn_norm;
//        x += down(silu(gate·m) * up·m) with m = rmsnorm(x)·ffn_norm.
// RoPE in "normal" mode (adjacent pairs), unscaled, linear or YaRN scaled
// (read_common_hparams); Llama 3's rope_freqs.weight divides the frequencies;
// optional q/k/v/o biases. Mixture-of-experts llama files
// (Mixtral) are refused by their expert_count key until MoE is wired here.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "graph/blocks.h"
#include "graph/decoder.h"
#include "models/archs.h"
#include "models/load_common.h"
#include "ops/cpu_ops.h"

namespace strix {

namespace {

struct Layer {
  Weight attn_norm, ffn_norm;
  graph::AttnWeights attn;
  graph::FfnWeights ffn;
};

class Llama : public Arch {
 public:
  Weight tok_embd, output_norm, output, rope_freqs;
  std::vector<Layer> layers;
  graph::AttnConfig attn_cfg;

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
          graph::gated_ffn(e, s, L.ffn, graph::Glu::kSilu, e.ws.cur, s.hp->n_embd, e.ws.cur, s.hp->n_embd);
        });
  }
};

}  // namespace

std::unique_ptr<Arch> load_llama(ModelLoader& ld, Hparams& hp) {
  read_common_hparams(ld, hp);
  ld.refuse_unless("expert_count", 0, "mixture of experts");
  ld.refuse_unless("expert_used_count", 0, "mixture of experts");
  ld.refuse_unless("attention.sliding_window", 0, "sliding-window attention");
  // llama.cpp's llama loader does not read these (its context keeps betas 32 / 1
  // and derives YaRN's factors from the scaling factor): accepted and ignored.
  for (const char* k : {"rope.scaling.yarn_beta_fast", "rope.scaling.yarn_beta_slow", "rope.scaling.yarn_ext_factor",
                        "rope.scaling.yarn_attn_factor", "rope.scaling.yarn_log_multiplier"}) {
    ld.accept(k);
  }
  if (hp.rope.n_rot != hp.head_dim_k) {
    throw Error(ld.file().splits()[0].path + ": llama.rope.dimension_count " + std::to_string(hp.rope.n_rot) +
                " differs from the head size " + std::to_string(hp.head_dim_k) + " (llama.cpp refuses it too)");
  }
  hp.rope.mode = RopeMode::kNorm;
  hp.rope.attn_factor = yarn_attn_factor(hp.rope);
  hp.rope_swa = hp.rope;
  hp.kq_scale = ld.f32_or("attention.scale", hp.kq_scale);
  if (hp.kq_scale == 0.0f) hp.kq_scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim_k));

  auto m = std::make_unique<Llama>();
  const int64_t d = hp.n_embd;
  const EmbedHead head = load_embed_head(ld, hp);
  m->tok_embd = head.tok_embd;
  m->output_norm = head.output_norm;
  m->output = head.output;
  m->rope_freqs = ld.optional("rope_freqs.weight", {hp.rope.n_rot / 2}, WeightUse::kVector);
  if (hp.n_ff <= 0) throw Refusal(ld.file().splits()[0].path + ": missing key llama.feed_forward_length");
  m->layers.resize(hp.n_layer);
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    Layer& L = m->layers[il];
    L.attn_norm = ld.tensor(p + "attn_norm.weight", {d}, WeightUse::kVector);
    L.attn = load_attention(ld, p, hp, {.qkv_bias = Need::kOptional, .out_bias = Need::kOptional});
    // per-layer rope_freqs copies some converters write are the same tensor
    ld.optional(p + "rope_freqs.weight", {hp.rope.n_rot / 2}, WeightUse::kVector);
    L.ffn_norm = ld.tensor(p + "ffn_norm.weight", {d}, WeightUse::kVector);
    L.ffn.gate = ld.tensor(p + "ffn_gate.weight", {d, hp.n_ff});
    L.ffn.up = ld.tensor(p + "ffn_up.weight", {d, hp.n_ff});
    L.ffn.down = ld.tensor(p + "ffn_down.weight", {hp.n_ff, d});
  }
  m->attn_cfg.rope = &hp.rope;
  m->attn_cfg.rope_freq_factors =
      m->rope_freqs.present() ? reinterpret_cast<const float*>(m->rope_freqs.data) : nullptr;
  m->attn_cfg.kq_scale = hp.kq_scale;
  return m;
}

}  // namespace strix
