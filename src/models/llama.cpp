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
#include "models/archs.h"
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

  void forward(Exec& e, Step& s) const override {
    const Hparams& hp = *s.hp;
    Workspace& ws = e.ws;
    const int64_t d = hp.n_embd;
    ops::get_rows(e, tok_embd, s.tokens, s.n_tokens, ws.x, d);
    ops::rms_norm(e, ws.x, s.n_tokens, d, d, ws.cur, d, fp(layers[0].attn_norm), hp.norm_eps);
    for (int64_t il = 0; il < hp.n_layer; ++il) {
      const Layer& L = layers[il];
      // ws.cur holds attn_norm(x) here (the previous layer's residual add computed it)
      graph::self_attention(e, s, il, L.attn, attn_cfg, ws.cur, d, ws.cur, d);
      if (il == hp.n_layer - 1 && s.n_outputs < s.n_tokens) {
        // only the rows that want logits go on (llama.cpp's inp_out_ids)
        ops::gather_rows(e, ws.x, d, d, s.out_ids, s.n_outputs);
        ops::gather_rows(e, ws.cur, d, d, s.out_ids, s.n_outputs);
        s.n_tokens = s.n_outputs;
      }
      ops::add_rms_norm(e, ws.x, ws.cur, ws.cur, s.n_tokens, d, fp(L.ffn_norm), hp.norm_eps);
      graph::gated_ffn(e, s, L.ffn, graph::Glu::kSilu, ws.cur, d, ws.cur, d);
      if (il + 1 < hp.n_layer) {
        ops::add_rms_norm(e, ws.x, ws.cur, ws.cur, s.n_tokens, d, fp(layers[il + 1].attn_norm), hp.norm_eps);
      } else {
        ops::add(e, ws.x, ws.cur, ws.x, s.n_tokens, d, d);
      }
    }
    graph::lm_head(e, s, ws.x, s.n_tokens, output_norm, output, hp.norm_eps);
  }

 private:
  static const float* fp(const Weight& w) { return reinterpret_cast<const float*>(w.data); }
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
  m->rope_freqs = ld.optional("rope_freqs.weight", {hp.rope.n_rot / 2}, WeightUse::kVector);
  if (hp.n_ff <= 0) throw Refusal(ld.file().splits()[0].path + ": missing key llama.feed_forward_length");
  m->layers.resize(hp.n_layer);
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    Layer& L = m->layers[il];
    L.attn_norm = ld.tensor(p + "attn_norm.weight", {d}, WeightUse::kVector);
    L.attn.wq = ld.tensor(p + "attn_q.weight", {d, qd});
    L.attn.wk = ld.tensor(p + "attn_k.weight", {d, kd});
    L.attn.wv = ld.tensor(p + "attn_v.weight", {d, vd});
    L.attn.wo = ld.tensor(p + "attn_output.weight", {hp.n_head * hp.head_dim_v, d});
    L.attn.bq = ld.optional(p + "attn_q.bias", {qd}, WeightUse::kVector);
    L.attn.bk = ld.optional(p + "attn_k.bias", {kd}, WeightUse::kVector);
    L.attn.bv = ld.optional(p + "attn_v.bias", {vd}, WeightUse::kVector);
    L.attn.bo = ld.optional(p + "attn_output.bias", {d}, WeightUse::kVector);
    // per-layer rope_freqs copies some converters write are the same tensor
    ld.optional(p + "rope_freqs.weight", {hp.rope.n_rot / 2}, WeightUse::kVector);
    L.ffn_norm = ld.tensor(p + "ffn_norm.weight", {d}, WeightUse::kVector);
    L.ffn.gate = ld.tensor(p + "ffn_gate.weight", {d, hp.n_ff});
    L.ffn.up = ld.tensor(p + "ffn_up.weight", {d, hp.n_ff});
    L.ffn.down = ld.tensor(p + "ffn_down.weight", {hp.n_ff, d});
  }
  m->attn_cfg.rope = &hp.rope;
  m->attn_cfg.rope_freq_factors = m->rope_freqs.present() ? reinterpret_cast<const float*>(m->rope_freqs.data) : nullptr;
  m->attn_cfg.kq_scale = hp.kq_scale;
  return m;
}

}  // namespace strix
