// Exact numerics on CUDA (ContextOptions::exact_numerics, `--exact`): kernels
// that compute every value in the float order of libllama's CPU backend (its
// zen4 build, which Strix's AVX-512 CPU kernels follow bit for bit), so a
// dense model of F32 / F16 / Q8_0 / Q4_K / Q6_K weights gives libllama's logits bit for bit
// instead of within float-order noise. Each output keeps its own chain of
// ggml's lanes (one thread per lane) instead of the fast kernels' warp trees:
//   - Q8_0 products: eight lanes of four int8 products each, one FMA chain
//     per lane over the blocks (dx * dy times the lane's integer sum), the
//     lanes added as hsum of 8 (vec_dot in decode, tinyBLAS_Q0 in prefill:
//     the same order);
//   - Q4_K (repacked by libllama) and Q6_K: the exact integer sums of each
//     super-block, then its gemm / gemv FMAs (Q4_K) or vec_dot's 8 lanes (Q6_K);
//   - F16 / F32 products: ggml_vec_dot's four 16-lane accumulators over
//     64-element steps, folded (a0 + a2) + (a1 + a3) and reduced as
//     _mm512_reduce_add_ps, its tail in double (F16) or in float (F32), for
//     a single column or rows not a multiple of 4; tinyBLAS's one 16-lane
//     chain otherwise;
//   - attention as libllama computes it without flash attention: q rounded
//     to f16, q.k in vec_dot's order (one token of its sequence in the
//     micro-batch) or tinyBLAS's, ggml's 16-lane expf, the exp sum per 16
//     cells added in double, probabilities rounded to f16, P.V in 64 or 16
//     lanes over the cells;
//   - SwiGLU with ggml's 16-lane expf, RoPE from the host's cos/sin table
//     (ops::rope_cache, the CPU's own values).
// They are slower than the fast kernels (no tensor cores, no fusion); the
// fast kernels differ from libllama in float order only.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/kernels.h"

namespace strix::cuda {

// y[t][r] = row r of Q8_0 weight w times quantize_act's Q8_0 rows (q, d) of
// token t, for t < n (any n), in ggml's Q8_0 order.
void gemv_q8_0_exact(const DevWeight& w, const int8_t* q, const float* d, int n, float* y, int64_t y_stride,
                     cudaStream_t st);

// The same for Q8_0, Q4_K (rows a multiple of 8: libllama repacks them; its
// gemm order for columns [0, n - n % 4), its gemv order for the rest) and Q6_K
// (vec_dot's order) weights against quantize_act's rows (Q8_0 / Q8_K).
void gemv_q_exact(const DevWeight& w, const int8_t* q, const float* d, int n, float* y, int64_t y_stride,
                  cudaStream_t st);

// y[t][r] = row r of F16 / F32 weight w times x[t] (already rounded to the
// weight's partner: f16 values for F16 weights), in the order ggml-cpu uses
// for a product of n columns.
void gemv_float_exact(const DevWeight& w, const float* x, int64_t x_stride, int n, float* y, int64_t y_stride,
                      cudaStream_t st);

// out = silu(gate) * up as ggml-cpu's AVX-512 ggml_vec_swiglu_f32.
void swiglu_exact(const float* gate, int64_t gate_stride, const float* up, int64_t up_stride, float* out,
                  int64_t out_stride, int n, int64_t width, cudaStream_t st);

// RoPE of q and k in place (cos/sin of position p at table[p * n_rot ..],
// pairs as ops::rope_cache writes them), then k and v stored as f16 at
// (seq[t], pos[t]).
void rope_kv_store_exact(float* q, int64_t q_stride, float* k, int64_t k_stride, const float* v, int64_t v_stride,
                         int n, int64_t n_head, int64_t n_head_kv, int64_t head_dim, int n_rot, bool neox,
                         const int32_t* pos, const int32_t* seq, const float* table, const KvLayout& kv,
                         cudaStream_t st);

// attention() in libllama's CPU order (no sliding window, no sinks).
// The most cells a sequence may hold for it (shared memory of one block).
int attention_exact_max_cells(int head_dim_k, int head_dim_v);
void attention_exact(const KvLayout& kv, const AttnArgs& a, cudaStream_t st);

}  // namespace strix::cuda
