// The decode GEMV of the quantized weights (Q8_0, Q4_K, Q6_K) in integers,
// as libllama's CPU vec_dot computes them: the activations are quantized
// once to the weight's partner (Q8_0 blocks of 32, Q8_K super-blocks of 256,
// ggml-cpu's x86 quantizers; quant_act.cu), every block product is an exact int32 dot
// (dp4a), and only the per-block scales are float. Each warp reads a row
// with 16-byte (Q4_K) or 2-byte (Q8_0, Q6_K: 34- and 210-byte blocks) loads,
// lanes spread over consecutive blocks so a warp's loads cover contiguous
// bytes; up to 8 token columns share every weight load.
#include <cstdlib>
#include <string>

#include "backend/cuda/common.cuh"
#include "backend/cuda/device.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/pdl.cuh"

namespace strix::cuda {

namespace {

__device__ __forceinline__ int load_i32_2aligned(const uint8_t* p) {
  const uint16_t lo = *reinterpret_cast<const uint16_t*>(p);
  const uint16_t hi = *reinterpret_cast<const uint16_t*>(p + 2);
  return static_cast<int>(static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16));
}

// 8 bytes at a 2-byte aligned address: three aligned words, two funnel shifts
// (the third word stays inside the Q6_K block for every run read below).
__device__ __forceinline__ int2 load8_2aligned(const uint8_t* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const uint32_t* w = reinterpret_cast<const uint32_t*>(a & ~static_cast<uintptr_t>(3));
  const unsigned sh = static_cast<unsigned>(a & 3) * 8;
  const uint32_t w0 = w[0], w1 = w[1], w2 = w[2];
  return make_int2(static_cast<int>(__funnelshift_r(w0, w1, sh)), static_cast<int>(__funnelshift_r(w1, w2, sh)));
}

// Each row product below is one warp's: lanes over blocks (kLanes lanes per
// block, 32 / kLanes blocks per warp step), acc[c] per token column, reduced
// over the warp at the end. A block type is load() (its weight bytes into
// registers) and dot() (the products of those registers).

// ---- Q8_0 x Q8_0: 4 lanes per block (8 quants each) ----
struct BQ8_0 {
  static constexpr int kLanes = 4;
  struct Regs {
    float dw;
    int w0, w1;
  };
  __device__ __forceinline__ static void load(const uint8_t* row, int b, int part, Regs& r) {
    const uint8_t* bp = row + b * 34;
    r.dw = h2f(*reinterpret_cast<const uint16_t*>(bp));
    r.w0 = load_i32_2aligned(bp + 2 + 8 * part);
    r.w1 = load_i32_2aligned(bp + 6 + 8 * part);
  }
  template <int C>
  __device__ __forceinline__ static void dot(int b, int part, const Regs& r, const int8_t* __restrict__ aq,
                                             const float* __restrict__ ad, int64_t width, float acc[C]) {
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int2 a = *reinterpret_cast<const int2*>(aq + c * width + 32 * b + 8 * part);
      const int s = __dp4a(r.w1, a.y, __dp4a(r.w0, a.x, 0));
      acc[c] = fmaf(r.dw * ad[c * (width / 32) + b], static_cast<float>(s), acc[c]);
    }
  }
};

