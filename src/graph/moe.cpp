#include "graph/moe.h"

#include "models/hparams.h"
#include "ops/cpu_ops.h"

namespace strix::graph {

namespace {

const float* fp(const Weight& w) { return w.present() ? reinterpret_cast<const float*>(w.data) : nullptr; }
// Row x of a [width, n_expert] F32 bias, or null.
const float* bias_row(const Weight& w, int64_t x) {
  return w.present() ? reinterpret_cast<const float*>(w.row(x)) : nullptr;
}

// Workspace::moe carved for a micro-batch of up to ub tokens:
//   logits [ub, E] | weights [ub, K] | ids [ub, K] | xg [ub, d] | yd [ub, d]
//   | gate [ub, F] | up [ub, F] | slots [ub * K, d] | offsets [E + 1] + rows [ub * K] (ints)
struct MoeScratch {
  float* logits;
  float* weights;
  int32_t* ids;
  float* xg;
  float* yd;
  float* gate;
  float* up;
  float* slots;
  int32_t* offsets;
  int32_t* rows;
};

MoeScratch carve(float* base, int64_t ub, int64_t d, int64_t n_expert, int64_t k, int64_t ff) {
  MoeScratch m;
  float* p = base;
  m.logits = p;
  p += ub * n_expert;
  m.weights = p;
  p += ub * k;
  m.ids = reinterpret_cast<int32_t*>(p);
  p += ub * k;
  m.xg = p;
  p += ub * d;
  m.yd = p;
  p += ub * d;
  m.gate = p;
  p += ub * ff;
  m.up = p;
  p += ub * ff;
  m.slots = p;
  p += ub * k * d;
  m.offsets = reinterpret_cast<int32_t*>(p);
  m.rows = m.offsets + n_expert + 1;
  return m;
}

}  // namespace

int64_t moe_scratch_width(int64_t n_embd, int64_t n_expert, int64_t n_expert_used, int64_t n_ff_exp) {
  // per token: logits, weights, ids, xg, yd, gate, up, slots; then rows (k) and offsets (<= n_expert + 1)
  return n_expert + 2 * n_expert_used + 2 * n_embd + 2 * n_ff_exp + n_expert_used * n_embd + n_expert_used + n_expert +
         16;
}

void moe_ffn(Exec& e, Step& s, const MoeWeights& w, const MoeConfig& cfg, const float* in, int64_t in_stride,
             float* out, int64_t out_stride) {
  const Hparams& hp = *s.hp;
  Workspace& ws = e.ws;
  const int n = s.n_tokens;
  const int64_t d = hp.n_embd, n_expert = hp.n_expert, k = hp.n_expert_used;
  const int64_t ff = hp.n_ff_exp;
  const MoeScratch m = carve(ws.moe, ws.n_tokens_max, d, n_expert, k, hp.n_ff_exp);

  // router: logits [n, E] (+ bias), then top-k weights and ids per token
  ops::matmul(e, w.gate_inp, in, n, in_stride, m.logits, n_expert, fp(w.gate_inp_b));
  ops::moe_route(e, m.logits, n_expert, n, n_expert, k, cfg.routing, m.ids, m.weights);
  ops::moe_group(e, m.ids, n, n_expert, k, m.offsets, m.rows);

  // each expert once, over the tokens routed to it (same control flow on all threads)
  for (int64_t x = 0; x < n_expert; ++x) {
    const int cnt = m.offsets[x + 1] - m.offsets[x];
    if (cnt == 0) continue;
    const int32_t* rows = m.rows + m.offsets[x];
    ops::moe_gather(e, in, in_stride, rows, cnt, k, m.xg, d, d);
    // gate and up share one quantization of the tokens (and one barrier less)
    const ops::MatmulOut gate_up[2] = {{&w.gate_exps, m.gate, ff, bias_row(w.gate_exps_b, x), x},
                                       {&w.up_exps, m.up, ff, bias_row(w.up_exps_b, x), x}};
    ops::matmul_group(e, gate_up, 2, m.xg, cnt, d);
    if (cfg.act == MoeAct::kSilu) {
      ops::swiglu(e, m.gate, ff, m.up, ff, m.gate, ff, cnt, ff);
    } else {
      ops::swiglu_oai(e, m.gate, ff, m.up, ff, m.gate, ff, cnt, ff, 1.702f, 7.0f);
    }
    ops::matmul(e, w.down_exps, m.gate, cnt, ff, m.yd, d, bias_row(w.down_exps_b, x), x);
    ops::moe_scatter(e, m.yd, d, rows, cnt, m.weights, m.slots, d);
  }
  ops::moe_sum(e, m.slots, n, k, d, out, out_stride);
}

}  // namespace strix::graph
