// Legacy 32-element block formats: Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q8_1.
//
// Bit-exact with libggml's dequantize_row_* / quantize_row_*_ref: every float
// expression below keeps libggml's operation order (a product is never fused into
// an add, see the pragma), and every float -> small-int conversion goes through
// trunc_i32, which behaves like the x86 cvttss2si/cvttps2dq that libggml's code
// compiles to (NaN and out-of-range give INT32_MIN) followed by taking the low
// byte. That matters for the corner cases where the scale is so small that its
// reciprocal overflows to inf.
#pragma GCC optimize("fp-contract=off")

#include <cmath>
#include <cstdint>
#include <cstring>

#include "quant/fp16.h"
#include "quant/legacy_blocks.h"
#include "quant/quants.h"

namespace strix::quant {

namespace {

constexpr int kHalf = kLegacyBlock / 2;

// float -> int32 with truncation; NaN and out-of-range values give INT32_MIN
// (the x86 "integer indefinite" value), without C++ undefined behaviour.
inline int32_t trunc_i32(float f) {
  if (f >= -2147483648.0f && f < 2147483648.0f) return static_cast<int32_t>(f);
  return INT32_MIN;
}
// (int8_t)f / (uint8_t)f as libggml's compiled code does them: truncate to
// int32, keep the low byte.
inline int8_t trunc_i8(float f) { return static_cast<int8_t>(static_cast<uint8_t>(trunc_i32(f))); }
inline uint8_t trunc_u8(float f) { return static_cast<uint8_t>(trunc_i32(f)); }

// The signed value of largest magnitude in a block (the first one on ties);
// 0 when all are zero.
inline float signed_absmax(const float* x) {
  float amax = 0.0f;
  float max = 0.0f;
  for (int j = 0; j < kLegacyBlock; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

inline float absmax(const float* x) {
  float amax = 0.0f;
  for (int j = 0; j < kLegacyBlock; ++j) {
    const float a = std::fabs(x[j]);
    amax = amax > a ? amax : a;  // libggml's MAX(amax, a): the second operand on NaN
  }
  return amax;
}

inline void min_max(const float* x, float* min_out, float* max_out) {
  float mn = 3.40282347e+38f;
  float mx = -3.40282347e+38f;
  for (int j = 0; j < kLegacyBlock; ++j) {
    if (x[j] < mn) mn = x[j];
    if (x[j] > mx) mx = x[j];
  }
  *min_out = mn;
  *max_out = mx;
}

// NaN counts as non-zero here, as in C's `d ? 1/d : 0`.
inline float inverse_or_zero(float d) { return d != 0.0f ? 1.0f / d : 0.0f; }

inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace

// ---------------------------------------------------------------- dequantize

void dequantize_row_q4_0(const void* vx, float* y, int64_t k) {
  const auto* x = static_cast<const BlockQ4_0*>(vx);
  for (int64_t i = 0; i < k / kLegacyBlock; ++i, y += kLegacyBlock) {
    const float d = fp16_to_fp32(x[i].d);
    for (int j = 0; j < kHalf; ++j) {
      y[j] = static_cast<float>((x[i].qs[j] & 0x0f) - 8) * d;
      y[j + kHalf] = static_cast<float>((x[i].qs[j] >> 4) - 8) * d;
    }
  }
}

void dequantize_row_q4_1(const void* vx, float* y, int64_t k) {
  const auto* x = static_cast<const BlockQ4_1*>(vx);
  for (int64_t i = 0; i < k / kLegacyBlock; ++i, y += kLegacyBlock) {
    const float d = fp16_to_fp32(x[i].d);
    const float m = fp16_to_fp32(x[i].m);
    for (int j = 0; j < kHalf; ++j) {
      y[j] = static_cast<float>(x[i].qs[j] & 0x0f) * d + m;
      y[j + kHalf] = static_cast<float>(x[i].qs[j] >> 4) * d + m;
    }
  }
}

void dequantize_row_q5_0(const void* vx, float* y, int64_t k) {
  const auto* x = static_cast<const BlockQ5_0*>(vx);
  for (int64_t i = 0; i < k / kLegacyBlock; ++i, y += kLegacyBlock) {
    const float d = fp16_to_fp32(x[i].d);
    const uint32_t qh = load_u32(x[i].qh);
    for (int j = 0; j < kHalf; ++j) {
      const int hi0 = static_cast<int>((qh >> j) & 1) << 4;
      const int hi1 = static_cast<int>((qh >> (j + kHalf)) & 1) << 4;
      y[j] = static_cast<float>(((x[i].qs[j] & 0x0f) | hi0) - 16) * d;
      y[j + kHalf] = static_cast<float>(((x[i].qs[j] >> 4) | hi1) - 16) * d;
    }
  }
}

void dequantize_row_q5_1(const void* vx, float* y, int64_t k) {
  const auto* x = static_cast<const BlockQ5_1*>(vx);
  for (int64_t i = 0; i < k / kLegacyBlock; ++i, y += kLegacyBlock) {
    const float d = fp16_to_fp32(x[i].d);
    const float m = fp16_to_fp32(x[i].m);
    const uint32_t qh = load_u32(x[i].qh);
    for (int j = 0; j < kHalf; ++j) {
      const int hi0 = static_cast<int>((qh >> j) & 1) << 4;
      const int hi1 = static_cast<int>((qh >> (j + kHalf)) & 1) << 4;
      y[j] = static_cast<float>((x[i].qs[j] & 0x0f) | hi0) * d + m;
      y[j + kHalf] = static_cast<float>((x[i].qs[j] >> 4) | hi1) * d + m;
    }
  }
}

void dequantize_row_q8_0(const void* vx, float* y, int64_t k) {
  const auto* x = static_cast<const BlockQ8_0*>(vx);
  for (int64_t i = 0; i < k / kLegacyBlock; ++i, y += kLegacyBlock) {
    const float d = fp16_to_fp32(x[i].d);
    for (int j = 0; j < kLegacyBlock; ++j) y[j] = static_cast<float>(x[i].qs[j]) * d;
  }
}

// libggml exports no dequantize for Q8_1 (it is only a dot-product partner); the
// values are q * d like Q8_0, the extra `s` field is not needed.
void dequantize_row_q8_1(const void* vx, float* y, int64_t k) {
  const auto* x = static_cast<const BlockQ8_1*>(vx);
  for (int64_t i = 0; i < k / kLegacyBlock; ++i, y += kLegacyBlock) {
    const float d = fp16_to_fp32(x[i].d);
    for (int j = 0; j < kLegacyBlock; ++j) y[j] = static_cast<float>(x[i].qs[j]) * d;
  }
}

// ---------------------------------------------------------------- quantize

// Q4_0: d = max / -8 so the largest-magnitude value maps to q = 0 (x = -8 d);
// q = min(15, trunc(x / d + 8.5)).
void quantize_row_q4_0_ref(const float* x, void* vy, int64_t k) {
  auto* y = static_cast<BlockQ4_0*>(vy);
  for (int64_t i = 0; i < k / kLegacyBlock; ++i, x += kLegacyBlock) {
    const float d = signed_absmax(x) / -8.0f;
    const float id = inverse_or_zero(d);
    y[i].d = fp32_to_fp16(d);
    for (int j = 0; j < kHalf; ++j) {
      const int q0 = trunc_i8(x[j] * id + 8.5f);
      const int q1 = trunc_i8(x[j + kHalf] * id + 8.5f);
      const auto lo = static_cast<uint8_t>(q0 < 15 ? q0 : 15);
      const auto hi = static_cast<uint8_t>(q1 < 15 ? q1 : 15);
      y[i].qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

// Q4_1: d = (max - min) / 15, m = min; q = min(15, trunc((x - min) / d + 0.5)).
void quantize_row_q4_1_ref(const float* x, void* vy, int64_t k) {
  auto* y = static_cast<BlockQ4_1*>(vy);
  for (int64_t i = 0; i < k / kLegacyBlock; ++i, x += kLegacyBlock) {
    float mn, mx;
    min_max(x, &mn, &mx);
    const float d = (mx - mn) / 15.0f;
    const float id = inverse_or_zero(d);
    y[i].d = fp32_to_fp16(d);
    y[i].m = fp32_to_fp16(mn);
    for (int j = 0; j < kHalf; ++j) {
      const int q0 = trunc_i8((x[j] - mn) * id + 0.5f);
      const int q1 = trunc_i8((x[j + kHalf] - mn) * id + 0.5f);
      const auto lo = static_cast<uint8_t>(q0 < 15 ? q0 : 15);
      const auto hi = static_cast<uint8_t>(q1 < 15 ? q1 : 15);
      y[i].qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

// Q5_0: d = max / -16; q = min(31, trunc(x / d + 16.5)), fifth bit into qh.
void quantize_row_q5_0_ref(const float* x, void* vy, int64_t k) {
  auto* y = static_cast<BlockQ5_0*>(vy);
  for (int64_t i = 0; i < k / kLegacyBlock; ++i, x += kLegacyBlock) {
    const float d = signed_absmax(x) / -16.0f;
    const float id = inverse_or_zero(d);
    y[i].d = fp32_to_fp16(d);
    uint32_t qh = 0;
    for (int j = 0; j < kHalf; ++j) {
      const int t0 = trunc_i8(x[j] * id + 16.5f);
      const int t1 = trunc_i8(x[j + kHalf] * id + 16.5f);
      const auto q0 = static_cast<uint8_t>(t0 < 31 ? t0 : 31);
      const auto q1 = static_cast<uint8_t>(t1 < 31 ? t1 : 31);
      y[i].qs[j] = static_cast<uint8_t>((q0 & 0x0f) | ((q1 & 0x0f) << 4));
      qh |= static_cast<uint32_t>((q0 >> 4) & 1) << j;
      qh |= static_cast<uint32_t>((q1 >> 4) & 1) << (j + kHalf);
    }
    std::memcpy(y[i].qh, &qh, 4);
  }
}

// Q5_1: d = (max - min) / 31; q = trunc((x - min) / d + 0.5) with no clamp.
void quantize_row_q5_1_ref(const float* x, void* vy, int64_t k) {
  auto* y = static_cast<BlockQ5_1*>(vy);
  for (int64_t i = 0; i < k / kLegacyBlock; ++i, x += kLegacyBlock) {
    float mn, mx;
    min_max(x, &mn, &mx);
    const float d = (mx - mn) / 31.0f;
    const float id = inverse_or_zero(d);
    y[i].d = fp32_to_fp16(d);
    y[i].m = fp32_to_fp16(mn);
    uint32_t qh = 0;
    for (int j = 0; j < kHalf; ++j) {
      const uint8_t q0 = trunc_u8((x[j] - mn) * id + 0.5f);
      const uint8_t q1 = trunc_u8((x[j + kHalf] - mn) * id + 0.5f);
      y[i].qs[j] = static_cast<uint8_t>((q0 & 0x0f) | ((q1 & 0x0f) << 4));
      qh |= static_cast<uint32_t>((q0 >> 4) & 1) << j;
      qh |= static_cast<uint32_t>((q1 >> 4) & 1) << (j + kHalf);
    }
    std::memcpy(y[i].qh, &qh, 4);
  }
}

// Q8_0: d = amax / 127; q = round-half-away(x / d).
void quantize_row_q8_0_ref(const float* x, void* vy, int64_t k) {
  auto* y = static_cast<BlockQ8_0*>(vy);
  for (int64_t i = 0; i < k / kLegacyBlock; ++i, x += kLegacyBlock) {
    const float d = absmax(x) / 127.0f;
    const float id = inverse_or_zero(d);
    y[i].d = fp32_to_fp16(d);
    for (int j = 0; j < kLegacyBlock; ++j) y[i].qs[j] = trunc_i8(std::round(x[j] * id));
  }
}

// Q8_1: Q8_0 plus s = half(d * sum(q)).
void quantize_row_q8_1_ref(const float* x, void* vy, int64_t k) {
  auto* y = static_cast<BlockQ8_1*>(vy);
  for (int64_t i = 0; i < k / kLegacyBlock; ++i, x += kLegacyBlock) {
    const float d = absmax(x) / 127.0f;
    const float id = inverse_or_zero(d);
    y[i].d = fp32_to_fp16(d);
    int sum = 0;
    for (int j = 0; j < kLegacyBlock; ++j) {
      y[i].qs[j] = trunc_i8(std::round(x[j] * id));
      sum += y[i].qs[j];
    }
    y[i].s = fp32_to_fp16(static_cast<float>(sum) * d);
  }
}

}  // namespace strix::quant
