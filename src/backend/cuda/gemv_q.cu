// The decode GEMV of the quantized weights (Q8_0, Q4_K, Q6_K) in integers,
// as libllama's CPU vec_dot computes them: the activations are quantized
// once to the weight's partner (Q8_0 blocks of 32, Q8_K super-blocks of 256,
// ggml-cpu's x86 quantizers; quant_act.cu), every block product is an exact int32 dot
// (dp4a), and only the per-block scales are float. Each warp reads a row
// with 16-byte (Q4_K) or 2-byte (Q8_0, Q6_K: 34- and 210-byte blocks) loads,
// lanes spread over consecutive blocks so a warp's loads cover contiguous
// bytes; up to 8 token columns share every weight load.
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
  __device__ __forceinline__ static void load(const uint8_t* row, int64_t b, int part, Regs& r) {
    const uint8_t* bp = row + b * 34;
    r.dw = h2f(*reinterpret_cast<const uint16_t*>(bp));
    r.w0 = load_i32_2aligned(bp + 2 + 8 * part);
    r.w1 = load_i32_2aligned(bp + 6 + 8 * part);
  }
  template <int C>
  __device__ __forceinline__ static void dot(int64_t b, int part, const Regs& r, const int8_t* __restrict__ aq,
                                             const float* __restrict__ ad, int64_t width, float acc[C]) {
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int2 a = *reinterpret_cast<const int2*>(aq + c * width + 32 * b + 8 * part);
      const int s = __dp4a(r.w1, a.y, __dp4a(r.w0, a.x, 0));
      acc[c] = fmaf(r.dw * ad[c * (width / 32) + b], static_cast<float>(s), acc[c]);
    }
  }
};

// The 6-bit scale and min of sub-block j of a Q4_K block, from its 12 packed
// scale bytes held in three words.
__device__ __forceinline__ int byte_of(const uint32_t s[3], int k) { return (s[k >> 2] >> (8 * (k & 3))) & 0xFF; }
__device__ __forceinline__ void q4k_scale_min(const uint32_t s[3], int j, int& sc, int& m) {
  if (j < 4) {
    sc = byte_of(s, j) & 63;
    m = byte_of(s, j + 4) & 63;
  } else {
    sc = (byte_of(s, j + 4) & 0xF) | ((byte_of(s, j - 4) >> 6) << 4);
    m = (byte_of(s, j + 4) >> 4) | ((byte_of(s, j) >> 6) << 4);
  }
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
  __device__ __forceinline__ static void load(const uint8_t* row, int64_t b, int sub, Regs& r) {
    const uint8_t* bp = row + b * 144;
    r.head = *reinterpret_cast<const uint4*>(bp);
    r.qv = *reinterpret_cast<const int4*>(bp + 16 + 16 * sub);  // 32 p + 16 h = 16 sub
  }
  template <int C>
  __device__ __forceinline__ static void dot(int64_t b, int sub, const Regs& r, const int8_t* __restrict__ aq,
                                             const float* __restrict__ ad, int64_t width, float acc[C]) {
    const int p = sub / 2, h = sub % 2;
    const half2 dd = *reinterpret_cast<const half2*>(&r.head.x);
    const float dw = __low2float(dd), dmin = __high2float(dd);
    const uint32_t scw[3] = {r.head.y, r.head.z, r.head.w};
    int sc_lo, m_lo, sc_hi, m_hi;
    q4k_scale_min(scw, 2 * p, sc_lo, m_lo);
    q4k_scale_min(scw, 2 * p + 1, sc_hi, m_hi);
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
  __device__ __forceinline__ static void load(const uint8_t* row, int64_t b, int sub, Regs& r) {
    const int half = sub / 4, l0 = (sub % 4) * 8;
    const uint8_t* bp = row + b * 210;
    const uint8_t* ql = bp + 64 * half + l0;
    const uint8_t* qh = bp + 128 + 32 * half + l0;
    const auto* sc = reinterpret_cast<const int8_t*>(bp + 192 + 8 * half + l0 / 16);
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      r.a[k] = load_i32_2aligned(ql + 4 * k);
      r.bq[k] = load_i32_2aligned(ql + 32 + 4 * k);
      r.hh[k] = load_i32_2aligned(qh + 4 * k);
    }
    r.s[0] = sc[0], r.s[1] = sc[2], r.s[2] = sc[4], r.s[3] = sc[6];
    r.dw = h2f(*reinterpret_cast<const uint16_t*>(bp + 208));
  }
  template <int C>
  __device__ __forceinline__ static void dot(int64_t b, int sub, const Regs& r, const int8_t* __restrict__ aq,
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
      acc[c] = fmaf(r.dw * da, static_cast<float>(r.s[0] * d[0] + r.s[1] * d[1] + r.s[2] * d[2] + r.s[3] * d[3]),
                    acc[c]);
    }
  }
};

