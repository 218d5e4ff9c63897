// Decode attention of one token fused with the steps around it: RoPE of its q
// and k, the KV cache store, attention over the sequence's cells, and the
// quantization of the output for the o-projection's integer GEMV. Blocks are
// (KV head, split): the group's G = n_head / n_head_kv query heads share every
// cache row a block reads, and the context is cut into up to gridDim.y splits
// of at least min_chunk cells (flash-decoding) so that a long context keeps
// every SM busy. The block whose split holds the token's own cell stores it.
// One token: each block's earlier cells are copied into shared memory before
// griddep_wait (while the q/k/v GEMV ends); with one split as well (a context
// of up to min_chunk cells) a KV head's G query heads are cut over two blocks
// (G/2 each, both staging the cells, the first storing the token's): H200 run
// 40, 8B tg128 401.2 / 401.8 against 379.2 / 380.6 with one block per KV head.
//
// One split (every context up to min_chunk cells, or a launch with one split):
// every value equals the unfused sequence (rope_kv_store, attention,
// quantize_act) bit for bit: RoPE through the same rope_pair, scores with
// attention_kernel's lane order and warp tree, each head's softmax sums over
// 128 threads as attention_kernel's block does, its probabilities rounded to
// f16, P·V in its four cell classes (cells c = m mod 4) summed in its order,
// and the quantizers of act_quant.cuh. Several splits: each writes its
// heads' running max, exp-sum and unnormalized P·V (float probabilities); the
// last block of a KV head to finish (an atomic count, reset for the next
// launch) rescales and sums them, then quantizes.
#include <algorithm>
#include <string>
#include <type_traits>

#include "backend/cuda/act_quant.cuh"
#include "backend/cuda/common.cuh"
#include "backend/cuda/device.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/pdl.cuh"
#include "backend/cuda/rope.cuh"

namespace strix::cuda {

namespace {

constexpr int kThreads = 256;      // 8 warps
constexpr int kMaxHeadDimV = 256;  // 4 pairs of 64 dims per lane, as attention_kernel
constexpr int kMaxHeadDimK = 512;
constexpr int kClasses = 4;  // attention_kernel's warps: P·V cell classes, softmax threads / 32
// Cells per split for a context of n_cells over n_split splits, at least
// min_chunk (a multiple of 64, so a split starts on the same P·V cell class
// as cell 0).
__host__ __device__ inline int chunk_cells(int n_cells, int n_split, int min_chunk) {
  const int c = (n_cells + n_split - 1) / n_split;
  const int r = (c + 63) / 64 * 64;
  return r > min_chunk ? r : min_chunk;
}

struct Smem {
  int hdk, hdv, cells;
  __host__ __device__ int floats(int g) const {
    return 2 * kClasses + 2 + g * hdk + hdk + g * cells + g * kClasses * hdv + g * hdv + hdk;
  }
  // The staged cells (stage_cells > 0): their cache rows (int64), then their K
  // and V halves, 16-byte aligned (cells is a multiple of 64).
  __host__ __device__ int rows_at(int g) const { return (floats(g) + 3) / 4 * 4; }
  __host__ __device__ int k_at(int g) const { return rows_at(g) + 2 * cells; }
  __host__ __device__ int v_at(int g) const { return k_at(g) + cells * hdk / 2; }
  __host__ __device__ int staged_floats(int g) const { return v_at(g) + cells * hdv / 2; }
};

// 16 bytes global -> shared without registers (cp.async on sm_80+).
__device__ __forceinline__ void copy16_async(void* to, const void* from) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(to));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(from) : "memory");
#else
  *static_cast<uint4*>(to) = *static_cast<const uint4*>(from);
#endif
}
__device__ __forceinline__ void copies_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
__device__ __forceinline__ void copies_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}

