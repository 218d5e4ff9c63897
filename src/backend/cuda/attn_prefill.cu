// Prefill attention as a tiled tensor-core kernel (flash attention): the
// same function as attention() (causal, each token over its sequence's cells
// [0, pos]) computed with mma.sync m16n8k16 (f16 inputs, f32 accumulation)
// and an online softmax, so that a long prompt reads each K/V tile once per
// block of query rows instead of once per (token, head).
//
// Blocks are (64 query rows, KV head): rows are the pairs (token, head of the
// KV head's group of G = n_head / n_head_kv query heads), token-major, so the
// G heads that share a KV head share every K/V tile the block loads. Four
// warps take 16 rows each. K and V tiles of 64 cells are double-buffered in
// shared memory through cp.async (cells past the segment's last one are
// zero-filled, never read: masked probabilities are exact zeros and the
// zeros keep a never-written cache cell's bits out of P·V). A block whose
// rows belong to several sequences runs once per sequence (a segment),
// masking the other rows.
//
// Rounding, against the CPU path (attention_kernel, ops): q is rounded to f16
// and K/V are the f16 cache as there; q·K products are exact in f32 and summed
// in the tensor cores' order; scores are times kq_scale as there; the
// probabilities are exp(s - running max) rounded to f16 before P·V (the CPU
// rounds the normalized ones) and the sum of the unrounded ones divides at the
// end. So it differs from attention() only in summation order and in which
// value of each probability is rounded to f16 (tests/backend_cuda,
// CudaFlashPrefill: against a double reference and attention()).
#include <climits>
#include <string>

#include "backend/cuda/common.cuh"
#include "backend/cuda/device.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/pdl.cuh"