// ---- Q4_K x Q8_K: 8 lanes per super-block (16 quant bytes each: 16 low and
// 16 high nibbles of sub-blocks 2p, 2p + 1); the block's header (d, dmin, 12
// scale bytes) is one 16-byte load ----
struct BQ4_K {
  static constexpr int kLanes = 8;
  struct Regs {
    uint4 head;
    int4 qv;
  };
  __device__ __forceinline__ static void load(const uint8_t* row, int b, int sub, Regs& r) {
    const uint8_t* bp = row + b * 144;
    r.head = *reinterpret_cast<const uint4*>(bp);
    r.qv = *reinterpret_cast<const int4*>(bp + 16 + 16 * sub);  // 32 p + 16 h = 16 sub
  }
  template <int C>
  __device__ __forceinline__ static void dot(int b, int sub, const Regs& r, const int8_t* __restrict__ aq,
                                             const float* __restrict__ ad, int64_t width, float acc[C]) {
    const int p = sub / 2, h = sub % 2;
    const half2 dd = *reinterpret_cast<const half2*>(&r.head.x);
    const float dw = __low2float(dd), dmin = __high2float(dd);
    // The 6-bit scales and mins of sub-blocks 2p, 2p + 1, without branches:
    // four per word as ggml's kmask unpacking (sub-blocks 0-3, then 4-7), the
    // lane's two bytes picked by a permute.
    const uint32_t s0 = r.head.y, s1 = r.head.z, s2 = r.head.w;
    const uint32_t scw = p < 2 ? (s0 & 0x3f3f3f3fu) : ((s2 & 0x0f0f0f0fu) | ((s0 >> 2) & 0x30303030u));
    const uint32_t mnw = p < 2 ? (s1 & 0x3f3f3f3fu) : (((s2 >> 4) & 0x0f0f0f0fu) | ((s1 >> 2) & 0x30303030u));
    const unsigned sel = (p & 1) ? 0x4442u : 0x4440u;  // byte 2 (p & 1), then the next, zeros above
    const int sc_lo = static_cast<int>(__byte_perm(scw, 0u, sel)),
              sc_hi = static_cast<int>(__byte_perm(scw, 0u, sel + 1));
    const int m_lo = static_cast<int>(__byte_perm(mnw, 0u, sel)),
              m_hi = static_cast<int>(__byte_perm(mnw, 0u, sel + 1));
    const int qw[4] = {r.qv.x, r.qv.y, r.qv.z, r.qv.w};
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int8_t* ab = aq + c * width + 256 * b + 64 * p + 16 * h;
      const int4 alo = *reinterpret_cast<const int4*>(ab);
      const int4 ahi = *reinterpret_cast<const int4*>(ab + 32);
      const int al[4] = {alo.x, alo.y, alo.z, alo.w};
      const int ah[4] = {ahi.x, ahi.y, ahi.z, ahi.w};
      int dlo = 0, dhi = 0, slo = 0, shi = 0;
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        dlo = __dp4a(qw[k] & 0x0F0F0F0F, al[k], dlo);
        dhi = __dp4a((qw[k] >> 4) & 0x0F0F0F0F, ah[k], dhi);
        slo = __dp4a(0x01010101, al[k], slo);
        shi = __dp4a(0x01010101, ah[k], shi);
      }
      const float da = ad[c * (width / 256) + b];
      acc[c] = fmaf(dw * da, static_cast<float>(sc_lo * dlo + sc_hi * dhi), acc[c]);
      acc[c] = fmaf(-dmin * da, static_cast<float>(m_lo * slo + m_hi * shi), acc[c]);
    }
  }
};

