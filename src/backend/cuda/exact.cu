// Exact numerics (exact.h): libllama's CPU float order, one chain per ggml
// lane. Every rounding is spelled out (__fmul_rn, __fadd_rn, fmaf) so nvcc's
// contraction of a * b + c into an FMA cannot change a value; the CPU side of
// each rule is named next to it (src/backend/cpu, src/ops/cpu_ops.cpp).
#include <algorithm>
#include <cmath>
#include <string>

#include "backend/cuda/common.cuh"
#include "backend/cuda/device.h"
#include "backend/cuda/exact.h"

namespace strix::cuda {

namespace {

constexpr unsigned kFull = 0xffffffffu;

// ggml_v_expf of the AVX-512 build, one lane (cpu::attn_ref::expf16).
__device__ __forceinline__ float expf16(float x) {
  const float r = 0x1.8p23f;
  const float z = fmaf(x, 0x1.715476p+0f, r);
  const float n = __fsub_rn(z, r);
  const float b = fmaf(-n, 0x1.7f7d1cp-20f, fmaf(-n, 0x1.62e4p-1f, x));
  const float u = __fmul_rn(b, b);
  const float j = fmaf(fmaf(fmaf(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, fmaf(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)), u,
                       fmaf(0x1.ffffecp-1f, b, 1.0f));
  if (fabsf(n) > 192.0f) return n <= 0.0f ? 0.0f : INFINITY;
  if (isnan(n)) return n;
  return ldexpf(j, static_cast<int>(n));
}

// _mm512_reduce_add_ps over the 16 lanes of a half warp (cpu::attn_ref::reduce16:
// lanes l + l+8, then + l+4, then pairs 0+2 / 1+3, then 0+1); the sum in lane 0.
__device__ __forceinline__ float reduce16(float v, unsigned mask) {
  v = __fadd_rn(v, __shfl_down_sync(mask, v, 8, 16));
  v = __fadd_rn(v, __shfl_down_sync(mask, v, 4, 16));
  v = __fadd_rn(v, __shfl_down_sync(mask, v, 2, 16));
  return __fadd_rn(v, __shfl_down_sync(mask, v, 1, 16));
}
// The same over 16 values held by one thread.
__device__ __forceinline__ float reduce16_local(float* a) {
#pragma unroll
  for (int l = 0; l < 8; ++l) a[l] = __fadd_rn(a[8 + l], a[l]);
#pragma unroll
  for (int l = 0; l < 4; ++l) a[l] = __fadd_rn(a[4 + l], a[l]);
  return __fadd_rn(__fadd_rn(a[0], a[2]), __fadd_rn(a[1], a[3]));
}

// ---- Q8_0 and Q6_K: eight lanes per output (ggml's 8-lane FMA chains), lane L
// keeping its own acc_L = fma(dx * dy, integer_L, acc_L) block by block, then
// hsum_f32x8 (L + L+4, then + L+2, then + L+1). A warp: 4 rows x 8 lanes; a
// block: 4 warps; blockIdx.y: C token columns. K::block adds one weight block
// of the row to the C accumulators of lane L.
constexpr int kQ8Warps = 4;

// Q8_0 x Q8_0 (simd_dot_q8_0_q8_0): integer_L is the dot of bytes [4 L, 4 L + 4) of the block.
struct LanesQ8_0 {
  static constexpr int kElems = 32;
  template <int C>
  __device__ __forceinline__ static void block(const uint8_t* row, int b, int L, const int8_t* __restrict__ q,
                                               const float* __restrict__ d, int64_t width, int nb, int t0, int nc,
                                               float (&acc)[C]) {
    const uint16_t* blk = reinterpret_cast<const uint16_t*>(row) + 17 * b;  // 34-byte blocks: 2-byte aligned
    const float dx = h2f(__ldg(blk));
    const int wq = static_cast<int>(static_cast<unsigned>(__ldg(blk + 1 + 2 * L)) |
                                    (static_cast<unsigned>(__ldg(blk + 2 + 2 * L)) << 16));
#pragma unroll
    for (int c = 0; c < C; ++c) {
      if (c < nc) {
        const int64_t t = t0 + c;
        const int aq = *reinterpret_cast<const int*>(q + t * width + 32 * b + 4 * L);
        acc[c] = fmaf(__fmul_rn(dx, d[t * nb + b]), __int2float_rn(__dp4a(wq, aq, 0)), acc[c]);
      }
    }
  }
};

constexpr unsigned kOnes = 0x01010101u;
__device__ __forceinline__ int sum16(int4 v) {  // the sum of 16 int8
  const int o = static_cast<int>(kOnes);
  return __dp4a(o, v.x, __dp4a(o, v.y, __dp4a(o, v.z, __dp4a(o, v.w, 0))));
}

// Q6_K x Q8_K (simd_dot_q6_K_q8_K, vec_dot in decode and prefill alike):
// integer_L is the total over the 32-element groups k of sc * (q6 . y) of
// elements 32 k + [4 L, 4 L + 4) (q6 the unsigned 6-bit values), minus 32
// (sc_2L bsum_2L + sc_2L+1 bsum_2L+1).
struct LanesQ6_K {
  static constexpr int kElems = 256;
  __device__ __forceinline__ static unsigned u32(const uint8_t* p) {  // 2-byte aligned (210-byte blocks)
    const uint16_t* h = reinterpret_cast<const uint16_t*>(p);
    return static_cast<unsigned>(h[0]) | (static_cast<unsigned>(h[1]) << 16);
  }
  template <int C>
  __device__ __forceinline__ static void block(const uint8_t* row, int b, int L, const int8_t* __restrict__ q,
                                               const float* __restrict__ d, int64_t width, int nb, int t0, int nc,
                                               float (&acc)[C]) {
    const uint8_t* blk = row + 210 * static_cast<int64_t>(b);
    const int8_t* scl = reinterpret_cast<const int8_t*>(blk + 192);
    const float dx = h2f(*reinterpret_cast<const uint16_t*>(blk + 208));
    int qv[8];  // group k = 4 h + g: elements 128 h + 32 g + 4 L + [0, 4)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const unsigned lo0 = u32(blk + 64 * h + 4 * L), lo1 = u32(blk + 64 * h + 32 + 4 * L);
      const unsigned hb = u32(blk + 128 + 32 * h + 4 * L);
#pragma unroll
      for (int g = 0; g < 4; ++g) {
        const unsigned lo = ((g & 1) ? lo1 : lo0) >> (4 * (g >> 1));
        qv[4 * h + g] = static_cast<int>((lo & 0x0F0F0F0Fu) | (((hb >> (2 * g)) & 0x03030303u) << 4));
      }
    }
    const int sc_lo = scl[2 * L], sc_hi = scl[2 * L + 1];
#pragma unroll
    for (int c = 0; c < C; ++c) {
      if (c < nc) {
        const int64_t t = t0 + c;
        const int8_t* a = q + t * width + 256 * static_cast<int64_t>(b);
        int tot = 0;
#pragma unroll
        for (int k = 0; k < 8; ++k) {
          const int ak = *reinterpret_cast<const int*>(a + 32 * k + 4 * L);
          tot += scl[2 * k + (L >= 4)] * __dp4a(qv[k], ak, 0);
        }
        const int bs0 = sum16(*reinterpret_cast<const int4*>(a + 32 * L));
        const int bs1 = sum16(*reinterpret_cast<const int4*>(a + 32 * L + 16));
        tot -= 32 * (sc_lo * bs0 + sc_hi * bs1);
        acc[c] = fmaf(__fmul_rn(dx, d[t * nb + b]), __int2float_rn(tot), acc[c]);
      }
    }
  }
};

template <class K, int C>
__global__ void __launch_bounds__(32 * kQ8Warps)
    gemv_lanes8_exact_kernel(const uint8_t* __restrict__ w, size_t nb1, int64_t rows, const int8_t* __restrict__ q,
                             const float* __restrict__ d, int64_t width, int n, float* __restrict__ y, int64_t ys) {
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const int L = lane % 8;
  const int64_t r = (static_cast<int64_t>(blockIdx.x) * kQ8Warps + warp) * 4 + lane / 8;
  const int t0 = static_cast<int>(blockIdx.y) * C;
  const int nc = min(C, n - t0);
  const int nb = static_cast<int>(width / K::kElems);
  float acc[C];
#pragma unroll
  for (int c = 0; c < C; ++c) acc[c] = 0.0f;
  if (r < rows) {
    const uint8_t* row = w + r * nb1;
    for (int b = 0; b < nb; ++b) K::template block<C>(row, b, L, q, d, width, nb, t0, nc, acc);
  }
#pragma unroll
  for (int c = 0; c < C; ++c) {
    float v = acc[c];
    v = __fadd_rn(v, __shfl_down_sync(kFull, v, 4, 8));
    v = __fadd_rn(v, __shfl_down_sync(kFull, v, 2, 8));
    v = __fadd_rn(v, __shfl_down_sync(kFull, v, 1, 8));
    if (L == 0 && r < rows && c < nc) y[static_cast<int64_t>(t0 + c) * ys + r] = v;
  }
}

template <class K>
void launch_lanes8(const DevWeight& w, const int8_t* q, const float* d, int n, float* y, int64_t ys, cudaStream_t st) {
  const unsigned rows_per_block = 4 * kQ8Warps;
  const unsigned gx = static_cast<unsigned>((w.ne1 + rows_per_block - 1) / rows_per_block);
  if (n == 1) {
    gemv_lanes8_exact_kernel<K, 1><<<dim3(gx, 1), 32 * kQ8Warps, 0, st>>>(w.data, w.nb1, w.ne1, q, d, w.ne0, n, y, ys);
  } else {
    gemv_lanes8_exact_kernel<K, 8><<<dim3(gx, static_cast<unsigned>((n + 7) / 8)), 32 * kQ8Warps, 0, st>>>(
        w.data, w.nb1, w.ne1, q, d, w.ne0, n, y, ys);
  }
}

// ---- Q4_K x Q8_K (libllama repacks Q4_K: gemm_repack_x86.h). Per super-block
// the integer sums of each sub-block, sc_j * (q . y)_j and min_j * sum(y)_j
// (exact, any order); columns [0, n_gemm) in its gemm order: per pair p of
// sub-blocks (64 elements) acc = fma(S_p, dw * da, acc), accm = fma(M_p, dmin *
// da, accm); the others in its gemv order: one such pair of FMAs per
// super-block with S and M of all 8 sub-blocks; the output acc - accm.
// A warp per row, lane l the elements [8 l, 8 l + 8) of each super-block.
template <int C>
__global__ void __launch_bounds__(128)
    gemv_q4k_exact_kernel(const uint8_t* __restrict__ w, size_t nb1, int64_t rows, const int8_t* __restrict__ q,
                          const float* __restrict__ d, int64_t width, int n, int n_gemm, float* __restrict__ y,
                          int64_t ys) {
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * 4 + warp;
  const int t0 = static_cast<int>(blockIdx.y) * C;
  const int nc = min(C, n - t0);
  if (r >= rows) return;  // a whole warp
  const int nb = static_cast<int>(width / 256);
  const int p = lane / 8, o = 8 * (lane % 8);  // chunk p (64 elements), offset o in it
  const int j = 2 * p + (o >= 32);             // sub-block
  const int shift = o >= 32 ? 4 : 0;
  float acc[C], accm[C];
#pragma unroll
  for (int c = 0; c < C; ++c) acc[c] = accm[c] = 0.0f;
  const uint8_t* row = w + r * nb1;
  for (int b = 0; b < nb; ++b) {
    const uint8_t* blk = row + 144 * static_cast<int64_t>(b);
    const float dw = h2f(*reinterpret_cast<const uint16_t*>(blk));
    const float dmin = h2f(*reinterpret_cast<const uint16_t*>(blk + 2));
    int sc, mn;
    q4k_scale_min(j, blk + 4, sc, mn);
    const uint2 u = *reinterpret_cast<const uint2*>(blk + 16 + 32 * p + (o & 31));
    const int q0 = static_cast<int>((u.x >> shift) & 0x0F0F0F0Fu), q1 = static_cast<int>((u.y >> shift) & 0x0F0F0F0Fu);
#pragma unroll
    for (int c = 0; c < C; ++c) {
      if (c >= nc) break;
      const int64_t t = t0 + c;
      const int2 a = *reinterpret_cast<const int2*>(q + t * width + 256 * static_cast<int64_t>(b) + 8 * lane);
      const int dot = __dp4a(q0, a.x, __dp4a(q1, a.y, 0));
      const int sy = __dp4a(static_cast<int>(kOnes), a.x, __dp4a(static_cast<int>(kOnes), a.y, 0));
      const float da = d[t * nb + b];
      const float dd = __fmul_rn(dw, da), dm = __fmul_rn(dmin, da);
      int S = sc * dot, M = mn * sy;
      if (t < n_gemm) {
#pragma unroll
        for (int k = 4; k > 0; k >>= 1) {
          S += __shfl_down_sync(kFull, S, k, 8);
          M += __shfl_down_sync(kFull, M, k, 8);
        }
        int Sp[4], Mp[4];
#pragma unroll
        for (int pp = 0; pp < 4; ++pp) {
          Sp[pp] = __shfl_sync(kFull, S, 8 * pp);
          Mp[pp] = __shfl_sync(kFull, M, 8 * pp);
        }
#pragma unroll
        for (int pp = 0; pp < 4; ++pp) {
          acc[c] = fmaf(__int2float_rn(Sp[pp]), dd, acc[c]);
          accm[c] = fmaf(__int2float_rn(Mp[pp]), dm, accm[c]);
        }
      } else {
        S = __reduce_add_sync(kFull, S);
        M = __reduce_add_sync(kFull, M);
        acc[c] = fmaf(__int2float_rn(S), dd, acc[c]);
        accm[c] = fmaf(__int2float_rn(M), dm, accm[c]);
      }
    }
  }
  if (lane != 0) return;
#pragma unroll
  for (int c = 0; c < C; ++c) {
    if (c < nc) y[static_cast<int64_t>(t0 + c) * ys + r] = __fsub_rn(acc[c], accm[c]);
  }
}

// ---- F16 / F32 weights: a half warp per (row, C columns).
// vec_dot (ggml_vec_dot_f16 / _f32 of the zen4 build): lane l keeps four
// accumulators a_j over 64-element steps (element 64 i + 16 j + l), folded as
// (a0 + a2) + (a1 + a3) and reduced over the 16 lanes; the elements after the
// last multiple of 64: F16 adds each float product in double; F32 adds the
// products one by one in float (16 and 8 at a time as GCC vectorised it,
// then fused multiply-adds for the last < 8).
// tinyBLAS (two columns or more, rows % 4 == 0, k % 16 == 0): lane l one
// chain over elements 16 i + l, reduced over the 16 lanes.
template <typename T>
__device__ __forceinline__ float wval(const T* p, int64_t i) {
  if constexpr (sizeof(T) == 2) {
    return h2f(__ldg(p + i));
  } else {
    return __ldg(p + i);
  }
}

constexpr int kFloatRowsPerBlock = 8;  // half warps of a 128-thread block
template <typename T, int C>
__global__ void __launch_bounds__(128) gemv_float_exact_kernel(const uint8_t* __restrict__ w, size_t nb1, int64_t rows,
                                                               int64_t k, const float* __restrict__ x, int64_t xs,
                                                               int n, float* __restrict__ y, int64_t ys, bool tiny) {
  const int l = static_cast<int>(threadIdx.x) % 16, hw = static_cast<int>(threadIdx.x) / 16;
  const unsigned mask = 0xffffu << (16 * (hw & 1));
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kFloatRowsPerBlock + hw;
  const int t0 = static_cast<int>(blockIdx.y) * C;
  const int nc = min(C, n - t0);
  if (r >= rows) return;  // a whole half warp leaves together
  const T* wr = reinterpret_cast<const T*>(w + r * nb1);
  float v[C];
  const int64_t np = tiny ? k : (k & ~int64_t{63});
  if (tiny) {
    float a[C];
#pragma unroll
    for (int c = 0; c < C; ++c) a[c] = 0.0f;
    for (int64_t i = 0; i < k; i += 16) {
      const float wv = wval(wr, i + l);
#pragma unroll
      for (int c = 0; c < C; ++c) {
        if (c < nc) a[c] = fmaf(wv, x[static_cast<int64_t>(t0 + c) * xs + i + l], a[c]);
      }
    }
#pragma unroll
    for (int c = 0; c < C; ++c) v[c] = a[c];
  } else {
    float a[C][4];
#pragma unroll
    for (int c = 0; c < C; ++c) a[c][0] = a[c][1] = a[c][2] = a[c][3] = 0.0f;
    for (int64_t i = 0; i < np; i += 64) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float wv = wval(wr, i + 16 * j + l);
#pragma unroll
        for (int c = 0; c < C; ++c) {
          if (c < nc) a[c][j] = fmaf(wv, x[static_cast<int64_t>(t0 + c) * xs + i + 16 * j + l], a[c][j]);
        }
      }
    }
#pragma unroll
    for (int c = 0; c < C; ++c) v[c] = __fadd_rn(__fadd_rn(a[c][0], a[c][2]), __fadd_rn(a[c][1], a[c][3]));
  }
#pragma unroll
  for (int c = 0; c < C; ++c) v[c] = reduce16(v[c], mask);
  if (l != 0) return;
#pragma unroll
  for (int c = 0; c < C; ++c) {
    if (c >= nc) continue;
    const float* xr = x + static_cast<int64_t>(t0 + c) * xs;
    float s = v[c];
    if (np < k) {
      if constexpr (sizeof(T) == 2) {
        double sd = s;
        for (int64_t i = np; i < k; ++i) sd += static_cast<double>(__fmul_rn(wval(wr, i), xr[i]));
        s = static_cast<float>(sd);
      } else {
        const int64_t fused = k - (k - np) % 8;  // the 16- and 8-wide parts: products, then adds
        int64_t i = np;
        for (; i < fused; ++i) s = __fadd_rn(s, __fmul_rn(wval(wr, i), xr[i]));
        for (; i < k; ++i) s = fmaf(wval(wr, i), xr[i], s);
      }
    }
    y[static_cast<int64_t>(t0 + c) * ys + r] = s;
  }
}

