// The decode GEMV of the quantized weights (Q8_0, Q4_K, Q6_K) in integers,
// as libllama's CPU vec_dot computes them: the activations are quantized
// once to the weight's partner (Q8_0 blocks of 32, Q8_K super-blocks of 256,
// ggml-cpu's x86 quantizers), every block product is an exact int32 dot
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

// ---- activation quantizers: one thread per element, a block of 256 threads
// per 256 elements of a row (8 Q8_0 blocks or one Q8_K super-block) ----

constexpr int kQuantThreads = 256;

// The value quantized: x itself, or silu(g) * u (SwiGLU fused, as the swiglu kernel computes it).
struct PlainIn {
  const float* x;
  int64_t xs;
  __device__ __forceinline__ float operator()(int64_t t, int64_t c) const { return x[t * xs + c]; }
};
struct SwigluIn {
  const float *g, *u;
  int64_t gs, us;
  __device__ __forceinline__ float operator()(int64_t t, int64_t c) const {
    const float gv = g[t * gs + c];
    return gv / (1.0f + expf(-gv)) * u[t * us + c];
  }
};

// Q8_0 (ggml-cpu quantize_row_q8_0): d = amax / 127 stored as half, q = round_even(x * 127 / amax);
// Q8_K (quantize_row_q8_K): the value of largest magnitude (the first one on ties) sets
// iscale = -127 / max; q = min(127, round_even(iscale * x)); d = 1 / iscale.
// out (when set) gets the unquantized values.
template <int kBlk, class In>
__global__ void quant_kernel(In in, int64_t width, int8_t* __restrict__ q, float* __restrict__ d,
                             float* __restrict__ out, int64_t os) {
  griddep_wait();
  const int64_t t = blockIdx.y;
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kQuantThreads + threadIdx.x;
  if (kBlk == 32 && c >= width) return;  // whole warps (width % 32 == 0)
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const float v = in(t, c);
  if (out) out[t * os + c] = v;
  if constexpr (kBlk == 32) {
    const float amax = warp_max(fabsf(v));
    const float id = amax != 0.0f ? 127.f / amax : 0.0f;
    q[t * width + c] = static_cast<int8_t>(max(-128, min(127, __float2int_rn(v * id))));
    if (lane == 0) d[t * (width / 32) + c / 32] = h2f(f2h(amax / 127.f));
  } else {
    __shared__ float s_amax[8], s_val[8];
    __shared__ int s_at[8];
    float amax = fabsf(v), val = v;
    int at = lane;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float oa = __shfl_xor_sync(0xffffffffu, amax, o);
      const float ov = __shfl_xor_sync(0xffffffffu, val, o);
      const int oi = __shfl_xor_sync(0xffffffffu, at, o);
      if (oa > amax || (oa == amax && oi < at)) {
        amax = oa;
        val = ov;
        at = oi;
      }
    }
    if (lane == 0) {
      s_amax[warp] = amax;
      s_val[warp] = val;
      s_at[warp] = at;
    }
    __syncthreads();
    float best = s_amax[0], mx = s_val[0];
#pragma unroll
    for (int w = 1; w < 8; ++w) {  // warps in element order: strictly larger only keeps the first on ties
      if (s_amax[w] > best) {
        best = s_amax[w];
        mx = s_val[w];
      }
    }
    if (best == 0.0f) {
      q[t * width + c] = 0;
      if (threadIdx.x == 0) d[t * (width / 256) + c / 256] = 0.0f;
      return;
    }
    const float iscale = -127.f / mx;
    q[t * width + c] = static_cast<int8_t>(min(127, __float2int_rn(iscale * v)));
    if (threadIdx.x == 0) d[t * (width / 256) + c / 256] = 1.0f / iscale;
  }
}

