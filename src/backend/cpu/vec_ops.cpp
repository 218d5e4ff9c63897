// Scalar vector ops (the reference) and the level choice.
#include "backend/cpu/vec_ops.h"

#include <cmath>

#include "backend/cpu/attn_ref.h"
#include "backend/cpu/kernels.h"
#include "quant/fp16.h"

namespace strix::cpu {

namespace {

void axpy_f16_scalar(int64_t n, float* y, const uint16_t* x, float a) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * fp16_to_fp32(x[i]);
}

void to_f16_scalar(int64_t n, const float* x, uint16_t* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_fp16(x[i]);
}

void swiglu_scalar(int64_t n, const float* g, const float* u, float* out) {
  const int64_t nv = n - n % 16;  // ggml's 16-lane part; the rest goes through libm expf
  int64_t i = 0;
  for (; i < nv; ++i) out[i] = g[i] / (1.0f + attn_ref::expf16(0.0f - g[i])) * u[i];
  for (; i < n; ++i) out[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

double softmax_exp_scalar(int64_t n, float* x, float max) {
  double sum = 0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int l = 0; l < 16; ++l) x[i + l] = attn_ref::expf16(x[i + l] - max);
    sum += static_cast<double>(attn_ref::reduce16(x + i));
  }
  for (; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += static_cast<double>(x[i]);
  }
  return sum;
}

// ggml_vec_dot_f16 (AVX-512 build): four 16-lane FMA accumulators over
// 64-element steps, folded (0+2, 1+3, 0+1), reduced, then the tail in double.
float dot_f16_vecdot_order(int n, const uint16_t* x, const float* y) {
  const int np = n & ~63;
  if (np == 0) {  // short heads: ggml's leftover loop only
    double sum = 0;
    for (int i = 0; i < n; ++i) sum += static_cast<double>(fp16_to_fp32(x[i]) * y[i]);
    return static_cast<float>(sum);
  }
  float acc[4][16] = {};
  for (int i = 0; i < np; i += 64) {
    for (int j = 0; j < 4; ++j) {
      for (int l = 0; l < 16; ++l) {
        const int e = i + j * 16 + l;
        acc[j][l] = std::fma(fp16_to_fp32(x[e]), y[e], acc[j][l]);
      }
    }
  }
  for (int l = 0; l < 16; ++l) {
    acc[0][l] = acc[0][l] + acc[2][l];
    acc[1][l] = acc[1][l] + acc[3][l];
  }
  for (int l = 0; l < 16; ++l) acc[0][l] = acc[0][l] + acc[1][l];
  double sum = np > 0 ? static_cast<double>(attn_ref::reduce16(acc[0])) : 0.0;
  for (int i = np; i < n; ++i) sum += static_cast<double>(fp16_to_fp32(x[i]) * y[i]);
  return static_cast<float>(sum);
}

void round_f16_scalar(int64_t n, const float* x, float scale, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = fp16_to_fp32(fp32_to_fp16(x[i] * scale));
}

float attn_dot_scalar(int n, const uint16_t* k, const float* q) {
  if (n % 16 != 0) return dot_f16_vecdot_order(n, k, q);
  float acc[16] = {};
  for (int c = 0; c < n; c += 16) {
    for (int l = 0; l < 16; ++l) acc[l] = std::fma(fp16_to_fp32(k[c + l]), q[c + l], acc[l]);
  }
  return attn_ref::reduce16(acc);
}

double attn_exp_scalar(int n, float* x, float max) {
  double sum = 0;
  for (int c = 0; c < n; c += 16) {
    float e[16] = {};
    for (int l = 0; l < 16 && c + l < n; ++l) e[l] = x[c + l] = attn_ref::expf16(x[c + l] - max);
    sum += static_cast<double>(attn_ref::reduce16(e));
  }
  return sum;
}

void attn_acc_scalar(int n, int first, const float* p, const uint16_t* v, size_t stride, int hd, int lanes,
                     float* acc) {
  for (int i = 0; i < n; ++i) {
    if (p[i] == 0.0f) continue;
    float* a = acc + static_cast<size_t>((first + i) & (lanes - 1)) * hd;
    const uint16_t* vr = v + i * stride;
    for (int d = 0; d < hd; ++d) a[d] = std::fma(fp16_to_fp32(vr[d]), p[i], a[d]);
  }
}

void attn_reduce_scalar(int hd, int lanes, float* acc, float* out) {
  if (lanes == 64) attn_ref::fold64(hd, acc);
  float l16[16];
  for (int d = 0; d < hd; ++d) {
    for (int l = 0; l < 16; ++l) l16[l] = acc[static_cast<size_t>(l) * hd + d];
    out[d] = attn_ref::reduce16(l16);
  }
}

VecOps build() {
  VecOps v{};
  detail::fill_vec_ops_scalar(v);
  if (cpu_kernels().isa >= CpuIsa::kAvx2) detail::fill_vec_ops_avx2(v);
  return v;
}

}  // namespace

namespace detail {
void fill_vec_ops_scalar(VecOps& v) {
  v.axpy_f16 = axpy_f16_scalar;
  v.to_f16 = to_f16_scalar;
  v.swiglu = swiglu_scalar;
  v.softmax_exp = softmax_exp_scalar;
  v.attn_dot = attn_dot_scalar;
  v.attn_exp = attn_exp_scalar;
  v.attn_acc = attn_acc_scalar;
  v.attn_reduce = attn_reduce_scalar;
  v.attn_dot_vecdot = dot_f16_vecdot_order;
  v.round_f16 = round_f16_scalar;
}

}  // namespace detail

const VecOps& vec_ops() {
  static const VecOps ops = build();
  return ops;
}

}  // namespace strix::cpu
