// Weight reads: the decode GEMV (weights dequantized on the fly, f32
// activations, one warp per output row, up to 8 token columns sharing each
// weight load), whole-matrix dequantization to f16 for the cuBLAS GEMM of
// prefill, and embedding row lookup.
#include <cstdlib>
#include <string>

#include "backend/cuda/act_quant.cuh"
#include "backend/cuda/common.cuh"
#include "backend/cuda/dequant_types.cuh"
#include "backend/cuda/gemv_rows.cuh"
#include "backend/cuda/kernels.h"

namespace strix::cuda {

bool type_supported(GgmlType t) {
  switch (t) {
    case GgmlType::F32:
    case GgmlType::F16:
    case GgmlType::BF16:
    case GgmlType::Q4_0:
    case GgmlType::Q4_1:
    case GgmlType::Q5_0:
    case GgmlType::Q5_1:
    case GgmlType::Q8_0:
    case GgmlType::Q2_K:
    case GgmlType::Q3_K:
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K:
    case GgmlType::IQ4_NL:
    case GgmlType::IQ4_XS:
    case GgmlType::MXFP4:
      return true;
    default:
      return false;
  }
}

const char* type_unsupported_reason(GgmlType t, int64_t ne0) {
  if (!type_supported(t)) return "the CUDA backend has no kernel for this weight type yet";
  // F32/F16/BF16 are read in pairs of elements
  if ((t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16) && ne0 % 2 != 0) {
    return "the CUDA backend reads F32/F16/BF16 rows of even length only";
  }
  // the block types are read (and their activations rounded) in whole blocks
  if (ne0 <= 0 || ne0 % type_traits(t).block_size != 0) {
    return "the row length is not a whole number of the type's blocks";
  }
  return nullptr;
}

GgmlType round_partner(GgmlType t) {
  switch (t) {
    case GgmlType::F32:
    case GgmlType::F16:
    case GgmlType::BF16:
      return t;
    case GgmlType::Q8_0:
    case GgmlType::Q4_0:
    case GgmlType::Q5_0:
    case GgmlType::IQ4_NL:
    case GgmlType::MXFP4:
      return GgmlType::Q8_0;
    case GgmlType::Q4_1:
    case GgmlType::Q5_1:
      return GgmlType::Q8_1;
    case GgmlType::Q2_K:
    case GgmlType::Q3_K:
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K:
    case GgmlType::IQ4_XS:
      return GgmlType::Q8_K;
    default:
      refuse_type(t);
  }
}

namespace {

constexpr int kGemvWarps = 4;  // output rows per block

template <class Q, int C>
__global__ void gemv_kernel(const uint8_t* __restrict__ w, size_t nb1, int64_t ne0, int64_t rows,
                            const float* __restrict__ x, int64_t xs, float* __restrict__ y, int64_t ys) {
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kGemvWarps + warp;
  if (r >= rows) return;
  const uint8_t* row = w + r * nb1;
  float acc[C];
#pragma unroll
  for (int c = 0; c < C; ++c) acc[c] = 0.0f;
  gemv_row_f<Q, C>(row, ne0, x, xs, lane, acc);
#pragma unroll
  for (int c = 0; c < C; ++c) {
    const float s = warp_sum(acc[c]);
    if (lane == 0) y[c * ys + r] = s;
  }
}

template <class Q>
__global__ void dequant_f16_kernel(const uint8_t* __restrict__ w, size_t nb1, int64_t ne0, int64_t total,
                                   uint16_t* __restrict__ out) {
  const int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p >= total) return;
  constexpr int kParts = Q::kElems / Q::kPart;
  const int64_t per_row = ne0 / Q::kPart;
  const int64_t r = p / per_row, pr = p % per_row;
  const int64_t blk = pr / kParts;
  float v[8];
  int idx[4];
  Q::part(w + r * nb1 + blk * Q::kBytes, static_cast<int>(pr % kParts), v, idx);
  uint16_t* o = out + r * ne0 + blk * Q::kElems;
#pragma unroll
  for (int k = 0; k < Q::kPairs; ++k) {
    const uint32_t pair = static_cast<uint32_t>(f2h(v[2 * k])) | (static_cast<uint32_t>(f2h(v[2 * k + 1])) << 16);
    *reinterpret_cast<uint32_t*>(o + idx[k]) = pair;
  }
}

template <class Q>
__global__ void get_rows_kernel(const uint8_t* __restrict__ w, size_t nb1, int64_t ne0, const int32_t* __restrict__ ids,
                                float* __restrict__ out, int64_t os) {
  const int t = static_cast<int>(blockIdx.y);
  constexpr int kParts = Q::kElems / Q::kPart;
  const uint8_t* row = w + static_cast<int64_t>(ids[t]) * nb1;
  const int64_t n_parts = ne0 / Q::kPart;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < n_parts;
       p += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t blk = p / kParts;
    float v[8];
    int idx[4];
    Q::part(row + blk * Q::kBytes, static_cast<int>(p % kParts), v, idx);
    float* o = out + t * os + blk * Q::kElems;
#pragma unroll
    for (int k = 0; k < Q::kPairs; ++k) {
      o[idx[k]] = v[2 * k];
      o[idx[k] + 1] = v[2 * k + 1];
    }
  }
}