// kStage: the earlier cells staged in shared memory (one-token launches); a
// compile-time switch so that the other launches run the global loads as before.
template <int kG, int kCells, int kVRows, bool kStage>
__global__ void __launch_bounds__(kThreads)
    attn_decode_kernel(AttnDecode a, RopeConsts rc, const float* __restrict__ ff, KvLayout kv, int stage_cells) {
  extern __shared__ __align__(16) float smem[];
  // Before griddep_wait only what no kernel writes: the positions and sequence
  // ids (uploaded before the forward), the block tables, the RoPE factors.
  // Block x takes query heads [x kG, x kG + kG) of KV head kvh: with one split, a
  // KV head's group may be cut over `subs` blocks (head_blocks); the first stores the cell.
  const int vh = static_cast<int>(blockIdx.x), split = static_cast<int>(blockIdx.y);
  const int subs = static_cast<int>(gridDim.x) / a.n_head_kv, kvh = vh / subs, sub = vh % subs;
  const int n_split = static_cast<int>(gridDim.y);
  if (blockIdx.z > 0) {  // token t of a batch: its rows, its quantized row, its split scratch and counters
    const int64_t t = blockIdx.z;
    a.q += t * a.q_stride, a.k += t * a.k_stride, a.v += t * a.v_stride, a.out += t * a.out_stride;
    a.pos += t, a.seq += t;
    const int64_t row = static_cast<int64_t>(a.n_head) * a.head_dim_v;
    if (a.q8_block != 0) a.q8 += t * row, a.d8 += t * row / a.q8_block;
    if (a.split_ml != nullptr) {
      a.split_ml += t * n_split * a.n_head * 2, a.split_o += t * n_split * row, a.split_count += t * a.n_head_kv;
    }
  }
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int hdk = a.head_dim_k, hdv = a.head_dim_v, cap = chunk_cells(a.max_cells, n_split, a.min_chunk);
  const int p = a.pos[0];
  const int chunk = chunk_cells(p + 1, n_split, a.min_chunk), n_active = (p + chunk) / chunk;
  if (split >= n_active) return;
  const bool alone = n_active == 1;
  const int cb = split * chunk;  // this block's cells: [cb, cb + n_cells)
  const int n_cells = (p + 1 - cb) < chunk ? p + 1 - cb : chunk;
  float(*red)[kClasses] = reinterpret_cast<float(*)[kClasses]>(smem);  // [2][kClasses]: softmax reductions
  int& last_block = *reinterpret_cast<int*>(smem + 2 * kClasses);      // the split combiner's flag
  float* q_s = smem + 2 * kClasses + 2;                                // kG * hdk (8-byte aligned)
  float* k_s = q_s + kG * hdk;                                         // hdk
  float* sc = k_s + hdk;                                               // kG * cap
  float* part = sc + kG * cap;                                         // kG * kClasses * hdv
  float* o_s = part + kG * kClasses * hdv;                             // kG * hdv
  float* cs_s = o_s + kG * hdv;                                        // hdk / 2 cosines, then the sines

  // RoPE: the angles' chain once (p * theta_scale^i by repeated multiplication,
  // as rope_pair), each pair's cosine and sine once, then every head's pairs
  const int half = rc.n_rot / 2;
  float* sn_s = cs_s + half;
  if (tid == 0) {
    float theta = static_cast<float>(p);
    for (int i = 0; i < half; ++i) {
      cs_s[i] = theta;
      theta *= rc.theta_scale;
    }
  }
  __syncthreads();
  for (int i = tid; i < half; i += kThreads) rope_cs(cs_s[i], i, ff, rc, cs_s[i], sn_s[i]);
  const int sq = a.seq[0];
  // The cells before the token's were written by earlier forwards: staged into
  // shared memory (stage_cells > 0: every chunk fits) or on their way into L2
  // while the kernel before ends.
  constexpr bool staged = kStage;
  const Smem lay{hdk, hdv, stage_cells};
  auto* rows_s = reinterpret_cast<int64_t*>(smem + lay.rows_at(kG));
  auto* ks_s = reinterpret_cast<uint16_t*>(smem + lay.k_at(kG));
  auto* vs_s = reinterpret_cast<uint16_t*>(smem + lay.v_at(kG));
  {
    const int n_prev = p - cb < n_cells ? p - cb : n_cells;
    if (staged) {
      for (int c = tid; c < n_prev; c += kThreads) rows_s[c] = kv_cell(kv, sq, cb + c);
      __syncthreads();
      const int kch = hdk / 8, per = kch + hdv / 8;  // 16-byte pieces of a cell's K and V
      for (int u = tid; u < n_prev * per; u += kThreads) {
        const int c = u / per, j = u % per;
        const int64_t row = rows_s[c];
        if (j < kch) {
          copy16_async(ks_s + c * hdk + 8 * j, kv.k + row * kv.k_dim + static_cast<int64_t>(kvh) * hdk + 8 * j);
        } else {
          const int jv = j - kch;
          copy16_async(vs_s + c * hdv + 8 * jv, kv.v + row * kv.v_dim + static_cast<int64_t>(kvh) * hdv + 8 * jv);
        }
      }
      copies_commit();
    } else {
      for (int c = tid; c < n_prev; c += kThreads) {
        const int64_t row = kv_cell(kv, sq, cb + c);
        prefetch_l2(kv.k + row * kv.k_dim + static_cast<int64_t>(kvh) * hdk, sizeof(uint16_t) * hdk);
        prefetch_l2(kv.v + row * kv.v_dim + static_cast<int64_t>(kvh) * hdv, sizeof(uint16_t) * hdv);
      }
    }
  }
  griddep_wait();  // q, k and v come from the kernel before
  // q of the group's heads (kvh * kG ..) and this KV head's k, rotated
  const float* qg = a.q + static_cast<int64_t>(vh) * kG * hdk;
  for (int i = tid; i < kG * hdk; i += kThreads) q_s[i] = qg[i];
  for (int i = tid; i < hdk; i += kThreads) k_s[i] = a.k[static_cast<int64_t>(kvh) * hdk + i];
  __syncthreads();
  for (int u = tid; u < (kG + 1) * half; u += kThreads) {
    const int h = u / half, i = u % half;
    rope_rotate(h < kG ? q_s + h * hdk : k_s, i, cs_s[i], sn_s[i], rc);
  }
  __syncthreads();
  const int64_t cell = kv_cell(kv, sq, p);
  for (int i = tid; i < kG * hdk; i += kThreads) q_s[i] = h2f(f2h(q_s[i]));
  // the split holding the token's cell stores it (with two blocks per KV head, the second keeps
  // it in its shared memory only)
  if (split == n_active - 1) {
    const int own = p - cb;
    for (int i = tid; i < hdk; i += kThreads) {
      const uint16_t h = f2h(k_s[i]);
      if (sub == 0) kv.k[cell * kv.k_dim + static_cast<int64_t>(kvh) * hdk + i] = h;
      if (staged) ks_s[own * hdk + i] = h;
    }
    for (int i = tid; i < hdv; i += kThreads) {
      const uint16_t h = f2h(a.v[static_cast<int64_t>(kvh) * hdv + i]);
      if (sub == 0) kv.v[cell * kv.v_dim + static_cast<int64_t>(kvh) * hdv + i] = h;
      if (staged) vs_s[own * hdv + i] = h;
    }
  }
  if (staged) copies_wait();
  __syncthreads();  // the stored cell is read back below (global writes are visible to the block after this)

  // scores: a warp per cell, kCells cells (8 apart) per step with all their
  // rows' loads in flight together; lanes over dim pairs as attention_kernel
  constexpr int kWarps = kThreads / 32;
  const uint16_t* kbase = kv.k + static_cast<int64_t>(kvh) * hdk;
  for (int c0 = warp; c0 < n_cells; c0 += kWarps * kCells) {
    const uint16_t* kr[kCells];
#pragma unroll
    for (int u = 0; u < kCells; ++u) {
      const int c = c0 + kWarps * u;
      const int cc = c < n_cells ? c : c0;
      kr[u] = staged ? ks_s + cc * hdk : kbase + kv_cell(kv, sq, cb + cc) * kv.k_dim;
    }
    float s[kCells][kG];
#pragma unroll
    for (int u = 0; u < kCells; ++u) {
#pragma unroll
      for (int g = 0; g < kG; ++g) s[u][g] = 0.0f;
    }
    for (int i = 2 * lane; i < hdk; i += 64) {
      float2 kf[kCells];
#pragma unroll
      for (int u = 0; u < kCells; ++u) kf[u] = __half22float2(*reinterpret_cast<const __half2*>(kr[u] + i));
#pragma unroll
      for (int g = 0; g < kG; ++g) {
        const float* qh = q_s + g * hdk;
#pragma unroll
        for (int u = 0; u < kCells; ++u) {
          s[u][g] = fmaf(kf[u].x, qh[i], s[u][g]);
          s[u][g] = fmaf(kf[u].y, qh[i + 1], s[u][g]);
        }
      }
    }
#pragma unroll
    for (int u = 0; u < kCells; ++u) {
      const int c = c0 + kWarps * u;
#pragma unroll
      for (int g = 0; g < kG; ++g) {
        const float t = warp_sum(s[u][g]);
        if (lane == 0 && c < n_cells) sc[g * cap + c] = t * a.kq_scale;
      }
    }
  }
  __syncthreads();

  // softmax of each head over 128 threads (two heads at a time), attention_kernel's sums
  const int grp = tid / 128, tl = tid % 128, w4 = (tid / 32) % kClasses;
  for (int g0 = 0; g0 < kG; g0 += 2) {
    const int g = g0 + grp;
    const bool on = g < kG;
    float* s = sc + (on ? g : 0) * cap;
    float mx = -INFINITY;
    if (on) {
      for (int c = tl; c < n_cells; c += 128) mx = fmaxf(mx, s[c]);
    }
    mx = warp_max(mx);
    if (lane == 0) red[grp][w4] = mx;
    __syncthreads();
    mx = red[grp][0];
    for (int w = 1; w < kClasses; ++w) mx = fmaxf(mx, red[grp][w]);
    __syncthreads();
    float sum = 0;
    if (on) {
      for (int c = tl; c < n_cells; c += 128) {
        const float e = expf(s[c] - mx);
        s[c] = e;
        sum += e;
      }
    }
    sum = warp_sum(sum);
    if (lane == 0) red[grp][w4] = sum;
    __syncthreads();
    sum = red[grp][0];
    for (int w = 1; w < kClasses; ++w) sum += red[grp][w];
    __syncthreads();
    if (alone) {
      const float inv = 1.0f / sum;
      if (on) {
        for (int c = tl; c < n_cells; c += 128) s[c] = h2f(f2h(s[c] * inv));
      }
    } else if (on && tl == 0) {  // this split's max and exp-sum of head g
      float* ml = a.split_ml + ((static_cast<int64_t>(kvh) * n_split + split) * kG + g) * 2;
      ml[0] = mx;
      ml[1] = sum;
    }
  }
  __syncthreads();

  // P·V: warp w takes cell class m = w mod 4 for heads g = w / 4, w / 4 + 2, ...
  constexpr int kHeadsPerWarp = (kG + 1) / 2;
  const int m = warp % kClasses, g_first = warp / kClasses;
  float2 acc[kHeadsPerWarp][kMaxHeadDimV / 64];
#pragma unroll
  for (int j = 0; j < kHeadsPerWarp; ++j) {
#pragma unroll
    for (int k = 0; k < kMaxHeadDimV / 64; ++k) acc[j][k] = make_float2(0.0f, 0.0f);
  }
  const uint16_t* vbase = kv.v + static_cast<int64_t>(kvh) * hdv;
  if (g_first < kG) {
    // kVRows cells of the class per step, their rows' loads in flight together, summed in cell order
    for (int c0 = m; c0 < n_cells; c0 += kClasses * kVRows) {
      const uint16_t* vr[kVRows];
#pragma unroll
      for (int u = 0; u < kVRows; ++u) {
        const int c = c0 + kClasses * u;
        const int cc = c < n_cells ? c : c0;
        vr[u] = staged ? vs_s + cc * hdv : vbase + kv_cell(kv, sq, cb + cc) * kv.v_dim;
      }
#pragma unroll
      for (int k = 0; k < kMaxHeadDimV / 64; ++k) {
        const int d = 2 * lane + 64 * k;
        if (d < hdv) {
          float2 vf[kVRows];
#pragma unroll
          for (int u = 0; u < kVRows; ++u) vf[u] = __half22float2(*reinterpret_cast<const __half2*>(vr[u] + d));
#pragma unroll
          for (int u = 0; u < kVRows; ++u) {
            const int c = c0 + kClasses * u;
            if (c < n_cells) {
#pragma unroll
              for (int j = 0; j < kHeadsPerWarp; ++j) {
                const int g = g_first + 2 * j;
                if (g < kG) {
                  const float pr = sc[g * cap + c];
                  acc[j][k].x = fmaf(pr, vf[u].x, acc[j][k].x);
                  acc[j][k].y = fmaf(pr, vf[u].y, acc[j][k].y);
                }
              }
            }
          }
        }
      }
    }
#pragma unroll
    for (int j = 0; j < kHeadsPerWarp; ++j) {
      const int g = g_first + 2 * j;
      if (g >= kG) continue;
#pragma unroll
      for (int k = 0; k < kMaxHeadDimV / 64; ++k) {
        const int d = 2 * lane + 64 * k;
        if (d < hdv) {
          part[(g * kClasses + m) * hdv + d] = acc[j][k].x;
          part[(g * kClasses + m) * hdv + d + 1] = acc[j][k].y;
        }
      }
    }
  }
  __syncthreads();
  float* out = a.out + static_cast<int64_t>(vh) * kG * hdv;
  float* so = alone ? nullptr : a.split_o + (static_cast<int64_t>(kvh) * n_split + split) * kG * hdv;
  for (int u = tid; u < kG * hdv; u += kThreads) {
    const int g = u / hdv, d = u % hdv;
    float s = 0;
    for (int w = 0; w < kClasses; ++w) s += part[(g * kClasses + w) * hdv + d];
    if (alone) {
      o_s[u] = s;
      out[u] = s;
    } else {
      so[u] = s;
    }
  }
  if (!alone) {
    // the last block of this KV head to get here combines the splits
    __threadfence();
    __syncthreads();
    if (tid == 0) {
      last_block = atomicAdd(a.split_count + kvh, 1u) == static_cast<unsigned>(n_active - 1);
      if (last_block) a.split_count[kvh] = 0;  // for the next launch (every block of this one has counted)
    }
    __syncthreads();
    if (!last_block) return;
    __threadfence();
    float* wgt = sc;  // [kG][n_active]: each split's weight exp(m_s - M) / L
    for (int g = warp; g < kG; g += kThreads / 32) {
      const float* ml = a.split_ml + static_cast<int64_t>(kvh) * n_split * kG * 2;
      float mx = -INFINITY;
      for (int s2 = lane; s2 < n_active; s2 += 32) mx = fmaxf(mx, __ldcg(ml + (s2 * kG + g) * 2));
      mx = warp_max(mx);
      float l = 0;
      for (int s2 = lane; s2 < n_active; s2 += 32) {
        l += __ldcg(ml + (s2 * kG + g) * 2 + 1) * expf(__ldcg(ml + (s2 * kG + g) * 2) - mx);
      }
      l = warp_sum(l);
      for (int s2 = lane; s2 < n_active; s2 += 32) {
        wgt[g * n_active + s2] = expf(__ldcg(ml + (s2 * kG + g) * 2) - mx) / l;
      }
    }
    __syncthreads();
    const float* parts = a.split_o + static_cast<int64_t>(kvh) * n_split * kG * hdv;
    for (int u = tid; u < kG * hdv; u += kThreads) {
      const int g = u / hdv;
      float s = 0;
      for (int s2 = 0; s2 < n_active; ++s2) s += wgt[g * n_active + s2] * __ldcg(parts + s2 * kG * hdv + u);
      o_s[u] = s;
      out[u] = s;
    }
  }
  if (a.q8_block == 0) return;
  __syncthreads();

  // the group's kG * hdv outputs are whole quantization blocks of the o-projection's input row
  const int64_t first = static_cast<int64_t>(vh) * kG * hdv;
  if (a.q8_block == 256) {
    for (int j = warp; j < kG * hdv / 256; j += kThreads / 32) {
      float v[8];
#pragma unroll
      for (int k = 0; k < 8; ++k) v[k] = o_s[256 * j + 32 * k + lane];
      quant_q8_K_warp(v, a.q8 + first + 256 * j, a.d8 + first / 256 + j, lane);
    }
  } else {
    for (int j = warp; j < kG * hdv / 32; j += kThreads / 32) {
      quant_q8_0_warp(o_s[32 * j + lane], a.q8 + first + 32 * j, a.d8 + first / 32 + j, lane);
    }
  }
}

