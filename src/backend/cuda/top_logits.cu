// The largest logits of each output row, on the device (kernels.h
// top_logits): a greedy sampler reads these few instead of a copy of the row.
#include <cstdint>

#include "backend/cuda/common.cuh"
#include "backend/cuda/kernels.h"

namespace strix::cuda {

namespace {

constexpr int kThreads = 1024;
constexpr int kLoads = 8;  // loads in flight per thread (each a strided element of the row)
constexpr int kK = kTopLogits;
constexpr int kWarps = kThreads / 32;
static_assert(kWarps <= 32, "the block's warps merge in one warp");

// (a, ia) ranks before (b, ib): larger value, or the same value and a lower id.
__device__ __forceinline__ bool before(float a, int32_t ia, float b, int32_t ib) {
  return a > b || (a == b && ia < ib);
}

// Inserts (x, i) into the sorted list (v, id) if it ranks in it (static indices only: registers).
__device__ __forceinline__ void insert(float (&v)[kK], int32_t (&id)[kK], float x, int32_t i) {
  if (!before(x, i, v[kK - 1], id[kK - 1])) return;
#pragma unroll
  for (int j = 0; j < kK; ++j) {
    if (before(x, i, v[j], id[j])) {
      const float tv = v[j];
      const int32_t ti = id[j];
      v[j] = x, id[j] = i;
      x = tv, i = ti;
    }
  }
}

// The kK best of the warp's lists (each lane's sorted): kK rounds of a warp-wide best of the
// lanes' heads, the winning lane dropping its head. Ids are unique, so one lane wins a round
// (padding entries (-inf, INT32_MAX) may tie; they are padding either way). Out in every lane.
__device__ __forceinline__ void warp_top(float (&v)[kK], int32_t (&id)[kK], float (&ov)[kK], int32_t (&oi)[kK]) {
#pragma unroll
  for (int k = 0; k < kK; ++k) {
    float bv = v[0];
    int32_t bi = id[0];
#pragma unroll
    for (int o = 16; o > 0; o /= 2) {
      const float xv = __shfl_xor_sync(0xffffffffu, bv, o);
      const int32_t xi = __shfl_xor_sync(0xffffffffu, bi, o);
      if (before(xv, xi, bv, bi)) bv = xv, bi = xi;
    }
    ov[k] = bv, oi[k] = bi;
    if (v[0] == bv && id[0] == bi) {
#pragma unroll
      for (int j = 0; j + 1 < kK; ++j) v[j] = v[j + 1], id[j] = id[j + 1];
      v[kK - 1] = -INFINITY, id[kK - 1] = INT32_MAX;
    }
  }
}

// One block of 1,024 threads per row. Each thread keeps the kK best of its strided share,
// reading kLoads elements per round with every load issued before the first is used, each
// warp merges its lanes' lists, then warp 0 the warps'. (H200 run 26: the first version, one
// 256-thread block with one load in flight per thread, cost ~80 us of every decode step:
// 1B tg128 906.9 -> 977.5 with this one.)
__global__ void __launch_bounds__(kThreads) top_logits_kernel(const float* __restrict__ logits, int64_t n_vocab,
                                                              float* __restrict__ top, int32_t* __restrict__ ids) {
  __shared__ float sv[kWarps][kK];
  __shared__ int32_t si[kWarps][kK];
  const float* row = logits + static_cast<int64_t>(blockIdx.x) * n_vocab;
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  float v[kK];
  int32_t id[kK];
#pragma unroll
  for (int j = 0; j < kK; ++j) v[j] = -INFINITY, id[j] = INT32_MAX;
  int bad = 0;
  for (int64_t base = tid; base < n_vocab; base += static_cast<int64_t>(kLoads) * kThreads) {
    float x[kLoads];
#pragma unroll
    for (int j = 0; j < kLoads; ++j) {
      const int64_t i = base + static_cast<int64_t>(j) * kThreads;
      x[j] = i < n_vocab ? row[i] : -INFINITY;
    }
#pragma unroll
    for (int j = 0; j < kLoads; ++j) {
      const int64_t i = base + static_cast<int64_t>(j) * kThreads;
      if (i >= n_vocab) continue;
      bad |= isnan(x[j]) || x[j] == INFINITY;
      insert(v, id, x[j], static_cast<int32_t>(i));
    }
  }
  bad = __syncthreads_or(bad);
  float ov[kK];
  int32_t oi[kK];
  warp_top(v, id, ov, oi);
  if (lane == 0) {
#pragma unroll
    for (int k = 0; k < kK; ++k) sv[warp][k] = ov[k], si[warp][k] = oi[k];
  }
  __syncthreads();
  if (warp != 0) return;
#pragma unroll
  for (int k = 0; k < kK; ++k) {
    v[k] = lane < kWarps ? sv[lane][k] : -INFINITY;
    id[k] = lane < kWarps ? si[lane][k] : INT32_MAX;
  }
  warp_top(v, id, ov, oi);
  if (lane < kK) {
    // lane k writes slot k (static indices: a select chain over the unrolled list)
    float tv = ov[0];
    int32_t ti = oi[0];
#pragma unroll
    for (int k = 1; k < kK; ++k) {
      if (lane == k) tv = ov[k], ti = oi[k];
    }
    top[blockIdx.x * kK + lane] = tv;
    ids[blockIdx.x * kK + lane] = bad ? -1 : ti;
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
