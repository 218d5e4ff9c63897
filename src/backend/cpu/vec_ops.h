// Element-wise row kernels for the ops layer (attention inner loops,
// activations), with a scalar reference and an AVX2 level chosen with the
// rest of the CPU kernels (cpu_kernels().isa).
#pragma once

#include <cstddef>
#include <cstdint>

namespace strix::cpu {

struct VecOps {
  // y[i] += a * x[i], x in f16.
  void (*axpy_f16)(int64_t n, float* y, const uint16_t* x, float a);
  // y[i] = f16(x[i]) (round to nearest even).
  void (*to_f16)(int64_t n, const float* x, uint16_t* y);
  // out[i] = silu(g[i]) * u[i], silu(x) = x / (1 + exp(-x)).
  void (*swiglu)(int64_t n, const float* g, const float* u, float* out);
  // y[i] = exp(x[i] - max); returns the sum of y in double.
  double (*exp_sum)(int64_t n, const float* x, float max, float* y);

  // Attention in ggml-cpu's float order (its AVX-512 build, which libllama
  // picks on this class of CPU), so scores and probabilities round to f16
  // exactly as libllama's do:
  // q.k over n halves: one 16-lane FMA chain reduced like GCC's
  // _mm512_reduce_add_ps when n % 16 == 0 (tinyBLAS), else ggml_vec_dot_f16.
  float (*attn_dot)(int n, const uint16_t* k, const uint16_t* q);
  // x[i] = exp(x[i] - max) for i < n (ggml's 16-lane expf, lanes counted
  // from cell 0, cells past n count as 0); returns the sum as ggml adds it.
  double (*attn_exp)(int n, float* x, float max);
  // acc[lane][d] += p[i] * v_i[d] for rows i < n, lane = (first + i) % 16;
  // v rows are `stride` halves apart; acc holds 16 rows of hd floats.
  void (*attn_acc)(int n, int first, const float* p, const uint16_t* v, size_t stride, int hd, float* acc);
  // out[d] = the 16 lanes of acc[.][d] summed in _mm512_reduce_add_ps order.
  void (*attn_reduce)(int hd, const float* acc, float* out);
};

// The table matching cpu_kernels()'s level.
const VecOps& vec_ops();

namespace detail {
void fill_vec_ops_scalar(VecOps& v);
void fill_vec_ops_avx2(VecOps& v);
// ggml_vec_dot_f16's order (for q.k when the head size is not a multiple of 16).
float attn_dot_f16_vecdot_order(int n, const uint16_t* x, const uint16_t* y);
}  // namespace detail

}  // namespace strix::cpu