template <class In>
void launch_quant(int blk, In in, int n, int64_t width, int8_t* q, float* d, float* out, int64_t os, cudaStream_t st) {
  const dim3 grid(blocks_for(width, kQuantThreads), static_cast<unsigned>(n));
  if (blk == 32) {
    pdl_launch(quant_kernel<32, In>, grid, dim3(kQuantThreads), 0, st, in, width, q, d, out, os);
  } else {
    pdl_launch(quant_kernel<256, In>, grid, dim3(kQuantThreads), 0, st, in, width, q, d, out, os);
  }
}

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

void quantize_act(GgmlType wtype, const float* x, int64_t x_stride, int n, int64_t width, int8_t* q, float* d,
                  cudaStream_t st) {
  if (!gemv_q_supported(wtype)) refuse_type(wtype);
  const int blk = gemv_q_block(wtype);
  if (width % blk != 0) throw Error("quantize_act: rows of " + std::to_string(width) + " are not whole blocks");
  if (n == 0 || width == 0) return;
  launch_quant(blk, PlainIn{x, x_stride}, n, width, q, d, nullptr, 0, st);
  check_launch("quantize_act");
}

void swiglu_quant(GgmlType wtype, const float* gate, int64_t gate_stride, const float* up, int64_t up_stride, int n,
                  int64_t width, int8_t* q, float* d, float* out, int64_t out_stride, cudaStream_t st) {
  if (!gemv_q_supported(wtype)) refuse_type(wtype);
  const int blk = gemv_q_block(wtype);
  if (width % blk != 0) throw Error("swiglu_quant: rows of " + std::to_string(width) + " are not whole blocks");
  if (n == 0 || width == 0) return;
  launch_quant(blk, SwigluIn{gate, up, gate_stride, up_stride}, n, width, q, d, out, out_stride, st);
  check_launch("swiglu_quant");
}