// ---- Q6_K x Q8_K: 8 lanes per super-block; lane (half, l0) takes l in
// [l0, l0 + 8) of its 128-element half: elements l, l + 32, l + 64, l + 96 ----
struct BQ6_K {
  static constexpr int kLanes = 8;
  struct Regs {
    int a[2], bq[2], hh[2];
    int s[4];
    float dw;
  };
  __device__ __forceinline__ static void load(const uint8_t* row, int b, int sub, Regs& r) {
    const int half = sub / 4, l0 = (sub % 4) * 8;
    const uint8_t* bp = row + b * 210;
    const uint8_t* ql = bp + 64 * half + l0;
    const uint8_t* qh = bp + 128 + 32 * half + l0;
    const auto* sc = reinterpret_cast<const int8_t*>(bp + 192 + 8 * half + l0 / 16);
    const int2 a = load8_2aligned(ql), bq = load8_2aligned(ql + 32), hh = load8_2aligned(qh);
    r.a[0] = a.x, r.a[1] = a.y, r.bq[0] = bq.x, r.bq[1] = bq.y, r.hh[0] = hh.x, r.hh[1] = hh.y;
    r.s[0] = sc[0], r.s[1] = sc[2], r.s[2] = sc[4], r.s[3] = sc[6];
    r.dw = h2f(*reinterpret_cast<const uint16_t*>(bp + 208));
  }
  template <int C>
  __device__ __forceinline__ static void dot(int b, int sub, const Regs& r, const int8_t* __restrict__ aq,
                                             const float* __restrict__ ad, int64_t width, float acc[C]) {
    const int half = sub / 4, l0 = (sub % 4) * 8;
    int q[4][2];  // [element group g: l + 32 g][word]
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const int a = r.a[k], bq = r.bq[k], hh = r.hh[k];
      q[0][k] = __vsub4((a & 0x0F0F0F0F) | ((hh << 4) & 0x30303030), 0x20202020);
      q[1][k] = __vsub4((bq & 0x0F0F0F0F) | ((hh << 2) & 0x30303030), 0x20202020);
      q[2][k] = __vsub4(((a >> 4) & 0x0F0F0F0F) | (hh & 0x30303030), 0x20202020);
      q[3][k] = __vsub4(((bq >> 4) & 0x0F0F0F0F) | ((hh >> 2) & 0x30303030), 0x20202020);
    }
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int8_t* ab = aq + c * width + 256 * b + 128 * half + l0;
      int d[4];
#pragma unroll
      for (int g = 0; g < 4; ++g) {
        const int2 av = *reinterpret_cast<const int2*>(ab + 32 * g);
        d[g] = __dp4a(q[g][1], av.y, __dp4a(q[g][0], av.x, 0));
      }
      const float da = ad[c * (width / 256) + b];
      acc[c] =
          fmaf(r.dw * da, static_cast<float>(r.s[0] * d[0] + r.s[1] * d[1] + r.s[2] * d[2] + r.s[3] * d[3]), acc[c]);
    }
  }
};

// One block per lane and warp step: its loads (of all R rows), then its
// products. With S warps per row, warp `part` takes every S-th step.
template <class B, int C, int R, int S>
__device__ __forceinline__ void row_loop(const uint8_t* __restrict__ row, size_t nb1, int nrows, int nblk,
                                         const int8_t* __restrict__ aq, const float* __restrict__ ad, int64_t width,
                                         int lane, int part, float (&acc)[R][C]) {
  constexpr int kStep = 32 / B::kLanes;
  const int sub = lane % B::kLanes;
  for (int b = lane / B::kLanes + part * kStep; b < nblk; b += kStep * S) {
    typename B::Regs r[R];
#pragma unroll
    for (int i = 0; i < R; ++i) {
      if (i < nrows) B::load(row + i * nb1, b, sub, r[i]);
    }
#pragma unroll
    for (int i = 0; i < R; ++i) {
      if (i < nrows) B::template dot<C>(b, sub, r[i], aq, ad, width, acc[i]);
    }
  }
}

// Up to three weights of one activation (q/k/v, gate/up) in one launch: the
// grid's blocks run the segments one after another, one warp per row.
constexpr int kMaxSegs = 3;
// Rows (warps) per block. Measured on the H200 (runs 6 and 7): 2 or 8 rows per
// block, and loading 2 or 4 blocks ahead per lane, were no faster.
constexpr unsigned kGemvWarps = 4;
struct Seg {
  const uint8_t* w;
  size_t nb1;
  int64_t rows;
  float* y;
  int64_t ys;
  GgmlType type;
  unsigned first_block;  // of the grid
};
struct Segs {
  Seg s[kMaxSegs];
  int count;
  bool prefetch;  // with programmatic dependent launch: the rows into L2 before griddep_wait
};

