// The largest logits of each output row, on the device (kernels.h
// top_logits): a greedy sampler reads these few instead of a copy of the row.
#include <algorithm>
#include <cstdint>

#include "backend/cuda/common.cuh"
#include "backend/cuda/kernels.h"

namespace strix::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kLoads = 8;        // loads in flight per thread (each a strided element of the row)
constexpr int64_t kPart = 2048;  // elements per block: one round of loads
constexpr int kMaxParts = 256;   // longer rows: longer parts, more rounds per block
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

// The rows are cut into parts of kPart elements, one block of kThreads per
// (part, row): each thread keeps the kK best of its strided share (kLoads
// elements loaded before the first is used), each warp merges its lanes'
// lists, warp 0 the warps', and the part's list goes to the scratch. The last
// block of a row to finish (an atomic count, reset for the next launch) merges
// the parts' lists. (H200: one 1,024-thread block per row took 71 us of each
// decode step over a 128,256-entry row, run 27; the first version, 256
// threads with one load in flight, ~150 us.)
__device__ __forceinline__ void block_top(float (&v)[kK], int32_t (&id)[kK], float (*sv)[kK], int32_t (*si)[kK],
                                          float (&ov)[kK], int32_t (&oi)[kK]) {
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
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
}

// lane k < kK writes slot k (static indices: a select chain over the unrolled list)
__device__ __forceinline__ void write_slot(const float (&ov)[kK], const int32_t (&oi)[kK], int lane, float* v,
                                           int32_t* id, bool bad) {
  if (lane >= kK) return;
  float tv = ov[0];
  int32_t ti = oi[0];
#pragma unroll
  for (int k = 1; k < kK; ++k) {
    if (lane == k) tv = ov[k], ti = oi[k];
  }
  v[lane] = tv;
  id[lane] = bad ? -1 : ti;
}

// Laid out for the rows the scratch can hold (not the launch's n), so that
// launches of any n find their counters and flags where the last left them.
struct Scratch {
  unsigned* count;  // [cap] finished parts of each row
  int* bad;         // [cap] a NaN or +inf in the row
  float* pv;        // [cap][parts][kK]
  int32_t* pi;      // [cap][parts][kK]
  int64_t span;     // elements per part
};

__global__ void __launch_bounds__(kThreads)
    top_logits_kernel(const float* __restrict__ logits, int64_t n_vocab, float* __restrict__ top,
                      int32_t* __restrict__ ids, Scratch sc) {
  __shared__ float sv[kWarps][kK];
  __shared__ int32_t si[kWarps][kK];
  __shared__ int last;
  const int parts = static_cast<int>(gridDim.x), part = static_cast<int>(blockIdx.x);
  const int64_t r = blockIdx.y;
  const float* row = logits + r * n_vocab;
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32;
  const int64_t lo = part * sc.span, hi = lo + sc.span < n_vocab ? lo + sc.span : n_vocab;
  float v[kK];
  int32_t id[kK];
#pragma unroll
  for (int j = 0; j < kK; ++j) v[j] = -INFINITY, id[j] = INT32_MAX;
  int bad = 0;
  for (int64_t base = lo + tid; base < hi; base += static_cast<int64_t>(kLoads) * kThreads) {
    float x[kLoads];
#pragma unroll
    for (int j = 0; j < kLoads; ++j) {
      const int64_t i = base + static_cast<int64_t>(j) * kThreads;
      x[j] = i < hi ? row[i] : -INFINITY;
    }
#pragma unroll
    for (int j = 0; j < kLoads; ++j) {
      const int64_t i = base + static_cast<int64_t>(j) * kThreads;
      if (i >= hi) continue;
      bad |= isnan(x[j]) || x[j] == INFINITY;
      insert(v, id, x[j], static_cast<int32_t>(i));
    }
  }
  bad = __syncthreads_or(bad);
  float ov[kK];
  int32_t oi[kK];
  block_top(v, id, sv, si, ov, oi);
  if (tid >= 32) return;  // warp 0 holds the part's list
  const int64_t pr = r * parts + part;
  if (parts == 1) {
    write_slot(ov, oi, lane, top + r * kK, ids + r * kK, bad != 0);
    return;
  }
  write_slot(ov, oi, lane, sc.pv + pr * kK, sc.pi + pr * kK, false);
  if (lane == 0 && bad) sc.bad[r] = 1;
  __threadfence();
  __syncwarp();
  if (lane == 0) {
    last = atomicAdd(sc.count + r, 1u) == static_cast<unsigned>(parts - 1);
    if (last) sc.count[r] = 0;  // for the next launch (every part of this one has counted)
  }
  __syncwarp();
  if (!last) return;
  __threadfence();
  // the last part of the row: the parts' lists, kK * parts candidates over the warp's lanes
#pragma unroll
  for (int j = 0; j < kK; ++j) v[j] = -INFINITY, id[j] = INT32_MAX;
  const float* cv = sc.pv + r * parts * kK;
  const int32_t* ci = sc.pi + r * parts * kK;
  for (int c = lane; c < parts * kK; c += 32) insert(v, id, __ldcg(cv + c), __ldcg(ci + c));
  warp_top(v, id, ov, oi);
  const bool row_bad = __ldcg(sc.bad + r) != 0;
  write_slot(ov, oi, lane, top + r * kK, ids + r * kK, row_bad);
  __syncwarp();
  if (lane == 0) sc.bad[r] = 0;
}

int parts_for(int64_t n_vocab) { return static_cast<int>(std::min<int64_t>((n_vocab + kPart - 1) / kPart, kMaxParts)); }

size_t per_row_bytes(int64_t n_vocab) {
  return 2 * sizeof(int) + static_cast<size_t>(parts_for(n_vocab)) * kK * (sizeof(float) + sizeof(int32_t));
}

}  // namespace

size_t top_logits_scratch_bytes(int n, int64_t n_vocab) {
  return static_cast<size_t>(std::max(n, 0)) * per_row_bytes(n_vocab);
}

void top_logits(const float* logits, int n, int64_t n_vocab, float* top, int32_t* ids, void* scratch,
                size_t scratch_bytes, cudaStream_t st) {
  if (n <= 0) return;
  if (n_vocab < kK) throw Error("top_logits: a vocabulary of fewer than 8 tokens");
  if (scratch_bytes < top_logits_scratch_bytes(n, n_vocab)) throw Error("top_logits: the scratch is too small");
  const int parts = parts_for(n_vocab);
  const size_t cap = scratch_bytes / per_row_bytes(n_vocab);
  auto* base = static_cast<char*>(scratch);
  Scratch sc{reinterpret_cast<unsigned*>(base), reinterpret_cast<int*>(base + cap * sizeof(unsigned)),
             reinterpret_cast<float*>(base + cap * 2 * sizeof(int)),
             reinterpret_cast<int32_t*>(base + cap * 2 * sizeof(int) + cap * parts * kK * sizeof(float)),
             (n_vocab + parts - 1) / parts};
  top_logits_kernel<<<dim3(static_cast<unsigned>(parts), static_cast<unsigned>(n)), kThreads, 0, st>>>(logits, n_vocab,
                                                                                                       top, ids, sc);
  check_launch("top_logits");
}

}  // namespace strix::cuda
