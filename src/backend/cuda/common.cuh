// Shared by the .cu files: launch checks, half conversions, warp reductions
// and the per-type dequantization of 8 weights at a time.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "backend/cuda/kernels.h"
#include "core/error.h"
#include "quant/types.h"

namespace strix::cuda {

// After a launch: a bad configuration is reported now, naming the kernel
// (errors of the kernel's execution surface at the next synchronizing call).
inline void check_launch(const char* kernel) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    throw Error(std::string("CUDA kernel ") + kernel + " failed to launch: " + cudaGetErrorString(e));
}

inline unsigned blocks_for(int64_t n, int threads) { return static_cast<unsigned>((n + threads - 1) / threads); }

// The row of cell `pos` of sequence `seq` in a layer's K / V (KvLayout).
__device__ __forceinline__ int64_t kv_cell(const KvLayout& kv, int seq, int pos) {
  if (kv.blocks == nullptr) return static_cast<int64_t>(seq) * kv.seq_cap + pos;
  const int mask = (1 << kv.block_shift) - 1;
  return (static_cast<int64_t>(__ldg(kv.blocks + static_cast<int64_t>(seq) * kv.max_blocks + (pos >> kv.block_shift)))
          << kv.block_shift) +
         (pos & mask);
}

__device__ __forceinline__ float h2f(uint16_t h) { return __half2float(__ushort_as_half(h)); }
__device__ __forceinline__ uint16_t f2h(float f) { return __half_as_ushort(__float2half_rn(f)); }

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ double warp_sum(double v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
// Sum over a block of kThreads (== blockDim.x, a multiple of 32, at most 1024)
// in double, as ops::rms_norm sums; every thread gets the sum.
template <int kThreads>
__device__ double block_sum(double v) {
  __shared__ double part[kThreads / 32];
  v = warp_sum(v);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  if (lane == 0) part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    double s = lane < kThreads / 32 ? part[lane] : 0.0;
    s = warp_sum(s);
    if (lane == 0) part[0] = s;
  }
  __syncthreads();
  const double s = part[0];
  __syncthreads();
  return s;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// ---- 8 weights at a time ---------------------------------------------------
// A row is a run of blocks of kElems elements (kBytes each); a block splits
// into kElems / 8 parts. part() dequantizes one part into v[8] and says where
// its elements sit in the block: pairs v[2r], v[2r+1] are elements
// idx[r], idx[r] + 1. The arithmetic is that of the scalar dequantizers in
// src/quant (same products in the same order), so values are identical.
// The other types' readers and the dispatch over all of them (the float
// path's STRIX_CUDA_DISPATCH_TYPE) are in dequant_types.cuh.

// kPart: elements per part (8, or 2 for the narrow F32/F16 rows whose length
// is not a multiple of 8); kPairs: pairs a part fills (4, or 1).
struct QF32 {
  static constexpr int kElems = 8, kBytes = 32, kPart = 8, kPairs = 4;
  __device__ __forceinline__ static void part(const uint8_t* b, int, float v[8], int idx[4]) {
    const float4* p = reinterpret_cast<const float4*>(b);
    const float4 a = p[0], c = p[1];
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = c.x, v[5] = c.y, v[6] = c.z, v[7] = c.w;
    idx[0] = 0, idx[1] = 2, idx[2] = 4, idx[3] = 6;
  }
};

struct QF32N {
  static constexpr int kElems = 2, kBytes = 8, kPart = 2, kPairs = 1;
  __device__ __forceinline__ static void part(const uint8_t* b, int, float v[8], int idx[4]) {
    const float2 a = *reinterpret_cast<const float2*>(b);
    v[0] = a.x, v[1] = a.y;
    idx[0] = 0;
  }
};

struct QF16N {
  static constexpr int kElems = 2, kBytes = 4, kPart = 2, kPairs = 1;
  __device__ __forceinline__ static void part(const uint8_t* b, int, float v[8], int idx[4]) {
    const uint32_t w = *reinterpret_cast<const uint32_t*>(b);
    v[0] = h2f(static_cast<uint16_t>(w & 0xffff));
    v[1] = h2f(static_cast<uint16_t>(w >> 16));
    idx[0] = 0;
  }
};

struct QF16 {
  static constexpr int kElems = 8, kBytes = 16, kPart = 8, kPairs = 4;
  __device__ __forceinline__ static void part(const uint8_t* b, int, float v[8], int idx[4]) {
    const uint4 u = *reinterpret_cast<const uint4*>(b);
    const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      v[2 * r] = h2f(static_cast<uint16_t>(w[r] & 0xffff));
      v[2 * r + 1] = h2f(static_cast<uint16_t>(w[r] >> 16));
      idx[r] = 2 * r;
    }
  }
};