// R rows per warp, S warps per row (the row's blocks interleaved between
// them, their sums added in warp order), C token columns. Decode (C = 1) of a
// big launch takes R = 2, so every lane has two rows' loads in flight; long
// rows of a small launch take S = 2, so there are warps enough to keep the
// memory busy.
template <int C, int R, int S>
__global__ void gemv_q_kernel(Segs segs, const int8_t* __restrict__ aq, const float* __restrict__ ad, int64_t width) {
  static_assert(R == 1 || S == 1, "rows per warp or warps per row, not both");
  int si = 0;
#pragma unroll
  for (int i = 1; i < kMaxSegs; ++i) si += (i < segs.count && blockIdx.x >= segs.s[i].first_block);
  const Seg& sg = segs.s[si];
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t r = (static_cast<int64_t>(blockIdx.x - sg.first_block) * (kGemvWarps / S) + warp / S) * R;
  const int part = warp % S;
  const uint8_t* row = sg.w + r * sg.nb1;
  // the weights do not depend on the kernel before: start reading them while it ends
  if (segs.prefetch && r < sg.rows && part == 0) {
    prefetch_l2(row, sg.nb1 * static_cast<size_t>(sg.rows - r < R ? sg.rows - r : R), lane);
  }
  griddep_wait();
  const int nrows = r >= sg.rows ? 0 : sg.rows - r < R ? static_cast<int>(sg.rows - r) : R;
  if (S == 1 && nrows == 0) return;
  float acc[R][C];
#pragma unroll
  for (int i = 0; i < R; ++i) {
#pragma unroll
    for (int c = 0; c < C; ++c) acc[i][c] = 0.0f;
  }
  if (nrows > 0) {
    switch (sg.type) {
      case GgmlType::Q8_0:
        row_loop<BQ8_0, C, R, S>(row, sg.nb1, nrows, static_cast<int>(width / 32), aq, ad, width, lane, part, acc);
        break;
      case GgmlType::Q4_K:
        row_loop<BQ4_K, C, R, S>(row, sg.nb1, nrows, static_cast<int>(width / 256), aq, ad, width, lane, part, acc);
        break;
      default:
        row_loop<BQ6_K, C, R, S>(row, sg.nb1, nrows, static_cast<int>(width / 256), aq, ad, width, lane, part, acc);
        break;
    }
  }
  if constexpr (S == 1) {
#pragma unroll
    for (int i = 0; i < R; ++i) {
#pragma unroll
      for (int c = 0; c < C; ++c) {
        const float s = warp_sum(acc[i][c]);
        if (lane == 0 && i < nrows) sg.y[c * sg.ys + r + i] = s;
      }
    }
  } else {
    __shared__ float sums[kGemvWarps][C];
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const float s = warp_sum(acc[0][c]);
      if (lane == 0) sums[warp][c] = s;
    }
    __syncthreads();
    if (part == 0 && nrows > 0 && lane < C) {
      float s = sums[warp][lane];
#pragma unroll
      for (int k = 1; k < S; ++k) s += sums[warp + k][lane];
      sg.y[lane * sg.ys + r] = s;
    }
  }
}

// The one-column GEMV's layout: by the launch's size (auto), or
// STRIX_CUDA_GEMV_MODE=plain (one warp per row, for A/B runs).
bool gemv_plain() {
  static const bool plain = [] {
    const char* e = std::getenv("STRIX_CUDA_GEMV_MODE");
    return e && std::string(e) == "plain";
  }();
  return plain;
}

}  // namespace

bool gemv_q_supported(GgmlType t) { return t == GgmlType::Q8_0 || t == GgmlType::Q4_K || t == GgmlType::Q6_K; }

int gemv_q_block(GgmlType t) { return t == GgmlType::Q8_0 ? 32 : 256; }