int max_smem_optin() {
  static const int v = [] {
    int dev = 0, bytes = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess) {
      return 48 * 1024;
    }
    return bytes;
  }();
  return v;
}

int sm_count() {
  static const int v = [] {
    int dev = 0, n = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
      return 1;
    }
    return n;
  }();
  return v;
}

// STRIX_CUDA_ATTN_LOADS=0: two K rows and (unrolled) four V rows per warp
// step, as before run 27 (A/B of the loads in flight).
bool deep_loads() {
  static const bool on = !env_is("STRIX_CUDA_ATTN_LOADS", "0");
  return on;
}

template <int kG, int kCells, int kVRows>
void launch_as(const AttnDecode& a, const RopeConsts& rc, const float* ff, const KvLayout& kv, size_t smem, int n_split,
               int stage_cells, int subs, cudaStream_t st) {
  // one instantiation per kStage (std::bool_constant), so each kernel has its own opt-in flag
  auto go = [&](auto stage) {
    auto* kernel = attn_decode_kernel<kG, kCells, kVRows, decltype(stage)::value>;
    static const bool opted =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, max_smem_optin()) == cudaSuccess;
    if (!opted) throw Error("attention_decode: cudaFuncSetAttribute failed");
    check(pdl_launch(kernel,
                     dim3(static_cast<unsigned>(a.n_head_kv * subs), static_cast<unsigned>(n_split),
                          static_cast<unsigned>(a.n_tokens)),
                     dim3(kThreads), smem, st, a, rc, ff, kv, stage_cells),
          "attention_decode");
  };
  if (stage_cells > 0) {
    go(std::true_type{});
  } else {
    go(std::false_type{});
  }
}

