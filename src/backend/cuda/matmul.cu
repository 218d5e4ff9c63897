// Weight reads: the decode GEMV (weights dequantized on the fly, f32
// activations, one warp per output row, up to 8 token columns sharing each
// weight load), whole-matrix dequantization to f16 for the cuBLAS GEMM of
// prefill, and embedding row lookup.
#include <string>

#include "backend/cuda/common.cuh"
#include "backend/cuda/dequant_types.cuh"
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
  constexpr int kParts = Q::kElems / Q::kPart;
  const uint8_t* row = w + r * nb1;
  const int64_t n_parts = ne0 / Q::kPart;
  float acc[C];
#pragma unroll
  for (int c = 0; c < C; ++c) acc[c] = 0.0f;
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