void gemv_q_multi(const GemvOut* outs, int count, const int8_t* q, const float* d, int n, cudaStream_t st) {
  if (count < 1 || count > kMaxSegs) throw Error("gemv_q_multi: 1 to 3 weights per launch");
  const int64_t width = outs[0].w->ne0;
  Segs segs{};
  segs.count = count;
  segs.prefetch = pdl_prefetch();
  for (int i = 0; i < count; ++i) {
    const DevWeight& w = *outs[i].w;
    if (!gemv_q_supported(w.type)) refuse_type(w.type);
    if (w.ne0 != width || gemv_q_block(w.type) != gemv_q_block(outs[0].w->type)) {
      throw Error("gemv_q_multi: the weights differ in row length or activation type");
    }
    if (w.ne0 % gemv_q_block(w.type) != 0) {
      throw Error("gemv_q: rows of " + std::to_string(w.ne0) + " are not whole blocks");
    }
    segs.s[i] = {w.data, w.nb1, w.ne1, outs[i].y, outs[i].y_stride, w.type, 0};
  }
  const int64_t per = width / gemv_q_block(outs[0].w->type);
  // the grid: each weight's blocks one after another, rpb rows per block
  auto layout = [&](Segs& sc, int rows_per_block) {
    unsigned blocks = 0;
    for (int i = 0; i < count; ++i) {
      sc.s[i].first_block = blocks;
      blocks += blocks_for(sc.s[i].rows, rows_per_block);
    }
    return blocks;
  };
  int64_t all_rows = 0;
  for (int i = 0; i < count; ++i) all_rows += segs.s[i].rows;
  const int64_t nblk = width / gemv_q_block(outs[0].w->type);
  // H200 run 15: two rows per warp paid on the 28,672 gate/up rows of the 8B
  // and lost on launches of 4-6k rows; 56-block rows of 4,096 (down) had 15 warps an SM
  enum class Mode { kPlain, kTwoRows, kSplit };
  const Mode one = gemv_plain()                                                 ? Mode::kPlain
                   : all_rows >= 16384                                          ? Mode::kTwoRows
                   : nblk * 256 >= 8192 && gemv_q_block(outs[0].w->type) == 256 ? Mode::kSplit
                                                                                : Mode::kPlain;
  for (int t0 = 0; t0 < n;) {
    const int left = n - t0;
    const int c = left >= 8 ? 8 : left >= 4 ? 4 : left >= 2 ? 2 : 1;
    const int8_t* qc = q + static_cast<int64_t>(t0) * width;
    const float* dc = d + static_cast<int64_t>(t0) * per;
    Segs sc = segs;
    for (int i = 0; i < count; ++i) sc.s[i].y += static_cast<int64_t>(t0) * sc.s[i].ys;
    const unsigned threads = 32u * kGemvWarps;
    const Mode mode = c == 1 ? one : Mode::kPlain;
    const int rows_per_block = mode == Mode::kTwoRows ? 2 * kGemvWarps
                               : mode == Mode::kSplit ? kGemvWarps / 2
                                                      : kGemvWarps;
    const dim3 grid(layout(sc, rows_per_block));  // before sc is passed
    switch (c) {
      case 8:
        check(pdl_launch(gemv_q_kernel<8, 1, 1>, grid, dim3(threads), 0, st, sc, qc, dc, width), "gemv_q");
        break;
      case 4:
        check(pdl_launch(gemv_q_kernel<4, 1, 1>, grid, dim3(threads), 0, st, sc, qc, dc, width), "gemv_q");
        break;
      case 2:
        check(pdl_launch(gemv_q_kernel<2, 1, 1>, grid, dim3(threads), 0, st, sc, qc, dc, width), "gemv_q");
        break;
      default:
        if (mode == Mode::kTwoRows) {
          check(pdl_launch(gemv_q_kernel<1, 2, 1>, grid, dim3(threads), 0, st, sc, qc, dc, width), "gemv_q");
        } else if (mode == Mode::kSplit) {
          check(pdl_launch(gemv_q_kernel<1, 1, 2>, grid, dim3(threads), 0, st, sc, qc, dc, width), "gemv_q");
        } else {
          check(pdl_launch(gemv_q_kernel<1, 1, 1>, grid, dim3(threads), 0, st, sc, qc, dc, width), "gemv_q");
        }
        break;
    }
    check_launch("gemv_q");
    t0 += c;
  }
}

void gemv_q(const DevWeight& w, const int8_t* q, const float* d, int n, float* y, int64_t y_stride, cudaStream_t st) {
  const GemvOut o{&w, y, y_stride};
  gemv_q_multi(&o, 1, q, d, n, st);
}

}  // namespace strix::cuda
