// phi3 (general.architecture = "phi3"): Phi-3 / Phi-3.5 mini and medium
// (4k and 128k), Phi-4 and Phi-4-mini.
//
// Block (llama.cpp's phi3 graph):
//   q, k, v = Wqkv·n (one fused projection, or separate Wq/Wk/Wv), n = rmsnorm(x)·attn_norm
//   q = rope(q) / sqrt(head_dim), k = rope(k)      (q scaled in f32 before attention)
//   x += Wo·attn(q, k, v)                          (softmax scale 1)
//   x += down(silu(g) * u) with [g; u] = Wup·m, m = rmsnorm(x)·ffn_norm (fused gate+up)
// RoPE in NEOX mode over rope.dimension_count dims (partial rotary in Phi-4-mini).
// LongRoPE (128k models): rope_factors_long / rope_factors_short divide the
// frequencies; llama.cpp takes the long ones when the per-sequence context
// (n_ctx_seq) exceeds rope.scaling.original_context_length, decided per
// context, not per position. rope.scaling.attn_factor scales cos/sin (the
// converter writes sqrt(1 + ln(scale) / ln(orig ctx)) there).
// attention.sliding_window is read and ignored, as llama.cpp does (it runs
// phi3 without a window, see llama.cpp PR 13676).
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

struct Layer {
  Weight attn_norm, ffn_norm;
  Weight wqkv, wq, wk, wv, wo;
  graph::FfnWeights ffn;  // up = [gate; up] fused, no gate tensor
};

class Phi3 : public Arch {
 public:
  Weight tok_embd, output_norm, output, rope_long, rope_short;
  std::vector<Layer> layers;
  float q_scale = 1.0f;

  KeyRope key_rope(const Hparams& hp, int64_t, int64_t n_ctx_seq) const override {
    const Weight& factors = n_ctx_seq > hp.rope.n_ctx_orig ? rope_long : rope_short;
    return {&hp.rope, factors.present() ? reinterpret_cast<const float*>(factors.data) : nullptr};
  }
  void forward(Exec& e, Step& s) const override {
    const Hparams& hp = *s.hp;
    Workspace& ws = e.ws;
    const int64_t d = hp.n_embd;
    // llama_model::get_rope_factors: long factors when the context exceeds the original one
    const Weight& factors = s.n_ctx_seq > hp.rope.n_ctx_orig ? rope_long : rope_short;
    const float* ff = factors.present() ? fp(factors) : nullptr;
    ops::get_rows(e, tok_embd, s.tokens, s.n_tokens, ws.x, d);
    for (int64_t il = 0; il < hp.n_layer; ++il) {
      const Layer& L = layers[il];
      ops::rms_norm(e, ws.x, s.n_tokens, d, d, ws.cur, d, fp(L.attn_norm), hp.norm_eps);
      attention(e, s, il, L, ff, ws.cur, ws.cur);
      if (il == hp.n_layer - 1 && s.n_outputs < s.n_tokens) {
        // only the rows that want logits go on (llama.cpp's inp_out_ids)
        ops::gather_rows(e, ws.x, d, d, s.out_ids, s.n_outputs);
        ops::gather_rows(e, ws.cur, d, d, s.out_ids, s.n_outputs);
        s.n_tokens = s.n_outputs;
      }
      ops::add(e, ws.cur, ws.x, ws.x, s.n_tokens, d, d);
      ops::rms_norm(e, ws.x, s.n_tokens, d, d, ws.cur, d, fp(L.ffn_norm), hp.norm_eps);
      graph::gated_ffn(e, s, L.ffn, graph::Glu::kSilu, ws.cur, d, ws.cur, d);
      ops::add(e, ws.x, ws.cur, ws.x, s.n_tokens, d, d);
    }
    graph::lm_head(e, s, ws.x, s.n_tokens, output_norm, output, hp.norm_eps);
  }

 private:
  static const float* fp(const Weight& w) { return reinterpret_cast<const float*>(w.data); }

