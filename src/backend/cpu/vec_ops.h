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
  // out[i] = silu(g[i]) * u[i], silu(x) = x / (1 + exp(-x)), as ggml-cpu's
  // AVX-512 ggml_vec_swiglu_f32: ggml_v_expf over 16-element chunks counted
  // from g[0], libm expf for the last n % 16.
  void (*swiglu)(int64_t n, const float* g, const float* u, float* out);
  // x[i] = exp(x[i] - max) as ggml_vec_soft_max_f32 (AVX-512 build): 16-lane
  // ggml_v_expf chunks, each reduced (_mm512_reduce_add_ps) and added in
  // double, then the last n % 16 with libm expf one by one; returns the sum.
  double (*softmax_exp)(int64_t n, float* x, float max);

  // Attention in ggml-cpu's float order (its AVX-512 build, which libllama
  // picks on this class of CPU), so scores and probabilities round to f16
  // exactly as libllama's do:
  // q.k over n halves: one 16-lane FMA chain reduced like GCC's
  // _mm512_reduce_add_ps when n % 16 == 0 (tinyBLAS), else ggml_vec_dot_f16.
  // q holds the query's f16 values as floats (round_f16 of it).
  float (*attn_dot)(int n, const uint16_t* k, const float* q);
  // x[i] = exp(x[i] - max) for i < n (ggml's 16-lane expf, lanes counted
  // from cell 0, cells past n count as 0); returns the sum as ggml adds it.
  double (*attn_exp)(int n, float* x, float max);
  // acc[lane][d] += p[i] * v_i[d] for rows i < n, lane = (first + i) % lanes;
  // v rows are `stride` halves apart; acc holds `lanes` rows of hd floats.
  // lanes = 16: tinyBLAS's one 16-lane chain over the cells (a batch of
  // several tokens); lanes = 64: ggml_vec_dot_f16's four 16-lane
  // accumulators over 64-cell steps (one token: ggml-cpu's llamafile_sgemm
  // declines n < 2, so decode takes the vec_dot path).
  void (*attn_acc)(int n, int first, const float* p, const uint16_t* v, size_t stride, int hd, int lanes, float* acc);
  // out[d] = acc[.][d] summed as ggml does: for 64 lanes first the folds
  // 0+2, 1+3, 0+1 of the four accumulators, then the 16 lanes in
  // _mm512_reduce_add_ps order.
  void (*attn_reduce)(int hd, int lanes, float* acc, float* out);
  // q.k over n halves in ggml_vec_dot_f16's order (one token per sequence).
  float (*attn_dot_vecdot)(int n, const uint16_t* k, const float* q);
  // out[i] = float(f16(x[i] * scale)) (round to nearest even): queries and
  // probabilities as ggml converts them for its f16 products.
  void (*round_f16)(int64_t n, const float* x, float scale, float* out);
};

// The table matching cpu_kernels()'s level.
const VecOps& vec_ops();

namespace detail {
void fill_vec_ops_scalar(VecOps& v);
void fill_vec_ops_avx2(VecOps& v);
}  // namespace detail

}  // namespace strix::cpu
