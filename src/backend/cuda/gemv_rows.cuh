// The row products of the decode GEMVs, shared by the plain launches
// (gemv_q.cu, matmul.cu) and the indirect ones of the mixture-of-experts FFN
// (moe.cu), which offset the weight pointer by an expert id read on the device.
//
// Integer (Q8_0, Q4_K, Q6_K against quantized activations, see gemv_q.cu):
// each row product is one warp's, lanes over blocks (kLanes lanes per block,
// 32 / kLanes blocks per warp step), acc[c] per token column, reduced over the
// warp by the caller. A block type is load() (its weight bytes into
// registers) and dot() (the products of those registers).
// Float (every type of dequant_types.cuh against f32 activations, see
// matmul.cu): gemv_row_f, one warp per row, 8 weights a lane at a time.
#pragma once

#include <cstdint>

#include "backend/cuda/common.cuh"
#include "backend/cuda/dequant_types.cuh"
#include "backend/cuda/pdl.cuh"

namespace strix::cuda {

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

// dp4a with the first operand's bytes unsigned: the high nibbles of Q4_K as
// 16 n (n & 0xF0 in place), their sum shifted down once after the four products.
__device__ __forceinline__ int dp4a_us(int a, int b, int c) {
  int d;
  asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

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
        dlo = dp4a_us(qw[k] & 0x0F0F0F0F, al[k], dlo);
        dhi = dp4a_us(qw[k] & static_cast<int>(0xF0F0F0F0u), ah[k], dhi);
        slo = __dp4a(0x01010101, al[k], slo);
        shi = __dp4a(0x01010101, ah[k], shi);
      }
      dhi >>= 4;  // a multiple of 16: exact
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
// kWait: the first step's weight loads are issued, then griddep_wait() (the
// activations come from the kernel before; under programmatic dependent
// launch the weights are already in flight while it ends).
// kPipe: the next step's loads are issued before this step's products (two
// steps of registers per lane).
template <class B, int C, int R, int S, bool kWait = false, bool kPipe = false>
__device__ __forceinline__ void row_loop(const uint8_t* __restrict__ row, size_t nb1, int nrows, int nblk,
                                         const int8_t* __restrict__ aq, const float* __restrict__ ad, int64_t width,
                                         int lane, int part, float (&acc)[R][C]) {
  constexpr int kStep = 32 / B::kLanes;
  const int sub = lane % B::kLanes;
  typename B::Regs r[R];
  auto load = [&](typename B::Regs(&to)[R], int b) {
#pragma unroll
    for (int i = 0; i < R; ++i) {
      if (i < nrows) B::load(row + i * nb1, b, sub, to[i]);
    }
  };
  int b = lane / B::kLanes + part * kStep;
  if (b < nblk) load(r, b);
  if constexpr (kWait) griddep_wait();
  for (bool first = true; b < nblk; b += kStep * S, first = false) {
    if constexpr (kPipe) {
      typename B::Regs nx[R];
      if (b + kStep * S < nblk) load(nx, b + kStep * S);
#pragma unroll
      for (int i = 0; i < R; ++i) {
        if (i < nrows) B::template dot<C>(b, sub, r[i], aq, ad, width, acc[i]);
      }
#pragma unroll
      for (int i = 0; i < R; ++i) r[i] = nx[i];
    } else {
      if (!first) load(r, b);
#pragma unroll
      for (int i = 0; i < R; ++i) {
        if (i < nrows) B::template dot<C>(b, sub, r[i], aq, ad, width, acc[i]);
      }
    }
  }
}

// Q6_K rows staged through shared memory (H200: the per-lane loads of
// row_loop<BQ6_K> are 14 scattered 1- to 4-byte loads per block part, which
// kept the Q6_K GEMV L1-bound at 1.9 TB/s): a warp step's 4 blocks (840
// bytes a row) are read by 105 coalesced 8-byte loads spread over the lanes,
// the next step's loads issued before this step's products, and each lane
// takes its block part from `stage` (per warp, R rows of 106 words). Needs
// rows of a multiple of 4 blocks (8-byte aligned steps).
constexpr int kQ6StageWords = 106;  // 840 bytes and the third word load8_2aligned may touch
template <int C, int R, int S, bool kWait = false>
__device__ __forceinline__ void row_loop_q6k_staged(const uint8_t* __restrict__ row, size_t nb1, int nrows, int nblk,
                                                    const int8_t* __restrict__ aq, const float* __restrict__ ad,
                                                    int64_t width, int lane, int part, float (&acc)[R][C],
                                                    uint2* stage) {
  constexpr int kStep = 4, kWords = 105;  // 4 blocks of 210 bytes
  const int sub = lane % 8, local = lane / 8;
  uint2 v[R][4];
  auto fetch = [&](int b0) {
#pragma unroll
    for (int i = 0; i < R; ++i) {
      const uint2* src = reinterpret_cast<const uint2*>(row + i * nb1 + static_cast<size_t>(b0) * 210);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int w = lane + 32 * j;
        v[i][j] = i < nrows && w < kWords ? src[w] : make_uint2(0u, 0u);
      }
    }
  };
  int b0 = part * kStep;
  if (b0 < nblk) fetch(b0);
  if constexpr (kWait) griddep_wait();  // as row_loop's
  for (; b0 < nblk; b0 += kStep * S) {
    __syncwarp();  // the last step's reads of stage are done
#pragma unroll
    for (int i = 0; i < R; ++i) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int w = lane + 32 * j;
        if (w < kWords) stage[i * kQ6StageWords + w] = v[i][j];
      }
    }
    __syncwarp();
    if (b0 + kStep * S < nblk) fetch(b0 + kStep * S);
#pragma unroll
    for (int i = 0; i < R; ++i) {
      if (i < nrows) {
        BQ6_K::Regs r;
        BQ6_K::load(reinterpret_cast<const uint8_t*>(stage + i * kQ6StageWords), local, sub, r);
        BQ6_K::template dot<C>(b0 + local, sub, r, aq, ad, width, acc[i]);
      }
    }
  }
}

// The float GEMV's row product: acc[c] += dot(row, x[c]) over ne0 elements
// (x rows xs floats apart, 8-byte aligned), lanes over parts of Q::kPart
// elements; the caller reduces acc over the warp.
template <class Q, int C>
__device__ __forceinline__ void gemv_row_f(const uint8_t* __restrict__ row, int64_t ne0, const float* __restrict__ x,
                                           int64_t xs, int lane, float (&acc)[C]) {
  constexpr int kParts = Q::kElems / Q::kPart;
  const int64_t n_parts = ne0 / Q::kPart;
#pragma unroll 4
  for (int64_t p = lane; p < n_parts; p += 32) {
    const int64_t blk = p / kParts;
    float v[8];
    int idx[4];
    Q::part(row + blk * Q::kBytes, static_cast<int>(p % kParts), v, idx);
    const float* xb = x + blk * Q::kElems;
#pragma unroll
    for (int c = 0; c < C; ++c) {
#pragma unroll
      for (int k = 0; k < Q::kPairs; ++k) {
        const float2 xv = __ldg(reinterpret_cast<const float2*>(xb + c * xs + idx[k]));
        acc[c] = fmaf(v[2 * k], xv.x, acc[c]);
        acc[c] = fmaf(v[2 * k + 1], xv.y, acc[c]);
      }
    }
  }
}

}  // namespace strix::cuda
