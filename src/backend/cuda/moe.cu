// The mixture-of-experts kernels (graph::moe_ffn on the GPU): the router's
// softmax and top-k, the indirect decode GEMVs that read each (token, slot)
// pair's expert id from device memory (no host sync, so a captured decode
// graph replays them), and the weighted sum of the selected experts.
//
// A pair p = t * k + j is slot j of token t. The GEMVs' grid is (row block,
// pair, weight): each warp one output row of the pair's expert, reading the
// activation row p / act_div (act_div = k: the token's row, as gate and up
// read it; 1: the pair's own row, as down reads the SwiGLU of its gate/up).
#include <cmath>
#include <string>

#include "backend/cuda/common.cuh"
#include "backend/cuda/gemv_rows.cuh"
#include "backend/cuda/kernels.h"

namespace strix::cuda {

namespace {

constexpr int kMoeMaxExperts = 512;  // llama.cpp's LLAMA_MAX_EXPERTS (read_moe_hparams refuses more)
constexpr int kIdWarps = 4;          // output rows per block of the indirect GEMVs

// One warp per token (ops::moe_route): probs = softmax(logits) (max, exp(x -
// max) summed in double, times (float)(1 / sum)); the k largest in descending
// order, ties to the lower expert index (std::sort's order for distinct
// values, and its insertion sort's for up to 16 experts); weights = the
// selected probs, renormalised (sum in double, clamped below at 2^-14) when
// norm_weights; times scale when it is neither 0 nor 1.
__global__ void moe_route_kernel(const float* __restrict__ logits, int64_t ls, int n_expert, int k, int norm_weights,
                                 float scale, int32_t* __restrict__ ids, float* __restrict__ weights) {
  __shared__ float p[kMoeMaxExperts];
  __shared__ float w[kMoeMaxExperts];
  __shared__ uint8_t taken[kMoeMaxExperts];
  const int t = static_cast<int>(blockIdx.x), lane = static_cast<int>(threadIdx.x);
  const float* lg = logits + t * ls;
  float mx = -INFINITY;
  for (int i = lane; i < n_expert; i += 32) mx = fmaxf(mx, lg[i]);
  mx = warp_max(mx);
  double sum = 0;
  for (int i = lane; i < n_expert; i += 32) {
    const float e = expf(lg[i] - mx);
    p[i] = e;
    taken[i] = 0;
    sum += static_cast<double>(e);
  }
  sum = warp_sum(sum);
  const float inv = static_cast<float>(1.0 / sum);
  for (int i = lane; i < n_expert; i += 32) p[i] *= inv;
  __syncwarp();
  for (int j = 0; j < k; ++j) {
    float best = -INFINITY;
    int at = 0x7fffffff;
    for (int i = lane; i < n_expert; i += 32) {  // i ascending: strictly larger keeps the lower index
      if (!taken[i] && (p[i] > best || at == 0x7fffffff)) {
        best = p[i];
        at = i;
      }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float ob = __shfl_xor_sync(0xffffffffu, best, o);
      const int oa = __shfl_xor_sync(0xffffffffu, at, o);
      if (ob > best || (!(ob < best) && oa < at)) {  // ties (and NaN) to the lower index
        best = ob;
        at = oa;
      }
    }
    if (lane == 0) {
      ids[t * k + j] = at;
      w[j] = p[at];
      taken[at] = 1;
    }
    __syncwarp();
  }
  if (lane == 0) {
    float s = 1.0f;
    if (norm_weights) {
      double ws = 0;
      for (int j = 0; j < k; ++j) ws += static_cast<double>(w[j]);
      s = fmaxf(static_cast<float>(ws), 6.103515625e-5f);
    }
    for (int j = 0; j < k; ++j) {
      float v = norm_weights ? w[j] / s : w[j];
      if (scale != 0.0f && scale != 1.0f) v *= scale;
      weights[t * k + j] = v;
    }
  }
}

// The indirect integer GEMV (gemv_q.cu's row products): up to two weights of
// one activation (gate and up), blockIdx.z picks the weight.
struct IdSeg {
  const uint8_t* w;
  size_t nb1, nb2;
  int64_t rows;
  int n_expert;
  GgmlType type;
  float* y;
  int64_t ys;
};
struct IdSegs {
  IdSeg s[2];
};

__global__ void gemv_q_id_kernel(IdSegs segs, const int32_t* __restrict__ ids, int act_div,
                                 const int8_t* __restrict__ aq, const float* __restrict__ ad, int64_t width) {
  const IdSeg& sg = blockIdx.z ? segs.s[1] : segs.s[0];
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kIdWarps + warp;
  if (r >= sg.rows) return;
  const int p = static_cast<int>(blockIdx.y);
  const int x = ids[p];
  if (x < 0 || x >= sg.n_expert) return;  // never from moe_route; leaves the row unwritten
  const uint8_t* row = sg.w + static_cast<size_t>(x) * sg.nb2 + r * sg.nb1;
  const int64_t a = p / act_div;
  float acc[1][1] = {{0.0f}};
  switch (sg.type) {
    case GgmlType::Q8_0:
      row_loop<BQ8_0, 1, 1, 1>(row, sg.nb1, 1, static_cast<int>(width / 32), aq + a * width, ad + a * (width / 32),
                               width, lane, 0, acc);
      break;
    case GgmlType::Q4_K:
      row_loop<BQ4_K, 1, 1, 1>(row, sg.nb1, 1, static_cast<int>(width / 256), aq + a * width, ad + a * (width / 256),
                               width, lane, 0, acc);
      break;
    default:
      row_loop<BQ6_K, 1, 1, 1>(row, sg.nb1, 1, static_cast<int>(width / 256), aq + a * width, ad + a * (width / 256),
                               width, lane, 0, acc);
      break;
  }
  const float s = warp_sum(acc[0][0]);
  if (lane == 0) sg.y[p * sg.ys + r] = s;
}

// The indirect float GEMV (matmul.cu's gemv_row_f), one weight.
template <class Q>
__global__ void gemv_id_kernel(const uint8_t* __restrict__ w, size_t nb1, size_t nb2, int64_t ne0, int64_t rows,
                               int n_expert, const int32_t* __restrict__ ids, int act_div, const float* __restrict__ x,
                               int64_t xs, float* __restrict__ y, int64_t ys) {
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kIdWarps + warp;
  if (r >= rows) return;
  const int p = static_cast<int>(blockIdx.y);
  const int e = ids[p];
  if (e < 0 || e >= n_expert) return;
  float acc[1] = {0.0f};
  gemv_row_f<Q, 1>(w + static_cast<size_t>(e) * nb2 + r * nb1, ne0, x + (p / act_div) * xs, 0, lane, acc);
  const float s = warp_sum(acc[0]);
  if (lane == 0) y[p * ys + r] = s;
}

template <class Q>
void launch_gemv_id(const DevExperts& w, const int32_t* ids, int n_pairs, int act_div, const float* x, int64_t xs,
                    float* y, int64_t ys, cudaStream_t st) {
  const dim3 grid(blocks_for(w.w.ne1, kIdWarps), static_cast<unsigned>(n_pairs));
  gemv_id_kernel<Q><<<grid, 32 * kIdWarps, 0, st>>>(w.w.data, w.w.nb1, w.nb2, w.w.ne0, w.w.ne1,
                                                     static_cast<int>(w.n_expert), ids, act_div, x, xs, y, ys);
}

// ggml's mul then add per slot: ((y0 w0 + y1 w1) + y2 w2) + ..., every
// product and sum rounded (never fused).
__global__ void moe_weighted_sum_kernel(const float* __restrict__ y, int64_t ys, const int32_t* __restrict__ pos,
                                        const float* __restrict__ wts, int k, int64_t width, float* __restrict__ out,
                                        int64_t os) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= width) return;
  const int t = static_cast<int>(blockIdx.y);
  float o = 0.0f;
  for (int j = 0; j < k; ++j) {
    const int p = t * k + j;
    const int64_t row = pos ? pos[p] : p;
    const float v = __fmul_rn(y[row * ys + c], wts[p]);
    o = j == 0 ? v : __fadd_rn(o, v);
  }
  out[t * os + c] = o;
}

}  // namespace