namespace strix::cuda {

namespace {

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kRows = 16 * kWarps;  // query rows per block
constexpr int kCells = 64;          // cells per K/V tile
constexpr float kLog2e = 1.4426950408889634f;
constexpr int kMetaInts = 4 * kRows + 4;  // row pos, row seq, segment seq, segment end, segment count (+pad)

template <int D>
struct Tile {
  static constexpr int kStride = D + 8;  // halves per row: 16 bytes of padding put ldmatrix's 8 rows in distinct banks
  static constexpr int kHalves = kCells * kStride;
  static constexpr int kQHalves = kRows * kStride;
  static constexpr size_t kBytes = sizeof(int) * kMetaInts + sizeof(uint16_t) * (kQHalves + 4 * kHalves);
};

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
// 16 bytes global -> shared, asynchronously; zeros when !valid (nothing read).
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, bool valid) {
  const int n = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(n) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void ldsm_x4(uint32_t addr, uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr)
               : "memory");
}
__device__ __forceinline__ void ldsm_x4_t(uint32_t addr, uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr)
               : "memory");
}
// c += a (16x16, row) * b (16x8, col), f16 inputs, f32 accumulators
__device__ __forceinline__ void mma16816(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ uint32_t pack_h2(float lo, float hi) {
  return static_cast<uint32_t>(f2h(lo)) | (static_cast<uint32_t>(f2h(hi)) << 16);
}
__device__ __forceinline__ int warp_max_i(int v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ int warp_min_i(int v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = min(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// max / sum over the 4 lanes of a quad (the lanes holding one accumulator row)
__device__ __forceinline__ float quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}
__device__ __forceinline__ float quad_sum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

template <int D>
__global__ void __launch_bounds__(kThreads, 2) attn_prefill_kernel(KvLayout kv, AttnArgs a, int n_tiles) {
  using T = Tile<D>;
  constexpr int S = T::kStride;
  extern __shared__ __align__(16) uint8_t smem_raw[];
  int* r_pos = reinterpret_cast<int*>(smem_raw);  // [kRows], -1: no row
  int* r_seq = r_pos + kRows;                     // [kRows], -1: no row
  int* seg_seq = r_seq + kRows;                   // [kRows] the block's sequences
  int* seg_end = seg_seq + kRows;                 // [kRows] their last row's pos + 1
  int* n_seg_p = seg_end + kRows;
  uint16_t* sq = reinterpret_cast<uint16_t*>(smem_raw + sizeof(int) * kMetaInts);
  uint16_t* sk = sq + T::kQHalves;  // 2 tiles
  uint16_t* sv = sk + 2 * T::kHalves;

  griddep_wait();
  const int G = a.n_head / a.n_head_kv;
  const int b = static_cast<int>(blockIdx.x);
  const int kvh = b % a.n_head_kv;
  const int tile = n_tiles - 1 - b / a.n_head_kv;  // the last rows (most cells) first
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int n_rows = a.n_tokens * G;
  const int row0 = tile * kRows;

  if (tid < kRows) {
    const int r = row0 + tid;
    int p = -1, s = -1;
    if (r < n_rows) {
      const int t = r / G;
      p = a.pos[t];
      s = a.seq[t];
    }
    r_pos[tid] = p;
    r_seq[tid] = s;
  }
  // the block's q rows, rounded to f16 (zeros past the batch)
  for (int i = tid; i < kRows * (D / 2); i += kThreads) {
    const int rr = i / (D / 2), c = (i % (D / 2)) * 2;
    const int r = row0 + rr;
    uint32_t pair = 0;
    if (r < n_rows) {
      const int t = r / G, h = kvh * G + r % G;
      const float2 f = *reinterpret_cast<const float2*>(a.q + static_cast<int64_t>(t) * a.q_stride +
                                                        static_cast<int64_t>(h) * D + c);
      pair = pack_h2(f.x, f.y);
    }
    *reinterpret_cast<uint32_t*>(sq + rr * S + c) = pair;
  }
  __syncthreads();
  if (warp == 0) {
    // segments: the sequences of the block's rows (row 0 is always a row of the batch)
    const int s0 = r_seq[0];
    const int sa = r_seq[lane], sb = r_seq[lane + 32];
    const bool one = __all_sync(0xffffffffu, (sa == s0 || sa < 0) && (sb == s0 || sb < 0));
    if (one) {
      const int mp = warp_max_i(max(r_pos[lane], r_pos[lane + 32]));
      if (lane == 0) {
        seg_seq[0] = s0;
        seg_end[0] = mp + 1;
        *n_seg_p = 1;
      }
    } else if (lane == 0) {
      int n = 0;
      for (int r = 0; r < kRows; ++r) {
        if (r_seq[r] < 0) continue;
        int j = 0;
        while (j < n && seg_seq[j] != r_seq[r]) ++j;
        if (j == n) {
          seg_seq[n] = r_seq[r];
          seg_end[n] = 0;
          ++n;
        }
        seg_end[j] = max(seg_end[j], r_pos[r] + 1);
      }
      *n_seg_p = n;
    }
  }
  __syncwarp();  // warp 0 converged again before ldmatrix
  // this warp's 16 q rows as A fragments
  uint32_t qf[D / 16][4];
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    ldsm_x4(smem_u32(sq + (warp * 16 + (lane & 15)) * S + kk * 16 + (lane >> 4) * 8), qf[kk][0], qf[kk][1], qf[kk][2],
            qf[kk][3]);
  }
  __syncthreads();

  // this lane's two accumulator rows
  const int ra = warp * 16 + lane / 4, rb = ra + 8;
  const int pos_a = r_pos[ra], pos_b = r_pos[rb], seq_a = r_seq[ra], seq_b = r_seq[rb];
  const int cq = (lane % 4) * 2;  // this lane's first column in an 8-column accumulator tile

  float o[D / 8][4];
#pragma unroll
  for (int i = 0; i < D / 8; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
  float m_a = -INFINITY, m_b = -INFINITY, l_a = 0.0f, l_b = 0.0f;  // l: this lane's part of the row sums

  const int n_seg = *n_seg_p;
  for (int sg = 0; sg < n_seg; ++sg) {
    const int sid = seg_seq[sg], end = seg_end[sg];
    const bool in_a = seq_a == sid, in_b = seq_b == sid;
    const int wmax = warp_max_i(max(in_a ? pos_a : -1, in_b ? pos_b : -1));
    const int wmin = warp_min_i(min(in_a ? pos_a : INT_MAX, in_b ? pos_b : INT_MAX));
    const bool wall = __all_sync(0xffffffffu, in_a && in_b);
    const uint16_t* kb = kv.k + static_cast<int64_t>(kvh) * D;
    const uint16_t* vb = kv.v + static_cast<int64_t>(kvh) * D;
    const int n_kt = (end + kCells - 1) / kCells;
    auto load = [&](int kt, int buf) {
      const int c0 = kt * kCells;
      uint16_t* kd = sk + buf * T::kHalves;
      uint16_t* vd = sv + buf * T::kHalves;
#pragma unroll
      for (int i = tid; i < kCells * (D / 8); i += kThreads) {
        const int r = i / (D / 8), c = (i % (D / 8)) * 8;
        const int cell = c0 + r;
        const bool ok = cell < end;
        const int64_t cc = kv_cell(kv, sid, ok ? cell : 0);  // the cell's row (block tables when paged)
        cp_async16(smem_u32(kd + r * S + c), kb + cc * kv.k_dim + c, ok);
        cp_async16(smem_u32(vd + r * S + c), vb + cc * kv.v_dim + c, ok);
      }
      cp_async_commit();
    };
    load(0, 0);
    for (int kt = 0; kt < n_kt; ++kt) {
      const int buf = kt & 1;
      if (kt + 1 < n_kt) {
        load(kt + 1, buf ^ 1);
        cp_async_wait<1>();
      } else {
        cp_async_wait<0>();
      }
      __syncthreads();
      const int c0 = kt * kCells;
      if (wmax >= c0) {  // some row of this warp sees a cell of this tile
        const uint16_t* kt_s = sk + buf * T::kHalves;
        const uint16_t* vt_s = sv + buf * T::kHalves;
        float s[kCells / 8][4];
#pragma unroll
        for (int i = 0; i < kCells / 8; ++i) s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
          for (int np = 0; np < kCells / 16; ++np) {
            uint32_t b0, b1, b2, b3;
            ldsm_x4(
                smem_u32(kt_s + (np * 16 + ((lane >> 4) & 1) * 8 + (lane & 7)) * S + kk * 16 + ((lane >> 3) & 1) * 8),
                b0, b1, b2, b3);
            mma16816(s[2 * np], qf[kk], b0, b1);
            mma16816(s[2 * np + 1], qf[kk], b2, b3);
          }
        }
        const bool mask = !(wall && c0 + kCells - 1 <= wmin);
        float mx_a = -INFINITY, mx_b = -INFINITY;
#pragma unroll
        for (int nt = 0; nt < kCells / 8; ++nt) {
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            float xa = s[nt][e] * a.kq_scale, xb = s[nt][2 + e] * a.kq_scale;
            if (mask) {
              const int cell = c0 + nt * 8 + cq + e;
              if (!in_a || cell > pos_a) xa = -INFINITY;
              if (!in_b || cell > pos_b) xb = -INFINITY;
            }
            s[nt][e] = xa;
            s[nt][2 + e] = xb;
            mx_a = fmaxf(mx_a, xa);
            mx_b = fmaxf(mx_b, xb);
          }
        }
        mx_a = quad_max(mx_a);
        mx_b = quad_max(mx_b);
        const float mn_a = fmaxf(m_a, mx_a), mn_b = fmaxf(m_b, mx_b);
        // a row that has seen no cell yet keeps max -inf: subtract 0 then (every exp is 0)
        const float mu_a = mn_a == -INFINITY ? 0.0f : mn_a, mu_b = mn_b == -INFINITY ? 0.0f : mn_b;
        const float al_a = exp2f((m_a - mu_a) * kLog2e), al_b = exp2f((m_b - mu_b) * kLog2e);
        m_a = mn_a;
        m_b = mn_b;
        l_a *= al_a;
        l_b *= al_b;
#pragma unroll
        for (int i = 0; i < D / 8; ++i) {
          o[i][0] *= al_a;
          o[i][1] *= al_a;
          o[i][2] *= al_b;
          o[i][3] *= al_b;
        }
#pragma unroll
        for (int nt = 0; nt < kCells / 8; ++nt) {
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const float pa = exp2f((s[nt][e] - mu_a) * kLog2e), pb = exp2f((s[nt][2 + e] - mu_b) * kLog2e);
            s[nt][e] = pa;
            s[nt][2 + e] = pb;
            l_a += pa;
            l_b += pb;
          }
        }
#pragma unroll
        for (int j = 0; j < kCells / 16; ++j) {
          const uint32_t pf[4] = {pack_h2(s[2 * j][0], s[2 * j][1]), pack_h2(s[2 * j][2], s[2 * j][3]),
                                  pack_h2(s[2 * j + 1][0], s[2 * j + 1][1]), pack_h2(s[2 * j + 1][2], s[2 * j + 1][3])};
#pragma unroll
          for (int dp = 0; dp < D / 16; ++dp) {
            uint32_t b0, b1, b2, b3;
            ldsm_x4_t(smem_u32(vt_s + (j * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * S + dp * 16 + (lane >> 4) * 8),
                      b0, b1, b2, b3);
            mma16816(o[2 * dp], pf, b0, b1);
            mma16816(o[2 * dp + 1], pf, b2, b3);
          }
        }
      }
      __syncthreads();  // the buffer is refilled by the next iteration's load
    }
  }

  l_a = quad_sum(l_a);
  l_b = quad_sum(l_b);
  const float inv_a = l_a > 0.0f ? 1.0f / l_a : 0.0f, inv_b = l_b > 0.0f ? 1.0f / l_b : 0.0f;
  const int ga = row0 + ra, gb = row0 + rb;
  if (ga < n_rows) {
    const int t = ga / G, h = kvh * G + ga % G;
    float* out = a.out + static_cast<int64_t>(t) * a.out_stride + static_cast<int64_t>(h) * D + cq;
#pragma unroll
    for (int i = 0; i < D / 8; ++i)
      *reinterpret_cast<float2*>(out + i * 8) = make_float2(o[i][0] * inv_a, o[i][1] * inv_a);
  }
  if (gb < n_rows) {
    const int t = gb / G, h = kvh * G + gb % G;
    float* out = a.out + static_cast<int64_t>(t) * a.out_stride + static_cast<int64_t>(h) * D + cq;
#pragma unroll
    for (int i = 0; i < D / 8; ++i)
      *reinterpret_cast<float2*>(out + i * 8) = make_float2(o[i][2] * inv_b, o[i][3] * inv_b);
  }
}

template <int D>
void launch_prefill(const KvLayout& kv, const AttnArgs& a, int n_tiles, cudaStream_t st) {
  static const cudaError_t attr = cudaFuncSetAttribute(
      attn_prefill_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(Tile<D>::kBytes));
  check(attr, "attention_prefill (shared memory size)");
  const unsigned grid = static_cast<unsigned>(n_tiles) * static_cast<unsigned>(a.n_head_kv);
  check(pdl_launch(attn_prefill_kernel<D>, dim3(grid), dim3(kThreads), Tile<D>::kBytes, st, kv, a, n_tiles),
        "attention_prefill");
}

}  // namespace