// ---- SwiGLU (ggml_vec_swiglu_f32, AVX-512): silu(g) = g / (1 + expf16(0 - g))
// over the 16-element chunks of a row, libm's expf for the last width % 16.
__global__ void swiglu_exact_kernel(const float* __restrict__ g, int64_t gs, const float* __restrict__ u, int64_t us,
                                    float* __restrict__ out, int64_t os, int64_t width, int64_t total) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int64_t t = i / width, c = i % width;
  const float gv = g[t * gs + c];
  const float e = c < width - width % 16 ? expf16(__fsub_rn(0.0f, gv)) : expf(-gv);
  out[t * os + c] = __fmul_rn(__fdiv_rn(gv, __fadd_rn(1.0f, e)), u[t * us + c]);
}

// ---- RoPE from the host's table, then the KV store. One block per (token,
// head): q heads, then k heads (rotated, then stored), then one block storing v.
__global__ void rope_kv_store_exact_kernel(float* __restrict__ q, int64_t qs, float* __restrict__ k, int64_t ks,
                                           const float* __restrict__ v, int64_t vs, int n_head, int n_head_kv, int hd,
                                           int n_rot, bool neox, const int32_t* __restrict__ pos,
                                           const int32_t* __restrict__ seq, const float* __restrict__ table,
                                           KvLayout kv) {
  const int t = static_cast<int>(blockIdx.y), hh = static_cast<int>(blockIdx.x);
  const int64_t cell = kv_cell(kv, seq[t], pos[t]);
  if (hh == n_head + n_head_kv) {
    for (int64_t i = threadIdx.x; i < kv.v_dim; i += blockDim.x) kv.v[cell * kv.v_dim + i] = f2h(v[t * vs + i]);
    return;
  }
  const bool is_k = hh >= n_head;
  float* xr = is_k ? k + t * ks + static_cast<int64_t>(hh - n_head) * hd : q + t * qs + static_cast<int64_t>(hh) * hd;
  const float* cs = table + static_cast<int64_t>(pos[t]) * n_rot;
  const int half = n_rot / 2;
  for (int i = threadIdx.x; i < half; i += blockDim.x) {
    const int a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
    const float x0 = xr[a], x1 = xr[b], c = cs[2 * i], s = cs[2 * i + 1];
    xr[a] = fmaf(x0, c, -__fmul_rn(x1, s));  // ops::rope_apply
    xr[b] = fmaf(x0, s, __fmul_rn(x1, c));
  }
  if (!is_k) return;
  __syncthreads();
  uint16_t* kr = kv.k + cell * kv.k_dim + static_cast<int64_t>(hh - n_head) * hd;
  for (int i = threadIdx.x; i < hd; i += blockDim.x) kr[i] = f2h(xr[i]);
}

