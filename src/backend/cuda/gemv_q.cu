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
#include "backend/cuda/kernels.h"

namespace strix::cuda {

namespace {

constexpr int kRowsPerBlock = 4;  // one warp per row

// ---- activation quantizers: one warp per block of 32 (Q8_0) or 256 (Q8_K) ----

// Q8_0 (ggml-cpu quantize_row_q8_0): d = amax / 127 stored as half, q = round_even(x * 127 / amax).
__global__ void quant_q8_0_kernel(const float* __restrict__ x, int64_t xs, int64_t width, int64_t n_blocks,
                                  int8_t* __restrict__ q, float* __restrict__ d) {
  const int64_t b = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (b >= n_blocks) return;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t per_row = width / 32;
  const int64_t t = b / per_row, j = b % per_row;
  const float v = x[t * xs + 32 * j + lane];
  const float amax = warp_max(fabsf(v));
  const float id = amax != 0.0f ? 127.f / amax : 0.0f;
  q[t * width + 32 * j + lane] = static_cast<int8_t>(max(-128, min(127, __float2int_rn(v * id))));
  if (lane == 0) d[b] = h2f(f2h(amax / 127.f));
}

// Q8_K (ggml-cpu quantize_row_q8_K): the value of largest magnitude (the
// first one on ties) sets iscale = -127 / max; q = min(127, round_even(iscale * x)); d = 1 / iscale.
__global__ void quant_q8_K_kernel(const float* __restrict__ x, int64_t xs, int64_t width, int64_t n_blocks,
                                  int8_t* __restrict__ q, float* __restrict__ d) {
  const int64_t b = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (b >= n_blocks) return;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t per_row = width / 256;
  const int64_t t = b / per_row, j = b % per_row;
  const float* xb = x + t * xs + 256 * j;
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
  int8_t* qb = q + t * width + 256 * j;
  if (amax == 0.0f) {
#pragma unroll
    for (int k = 0; k < 8; ++k) qb[32 * k + lane] = 0;
    if (lane == 0) d[b] = 0.0f;
    return;
  }
  const float mx = xb[at];
  const float iscale = -127.f / mx;
#pragma unroll
  for (int k = 0; k < 8; ++k) qb[32 * k + lane] = static_cast<int8_t>(min(127, __float2int_rn(iscale * v[k])));
  if (lane == 0) d[b] = 1.0f / iscale;
}

__device__ __forceinline__ int load_i32_2aligned(const uint8_t* p) {
  const uint16_t lo = *reinterpret_cast<const uint16_t*>(p);
  const uint16_t hi = *reinterpret_cast<const uint16_t*>(p + 2);
  return static_cast<int>(static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16));
}

// ---- Q8_0 x Q8_0: 4 lanes per block (8 quants each), 8 blocks per warp step ----
template <int C>
__global__ void gemv_q8_0_kernel(const uint8_t* __restrict__ w, size_t nb1, int64_t nblk, int64_t rows,
                                 const int8_t* __restrict__ aq, const float* __restrict__ ad, int64_t width,
                                 float* __restrict__ y, int64_t ys) {
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + warp;
  if (r >= rows) return;
  const uint8_t* row = w + r * nb1;
  const int part = lane % 4;
  float acc[C];
#pragma unroll
  for (int c = 0; c < C; ++c) acc[c] = 0.0f;
  for (int64_t b = lane / 4; b < nblk; b += 8) {
    const uint8_t* bp = row + b * 34;
    const float dw = h2f(*reinterpret_cast<const uint16_t*>(bp));
    const int w0 = load_i32_2aligned(bp + 2 + 8 * part);
    const int w1 = load_i32_2aligned(bp + 6 + 8 * part);
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int2 a = *reinterpret_cast<const int2*>(aq + c * width + 32 * b + 8 * part);
      const int s = __dp4a(w1, a.y, __dp4a(w0, a.x, 0));
      acc[c] = fmaf(dw * ad[c * (width / 32) + b], static_cast<float>(s), acc[c]);
    }
  }
#pragma unroll
  for (int c = 0; c < C; ++c) {
    const float s = warp_sum(acc[c]);
    if (lane == 0) y[c * ys + r] = s;
  }
}