// The scores take 8 cells a warp step (4 for groups of 8 heads: 32 sums in
// registers either way), P·V 8 rows of a cell class.
template <int kG>
void launch(const AttnDecode& a, const RopeConsts& rc, const float* ff, const KvLayout& kv, size_t smem, int n_split,
            int stage_cells, int subs, cudaStream_t st) {
  if (deep_loads()) {
    launch_as<kG, kG <= 4 ? 8 : 4, 8>(a, rc, ff, kv, smem, n_split, stage_cells, subs, st);
  } else {
    launch_as<kG, 2, 4>(a, rc, ff, kv, smem, n_split, stage_cells, subs, st);
  }
}

// With one split and the cells staged, a KV head's query heads over two blocks
// (half the group each); STRIX_CUDA_ATTN_SUBS=1 keeps one block per KV head, for A/B runs.
bool head_blocks_on() {
  static const bool on = !env_is("STRIX_CUDA_ATTN_SUBS", "1");
  return on;
}

// STRIX_CUDA_ATTN_STAGE=0: the earlier cells read from global memory (L2-prefetched)
// instead of staged into shared memory before the wait, for A/B runs.
bool stage_on() {
  static const bool on = !env_is("STRIX_CUDA_ATTN_STAGE", "0");
  return on;
}
constexpr int kMaxStagedCells = 256;

}  // namespace