// ---- Attention (ops::attention with the CPU's vec_ops): one block of 256
// threads per (token, head); 16 half warps over the cells.
constexpr int kAttnThreads = 256;

// q.k of one cell over n elements (k in f16, q the query's f16 values as
// floats), in vec_dot's order (vecdot) or tinyBLAS's; the value in lane 0.
__device__ __forceinline__ float attn_dot(const uint16_t* __restrict__ kr, const float* __restrict__ qs, int n,
                                          bool vecdot, int l, unsigned mask) {
  if (!vecdot) {
    float a = 0.0f;
    for (int i = 0; i < n; i += 16) a = fmaf(h2f(kr[i + l]), qs[i + l], a);
    return reduce16(a, mask);
  }
  const int np = n & ~63;
  float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
  for (int i = 0; i < np; i += 64) {
    a0 = fmaf(h2f(kr[i + l]), qs[i + l], a0);
    a1 = fmaf(h2f(kr[i + 16 + l]), qs[i + 16 + l], a1);
    a2 = fmaf(h2f(kr[i + 32 + l]), qs[i + 32 + l], a2);
    a3 = fmaf(h2f(kr[i + 48 + l]), qs[i + 48 + l], a3);
  }
  float s = reduce16(__fadd_rn(__fadd_rn(a0, a2), __fadd_rn(a1, a3)), mask);
  if (l == 0 && np < n) {
    double sd = s;
    for (int i = np; i < n; ++i) sd += static_cast<double>(__fmul_rn(h2f(kr[i]), qs[i]));
    s = static_cast<float>(sd);
  }
  return s;
}