// The 6-bit scale and min of sub-block j of a Q4_K block (12 packed bytes).
__device__ __forceinline__ void q4k_scale_min(const uint8_t* s, int j, int& sc, int& m) {
  if (j < 4) {
    sc = s[j] & 63;
    m = s[j + 4] & 63;
  } else {
    sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
    m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// ---- Q4_K x Q8_K: 8 lanes per super-block (16 quant bytes each: 16 low and
// 16 high nibbles of sub-blocks 2p, 2p + 1), 4 super-blocks per warp step ----
template <int C>
__global__ void gemv_q4_K_kernel(const uint8_t* __restrict__ w, size_t nb1, int64_t nblk, int64_t rows,
                                 const int8_t* __restrict__ aq, const float* __restrict__ ad, int64_t width,
                                 float* __restrict__ y, int64_t ys) {
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + warp;
  if (r >= rows) return;
  const uint8_t* row = w + r * nb1;
  const int sub = lane % 8, p = sub / 2, h = sub % 2;
  float acc[C];
#pragma unroll
  for (int c = 0; c < C; ++c) acc[c] = 0.0f;
  for (int64_t b = lane / 8; b < nblk; b += 4) {
    const uint8_t* bp = row + b * 144;
    const half2 dd = *reinterpret_cast<const half2*>(bp);
    const float dw = __low2float(dd), dmin = __high2float(dd);
    int sc_lo, m_lo, sc_hi, m_hi;
    q4k_scale_min(bp + 4, 2 * p, sc_lo, m_lo);
    q4k_scale_min(bp + 4, 2 * p + 1, sc_hi, m_hi);
    const int4 qv = *reinterpret_cast<const int4*>(bp + 16 + 32 * p + 16 * h);
    const int qw[4] = {qv.x, qv.y, qv.z, qv.w};
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
#pragma unroll
  for (int c = 0; c < C; ++c) {
    const float s = warp_sum(acc[c]);
    if (lane == 0) y[c * ys + r] = s;
  }
}

// ---- Q6_K x Q8_K: 8 lanes per super-block; lane (half, l0) takes l in
// [l0, l0 + 8) of its 128-element half: elements l, l + 32, l + 64, l + 96 ----
template <int C>
__global__ void gemv_q6_K_kernel(const uint8_t* __restrict__ w, size_t nb1, int64_t nblk, int64_t rows,
                                 const int8_t* __restrict__ aq, const float* __restrict__ ad, int64_t width,
                                 float* __restrict__ y, int64_t ys) {
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + warp;
  if (r >= rows) return;
  const uint8_t* row = w + r * nb1;
  const int sub = lane % 8, half = sub / 4, l0 = (sub % 4) * 8;
  float acc[C];
#pragma unroll
  for (int c = 0; c < C; ++c) acc[c] = 0.0f;
  for (int64_t b = lane / 8; b < nblk; b += 4) {
    const uint8_t* bp = row + b * 210;
    const uint8_t* ql = bp + 64 * half + l0;
    const uint8_t* qh = bp + 128 + 32 * half + l0;
    const auto* sc = reinterpret_cast<const int8_t*>(bp + 192 + 8 * half + l0 / 16);
    const float dw = h2f(*reinterpret_cast<const uint16_t*>(bp + 208));
    const int s0 = sc[0], s1 = sc[2], s2 = sc[4], s3 = sc[6];
    int q[4][2];  // [element group g: l + 32 g][word]
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const int a = load_i32_2aligned(ql + 4 * k);
      const int bq = load_i32_2aligned(ql + 32 + 4 * k);
      const int hh = load_i32_2aligned(qh + 4 * k);
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
      acc[c] = fmaf(dw * da, static_cast<float>(s0 * d[0] + s1 * d[1] + s2 * d[2] + s3 * d[3]), acc[c]);
    }
  }
#pragma unroll
  for (int c = 0; c < C; ++c) {
    const float s = warp_sum(acc[c]);
    if (lane == 0) y[c * ys + r] = s;
  }
}

template <int C>
void launch_one(GgmlType t, const DevWeight& w, const int8_t* aq, const float* ad, float* y, int64_t ys,
                cudaStream_t st) {
  const unsigned grid = blocks_for(w.ne1, kRowsPerBlock);
  constexpr unsigned kThreads = 32 * kRowsPerBlock;
  switch (t) {
    case GgmlType::Q8_0:
      gemv_q8_0_kernel<C><<<grid, kThreads, 0, st>>>(w.data, w.nb1, w.ne0 / 32, w.ne1, aq, ad, w.ne0, y, ys);
      break;
    case GgmlType::Q4_K:
      gemv_q4_K_kernel<C><<<grid, kThreads, 0, st>>>(w.data, w.nb1, w.ne0 / 256, w.ne1, aq, ad, w.ne0, y, ys);
      break;
    case GgmlType::Q6_K:
      gemv_q6_K_kernel<C><<<grid, kThreads, 0, st>>>(w.data, w.nb1, w.ne0 / 256, w.ne1, aq, ad, w.ne0, y, ys);
      break;
    default:
      refuse_type(t);
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
  const int64_t n_blocks = static_cast<int64_t>(n) * (width / blk);
  if (n_blocks == 0) return;
  constexpr int kWarps = 4;
  if (blk == 32) {
    quant_q8_0_kernel<<<blocks_for(n_blocks, kWarps), 32 * kWarps, 0, st>>>(x, x_stride, width, n_blocks, q, d);
  } else {
    quant_q8_K_kernel<<<blocks_for(n_blocks, kWarps), 32 * kWarps, 0, st>>>(x, x_stride, width, n_blocks, q, d);
  }
  check_launch("quantize_act");
}

void gemv_q(const DevWeight& w, const int8_t* q, const float* d, int n, float* y, int64_t y_stride, cudaStream_t st) {
  if (!gemv_q_supported(w.type)) refuse_type(w.type);
  const int blk = gemv_q_block(w.type);
  if (w.ne0 % blk != 0) throw Error("gemv_q: rows of " + std::to_string(w.ne0) + " are not whole blocks");
  const int64_t per = w.ne0 / blk;
  for (int t0 = 0; t0 < n;) {
    const int left = n - t0;
    const int c = left >= 8 ? 8 : left >= 4 ? 4 : left >= 2 ? 2 : 1;
    const int8_t* qc = q + static_cast<int64_t>(t0) * w.ne0;
    const float* dc = d + static_cast<int64_t>(t0) * per;
    float* yc = y + static_cast<int64_t>(t0) * y_stride;
    switch (c) {
      case 8:
        launch_one<8>(w.type, w, qc, dc, yc, y_stride, st);
        break;
      case 4:
        launch_one<4>(w.type, w, qc, dc, yc, y_stride, st);
        break;
      case 2:
        launch_one<2>(w.type, w, qc, dc, yc, y_stride, st);
        break;
      default:
        launch_one<1>(w.type, w, qc, dc, yc, y_stride, st);
        break;
    }
    check_launch("gemv_q");
    t0 += c;
  }
}

}  // namespace strix::cuda
