// The largest logits of each output row, on the device (kernels.h
// top_logits): a greedy sampler reads these few instead of a copy of the row.
#include <cstdint>

#include "backend/cuda/common.cuh"
#include "backend/cuda/kernels.h"

namespace strix::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kK = kTopLogits;

// (a, ia) ranks before (b, ib): larger value, or the same value and a lower id.
__device__ __forceinline__ bool before(float a, int32_t ia, float b, int32_t ib) {
  return a > b || (a == b && ia < ib);
}

// One block per row: each thread keeps the kK best of its strided share
// (sorted, in registers), then warp 0 takes the kK best of all of them.
__global__ void __launch_bounds__(kThreads)
    top_logits_kernel(const float* __restrict__ logits, int64_t n_vocab, float* __restrict__ top,
                      int32_t* __restrict__ ids) {
  __shared__ float sv[kThreads * kK];
  __shared__ int32_t si[kThreads * kK];
  const float* row = logits + static_cast<int64_t>(blockIdx.x) * n_vocab;
  float v[kK];
  int32_t id[kK];
#pragma unroll
  for (int j = 0; j < kK; ++j) v[j] = -INFINITY, id[j] = INT32_MAX;
  int bad = 0;
  for (int64_t i = threadIdx.x; i < n_vocab; i += kThreads) {
    const float x = row[i];
    bad |= isnan(x) || x == INFINITY;
    if (!before(x, static_cast<int32_t>(i), v[kK - 1], id[kK - 1])) continue;
    // insert, keeping the list sorted (static indices only: registers)
    float cv = x;
    int32_t ci = static_cast<int32_t>(i);
#pragma unroll
    for (int j = 0; j < kK; ++j) {
      if (before(cv, ci, v[j], id[j])) {
        const float tv = v[j];
        const int32_t ti = id[j];
        v[j] = cv, id[j] = ci;
        cv = tv, ci = ti;
      }
    }
  }
#pragma unroll
  for (int j = 0; j < kK; ++j) sv[threadIdx.x * kK + j] = v[j], si[threadIdx.x * kK + j] = id[j];
  bad = __syncthreads_or(bad);
  if (threadIdx.x >= 32) return;
  const int lane = static_cast<int>(threadIdx.x);
  constexpr int kPer = kThreads * kK / 32;
  for (int k = 0; k < kK; ++k) {
    float bv = -INFINITY;
    int32_t bi = INT32_MAX;
    int bj = -1;
    for (int j = lane * kPer; j < (lane + 1) * kPer; ++j) {
      if (before(sv[j], si[j], bv, bi)) bv = sv[j], bi = si[j], bj = j;
    }
#pragma unroll
    for (int o = 16; o > 0; o /= 2) {
      const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
      const int32_t oi = __shfl_xor_sync(0xffffffffu, bi, o);
      const int oj = __shfl_xor_sync(0xffffffffu, bj, o);
      if (before(ov, oi, bv, bi)) bv = ov, bi = oi, bj = oj;
    }
    if (lane == 0) {
      top[blockIdx.x * kK + k] = bv;
      ids[blockIdx.x * kK + k] = bad ? -1 : bi;
      if (bj >= 0) sv[bj] = -INFINITY, si[bj] = INT32_MAX;  // taken
    }
    __syncwarp();
  }
}

}  // namespace

void top_logits(const float* logits, int n, int64_t n_vocab, float* top, int32_t* ids, cudaStream_t st) {
  if (n <= 0) return;
  if (n_vocab < kK) throw Error("top_logits: a vocabulary of fewer than 8 tokens");
  top_logits_kernel<<<n, kThreads, 0, st>>>(logits, n_vocab, top, ids);
  check_launch("top_logits");
}

}  // namespace strix::cuda