struct AttnSmem {
  int q_off, sc_off, ch_off, acc_off, floats;
};
__host__ __device__ inline AttnSmem attn_smem(int hdk, int hdv, int max_cells) {
  const int ncp = (max_cells + 63) / 64 * 64;
  AttnSmem s;
  s.q_off = 0;
  s.sc_off = (hdk + 3) / 4 * 4;
  s.ch_off = s.sc_off + ncp;
  s.acc_off = s.ch_off + ncp / 16;
  s.floats = s.acc_off + 64 * hdv;
  return s;
}

__global__ void __launch_bounds__(kAttnThreads) attention_exact_kernel(KvLayout kv, AttnArgs a) {
  extern __shared__ float sm[];
  __shared__ float red[kAttnThreads / 32];
  __shared__ float inv_s;
  __shared__ int one_s;
  const int t = static_cast<int>(blockIdx.x) / a.n_head, h = static_cast<int>(blockIdx.x) % a.n_head;
  const int tid = static_cast<int>(threadIdx.x);
  const int hdk = a.head_dim_k, hdv = a.head_dim_v;
  const int kvh = h / (a.n_head / a.n_head_kv);
  const int sq = a.seq[t];
  const int n_cells = a.pos[t] + 1;
  const AttnSmem lay = attn_smem(hdk, hdv, a.max_cells);
  float* qs = sm + lay.q_off;
  float* sc = sm + lay.sc_off;
  float* ch = sm + lay.ch_off;
  float* acc = sm + lay.acc_off;

  // ggml-cpu multiplies with ggml_vec_dot_f16 when the micro-batch holds one
  // token of this sequence, with tinyBLAS when it holds several (ops::attention)
  if (tid == 0) {
    int count = 0;
    for (int u = 0; u < a.n_tokens && count < 2; ++u) count += a.seq[u] == sq;
    one_s = count == 1;
  }
  const float* q = a.q + static_cast<int64_t>(t) * a.q_stride + static_cast<int64_t>(h) * hdk;
  for (int i = tid; i < hdk; i += kAttnThreads) qs[i] = h2f(f2h(q[i]));
  __syncthreads();
  const bool one = one_s != 0;
  const int lanes = one ? 64 : 16;
  const bool vecdot = one || hdk % 16 != 0;
  const int l = tid % 16, g = tid / 16;
  const unsigned mask = 0xffffu << (16 * (g & 1));

  for (int c = g; c < n_cells; c += kAttnThreads / 16) {
    const uint16_t* kr = kv.k + kv_cell(kv, sq, c) * kv.k_dim + static_cast<int64_t>(kvh) * hdk;
    const float s = attn_dot(kr, qs, hdk, vecdot, l, mask);
    if (l == 0) sc[c] = __fmul_rn(s, a.kq_scale);
  }
  __syncthreads();
  float mx = -INFINITY;
  for (int c = tid; c < n_cells; c += kAttnThreads) mx = fmaxf(mx, sc[c]);
  mx = warp_max(mx);
  if (tid % 32 == 0) red[tid / 32] = mx;
  __syncthreads();
  mx = red[0];
#pragma unroll
  for (int w = 1; w < kAttnThreads / 32; ++w) mx = fmaxf(mx, red[w]);

  // exp(x - max) per cell, each 16 cells' sum reduced as one vector, the chunks added in double
  const int nch = (n_cells + 15) / 16;
  for (int k = g; k < nch; k += kAttnThreads / 16) {
    const int c = 16 * k + l;
    float e = 0.0f;
    if (c < n_cells) {
      e = expf16(__fsub_rn(sc[c], mx));
      sc[c] = e;
    }
    e = reduce16(e, mask);
    if (l == 0) ch[k] = e;
  }
  __syncthreads();
  if (tid == 0) {
    double sum = 0.0;
    for (int k = 0; k < nch; ++k) sum += static_cast<double>(ch[k]);
    inv_s = static_cast<float>(1.0 / sum);
  }
  __syncthreads();
  const float inv = inv_s;
  for (int c = tid; c < n_cells; c += kAttnThreads) sc[c] = h2f(f2h(__fmul_rn(sc[c], inv)));
  __syncthreads();

  // P.V: one chain per (lane L, dim d) over cells L, L + lanes, ...
  const uint16_t* vb = kv.v + static_cast<int64_t>(kvh) * hdv;
  for (int idx = tid; idx < lanes * hdv; idx += kAttnThreads) {
    const int L = idx / hdv, dd = idx % hdv;
    float s = 0.0f;
    for (int c = L; c < n_cells; c += lanes) {
      const float p = sc[c];
      if (p != 0.0f) s = fmaf(h2f(vb[kv_cell(kv, sq, c) * kv.v_dim + dd]), p, s);
    }
    acc[idx] = s;
  }
  __syncthreads();
  float* out = a.out + static_cast<int64_t>(t) * a.out_stride + static_cast<int64_t>(h) * hdv;
  for (int dd = tid; dd < hdv; dd += kAttnThreads) {
    float v16[16];
    if (lanes == 64) {  // cpu::attn_ref::fold64: (a0 + a2) + (a1 + a3)
#pragma unroll
      for (int i = 0; i < 16; ++i) {
        v16[i] = __fadd_rn(__fadd_rn(acc[i * hdv + dd], acc[(32 + i) * hdv + dd]),
                           __fadd_rn(acc[(16 + i) * hdv + dd], acc[(48 + i) * hdv + dd]));
      }
    } else {
#pragma unroll
      for (int i = 0; i < 16; ++i) v16[i] = acc[i * hdv + dd];
    }
    out[dd] = reduce16_local(v16);
  }
}

}  // namespace

