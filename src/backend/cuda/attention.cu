// The KV cache write and attention over it. One block of 4 warps per (token,
// head): scores for cells [0, pos] in shared memory (q rounded to f16 as the
// CPU path does before its f16 dot products), softmax, probabilities rounded
// to f16 (ggml's f16 P·V), then P·V with warps over cells and lanes over dims.
// Decode (one query per sequence) is the one-token case; prefill is causal
// because each token reads only cells up to its own position, which
// kv_store wrote before. Split-K decode over long contexts is a later step.
#include <string>

#include "backend/cuda/common.cuh"
#include "backend/cuda/device.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/pdl.cuh"

namespace strix::cuda {

namespace {

constexpr int kAttnWarps = 4;
constexpr int kMaxHeadDimV = 256;  // 4 pairs of 64 dims per lane
constexpr int kMaxHeadDimK = 512;

__global__ void kv_store_kernel(KvLayout kv, const float* __restrict__ k, int64_t ks, const float* __restrict__ v,
                                int64_t vs, const int32_t* __restrict__ pos, const int32_t* __restrict__ seq,
                                int64_t total) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int64_t width = kv.k_dim + kv.v_dim;
  const int64_t t = i / width, c = i % width;
  const int64_t cell = kv_cell(kv, seq[t], pos[t]);
  if (c < kv.k_dim) {
    kv.k[cell * kv.k_dim + c] = f2h(k[t * ks + c]);
  } else {
    kv.v[cell * kv.v_dim + (c - kv.k_dim)] = f2h(v[t * vs + (c - kv.k_dim)]);
  }
}

__device__ float block_reduce(float v, float* red, bool is_max) {
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  v = is_max ? warp_max(v) : warp_sum(v);
  if (lane == 0) red[warp] = v;
  __syncthreads();
  float r = red[0];
  for (int w = 1; w < kAttnWarps; ++w) r = is_max ? fmaxf(r, red[w]) : r + red[w];
  __syncthreads();
  return r;
}

__global__ void attention_kernel(KvLayout kv, AttnArgs a) {
  extern __shared__ float smem[];
  griddep_wait();
  const int t = static_cast<int>(blockIdx.x) / a.n_head, h = static_cast<int>(blockIdx.x) % a.n_head;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int hdk = a.head_dim_k, hdv = a.head_dim_v;
  const int kvh = h / (a.n_head / a.n_head_kv);
  const int n_cells = a.pos[t] + 1;
  float* q_s = smem;                                // hdk
  float* red = q_s + hdk;                           // kAttnWarps * hdv (also the reductions)
  float* scores = red + kAttnWarps * kMaxHeadDimV;  // n_cells

  const float* q = a.q + static_cast<int64_t>(t) * a.q_stride + static_cast<int64_t>(h) * hdk;
  for (int i = threadIdx.x; i < hdk; i += blockDim.x) q_s[i] = h2f(f2h(q[i]));
  __syncthreads();

  const int sq = a.seq[t];
  const uint16_t* kbase = kv.k + static_cast<int64_t>(kvh) * hdk;
  for (int c = warp; c < n_cells; c += kAttnWarps) {
    const uint16_t* kr = kbase + kv_cell(kv, sq, c) * kv.k_dim;
    float s = 0;
    for (int i = 2 * lane; i < hdk; i += 64) {
      const __half2 k2 = *reinterpret_cast<const __half2*>(kr + i);
      const float2 kf = __half22float2(k2);
      s = fmaf(kf.x, q_s[i], s);
      s = fmaf(kf.y, q_s[i + 1], s);
    }
    s = warp_sum(s);
    if (lane == 0) scores[c] = s * a.kq_scale;
  }
  __syncthreads();

  float mx = -INFINITY;
  for (int c = threadIdx.x; c < n_cells; c += blockDim.x) mx = fmaxf(mx, scores[c]);
  mx = block_reduce(mx, red, true);
  float sum = 0;
  for (int c = threadIdx.x; c < n_cells; c += blockDim.x) {
    const float e = expf(scores[c] - mx);
    scores[c] = e;
    sum += e;
  }
  sum = block_reduce(sum, red, false);
  const float inv = 1.0f / sum;
  for (int c = threadIdx.x; c < n_cells; c += blockDim.x) scores[c] = h2f(f2h(scores[c] * inv));
  __syncthreads();

  float2 acc[kMaxHeadDimV / 64];
#pragma unroll
  for (int k = 0; k < kMaxHeadDimV / 64; ++k) acc[k] = make_float2(0.0f, 0.0f);
  const uint16_t* vbase = kv.v + static_cast<int64_t>(kvh) * hdv;
  for (int c = warp; c < n_cells; c += kAttnWarps) {
    const float p = scores[c];
    const uint16_t* vr = vbase + kv_cell(kv, sq, c) * kv.v_dim;
#pragma unroll
    for (int k = 0; k < kMaxHeadDimV / 64; ++k) {
      const int d = 2 * lane + 64 * k;
      if (d < hdv) {
        const float2 vf = __half22float2(*reinterpret_cast<const __half2*>(vr + d));
        acc[k].x = fmaf(p, vf.x, acc[k].x);
        acc[k].y = fmaf(p, vf.y, acc[k].y);
      }
    }
  }
#pragma unroll
  for (int k = 0; k < kMaxHeadDimV / 64; ++k) {
    const int d = 2 * lane + 64 * k;
    if (d < hdv) {
      red[warp * kMaxHeadDimV + d] = acc[k].x;
      red[warp * kMaxHeadDimV + d + 1] = acc[k].y;
    }
  }
  __syncthreads();
  float* out = a.out + static_cast<int64_t>(t) * a.out_stride + static_cast<int64_t>(h) * hdv;
  for (int d = threadIdx.x; d < hdv; d += blockDim.x) {
    float s = 0;
    for (int w = 0; w < kAttnWarps; ++w) s += red[w * kMaxHeadDimV + d];
    out[d] = s;
  }
}

size_t smem_bytes(int head_dim_k, int cells) {
  return sizeof(float) * (static_cast<size_t>(head_dim_k) + kAttnWarps * kMaxHeadDimV + static_cast<size_t>(cells));
}

int max_dynamic_smem() {
  static const int v = [] {
    int dev = 0, bytes = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess) {
      return 48 * 1024;
    }
    if (cudaFuncSetAttribute(attention_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) != cudaSuccess) {
      return 48 * 1024;
    }
    return bytes;
  }();
  return v;
}

}  // namespace