  // The attention of one layer: like graph::self_attention, with q scaled
  // after RoPE (llama.cpp's phi3 scales Qcur in f32 and attends with scale 1).
  // `out` may be `in` (ws.cur): `in` is consumed by the projections first.
  void attention(Exec& e, Step& s, int64_t il, const Layer& L, const float* rope_factors, const float* in,
                 float* out) const {
    const Hparams& hp = *s.hp;
    Workspace& ws = e.ws;
    const int n = s.n_tokens;
    const int64_t d = hp.n_embd, qd = hp.q_dim(), kd = hp.k_dim(), vd = hp.v_dim();
    float *q, *k, *v;
    int64_t q_stride, k_stride, v_stride;
    if (L.wqkv.present()) {
      const int64_t width = qd + kd + vd;
      ops::matmul(e, L.wqkv, in, n, d, ws.q, width);
      q = ws.q;
      k = ws.q + qd;
      v = ws.q + qd + kd;
      q_stride = k_stride = v_stride = width;
    } else {
      ops::matmul(e, L.wq, in, n, d, ws.q, qd);
      ops::matmul(e, L.wk, in, n, d, ws.k, kd);
      ops::matmul(e, L.wv, in, n, d, ws.v, vd);
      q = ws.q;
      k = ws.k;
      v = ws.v;
      q_stride = qd;
      k_stride = kd;
      v_stride = vd;
    }
    ops::rope(e, q, n, hp.n_head, hp.head_dim_k, q_stride, s.pos, hp.rope, rope_factors);
    ops::rope(e, k, n, hp.n_head_kv, hp.head_dim_k, k_stride, s.pos, hp.rope, rope_factors);
    ops::scale(e, q, q_scale, n, qd, q_stride);
    ops::kv_store(e, s, il, k, k_stride, v, v_stride);
    const int64_t ad = hp.n_head * hp.head_dim_v;
    ops::attention(e, s, il, q, q_stride, ws.att, ad, 1.0f, 0, nullptr);
    ops::matmul(e, L.wo, ws.att, n, ad, out, d);
  }
};

}  // namespace

std::unique_ptr<Arch> load_phi3(ModelLoader& ld, Hparams& hp) {
  const std::string& path = ld.file().splits()[0].path;
  read_common_hparams(ld, hp);
  ld.accept("rope.scaling.finetuned");  // informational
  // llama.cpp reads the window and then runs phi3 without one (n_swa = 0)
  ld.accept("attention.sliding_window");
  hp.rope.mode = RopeMode::kNeox;
  if (hp.head_dim_k != hp.head_dim_v) {
    throw Refusal(path + ": phi3 with key_length " + std::to_string(hp.head_dim_k) + " != value_length " +
                  std::to_string(hp.head_dim_v) + " is not run by llama.cpp or Strix");
  }
  hp.rope_swa = hp.rope;
  hp.n_swa = 0;
  hp.kq_scale = 1.0f;  // q carries 1/sqrt(head_dim)
  if (hp.n_ff <= 0) throw Refusal(path + ": missing key phi3.feed_forward_length");

  auto m = std::make_unique<Phi3>();
  m->q_scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim_k));
  const int64_t d = hp.n_embd, qd = hp.q_dim(), kd = hp.k_dim(), vd = hp.v_dim();
  const EmbedHead head = load_embed_head(ld, hp);
  m->tok_embd = head.tok_embd;
  m->output_norm = head.output_norm;
  m->output = head.output;
  m->rope_long = ld.optional("rope_factors_long.weight", {hp.rope.n_rot / 2}, WeightUse::kVector);
  m->rope_short = ld.optional("rope_factors_short.weight", {hp.rope.n_rot / 2}, WeightUse::kVector);
  m->layers.resize(hp.n_layer);
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    Layer& L = m->layers[il];
    L.attn_norm = ld.tensor(p + "attn_norm.weight", {d}, WeightUse::kVector);
    L.wqkv = ld.optional(p + "attn_qkv.weight", {d, qd + kd + vd});
    if (!L.wqkv.present()) {
      L.wq = ld.tensor(p + "attn_q.weight", {d, qd});
      L.wk = ld.tensor(p + "attn_k.weight", {d, kd});
      L.wv = ld.tensor(p + "attn_v.weight", {d, vd});
    }
    L.wo = ld.tensor(p + "attn_output.weight", {qd, d});
    L.ffn_norm = ld.tensor(p + "ffn_norm.weight", {d}, WeightUse::kVector);
    L.ffn.up = ld.tensor(p + "ffn_up.weight", {d, 2 * hp.n_ff});
    L.ffn.down = ld.tensor(p + "ffn_down.weight", {hp.n_ff, d});
  }
  return m;
}

}  // namespace strix