void gemv_q8_0_exact(const DevWeight& w, const int8_t* q, const float* d, int n, float* y, int64_t y_stride,
                     cudaStream_t st) {
  if (w.type != GgmlType::Q8_0 || w.ne0 % 32 != 0) throw Error("gemv_q8_0_exact: not a Q8_0 weight of whole blocks");
  if (n <= 0) return;
  launch_lanes8<LanesQ8_0>(w, q, d, n, y, y_stride, st);
  check_launch("gemv_q8_0_exact");
}

void gemv_q_exact(const DevWeight& w, const int8_t* q, const float* d, int n, float* y, int64_t y_stride,
                  cudaStream_t st) {
  if (w.type == GgmlType::Q8_0) {
    gemv_q8_0_exact(w, q, d, n, y, y_stride, st);
    return;
  }
  if ((w.type != GgmlType::Q4_K && w.type != GgmlType::Q6_K) || w.ne0 % 256 != 0) {
    throw Error(std::string("gemv_q_exact: no exact kernel for ") + type_name(static_cast<uint32_t>(w.type)) +
                " rows of " + std::to_string(w.ne0));
  }
  if (n <= 0) return;
  const unsigned gy1 = 1, gy8 = static_cast<unsigned>((n + 7) / 8);
  if (w.type == GgmlType::Q4_K) {
    if (w.ne1 % 8 != 0) throw Error("gemv_q_exact: Q4_K rows not a multiple of 8 (libllama's vec_dot order)");
    const int n_gemm = n - n % 4;  // libllama's gemm columns; the last n % 4 take its gemv
    const unsigned gx = static_cast<unsigned>((w.ne1 + 3) / 4);
    if (n == 1) {
      gemv_q4k_exact_kernel<1>
          <<<dim3(gx, gy1), 128, 0, st>>>(w.data, w.nb1, w.ne1, q, d, w.ne0, n, n_gemm, y, y_stride);
    } else {
      gemv_q4k_exact_kernel<8>
          <<<dim3(gx, gy8), 128, 0, st>>>(w.data, w.nb1, w.ne1, q, d, w.ne0, n, n_gemm, y, y_stride);
    }
  } else {
    launch_lanes8<LanesQ6_K>(w, q, d, n, y, y_stride, st);
  }
  check_launch("gemv_q_exact");
}