int attention_decode_splits(int n_blocks, int max_cells, int max_split, int min_chunk) {
  if (n_blocks <= 0 || max_cells <= 0 || min_chunk <= 0) return 1;
  const int fill = (2 * sm_count() + n_blocks - 1) / n_blocks;  // about two blocks per SM
  const int by_len = (max_cells + min_chunk - 1) / min_chunk;
  return std::max(1, std::min({max_split, fill, by_len}));
}

bool attention_decode_fits(int n_head, int n_head_kv, int head_dim_k, int head_dim_v, int max_cells, int max_split,
                           int min_chunk, int n_tokens) {
  if (n_head_kv <= 0 || n_head % n_head_kv != 0 || n_tokens < 1 || n_tokens > 65535) return false;
  const int g = n_head / n_head_kv;
  if (g != 1 && g != 2 && g != 4 && g != 8) return false;
  if (head_dim_k > kMaxHeadDimK || head_dim_v > kMaxHeadDimV || head_dim_k % 2 || head_dim_v % 2) return false;
  if (min_chunk < 64 || min_chunk % 64 != 0) return false;
  const int n_split = attention_decode_splits(n_head_kv * n_tokens, max_cells, max_split, min_chunk);
  const Smem sm{head_dim_k, head_dim_v, chunk_cells(max_cells, n_split, min_chunk)};
  return sizeof(float) * static_cast<size_t>(sm.floats(g)) <= static_cast<size_t>(max_smem_optin());
}