// One block per lane and warp step: its loads, then its products.
template <class B, int C>
__device__ __forceinline__ void row_loop(const uint8_t* __restrict__ row, int64_t nblk, const int8_t* __restrict__ aq,
                                         const float* __restrict__ ad, int64_t width, int lane, float acc[C]) {
  constexpr int kStep = 32 / B::kLanes;
  const int sub = lane % B::kLanes;
  for (int64_t b = lane / B::kLanes; b < nblk; b += kStep) {
    typename B::Regs r;
    B::load(row, b, sub, r);
    B::template dot<C>(b, sub, r, aq, ad, width, acc);
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

template <int C>
__global__ void gemv_q_kernel(Segs segs, const int8_t* __restrict__ aq, const float* __restrict__ ad, int64_t width) {
  int si = 0;
#pragma unroll
  for (int i = 1; i < kMaxSegs; ++i) si += (i < segs.count && blockIdx.x >= segs.s[i].first_block);
  const Seg& sg = segs.s[si];
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t r = static_cast<int64_t>(blockIdx.x - sg.first_block) * kGemvWarps + warp;
  const uint8_t* row = sg.w + r * sg.nb1;
  // the weights do not depend on the kernel before: start reading them while it ends
  if (segs.prefetch && r < sg.rows) prefetch_l2(row, sg.nb1, lane);
  griddep_wait();
  if (r >= sg.rows) return;
  float acc[C];
#pragma unroll
  for (int c = 0; c < C; ++c) acc[c] = 0.0f;
  switch (sg.type) {
    case GgmlType::Q8_0:
      row_loop<BQ8_0, C>(row, width / 32, aq, ad, width, lane, acc);
      break;
    case GgmlType::Q4_K:
      row_loop<BQ4_K, C>(row, width / 256, aq, ad, width, lane, acc);
      break;
    default:
      row_loop<BQ6_K, C>(row, width / 256, aq, ad, width, lane, acc);
      break;
  }
#pragma unroll
  for (int c = 0; c < C; ++c) {
    const float s = warp_sum(acc[c]);
    if (lane == 0) sg.y[c * sg.ys + r] = s;
  }
}

}  // namespace

bool gemv_q_supported(GgmlType t) { return t == GgmlType::Q8_0 || t == GgmlType::Q4_K || t == GgmlType::Q6_K; }

int gemv_q_block(GgmlType t) { return t == GgmlType::Q8_0 ? 32 : 256; }

void gemv_q_multi(const GemvOut* outs, int count, const int8_t* q, const float* d, int n, cudaStream_t st) {
  if (count < 1 || count > kMaxSegs) throw Error("gemv_q_multi: 1 to 3 weights per launch");
  const int64_t width = outs[0].w->ne0;
  Segs segs{};
  segs.count = count;
  segs.prefetch = pdl_enabled();
  unsigned blocks = 0;
  for (int i = 0; i < count; ++i) {
    const DevWeight& w = *outs[i].w;
    if (!gemv_q_supported(w.type)) refuse_type(w.type);
    if (w.ne0 != width || gemv_q_block(w.type) != gemv_q_block(outs[0].w->type)) {
      throw Error("gemv_q_multi: the weights differ in row length or activation type");
    }
    if (w.ne0 % gemv_q_block(w.type) != 0) {
      throw Error("gemv_q: rows of " + std::to_string(w.ne0) + " are not whole blocks");
    }
    segs.s[i] = {w.data, w.nb1, w.ne1, outs[i].y, outs[i].y_stride, w.type, blocks};
    blocks += blocks_for(w.ne1, kGemvWarps);
  }
  const int64_t per = width / gemv_q_block(outs[0].w->type);
  for (int t0 = 0; t0 < n;) {
    const int left = n - t0;
    const int c = left >= 8 ? 8 : left >= 4 ? 4 : left >= 2 ? 2 : 1;
    const int8_t* qc = q + static_cast<int64_t>(t0) * width;
    const float* dc = d + static_cast<int64_t>(t0) * per;
    Segs sc = segs;
    for (int i = 0; i < count; ++i) sc.s[i].y += static_cast<int64_t>(t0) * sc.s[i].ys;
    const unsigned threads = 32u * kGemvWarps;
    switch (c) {
      case 8:
        check(pdl_launch(gemv_q_kernel<8>, dim3(blocks), dim3(threads), 0, st, sc, qc, dc, width), "gemv_q");
        break;
      case 4:
        check(pdl_launch(gemv_q_kernel<4>, dim3(blocks), dim3(threads), 0, st, sc, qc, dc, width), "gemv_q");
        break;
      case 2:
        check(pdl_launch(gemv_q_kernel<2>, dim3(blocks), dim3(threads), 0, st, sc, qc, dc, width), "gemv_q");
        break;
      default:
        check(pdl_launch(gemv_q_kernel<1>, dim3(blocks), dim3(threads), 0, st, sc, qc, dc, width), "gemv_q");
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
