#include "ops/moe_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/vec_ops.h"

namespace strix::ops {

namespace {

// ggml_soft_max_f32 on one row (scale 1, no mask): max, then exp(x - max)
// summed as ggml_vec_soft_max_f32 does (VecOps::softmax_exp), then multiplied
// by (float)(1 / sum).
void softmax_row(const float* x, int64_t n, float* y) {
  float mx = -INFINITY;
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, x[i]);
  std::memcpy(y, x, sizeof(float) * static_cast<size_t>(n));
  const double sum = cpu::vec_ops().softmax_exp(n, y, mx);
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) y[i] *= inv;
}

}  // namespace

void moe_route(Exec& e, const float* logits, int64_t logits_stride, int n, int64_t n_expert, int64_t k,
               const MoeRouting& r, int32_t* ids, float* weights) {
  float probs[kMoeMaxExperts];
  int32_t idx[kMoeMaxExperts];
  const auto [t0, t1] = e.range(n);
  for (int64_t t = t0; t < t1; ++t) {
    const float* lg = logits + t * logits_stride;
    const float* p = lg;
    if (r.gating == MoeGating::kSoftmax) {
      softmax_row(lg, n_expert, probs);
      p = probs;
    }
    // ggml_argsort (descending): std::sort over 0..n-1 with p[a] > p[b]
    for (int32_t i = 0; i < n_expert; ++i) idx[i] = i;
    std::sort(idx, idx + n_expert, [p](int32_t a, int32_t b) { return p[a] > p[b]; });
    int32_t* id = ids + t * k;
    float* w = weights + t * k;
    for (int64_t j = 0; j < k; ++j) {
      id[j] = idx[j];
      w[j] = p[idx[j]];
    }
    if (r.gating == MoeGating::kSoftmaxWeight) softmax_row(w, k, w);
    if (r.norm_weights) {
      double sum = 0;
      for (int64_t j = 0; j < k; ++j) sum += static_cast<double>(w[j]);
      const float s = std::max(static_cast<float>(sum), 6.103515625e-5f);
      for (int64_t j = 0; j < k; ++j) w[j] = w[j] / s;
    }
    if (r.scale != 0.0f && r.scale != 1.0f) {
      for (int64_t j = 0; j < k; ++j) w[j] *= r.scale;
    }
  }
  e.barrier();
}

void moe_group(Exec& e, const int32_t* ids, int n, int64_t n_expert, int64_t k, int32_t* offsets, int32_t* rows) {
  if (e.ith == 0) {
    std::memset(offsets, 0, sizeof(int32_t) * (n_expert + 1));
    const int64_t nk = static_cast<int64_t>(n) * k;
    for (int64_t i = 0; i < nk; ++i) ++offsets[ids[i] + 1];
    for (int64_t x = 0; x < n_expert; ++x) offsets[x + 1] += offsets[x];
    // fill in token order; offsets[x] walks forward, then is shifted back
    for (int64_t i = 0; i < nk; ++i) rows[offsets[ids[i]]++] = static_cast<int32_t>(i);
    for (int64_t x = n_expert; x > 0; --x) offsets[x] = offsets[x - 1];
    offsets[0] = 0;
  }
  e.barrier();
}

void moe_gather(Exec& e, const float* src, int64_t src_stride, const int32_t* rows, int m, int64_t k, float* dst,
                int64_t dst_stride, int64_t width) {
  const auto [i0, i1] = e.range(m);
  for (int64_t i = i0; i < i1; ++i) {
    std::memcpy(dst + i * dst_stride, src + (rows[i] / k) * src_stride, sizeof(float) * width);
  }
  e.barrier();
}

void moe_scatter(Exec& e, const float* y, int64_t y_stride, const int32_t* rows, int m, const float* weights,
                 float* slots, int64_t width) {
  const auto [i0, i1] = e.range(m);
  for (int64_t i = i0; i < i1; ++i) {
    const float* yr = y + i * y_stride;
    const float w = weights[rows[i]];
    float* o = slots + static_cast<int64_t>(rows[i]) * width;
    for (int64_t c = 0; c < width; ++c) o[c] = yr[c] * w;
  }
  e.barrier();
}

void moe_sum(Exec& e, const float* slots, int n, int64_t k, int64_t width, float* out, int64_t out_stride) {
  const auto [t0, t1] = e.range(n);
  for (int64_t t = t0; t < t1; ++t) {
    const float* s = slots + t * k * width;
    float* o = out + t * out_stride;
    std::memcpy(o, s, sizeof(float) * width);
    for (int64_t j = 1; j < k; ++j) {
      const float* sj = s + j * width;
      for (int64_t c = 0; c < width; ++c) o[c] = o[c] + sj[c];
    }
  }
  e.barrier();
}

void swiglu_oai(Exec& e, const float* gate, int64_t gate_stride, const float* up, int64_t up_stride, float* out,
                int64_t out_stride, int n, int64_t width, float alpha, float limit) {
  auto row = [&](int64_t t, int64_t c0, int64_t c1) {
    const float* g = gate + t * gate_stride;
    const float* u = up + t * up_stride;
    float* o = out + t * out_stride;
    for (int64_t c = c0; c < c1; ++c) {
      const float x = std::min(g[c], limit);
      const float y = std::clamp(u[c], -limit, limit);
      const float glu = x / (1.0f + std::exp(alpha * (-x)));
      o[c] = glu * (y + 1.0f);
    }
  };
  if (n >= e.nth) {
    const auto [t0, t1] = e.range(n);
    for (int64_t t = t0; t < t1; ++t) row(t, 0, width);
  } else {
    const auto [c0, c1] = e.range(width, 16);
    for (int64_t t = 0; t < n; ++t) row(t, c0, c1);
  }
  e.barrier();
}

}  // namespace strix::ops