void gemv_float_exact(const DevWeight& w, const float* x, int64_t x_stride, int n, float* y, int64_t y_stride,
                      cudaStream_t st) {
  if (w.type != GgmlType::F16 && w.type != GgmlType::F32) throw Error("gemv_float_exact: not an F16 / F32 weight");
  if (n <= 0) return;
  // repack.h's libllama_matmul_order: tinyBLAS for two columns or more when the rows are a
  // multiple of 4 (and k of its 16-lane step), vec_dot otherwise
  const bool tiny = n >= 2 && w.ne1 % 4 == 0 && w.ne0 % 16 == 0;
  const unsigned gx = static_cast<unsigned>((w.ne1 + kFloatRowsPerBlock - 1) / kFloatRowsPerBlock);
  const auto go = [&](auto kern, int c) {
    kern<<<dim3(gx, static_cast<unsigned>((n + c - 1) / c)), 128, 0, st>>>(w.data, w.nb1, w.ne1, w.ne0, x, x_stride, n,
                                                                           y, y_stride, tiny);
  };
  if (w.type == GgmlType::F16) {
    if (n == 1) {
      go(gemv_float_exact_kernel<uint16_t, 1>, 1);
    } else {
      go(gemv_float_exact_kernel<uint16_t, 4>, 4);
    }
  } else if (n == 1) {
    go(gemv_float_exact_kernel<float, 1>, 1);
  } else {
    go(gemv_float_exact_kernel<float, 4>, 4);
  }
  check_launch("gemv_float_exact");
}

