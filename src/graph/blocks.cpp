#include "graph/blocks.h"

#include "ops/cpu_ops.h"

namespace strix::graph {

namespace {
const float* fp(const Weight& w) { return w.present() ? reinterpret_cast<const float*>(w.data) : nullptr; }
}  // namespace

void self_attention(Exec& e, Step& s, int64_t il, const AttnWeights& w, const AttnConfig& cfg, const float* in,
                    int64_t in_stride, float* out, int64_t out_stride) {
  const Hparams& hp = *s.hp;
  const int n = s.n_tokens;
  Workspace& ws = e.ws;
  const int64_t qd = hp.q_dim(), kd = hp.k_dim(), vd = hp.v_dim();
  float *q, *k, *v;
  int64_t q_stride, k_stride, v_stride;
  if (w.wqkv.present()) {
    const int64_t width = qd + kd + vd;
    ops::matmul(e, w.wqkv, in, n, in_stride, ws.q, width, fp(w.bqkv));
    q = ws.q;
    k = ws.q + qd;
    v = ws.q + qd + kd;
    q_stride = k_stride = v_stride = width;
  } else {
    const ops::MatmulOut outs[3] = {{&w.wq, ws.q, qd, fp(w.bq)}, {&w.wk, ws.k, kd, fp(w.bk)}, {&w.wv, ws.v, vd, fp(w.bv)}};
    ops::matmul_group(e, outs, 3, in, n, in_stride);
    q = ws.q;
    k = ws.k;
    v = ws.v;
    q_stride = qd;
    k_stride = kd;
    v_stride = vd;
  }
  switch (cfg.qk_norm) {
    case QkNorm::kNone:
      break;
    case QkNorm::kPerHead:
      // heads are rows of head_dim: needs q/k rows packed (separate projections)
      ops::rms_norm(e, q, static_cast<int64_t>(n) * hp.n_head, hp.head_dim_k, hp.head_dim_k, q, hp.head_dim_k,
                    fp(w.q_norm), hp.norm_eps);
      ops::rms_norm(e, k, static_cast<int64_t>(n) * hp.n_head_kv, hp.head_dim_k, hp.head_dim_k, k, hp.head_dim_k,
                    fp(w.k_norm), hp.norm_eps);
      break;
    case QkNorm::kFull:
      ops::rms_norm(e, q, n, qd, q_stride, q, q_stride, fp(w.q_norm), hp.norm_eps);
      ops::rms_norm(e, k, n, kd, k_stride, k, k_stride, fp(w.k_norm), hp.norm_eps);
      break;
  }
  if (cfg.rope) {
    ops::rope(e, q, n, hp.n_head, hp.head_dim_k, q_stride, s.pos, *cfg.rope, cfg.rope_freq_factors);
    ops::rope(e, k, n, hp.n_head_kv, hp.head_dim_k, k_stride, s.pos, *cfg.rope, cfg.rope_freq_factors);
  }
  if (cfg.q_scale != 1.0f) ops::scale(e, q, cfg.q_scale, n, qd, q_stride);
  ops::kv_store(e, s, il, k, k_stride, v, v_stride);
  const int64_t ad = hp.n_head * hp.head_dim_v;
  ops::attention(e, s, il, q, q_stride, ws.att, ad, cfg.kq_scale, cfg.n_swa, fp(w.sinks));
  ops::matmul(e, w.wo, ws.att, n, ad, out, out_stride, fp(w.bo));
}

void gated_ffn(Exec& e, Step& s, const FfnWeights& w, Glu act, const float* in, int64_t in_stride, float* out,
               int64_t out_stride) {
  const int n = s.n_tokens;
  Workspace& ws = e.ws;
  const float *g, *u;
  int64_t gs, us, ff;
  if (w.gate.present()) {
    ff = w.gate.ne[1];
    const ops::MatmulOut outs[2] = {{&w.gate, ws.ff_a, ff, fp(w.gate_b)}, {&w.up, ws.ff_b, ff, fp(w.up_b)}};
    ops::matmul_group(e, outs, 2, in, n, in_stride);
    g = ws.ff_a;
    u = ws.ff_b;
    gs = us = ff;
  } else {
    ff = w.up.ne[1] / 2;
    ops::matmul(e, w.up, in, n, in_stride, ws.ff_a, 2 * ff, fp(w.up_b));
    g = ws.ff_a;
    u = ws.ff_a + ff;
    gs = us = 2 * ff;
  }
  if (act == Glu::kSilu) {
    ops::swiglu(e, g, gs, u, us, ws.ff_b, ff, n, ff);
  } else {
    ops::geglu(e, g, gs, u, us, ws.ff_b, ff, n, ff);
  }
  ops::matmul(e, w.down, ws.ff_b, n, ff, out, out_stride, fp(w.down_b));
}

void lm_head(Exec& e, Step& s, const float* x, int n, const Weight& norm, const Weight& output, float eps) {
  const Hparams& hp = *s.hp;
  ops::rms_norm(e, x, n, hp.n_embd, hp.n_embd, e.ws.cur, hp.n_embd, fp(norm), eps);
  ops::matmul(e, output, e.ws.cur, n, hp.n_embd, s.logits, hp.n_vocab);
}

}  // namespace strix::graph