// block_q8_0: half d, int8 qs[32]; x = q * d. Part p: qs[8p .. 8p+7].
struct QQ8_0 {
  static constexpr int kElems = 32, kBytes = 34, kPart = 8, kPairs = 4;
  __device__ __forceinline__ static void part(const uint8_t* b, int p, float v[8], int idx[4]) {
    const float d = h2f(static_cast<uint16_t>(b[0] | (b[1] << 8)));
    const int8_t* q = reinterpret_cast<const int8_t*>(b + 2 + 8 * p);
#pragma unroll
    for (int i = 0; i < 8; ++i) v[i] = static_cast<float>(q[i]) * d;
#pragma unroll
    for (int r = 0; r < 4; ++r) idx[r] = 8 * p + 2 * r;
  }
};

// block_q4_K: half d, half dmin, scales[12], qs[128]. Chunk j = p / 8 of qs
// (32 bytes) holds elements 64j.. (low nibbles, sub-block 2j) and 64j+32..
// (high nibbles, sub-block 2j+1); part p takes 4 bytes of it.
__device__ __forceinline__ void q4k_scale_min(int j, const uint8_t* q, int& sc, int& m) {
  if (j < 4) {
    sc = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    sc = (q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4);
    m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}
struct QQ4_K {
  static constexpr int kElems = 256, kBytes = 144, kPart = 8, kPairs = 4;
  __device__ __forceinline__ static void part(const uint8_t* b, int p, float v[8], int idx[4]) {
    const float d = h2f(static_cast<uint16_t>(b[0] | (b[1] << 8)));
    const float dmin = h2f(static_cast<uint16_t>(b[2] | (b[3] << 8)));
    const int j = p >> 3, o = (p & 7) * 4;
    int sc, m;
    q4k_scale_min(2 * j, b + 4, sc, m);
    const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
    q4k_scale_min(2 * j + 1, b + 4, sc, m);
    const float d2 = d * static_cast<float>(sc), m2 = dmin * static_cast<float>(m);
    const uint32_t q = *reinterpret_cast<const uint32_t*>(b + 16 + 32 * j + o);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint32_t byte = (q >> (8 * i)) & 0xff;
      // product and difference rounded apart, as ggml's dequantize_row_q4_K (no FMA contraction)
      v[i] = __fsub_rn(__fmul_rn(d1, static_cast<float>(byte & 0x0f)), m1);
      v[4 + i] = __fsub_rn(__fmul_rn(d2, static_cast<float>(byte >> 4)), m2);
    }
    idx[0] = 64 * j + o, idx[1] = 64 * j + o + 2, idx[2] = 64 * j + 32 + o, idx[3] = 64 * j + 32 + o + 2;
  }
};

// block_q6_K: ql[128], qh[64], int8 scales[16], half d. Half h = p / 16 of
// 128 elements; part p takes l, l+1 (l = 2 * (p % 16)) of its four runs of 32.
struct QQ6_K {
  static constexpr int kElems = 256, kBytes = 210, kPart = 8, kPairs = 4;
  __device__ __forceinline__ static void part(const uint8_t* b, int p, float v[8], int idx[4]) {
    const float d = h2f(static_cast<uint16_t>(b[208] | (b[209] << 8)));
    const int h = p >> 4, l = (p & 15) * 2;
    const uint8_t* ql = b + 64 * h;
    const uint8_t* qh = b + 128 + 32 * h;
    const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192 + 8 * h);
    const int is = l / 16;
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const int a = ql[l + k], c = ql[l + 32 + k], hb = qh[l + k];
      const int q1 = ((a & 0x0f) | (((hb >> 0) & 3) << 4)) - 32;
      const int q2 = ((c & 0x0f) | (((hb >> 2) & 3) << 4)) - 32;
      const int q3 = ((a >> 4) | (((hb >> 4) & 3) << 4)) - 32;
      const int q4 = ((c >> 4) | (((hb >> 6) & 3) << 4)) - 32;
      v[0 + k] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
      v[2 + k] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
      v[4 + k] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
      v[6 + k] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
    }
    idx[0] = 128 * h + l, idx[1] = 128 * h + l + 32, idx[2] = 128 * h + l + 64, idx[3] = 128 * h + l + 96;
  }
};

[[noreturn]] inline void refuse_type(GgmlType t) {
  throw Refusal(std::string("the CUDA backend has no kernel for weight type ") + type_name(static_cast<uint32_t>(t)));
}

}  // namespace strix::cuda