int attention_max_cells(int head_dim_k) {
  return static_cast<int>((max_dynamic_smem() - smem_bytes(head_dim_k, 0)) / sizeof(float));
}

void kv_store(const KvLayout& kv, const float* k, int64_t k_stride, const float* v, int64_t v_stride, int n,
              const int32_t* pos, const int32_t* seq, cudaStream_t st) {
  const int64_t total = static_cast<int64_t>(n) * (kv.k_dim + kv.v_dim);
  if (total == 0) return;
  kv_store_kernel<<<blocks_for(total, 256), 256, 0, st>>>(kv, k, k_stride, v, v_stride, pos, seq, total);
  check_launch("kv_store");
}

void attention(const KvLayout& kv, const AttnArgs& a, cudaStream_t st) {
  if (a.head_dim_v > kMaxHeadDimV || a.head_dim_k > kMaxHeadDimK || a.head_dim_k % 2 != 0 || a.head_dim_v % 2 != 0) {
    throw Refusal("attention: the CUDA backend runs even head sizes up to " + std::to_string(kMaxHeadDimK) + " (K) / " +
                  std::to_string(kMaxHeadDimV) + " (V); this model has " + std::to_string(a.head_dim_k) + " / " +
                  std::to_string(a.head_dim_v));
  }
  if (a.n_head_kv <= 0 || a.n_head % a.n_head_kv != 0) throw Error("attention: n_head is not a multiple of n_head_kv");
  if (a.n_tokens == 0) return;
  if (a.max_cells > attention_max_cells(a.head_dim_k)) {
    throw Refusal("attention: the CUDA backend attends over at most " +
                  std::to_string(attention_max_cells(a.head_dim_k)) + " cells per sequence (lower -c)");
  }
  const size_t smem = smem_bytes(a.head_dim_k, a.max_cells);
  check(pdl_launch(attention_kernel, dim3(static_cast<unsigned>(a.n_tokens * a.n_head)), dim3(32 * kAttnWarps), smem,
                   st, kv, a),
        "attention");
  check_launch("attention");
}

}  // namespace strix::cuda