namespace {

constexpr int kNormQuantThreads = 1024;


// One block per row: (x += y), the RMS norm in double as rms_norm_kernel, the
// normed row kept in shared memory, then one warp per quantization block with
// the quantizers' arithmetic above.
template <int kBlk>
__global__ void rms_norm_quant_kernel(float* __restrict__ x, const float* __restrict__ y, int64_t dim,
                                      const float* __restrict__ w, float eps, float* __restrict__ out,
                                      int8_t* __restrict__ q, float* __restrict__ d) {
  extern __shared__ float row[];
  griddep_wait();
  const int64_t t = blockIdx.x;
  float* xr = x + t * dim;
  // every load of the row (x, y, w) issued before the first use
  constexpr int kMaxPer = 8;  // dim <= 8192 in registers; longer rows loop through shared memory
  const int per = static_cast<int>((dim + kNormQuantThreads - 1) / kNormQuantThreads);
  double sum = 0;
  if (per <= kMaxPer) {
    float v[kMaxPer], wv[kMaxPer];
#pragma unroll
    for (int k = 0; k < kMaxPer; ++k) {
      const int64_t i = threadIdx.x + static_cast<int64_t>(k) * kNormQuantThreads;
      v[k] = 0.0f, wv[k] = 1.0f;
      if (k < per && i < dim) {
        v[k] = xr[i];
        if (y) v[k] = v[k] + y[t * dim + i];
        if (w) wv[k] = w[i];
      }
    }
#pragma unroll
    for (int k = 0; k < kMaxPer; ++k) {
      const int64_t i = threadIdx.x + static_cast<int64_t>(k) * kNormQuantThreads;
      if (k < per && i < dim) {
        if (y) xr[i] = v[k];
        sum += static_cast<double>(v[k] * v[k]);
      }
    }
    sum = block_sum<kNormQuantThreads>(sum);
    const float mean = static_cast<float>(sum / static_cast<double>(dim));
    const float scale = 1.0f / sqrtf(mean + eps);
#pragma unroll
    for (int k = 0; k < kMaxPer; ++k) {
      const int64_t i = threadIdx.x + static_cast<int64_t>(k) * kNormQuantThreads;
      if (k < per && i < dim) {
        const float nv = v[k] * scale;
        const float o = w ? nv * wv[k] : nv;
        row[i] = o;
        if (out) out[t * dim + i] = o;
      }
    }
  } else {
    for (int64_t i = threadIdx.x; i < dim; i += kNormQuantThreads) {
      float v = xr[i];
      if (y) {
        v = v + y[t * dim + i];
        xr[i] = v;
      }
      row[i] = v;
      sum += static_cast<double>(v * v);
    }
    sum = block_sum<kNormQuantThreads>(sum);
    const float mean = static_cast<float>(sum / static_cast<double>(dim));
    const float scale = 1.0f / sqrtf(mean + eps);
    for (int64_t i = threadIdx.x; i < dim; i += kNormQuantThreads) {
      const float v = row[i] * scale;
      const float o = w ? v * w[i] : v;
      row[i] = o;
      if (out) out[t * dim + i] = o;
    }
  }
  __syncthreads();
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  int8_t* qt = q + t * dim;
  float* dt = d + t * (dim / kBlk);
  for (int64_t j = warp; j < dim / kBlk; j += kNormQuantThreads / 32) {
    const float* xb = row + kBlk * j;
    if constexpr (kBlk == 32) {
      const float v = xb[lane];
      const float amax = warp_max(fabsf(v));
      const float id = amax != 0.0f ? 127.f / amax : 0.0f;
      qt[32 * j + lane] = static_cast<int8_t>(max(-128, min(127, __float2int_rn(v * id))));
      if (lane == 0) dt[j] = h2f(f2h(amax / 127.f));
    } else {
      float v[8];
      float amax = -1.0f;
      int at = 0;
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        v[k] = xb[32 * k + lane];
        const float a = fabsf(v[k]);
        if (a > amax) {  // k ascending: the first of this lane's elements on ties
          amax = a;
          at = 32 * k + lane;
        }
      }
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) {
        const float oa = __shfl_xor_sync(0xffffffffu, amax, o);
        const int oi = __shfl_xor_sync(0xffffffffu, at, o);
        if (oa > amax || (oa == amax && oi < at)) {
          amax = oa;
          at = oi;
        }
      }
      int8_t* qb = qt + 256 * j;
      if (amax == 0.0f) {
#pragma unroll
        for (int k = 0; k < 8; ++k) qb[32 * k + lane] = 0;
        if (lane == 0) dt[j] = 0.0f;
        continue;
      }
      const float iscale = -127.f / xb[at];
#pragma unroll
      for (int k = 0; k < 8; ++k) qb[32 * k + lane] = static_cast<int8_t>(min(127, __float2int_rn(iscale * v[k])));
      if (lane == 0) dt[j] = 1.0f / iscale;
    }
  }
}

}  // namespace

void rms_norm_quant(float* x, const float* y, int n, int64_t dim, const float* w, float eps, float* out,
                    GgmlType wtype, int8_t* q, float* d, cudaStream_t st) {
  if (!gemv_q_supported(wtype)) refuse_type(wtype);
  const int blk = gemv_q_block(wtype);
  if (dim % blk != 0) throw Error("rms_norm_quant: rows of " + std::to_string(dim) + " are not whole blocks");
  if (n == 0) return;
  const size_t smem = sizeof(float) * static_cast<size_t>(dim);
  auto launch = [&](auto kernel) {
    if (smem > 48 * 1024) {
      check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)),
            "rms_norm_quant: cudaFuncSetAttribute");
    }
    pdl_launch(kernel, dim3(static_cast<unsigned>(n)), dim3(kNormQuantThreads), smem, st, x, y, dim, w, eps, out, q, d);
  };
  if (blk == 32) {
    launch(rms_norm_quant_kernel<32>);
  } else {
    launch(rms_norm_quant_kernel<256>);
  }
  check_launch("rms_norm_quant");
}

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