__global__ void to_f16_kernel(const float* __restrict__ x, int64_t xs, int64_t width, int64_t total,
                              uint16_t* __restrict__ out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int64_t t = i / width, c = i % width;
  out[i] = f2h(x[t * xs + c]);
}

// libllama's CPU path multiplies a weight with the activations converted to
// its vec_dot partner type (ggml-cpu's x86 quantizers, as Strix's CPU
// kernels do): F16 and BF16 round to their 16-bit floats (BF16: to nearest
// even, NaN made quiet, as fp32_to_bf16); Q8_0 takes d = amax / 127 (stored
// as half) and q = round_even(x * 127 / amax); Q8_1 is Q8_0 plus the block's
// sum (used by the dot products, not a value), so its values are Q8_0's;
// Q8_K takes the signed value of largest magnitude (first on ties), iscale =
// -127 / max, q = min(127, round_even(iscale * x)), d = 1 / iscale. These
// kernels write d * q back as floats, so both the GEMV and the GEMM see the
// reference's activations.
__global__ void round_f16_kernel(const float* __restrict__ x, int64_t xs, int64_t width, int64_t total,
                                 float* __restrict__ out, int64_t os) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int64_t t = i / width, c = i % width;
  out[t * os + c] = h2f(f2h(x[t * xs + c]));
}

__global__ void round_bf16_kernel(const float* __restrict__ x, int64_t xs, int64_t width, int64_t total,
                                  float* __restrict__ out, int64_t os) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int64_t t = i / width, c = i % width;
  const uint32_t u = __float_as_uint(x[t * xs + c]);
  const uint32_t h = (u & 0x7fffffffu) > 0x7f800000u ? ((u >> 16) | 64) : ((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
  out[t * os + c] = __uint_as_float(h << 16);
}

__global__ void round_q8_0_kernel(const float* __restrict__ x, int64_t xs, int64_t width, int64_t total,
                                  float* __restrict__ out, int64_t os) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;  // one block of 32
  if (i >= total) return;
  const int64_t per_row = width / 32;
  const int64_t t = i / per_row, b = i % per_row;
  const float* xb = x + t * xs + 32 * b;
  float* ob = out + t * os + 32 * b;
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = fmaxf(amax, fabsf(xb[j]));
  const float d = h2f(f2h(amax / 127.f));
  const float id = amax != 0.0f ? 127.f / amax : 0.0f;
  for (int j = 0; j < 32; ++j) {
    const int q = max(-128, min(127, __float2int_rn(xb[j] * id)));
    ob[j] = d * static_cast<float>(q);
  }
}

