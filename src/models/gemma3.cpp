// gemma3 (general.architecture = "gemma3"): Gemma 3 text models (270M .. 27B).
//
// Block (llama.cpp's gemma3 graph):
//   x  = embd(tokens) * sqrtf(n_embd)
//   h  = x + post_attn_norm(attn(rope(qnorm(Wq·n)) * attn_scale, rope(knorm(Wk·n)), Wv·n)),  n = rmsnorm(x)·attn_norm
//   x' = h + post_ffw_norm(down(gelu_tanh(gate·m) * up·m)),  m = rmsnorm(h)·ffn_norm
// All norms are RMS norms whose GGUF weights already hold Gemma's "1 + w".
// RoPE is NEOX. With a sliding window (gemma3.attention.sliding_window > 0)
// layers follow set_swa_pattern(P), P = attention.sliding_window_pattern or 6:
// il % P < P - 1 slide, with RoPE base rope.freq_base_swa (default 10000) and
// no frequency scaling; the rest are global, with the file's base and scaling.
// Without a window every layer is global. The attention scale is
// 1/sqrt(head_dim), or 1/sqrt(n_embd / n_head) for the 27B (62 layers), and
// llama.cpp multiplies it into q after RoPE (kq_scale 1). Logits are capped by
// final_logit_softcapping when the file gives one (> 0).
// (What the pinned libllama does with the optional keys was checked by parity
// on variants of a synthetic model: tests/parity/gemma3_parity_test.cpp.)
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "graph/blocks.h"
#include "models/archs.h"
#include "models/load_common.h"
#include "ops/cpu_ops.h"

namespace strix {

namespace {

constexpr int kSwaPattern = 6;            // llama.cpp's default sliding-window period for gemma3
constexpr float kSwaRopeBase = 10000.0f;  // and its default RoPE base of the sliding-window layers

struct Layer {
  Weight attn_norm, post_attn_norm, ffn_norm, post_ffw_norm;
  graph::AttnWeights attn;
  graph::FfnWeights ffn;
};

// logits = tanh(logits * (1 / cap)) * cap, as ggml_scale, ggml_tanh, ggml_scale.
void softcap(Exec& e, float* logits, int n, int64_t n_vocab, float cap) {
  const float inv = 1.0f / cap;
  const auto [t0, t1] = e.range(n);
  for (int64_t t = t0; t < t1; ++t) {
    float* r = logits + t * n_vocab;
    for (int64_t i = 0; i < n_vocab; ++i) r[i] = std::tanh(r[i] * inv) * cap;
  }
  e.barrier();
}

class Gemma3 : public Arch {
 public:
  Weight tok_embd, output_norm, output;
  std::vector<Layer> layers;
  graph::AttnConfig cfg_global, cfg_swa;
  float embd_scale = 1.0f;
  float final_softcap = 0.0f;  // gemma3.final_logit_softcapping; 0: none

  KeyRope key_rope(const Hparams& hp, int64_t il, int64_t) const override {
    const graph::AttnConfig& c = hp.is_swa(il) ? cfg_swa : cfg_global;
    return {c.rope, c.rope_freq_factors};
  }
  void forward(Exec& e, Step& s) const override {
    const Hparams& hp = *s.hp;
    Workspace& ws = e.ws;
    const int64_t d = hp.n_embd;
    ops::get_rows(e, tok_embd, s.tokens, s.n_tokens, ws.x, d);
    ops::scale(e, ws.x, embd_scale, s.n_tokens, d, d);
    for (int64_t il = 0; il < hp.n_layer; ++il) {
      const Layer& L = layers[il];
      ops::rms_norm(e, ws.x, s.n_tokens, d, d, ws.cur, d, fp(L.attn_norm), hp.norm_eps);
      graph::self_attention(e, s, il, L.attn, hp.is_swa(il) ? cfg_swa : cfg_global, ws.cur, d, ws.cur, d);
      if (il == hp.n_layer - 1 && s.n_outputs < s.n_tokens) {
        // only the rows that want logits go on (llama.cpp's inp_out_ids)
        ops::gather_rows(e, ws.x, d, d, s.out_ids, s.n_outputs);
        ops::gather_rows(e, ws.cur, d, d, s.out_ids, s.n_outputs);
        s.n_tokens = s.n_outputs;
      }
      ops::rms_norm(e, ws.cur, s.n_tokens, d, d, ws.cur, d, fp(L.post_attn_norm), hp.norm_eps);
      ops::add(e, ws.cur, ws.x, ws.x, s.n_tokens, d, d);
      ops::rms_norm(e, ws.x, s.n_tokens, d, d, ws.cur, d, fp(L.ffn_norm), hp.norm_eps);
      graph::gated_ffn(e, s, L.ffn, graph::Glu::kGelu, ws.cur, d, ws.cur, d);
      ops::rms_norm(e, ws.cur, s.n_tokens, d, d, ws.cur, d, fp(L.post_ffw_norm), hp.norm_eps);
      ops::add(e, ws.cur, ws.x, ws.x, s.n_tokens, d, d);
    }
    graph::lm_head(e, s, ws.x, s.n_tokens, output_norm, output, hp.norm_eps);
    if (final_softcap > 0.0f) softcap(e, s.logits, s.n_tokens, hp.n_vocab, final_softcap);
  }

