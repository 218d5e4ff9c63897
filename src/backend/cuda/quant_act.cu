// The activation quantizers of the integer decode GEMV (gemv_q.cu): plain
// (quantize_act), fused with SwiGLU (swiglu_quant) and fused with the
// residual add and RMS norm before a projection (rms_norm_quant), each with
// the arithmetic of libllama's CPU partner quantizers (act_quant.cuh).
#include <string>

#include "backend/cuda/act_quant.cuh"
#include "backend/cuda/common.cuh"
#include "backend/cuda/device.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/pdl.cuh"

namespace strix::cuda {

namespace {

// ---- activation quantizers: one thread per element, a block of 256 threads
// per 256 elements of a row (8 Q8_0 blocks or one Q8_K super-block) ----

constexpr int kQuantThreads = 256;

// The value quantized: ActPlain or ActSwiglu (act_quant.cuh).

// Q8_0 (ggml-cpu quantize_row_q8_0): d = amax / 127 stored as half, q = round_even(x * 127 / amax);
// Q8_K (quantize_row_q8_K): the value of largest magnitude (the first one on ties) sets
// iscale = -127 / max; q = min(127, round_even(iscale * x)); d = 1 / iscale.
// out (when set) gets the unquantized values.
template <int kBlk, class In>
__global__ void quant_kernel(In in, int64_t width, int8_t* __restrict__ q, float* __restrict__ d,
                             float* __restrict__ out, int64_t os) {
  griddep_wait();
  const int64_t t = blockIdx.y;
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kQuantThreads + threadIdx.x;
  if (kBlk == 32 && c >= width) return;  // whole warps (width % 32 == 0)
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const float v = in(t, c);
  if (out) out[t * os + c] = v;
  if constexpr (kBlk == 32) {
    quant_q8_0_warp(v, q + t * width + (c - lane), d + t * (width / 32) + c / 32, lane);
  } else {
    __shared__ float s_amax[8], s_val[8];
    __shared__ int s_at[8];
    float amax = fabsf(v), val = v;
    int at = lane;
    warp_abs_max_first(amax, val, at);
    if (lane == 0) {
      s_amax[warp] = amax;
      s_val[warp] = val;
      s_at[warp] = at;
    }
    __syncthreads();
    float best = s_amax[0], mx = s_val[0];
#pragma unroll
    for (int w = 1; w < 8; ++w) {  // warps in element order: strictly larger only keeps the first on ties
      if (s_amax[w] > best) {
        best = s_amax[w];
        mx = s_val[w];
      }
    }
    if (best == 0.0f) {
      q[t * width + c] = 0;
      if (threadIdx.x == 0) d[t * (width / 256) + c / 256] = 0.0f;
      return;
    }
    const float iscale = -127.f / mx;
    q[t * width + c] = static_cast<int8_t>(min(127, __float2int_rn(iscale * v)));
    if (threadIdx.x == 0) d[t * (width / 256) + c / 256] = 1.0f / iscale;
  }
}

template <class In>
void launch_quant(int blk, In in, int n, int64_t width, int8_t* q, float* d, float* out, int64_t os, cudaStream_t st) {
  const dim3 grid(blocks_for(width, kQuantThreads), static_cast<unsigned>(n));
  if (blk == 32) {
    pdl_launch(quant_kernel<32, In>, grid, dim3(kQuantThreads), 0, st, in, width, q, d, out, os);
  } else {
    pdl_launch(quant_kernel<256, In>, grid, dim3(kQuantThreads), 0, st, in, width, q, d, out, os);
  }
}

constexpr int kNormQuantThreads = 256;

// Blocks (chunk c, row t): block (c, t) writes elements [256 c, 256 c + 256)
// of row t. Every block sums the whole row (x + y) in double, with
// rms_norm_kernel's thread order and block_sum, so all of them (and the
// unfused kernel) get the same scale; the sum of the row is the only thing a
// block reads outside its chunk, which is why the updated residual goes to
// x_out (never x) and the normed row to out (never y).
// kLoads: loads in flight per thread in the sum (norm_loads16).
template <int kBlk, int kLoads>
__global__ void rms_norm_quant_kernel(const float* __restrict__ x, const float* __restrict__ y,
                                      float* __restrict__ x_out, int64_t dim, const float* __restrict__ w, float eps,
                                      float* __restrict__ out, int8_t* __restrict__ q, float* __restrict__ d,
                                      bool own_first) {
  __shared__ float row[kNormQuantThreads];
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kNormQuantThreads + threadIdx.x;  // this thread's element
  const float w_i = w && i < dim ? w[i] : 1.0f;  // the norm's weight: before the wait
  griddep_wait();
  const int64_t t = blockIdx.y;
  const float* xr = x + t * dim;
  const float* yr = y ? y + t * dim : nullptr;
  // this thread's own element, loaded with the sum's loads rather than after the block sum
  float own = 0.0f;
  if (own_first && i < dim) {
    own = xr[i];
    if (yr) own = own + yr[i];
  }
  // each thread's elements in rms_norm_kernel's order, kLoads of them loaded
  // before they are summed (a plain loop waits out one load at a time)
  double sum = 0;
  for (int64_t i0 = threadIdx.x; i0 < dim; i0 += kLoads * kNormQuantThreads) {
    float v[kLoads];
#pragma unroll
    for (int u = 0; u < kLoads; ++u) {
      const int64_t e = i0 + u * kNormQuantThreads;
      v[u] = e < dim ? xr[e] : 0.0f;
      if (yr && e < dim) v[u] = v[u] + yr[e];
    }
#pragma unroll
    for (int u = 0; u < kLoads; ++u) {
      if (i0 + u * kNormQuantThreads < dim) sum += static_cast<double>(v[u] * v[u]);
    }
  }
  sum = block_sum<kNormQuantThreads>(sum);
  const float mean = static_cast<float>(sum / static_cast<double>(dim));
  const float scale = 1.0f / sqrtf(mean + eps);
  const int lane = static_cast<int>(threadIdx.x) % 32;
  if (i < dim) {
    float v = own;
    if (!own_first) {
      v = xr[i];
      if (yr) v = v + yr[i];
    }
    if (yr) x_out[t * dim + i] = v;
    const float nv = v * scale;
    const float o = w ? nv * w_i : nv;
    if (out) out[t * dim + i] = o;
    if constexpr (kBlk == 32) {  // whole warps: dim % 32 == 0
      quant_q8_0_warp(o, q + t * dim + (i - lane), d + t * (dim / 32) + i / 32, lane);
    } else {
      row[threadIdx.x] = o;
    }
  }
  if constexpr (kBlk == 256) {  // dim % 256 == 0: the chunk is one Q8_K block
    __syncthreads();
    if (threadIdx.x < 32) {
      float v[8];
#pragma unroll
      for (int k = 0; k < 8; ++k) v[k] = row[32 * k + lane];
      quant_q8_K_warp(v, q + t * dim + 256 * blockIdx.x, d + t * (dim / 256) + blockIdx.x, lane);
    }
  }
}

// Loads in flight per thread in the fused norm's sum: 16 for rows over 2,048
// (a row of 4,096 in one round of x and y loads: H200 8B tg128, run 34 407.3 /
// 405.0 / 407.2 vs 402.6 / 403.9 / 402.7 with 8, run 35 405.0 / 404.7 / 407.2
// vs 402.8 / 403.7 / 403.5), else 8 (one round already); STRIX_CUDA_NORM_LOADS=8
// keeps 8 for A/B runs. (Keeping the thread's own element from these loads
// instead of reading it again after the block sum lost: run 35, 8B 371-373.)
bool norm_loads16() {
  static const bool on = !env_is("STRIX_CUDA_NORM_LOADS", "8");
  return on;
}

// Each thread's own element is loaded with the sum's loads (one round trip
// less after the block sum); STRIX_CUDA_NORM_OWN=0 reads it after the sum, for A/B runs.
bool norm_own_first() {
  static const bool on = !env_is("STRIX_CUDA_NORM_OWN", "0");
  return on;
}

}  // namespace

void quantize_act(GgmlType wtype, const float* x, int64_t x_stride, int n, int64_t width, int8_t* q, float* d,
                  cudaStream_t st) {
  if (!gemv_q_supported(wtype)) refuse_type(wtype);
  const int blk = gemv_q_block(wtype);
  if (width % blk != 0) throw Error("quantize_act: rows of " + std::to_string(width) + " are not whole blocks");
  if (n == 0 || width == 0) return;
  launch_quant(blk, ActPlain{x, x_stride}, n, width, q, d, nullptr, 0, st);
  check_launch("quantize_act");
}

void swiglu_quant(GgmlType wtype, const float* gate, int64_t gate_stride, const float* up, int64_t up_stride, int n,
                  int64_t width, int8_t* q, float* d, float* out, int64_t out_stride, cudaStream_t st) {
  if (!gemv_q_supported(wtype)) refuse_type(wtype);
  const int blk = gemv_q_block(wtype);
  if (width % blk != 0) throw Error("swiglu_quant: rows of " + std::to_string(width) + " are not whole blocks");
  if (n == 0 || width == 0) return;
  launch_quant(blk, ActSwiglu{gate, up, gate_stride, up_stride}, n, width, q, d, out, out_stride, st);
  check_launch("swiglu_quant");
}

void rms_norm_quant(const float* x, const float* y, float* x_out, int n, int64_t dim, const float* w, float eps,
                    float* out, GgmlType wtype, int8_t* q, float* d, cudaStream_t st) {
  if (!gemv_q_supported(wtype)) refuse_type(wtype);
  const int blk = gemv_q_block(wtype);
  if (dim % blk != 0) throw Error("rms_norm_quant: rows of " + std::to_string(dim) + " are not whole blocks");
  if (y && (x_out == nullptr || x_out == x || out == y)) {
    throw Error("rms_norm_quant: the residual goes to its own buffer and the normed row may not overwrite y");
  }
  if (n == 0) return;
  const dim3 grid(blocks_for(dim, kNormQuantThreads), static_cast<unsigned>(n));
  const dim3 block(kNormQuantThreads);
  const bool wide = dim > 8 * kNormQuantThreads && norm_loads16();
  const bool own_first = norm_own_first();
  auto launch = [&](auto kernel) {
    pdl_launch(kernel, grid, block, 0, st, x, y, x_out, dim, w, eps, out, q, d, own_first);
  };
  if (blk == 32) {
    wide ? launch(rms_norm_quant_kernel<32, 16>) : launch(rms_norm_quant_kernel<32, 8>);
  } else {
    wide ? launch(rms_norm_quant_kernel<256, 16>) : launch(rms_norm_quant_kernel<256, 8>);
  }
  check_launch("rms_norm_quant");
}

}  // namespace strix::cuda