__global__ void round_q8_K_kernel(const float* __restrict__ x, int64_t xs, int64_t width, int64_t total,
                                  float* __restrict__ out, int64_t os) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;  // one block of 256
  if (i >= total) return;
  const int64_t per_row = width / 256;
  const int64_t t = i / per_row, b = i % per_row;
  const float* xb = x + t * xs + 256 * b;
  float* ob = out + t * os + 256 * b;
  float amax = 0.0f, mx = 0.0f;
  for (int j = 0; j < 256; ++j) {
    const float ax = fabsf(xb[j]);
    if (ax > amax) {
      amax = ax;
      mx = xb[j];
    }
  }
  if (amax == 0.0f) {
    for (int j = 0; j < 256; ++j) ob[j] = 0.0f;
    return;
  }
  const float iscale = -127.f / mx;
  const float d = 1.0f / iscale;
  for (int j = 0; j < 256; ++j) {
    const int q = max(-128, min(127, __float2int_rn(iscale * xb[j])));
    ob[j] = d * static_cast<float>(q);
  }
}

void check_weight(const DevWeight& w, const char* op) {
  if (const char* why = type_unsupported_reason(w.type, w.ne0)) {
    throw Refusal(std::string(op) + ": " + why + " (" + type_name(static_cast<uint32_t>(w.type)) + ", rows of " +
                  std::to_string(w.ne0) + ")");
  }
}

// The GEMM's activations in one pass: round_activations' value of each
// element (the same arithmetic), converted to f16 as to_f16 does, packed rows
// of width. F32 partner: no rounding (to_f16 alone). Q8_0: a warp per block
// of 32, Q8_K: a warp per block of 256 (element 32 k + lane in lane `lane`,
// the first of the largest magnitude kept on ties as round_q8_K_kernel does).
// The value read: ActPlain or ActSwiglu (act_quant.cuh).

template <class In>
__global__ void act_f16_plain_kernel(In in, int64_t width, int64_t total, int mode, uint16_t* __restrict__ out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int64_t t = i / width, c = i % width;
  float v = in(t, c);
  if (mode == 1) {  // through bf16 (round_bf16_kernel)
    const uint32_t u = __float_as_uint(v);
    const uint32_t h = (u & 0x7fffffffu) > 0x7f800000u ? ((u >> 16) | 64) : ((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
    v = __uint_as_float(h << 16);
  }
  out[i] = f2h(v);
}

template <class In>
__global__ void act_f16_q8_0_kernel(In in, int64_t width, int64_t blocks, uint16_t* __restrict__ out) {
  const int64_t b = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  if (b >= blocks) return;  // whole warps
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t per_row = width / 32;
  const int64_t t = b / per_row, c = (b % per_row) * 32 + lane;
  const float v = in(t, c);
  const float amax = warp_max(fabsf(v));
  const float d = h2f(f2h(amax / 127.f));
  const float id = amax != 0.0f ? 127.f / amax : 0.0f;
  const int q = max(-128, min(127, __float2int_rn(v * id)));
  out[t * width + c] = f2h(d * static_cast<float>(q));
}

template <class In>
__global__ void act_f16_q8_K_kernel(In in, int64_t width, int64_t blocks, uint16_t* __restrict__ out) {
  const int64_t b = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  if (b >= blocks) return;  // whole warps
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t per_row = width / 256;
  const int64_t t = b / per_row, c0 = (b % per_row) * 256;
  uint16_t* ob = out + t * width + c0;
  float v[8];
#pragma unroll
  for (int k = 0; k < 8; ++k) v[k] = in(t, c0 + 32 * k + lane);
  float amax = 0.0f, val = 0.0f;
  int at = 0x7fffffff;
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    const float a = fabsf(v[k]);
    if (a > amax) {  // k ascending: this lane's first on ties; zeros and NaNs never win (as the scalar scan)
      amax = a;
      val = v[k];
      at = 32 * k + lane;
    }
  }
  warp_abs_max_first(amax, val, at);
  if (amax == 0.0f) {
#pragma unroll
    for (int k = 0; k < 8; ++k) ob[32 * k + lane] = f2h(0.0f);
    return;
  }
  const float iscale = -127.f / val;
  const float d = 1.0f / iscale;
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    const int q = max(-128, min(127, __float2int_rn(iscale * v[k])));
    ob[32 * k + lane] = f2h(d * static_cast<float>(q));
  }
}