 private:
  static const float* fp(const Weight& w) { return reinterpret_cast<const float*>(w.data); }
};

}  // namespace

std::unique_ptr<Arch> load_gemma3(ModelLoader& ld, Hparams& hp) {
  const std::string& path = ld.file().splits()[0].path;
  read_common_hparams(ld, hp);
  ld.refuse_unless("expert_count", 0, "mixture of experts");
  ld.refuse_unless("expert_used_count", 0, "mixture of experts");
  auto m = std::make_unique<Gemma3>();

  hp.rope.mode = RopeMode::kNeox;
  hp.rope.attn_factor = yarn_attn_factor(hp.rope);
  hp.n_swa = ld.u32_or("attention.sliding_window", 0);
  m->final_softcap = ld.f32_or("final_logit_softcapping", 0.0f);
  const GgufValue* pat = ld.file().find("gemma3.attention.sliding_window_pattern");
  if (pat && pat->is_array()) {
    throw Refusal(path +
                  ": key gemma3.attention.sliding_window_pattern as a per-layer array is not implemented "
                  "for gemma3 yet");
  }
  const int64_t period = ld.u32_or("attention.sliding_window_pattern", kSwaPattern);
  hp.rope_swa = hp.rope;  // yarn's ext/attn factors and betas are the context's, shared by both kinds
  hp.rope_swa.freq_base = ld.f32_or("rope.freq_base_swa", kSwaRopeBase);
  if (hp.n_swa > 0) {
    if (period == 1) {
      throw Refusal(path +
                    ": gemma3.attention.sliding_window_pattern 1 leaves no sliding-window layer, "
                    "which llama.cpp does not run either");
    }
    // llama.cpp's set_swa_pattern(period): il % period < period - 1 slides; the rest are global
    for (int64_t il = 0; il < hp.n_layer; ++il) hp.swa_layers[il] = period == 0 || il % period < period - 1;
    hp.rope_swa.freq_scale = 1.0f;
  }
  // llama.cpp: 1/sqrt(n_embd / n_head) for the 27B (62 layers), else 1/sqrt(head_dim)
  const float attn_scale = hp.n_layer == 62 ? 1.0f / std::sqrt(static_cast<float>(hp.n_embd / hp.n_head))
                                            : 1.0f / std::sqrt(static_cast<float>(hp.head_dim_k));
  hp.kq_scale = attn_scale;
  m->embd_scale = std::sqrt(static_cast<float>(hp.n_embd));

  const int64_t d = hp.n_embd, hd = hp.head_dim_k;
  const EmbedHead head = load_embed_head(ld, hp);
  m->tok_embd = head.tok_embd;
  m->output_norm = head.output_norm;
  m->output = head.output;
  if (hp.n_ff <= 0) throw Refusal(path + ": missing key gemma3.feed_forward_length");
  m->layers.resize(hp.n_layer);
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    Layer& L = m->layers[il];
    L.attn_norm = ld.tensor(p + "attn_norm.weight", {d}, WeightUse::kVector);
    L.attn = load_attention(ld, p, hp, {.q_norm_dim = hd, .k_norm_dim = hd});
    L.post_attn_norm = ld.tensor(p + "post_attention_norm.weight", {d}, WeightUse::kVector);
    L.ffn_norm = ld.tensor(p + "ffn_norm.weight", {d}, WeightUse::kVector);
    L.ffn.gate = ld.tensor(p + "ffn_gate.weight", {d, hp.n_ff});
    L.ffn.up = ld.tensor(p + "ffn_up.weight", {d, hp.n_ff});
    L.ffn.down = ld.tensor(p + "ffn_down.weight", {hp.n_ff, d});
    L.post_ffw_norm = ld.tensor(p + "post_ffw_norm.weight", {d}, WeightUse::kVector);
  }
  for (graph::AttnConfig* c : {&m->cfg_global, &m->cfg_swa}) {
    c->qk_norm = graph::QkNorm::kPerHead;
    c->q_scale = attn_scale;  // ggml_scale(Qcur, f_attention_scale) after RoPE
    c->kq_scale = 1.0f;       // build_attn(..., kq_scale = 1.0f)
  }
  m->cfg_global.rope = &hp.rope;
  m->cfg_swa.rope = &hp.rope_swa;
  m->cfg_swa.n_swa = hp.n_swa;
  return m;
}

}  // namespace strix