void moe_route(const float* logits, int64_t logits_stride, int n, int n_expert, int k, bool norm_weights, float scale,
               int32_t* ids, float* weights, cudaStream_t st) {
  if (n_expert < 1 || n_expert > kMoeMaxExperts || k < 1 || k > n_expert) {
    throw Error("moe_route: " + std::to_string(k) + " of " + std::to_string(n_expert) + " experts");
  }
  if (n == 0) return;
  moe_route_kernel<<<static_cast<unsigned>(n), 32, 0, st>>>(logits, logits_stride, n_expert, k, norm_weights ? 1 : 0,
                                                            scale, ids, weights);
  check_launch("moe_route");
}

void gemv_q_id(const GemvIdOut* outs, int count, const int32_t* ids, int n_pairs, int act_div, const int8_t* q,
               const float* d, cudaStream_t st) {
  if (count < 1 || count > 2) throw Error("gemv_q_id: 1 or 2 weights per launch");
  const DevWeight& w0 = outs[0].w->w;
  IdSegs segs{};
  int64_t rows = 0;
  for (int i = 0; i < count; ++i) {
    const DevExperts& e = *outs[i].w;
    if (!gemv_q_supported(e.w.type)) refuse_type(e.w.type);
    if (e.w.ne0 != w0.ne0 || gemv_q_block(e.w.type) != gemv_q_block(w0.type) || e.w.ne0 % gemv_q_block(e.w.type)) {
      throw Error("gemv_q_id: the weights differ in row length or activation type, or rows are not whole blocks");
    }
    segs.s[i] = {e.w.data, e.w.nb1, e.nb2, e.w.ne1, static_cast<int>(e.n_expert), e.w.type, outs[i].y, outs[i].y_stride};
    rows = rows > e.w.ne1 ? rows : e.w.ne1;
  }
  if (n_pairs == 0) return;
  // a weight with fewer rows than the grid's exits early in its extra blocks
  const dim3 grid(blocks_for(rows, kIdWarps), static_cast<unsigned>(n_pairs), static_cast<unsigned>(count));
  gemv_q_id_kernel<<<grid, 32 * kIdWarps, 0, st>>>(segs, ids, act_div, q, d, w0.ne0);
  check_launch("gemv_q_id");
}