template <class In>
void launch_act_f16(GgmlType wtype, In in, int n, int64_t width, uint16_t* out, cudaStream_t st) {
  const int64_t total = static_cast<int64_t>(n) * width;
  if (total == 0) return;
  switch (round_partner(wtype)) {
    case GgmlType::F32:
    case GgmlType::F16:
      act_f16_plain_kernel<<<blocks_for(total, 256), 256, 0, st>>>(in, width, total, 0, out);
      break;
    case GgmlType::BF16:
      act_f16_plain_kernel<<<blocks_for(total, 256), 256, 0, st>>>(in, width, total, 1, out);
      break;
    case GgmlType::Q8_0:
    case GgmlType::Q8_1:
      if (width % 32 != 0) throw Error("activations_f16: Q8_0/Q8_1 rows of " + std::to_string(width));
      act_f16_q8_0_kernel<<<blocks_for(total, 256), 256, 0, st>>>(in, width, total / 32, out);
      break;
    case GgmlType::Q8_K:
      if (width % 256 != 0) throw Error("activations_f16: Q8_K rows of " + std::to_string(width));
      act_f16_q8_K_kernel<<<blocks_for(total / 256 * 32, 256), 256, 0, st>>>(in, width, total / 256, out);
      break;
    default:
      refuse_type(wtype);
  }
  check_launch("activations_f16");
}

// Q4_K and Q6_K to f16 with one thread per 8 consecutive elements (one
// 16-byte store) and no division: rows whose bytes are exactly their blocks
// (nb1 = blocks * kBytes, so super-block s of the matrix is at s * kBytes) and
// fewer than 2^31 threads; the values are QQ4_K / QQ6_K::part's, the same
// products in the same order.
__global__ void dequant_q4_K_f16_kernel(const uint8_t* __restrict__ w, uint32_t n_sb, uint16_t* __restrict__ out) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t sb = i >> 5, g = i & 31;
  if (sb >= n_sb) return;
  const uint8_t* b = w + static_cast<size_t>(sb) * 144;
  const float d = h2f(static_cast<uint16_t>(b[0] | (b[1] << 8)));
  const float dmin = h2f(static_cast<uint16_t>(b[2] | (b[3] << 8)));
  const int j = static_cast<int>(g >> 3), hi = static_cast<int>((g >> 2) & 1), l0 = static_cast<int>(g & 3) * 8;
  int sc, m;
  q4k_scale_min(2 * j + hi, b + 4, sc, m);
  const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
  const uint2 q = *reinterpret_cast<const uint2*>(b + 16 + 32 * j + l0);
  const uint32_t qw[2] = {q.x, q.y};
  uint32_t o[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const uint32_t word = qw[k / 2] >> (16 * (k % 2));
    const uint32_t b0 = word & 0xff, b1 = (word >> 8) & 0xff;
    const uint32_t n0 = hi ? b0 >> 4 : b0 & 0x0f, n1 = hi ? b1 >> 4 : b1 & 0x0f;
    const float v0 = d1 * static_cast<float>(n0) - m1;
    const float v1 = d1 * static_cast<float>(n1) - m1;
    o[k] = static_cast<uint32_t>(f2h(v0)) | (static_cast<uint32_t>(f2h(v1)) << 16);
  }
  *reinterpret_cast<uint4*>(out + static_cast<size_t>(sb) * 256 + 64 * j + 32 * hi + l0) =
      make_uint4(o[0], o[1], o[2], o[3]);
}