void attention_decode(const AttnDecode& a, const RopeParams& rp, const float* freq_factors, const KvLayout& kv,
                      cudaStream_t st) {
  const bool can_split = a.split_ml != nullptr && a.split_o != nullptr && a.split_count != nullptr;
  const int max_split = can_split ? a.max_split : 1;
  if (!attention_decode_fits(a.n_head, a.n_head_kv, a.head_dim_k, a.head_dim_v, a.max_cells, max_split, a.min_chunk,
                             a.n_tokens)) {
    throw Error("attention_decode: this head layout or context does not fit the fused decode kernel");
  }
  if (kv.k_dim != static_cast<int64_t>(a.n_head_kv) * a.head_dim_k ||
      kv.v_dim != static_cast<int64_t>(a.n_head_kv) * a.head_dim_v) {
    throw Error("attention_decode: the cache rows are not whole heads");
  }
  const int g = a.n_head / a.n_head_kv;
  if (a.q8_block != 0 && a.q8_block != 32 && a.q8_block != 256) throw Error("attention_decode: bad quant block");
  if (a.q8_block && (g * a.head_dim_v) % a.q8_block != 0) {
    throw Error("attention_decode: a head group's outputs are not whole quantization blocks");
  }
  const RopeConsts rc = make_rope_consts(rp, a.head_dim_k);
  const int n_split = attention_decode_splits(a.n_head_kv * a.n_tokens, a.max_cells, max_split, a.min_chunk);
  const int cells = chunk_cells(a.max_cells, n_split,
                                a.min_chunk);  // the score rows of one block (the combiner keeps its weights there)
  if (n_split > cells) throw Error("attention_decode: more splits than score cells");
  const Smem lay{a.head_dim_k, a.head_dim_v, cells};
  // Each block's chunk of earlier cells into shared memory before the wait, when
  // it fits and the rows are whole 16-byte pieces: the scores and P·V then read
  // no global memory after it.
  // One token only: a batch's blocks (one per token and KV head) fill the GPU already, and
  // the staged cells' shared memory would cut how many of them run at once (H200 run 41:
  // the 8B's 64-stream engine decode 6,190 t/s with it against 7,300).
  const bool stage = stage_on() && a.n_tokens == 1 && cells <= kMaxStagedCells && a.head_dim_k % 8 == 0 &&
                     a.head_dim_v % 8 == 0 && kv.k_dim % 8 == 0 && kv.v_dim % 8 == 0 &&
                     sizeof(float) * static_cast<size_t>(lay.staged_floats(g)) <= static_cast<size_t>(max_smem_optin());
  // Two blocks per KV head need the staged cells (each reads the token's own cell from
  // its shared memory; the first stores it) and whole quantization blocks per half group.
  const int subs = stage && n_split == 1 && g >= 2 && head_blocks_on() &&
                           (a.q8_block == 0 || (g / 2 * a.head_dim_v) % a.q8_block == 0)
                       ? 2
                       : 1;
  const int gb = g / subs;  // query heads per block
  const size_t smem = sizeof(float) * static_cast<size_t>(stage ? lay.staged_floats(gb) : lay.floats(gb));
  const int sc = stage ? cells : 0;
  switch (gb) {
    case 1:
      launch<1>(a, rc, freq_factors, kv, smem, n_split, sc, subs, st);
      break;
    case 2:
      launch<2>(a, rc, freq_factors, kv, smem, n_split, sc, subs, st);
      break;
    case 4:
      launch<4>(a, rc, freq_factors, kv, smem, n_split, sc, subs, st);
      break;
    default:
      launch<8>(a, rc, freq_factors, kv, smem, n_split, sc, subs, st);
      break;
  }
  check_launch("attention_decode");
}

}  // namespace strix::cuda