void swiglu_exact(const float* gate, int64_t gate_stride, const float* up, int64_t up_stride, float* out,
                  int64_t out_stride, int n, int64_t width, cudaStream_t st) {
  const int64_t total = static_cast<int64_t>(n) * width;
  if (total == 0) return;
  swiglu_exact_kernel<<<blocks_for(total, 256), 256, 0, st>>>(gate, gate_stride, up, up_stride, out, out_stride, width,
                                                              total);
  check_launch("swiglu_exact");
}

void rope_kv_store_exact(float* q, int64_t q_stride, float* k, int64_t k_stride, const float* v, int64_t v_stride,
                         int n, int64_t n_head, int64_t n_head_kv, int64_t head_dim, int n_rot, bool neox,
                         const int32_t* pos, const int32_t* seq, const float* table, const KvLayout& kv,
                         cudaStream_t st) {
  if (n <= 0) return;
  const dim3 grid(static_cast<unsigned>(n_head + n_head_kv + 1), static_cast<unsigned>(n));
  rope_kv_store_exact_kernel<<<grid, 128, 0, st>>>(q, q_stride, k, k_stride, v, v_stride, static_cast<int>(n_head),
                                                   static_cast<int>(n_head_kv), static_cast<int>(head_dim), n_rot, neox,
                                                   pos, seq, table, kv);
  check_launch("rope_kv_store_exact");
}