__global__ void dequant_q6_K_f16_kernel(const uint8_t* __restrict__ w, uint32_t n_sb, uint16_t* __restrict__ out) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t sb = i >> 5, g = i & 31;
  if (sb >= n_sb) return;
  const uint8_t* b = w + static_cast<size_t>(sb) * 210;
  const float d = h2f(static_cast<uint16_t>(b[208] | (b[209] << 8)));
  const int h = static_cast<int>(g >> 4), r = static_cast<int>((g >> 2) & 3), l0 = static_cast<int>(g & 3) * 8;
  const uint8_t* ql = b + 64 * h + (r & 1) * 32 + l0;  // runs 1 and 3 read ql[l + 32]
  const uint8_t* qh = b + 128 + 32 * h + l0;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192 + 8 * h);
  const float ds = d * static_cast<float>(sc[l0 / 16 + 2 * r]);
  const int lo_shift = (r >> 1) * 4, hi_shift = 2 * r;  // runs 2, 3: high nibbles; qh bits 2r, 2r+1
  uint32_t o[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    float v[2];
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int l = 2 * k + e;
      const int q = (((ql[l] >> lo_shift) & 0x0f) | (((qh[l] >> hi_shift) & 3) << 4)) - 32;
      v[e] = ds * static_cast<float>(q);
    }
    o[k] = static_cast<uint32_t>(f2h(v[0])) | (static_cast<uint32_t>(f2h(v[1])) << 16);
  }
  *reinterpret_cast<uint4*>(out + static_cast<size_t>(sb) * 256 + 128 * h + 32 * r + l0) =
      make_uint4(o[0], o[1], o[2], o[3]);
}

template <class Q>
void launch_gemv(const DevWeight& w, const float* x, int64_t xs, int c, float* y, int64_t ys, cudaStream_t st) {
  const unsigned grid = blocks_for(w.ne1, kGemvWarps);
  constexpr unsigned kThreads = 32 * kGemvWarps;
  switch (c) {
    case 8:
      gemv_kernel<Q, 8><<<grid, kThreads, 0, st>>>(w.data, w.nb1, w.ne0, w.ne1, x, xs, y, ys);
      break;
    case 4:
      gemv_kernel<Q, 4><<<grid, kThreads, 0, st>>>(w.data, w.nb1, w.ne0, w.ne1, x, xs, y, ys);
      break;
    case 2:
      gemv_kernel<Q, 2><<<grid, kThreads, 0, st>>>(w.data, w.nb1, w.ne0, w.ne1, x, xs, y, ys);
      break;
    default:
      gemv_kernel<Q, 1><<<grid, kThreads, 0, st>>>(w.data, w.nb1, w.ne0, w.ne1, x, xs, y, ys);
      break;
  }
}

template <class Q>
void launch_dequant(const DevWeight& w, int64_t total, uint16_t* out, cudaStream_t st) {
  dequant_f16_kernel<Q><<<blocks_for(total, 256), 256, 0, st>>>(w.data, w.nb1, w.ne0, total, out);
}

template <class Q>
void launch_get_rows(const DevWeight& w, dim3 grid, const int32_t* ids, float* out, int64_t os, cudaStream_t st) {
  get_rows_kernel<Q><<<grid, 128, 0, st>>>(w.data, w.nb1, w.ne0, ids, out, os);
}

}  // namespace

void gemv(const DevWeight& w, const float* x, int64_t x_stride, int n, float* y, int64_t y_stride, cudaStream_t st) {
  check_weight(w, "gemv");
  if (x_stride % 2 != 0 || reinterpret_cast<uintptr_t>(x) % 8 != 0) {
    throw Error("gemv: activation rows must be 8-byte aligned (even stride)");
  }
  for (int t0 = 0; t0 < n;) {
    const int left = n - t0;
    const int c = left >= 8 ? 8 : left >= 4 ? 4 : left >= 2 ? 2 : 1;
    STRIX_CUDA_DISPATCH_TYPE(w.type, w.ne0, launch_gemv, w, x + t0 * x_stride, x_stride, c, y + t0 * y_stride, y_stride,
                             st);
    check_launch("gemv");
    t0 += c;
  }
}