bool attention_prefill_fits(int head_dim_k, int head_dim_v) {
  return head_dim_k == head_dim_v && (head_dim_k == 32 || head_dim_k == 64 || head_dim_k == 128);
}

void attention_prefill(const KvLayout& kv, const AttnArgs& a, cudaStream_t st) {
  if (!attention_prefill_fits(a.head_dim_k, a.head_dim_v)) {
    throw Error("attention_prefill: head sizes " + std::to_string(a.head_dim_k) + "/" + std::to_string(a.head_dim_v) +
                " (it runs 32, 64 or 128, K and V equal)");
  }
  if (a.n_head_kv <= 0 || a.n_head % a.n_head_kv != 0) {
    throw Error("attention_prefill: n_head is not a multiple of n_head_kv");
  }
  if (a.q_stride % 2 != 0 || a.out_stride % 2 != 0 || reinterpret_cast<uintptr_t>(a.q) % 8 != 0 ||
      reinterpret_cast<uintptr_t>(a.out) % 8 != 0 || kv.k_dim % 8 != 0 || kv.v_dim % 8 != 0 ||
      reinterpret_cast<uintptr_t>(kv.k) % 16 != 0 || reinterpret_cast<uintptr_t>(kv.v) % 16 != 0) {
    throw Error("attention_prefill: q/out rows must be 8-byte aligned and K/V rows 16-byte aligned");
  }
  if (a.n_tokens == 0) return;
  const int64_t rows = static_cast<int64_t>(a.n_tokens) * (a.n_head / a.n_head_kv);
  const int n_tiles = static_cast<int>((rows + kRows - 1) / kRows);
  switch (a.head_dim_k) {
    case 32:
      launch_prefill<32>(kv, a, n_tiles, st);
      break;
    case 64:
      launch_prefill<64>(kv, a, n_tiles, st);
      break;
    default:
      launch_prefill<128>(kv, a, n_tiles, st);
      break;
  }
  check_launch("attention_prefill");
}

}  // namespace strix::cuda