namespace {
// sm_90's opt-in shared memory per block (227 KB) less the kernel's static shared memory
constexpr int kMaxSmemBytes = 227 * 1024 - 1024;
}  // namespace

int attention_exact_max_cells(int head_dim_k, int head_dim_v) {
  // floats left after q and the P.V chains, at 1 + 1/16 floats per cell (scores, 16-cell sums)
  const int fixed = (head_dim_k + 3) / 4 * 4 + 64 * head_dim_v;
  const int free_floats = kMaxSmemBytes / 4 - 64 - fixed;
  return free_floats <= 0 ? 0 : (free_floats * 16 / 17) / 64 * 64;
}

void attention_exact(const KvLayout& kv, const AttnArgs& a, cudaStream_t st) {
  if (a.n_tokens <= 0) return;
  if (a.max_cells > attention_exact_max_cells(a.head_dim_k, a.head_dim_v)) {
    throw Refusal("exact numerics: the CUDA attention holds at most " +
                  std::to_string(attention_exact_max_cells(a.head_dim_k, a.head_dim_v)) +
                  " cells per sequence for these heads; lower -c");
  }
  const size_t bytes = sizeof(float) * static_cast<size_t>(attn_smem(a.head_dim_k, a.head_dim_v, a.max_cells).floats);
  static const bool opted_in = [] {  // once, for the most any launch asks (not inside a graph capture)
    check(cudaFuncSetAttribute(attention_exact_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxSmemBytes),
          "attention_exact: shared memory opt-in");
    return true;
  }();
  (void)opted_in;
  attention_exact_kernel<<<static_cast<unsigned>(a.n_tokens * a.n_head), kAttnThreads, bytes, st>>>(kv, a);
  check_launch("attention_exact");
}

}  // namespace strix::cuda