void dequant_f16(const DevWeight& w, uint16_t* out, cudaStream_t st) {
  check_weight(w, "dequant_f16");
  static const bool plain = [] {
    const char* e = std::getenv("STRIX_CUDA_DEQUANT");
    return e && std::string(e) == "plain";
  }();
  if (!plain && (w.type == GgmlType::Q4_K || w.type == GgmlType::Q6_K)) {
    const size_t kb = w.type == GgmlType::Q4_K ? 144 : 210;
    const int64_t per_row = w.ne0 / 256, n_sb = per_row * w.ne1;
    if (w.nb1 == static_cast<size_t>(per_row) * kb && n_sb * 32 < (int64_t{1} << 31) &&
        reinterpret_cast<uintptr_t>(w.data) % 16 == 0 && reinterpret_cast<uintptr_t>(out) % 16 == 0) {
      const unsigned grid = blocks_for(n_sb * 32, 256);
      if (w.type == GgmlType::Q4_K) {
        dequant_q4_K_f16_kernel<<<grid, 256, 0, st>>>(w.data, static_cast<uint32_t>(n_sb), out);
      } else {
        dequant_q6_K_f16_kernel<<<grid, 256, 0, st>>>(w.data, static_cast<uint32_t>(n_sb), out);
      }
      check_launch("dequant_f16");
      return;
    }
  }
  const int64_t total = w.ne1 * (w.ne0 % 8 == 0 ? w.ne0 / 8 : w.ne0 / 2);
  STRIX_CUDA_DISPATCH_TYPE(w.type, w.ne0, launch_dequant, w, total, out, st);
  check_launch("dequant_f16");
}

bool round_activations(GgmlType wtype, const float* x, int64_t x_stride, int n, int64_t width, float* out,
                       int64_t out_stride, cudaStream_t st) {
  if (n == 0) return false;
  const int64_t n64 = n;
  switch (round_partner(wtype)) {
    case GgmlType::F32:
      return false;
    case GgmlType::F16:
      round_f16_kernel<<<blocks_for(n64 * width, 256), 256, 0, st>>>(x, x_stride, width, n64 * width, out, out_stride);
      break;
    case GgmlType::BF16:
      round_bf16_kernel<<<blocks_for(n64 * width, 256), 256, 0, st>>>(x, x_stride, width, n64 * width, out, out_stride);
      break;
    case GgmlType::Q8_0:
    case GgmlType::Q8_1:
      if (width % 32 != 0) throw Error("round_activations: Q8_0/Q8_1 rows of " + std::to_string(width));
      round_q8_0_kernel<<<blocks_for(n64 * width / 32, 128), 128, 0, st>>>(x, x_stride, width, n64 * width / 32, out,
                                                                           out_stride);
      break;
    case GgmlType::Q8_K:
      if (width % 256 != 0) throw Error("round_activations: Q8_K rows of " + std::to_string(width));
      round_q8_K_kernel<<<blocks_for(n64 * width / 256, 64), 64, 0, st>>>(x, x_stride, width, n64 * width / 256, out,
                                                                          out_stride);
      break;
    default:
      refuse_type(wtype);
  }
  check_launch("round_activations");
  return true;
}

void activations_f16(GgmlType wtype, const float* x, int64_t x_stride, int n, int64_t width, uint16_t* out,
                     cudaStream_t st) {
  launch_act_f16(wtype, ActPlain{x, x_stride}, n, width, out, st);
}

void activations_f16_swiglu(GgmlType wtype, const float* gate, int64_t gate_stride, const float* up, int64_t up_stride,
                            int n, int64_t width, uint16_t* out, cudaStream_t st) {
  launch_act_f16(wtype, ActSwiglu{gate, up, gate_stride, up_stride}, n, width, out, st);
}

void to_f16(const float* x, int64_t x_stride, int n, int64_t width, uint16_t* out, cudaStream_t st) {
  const int64_t total = static_cast<int64_t>(n) * width;
  if (total == 0) return;
  to_f16_kernel<<<blocks_for(total, 256), 256, 0, st>>>(x, x_stride, width, total, out);
  check_launch("to_f16");
}

void get_rows(const DevWeight& w, const int32_t* ids, int n, float* out, int64_t out_stride, cudaStream_t st) {
  check_weight(w, "get_rows");
  if (n == 0) return;
  const dim3 grid(blocks_for(w.ne0 / 2, 128), static_cast<unsigned>(n));
  STRIX_CUDA_DISPATCH_TYPE(w.type, w.ne0, launch_get_rows, w, grid, ids, out, out_stride, st);
  check_launch("get_rows");
}

}  // namespace strix::cuda