void gemv_id(const DevExperts& w, const int32_t* ids, int n_pairs, int act_div, const float* x, int64_t x_stride,
             float* y, int64_t y_stride, cudaStream_t st) {
  if (const char* why = type_unsupported_reason(w.w.type, w.w.ne0)) throw Refusal(std::string("gemv_id: ") + why);
  if (x_stride % 2 != 0 || reinterpret_cast<uintptr_t>(x) % 8 != 0) {
    throw Error("gemv_id: activation rows must be 8-byte aligned (even stride)");
  }
  if (n_pairs == 0) return;
  STRIX_CUDA_DISPATCH_TYPE(w.w.type, w.w.ne0, launch_gemv_id, w, ids, n_pairs, act_div, x, x_stride, y, y_stride, st);
  check_launch("gemv_id");
}

void moe_weighted_sum(const float* y, int64_t y_stride, const int32_t* pos, const float* weights, int n, int k,
                      int64_t width, float* out, int64_t out_stride, cudaStream_t st) {
  if (n == 0) return;
  const dim3 grid(blocks_for(width, 256), static_cast<unsigned>(n));
  moe_weighted_sum_kernel<<<grid, 256, 0, st>>>(y, y_stride, pos, weights, k, width, out, out_stride);
  check_launch("moe_weighted_sum");
}

}  // namespace strix::cuda
