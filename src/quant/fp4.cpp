// MXFP4 and NVFP4: 4-bit E2M1 codes with a shared 8-bit scale.
//
//   block_mxfp4 (32 elements, 17 bytes): [e: E8M0 exponent][qs: 16 bytes]
//   block_nvfp4 (64 elements, 36 bytes): [d: 4 x UE4M3, one per 16 elements][qs: 32 bytes]
//
// Nibble order (both types): within a group of G elements (G = 32 for mxfp4, 16
// for each nvfp4 sub-block) byte j holds element j in its low nibble and element
// j + G/2 in its high nibble.
//
// The code table holds the E2M1 values doubled (so they are integers); both scale
// decoders return half the scale to compensate, exactly as libggml does. Results
// must be bit-identical with libggml's dequantize_row_* / quantize_row_*_ref, so
// the float operations below keep libggml's order and nothing may be fused.
#pragma GCC optimize("fp-contract=off")

#include <cmath>
#include <cstdint>

#include "quant/fp16.h"
#include "quant/quants.h"

namespace strix::quant {

namespace {

constexpr int kMxfp4Block = 32;
constexpr int kMxfp4Bytes = 17;
constexpr int kNvfp4Block = 64;
constexpr int kNvfp4Sub = 16;  // elements per UE4M3 scale
constexpr int kNvfp4Bytes = 36;

// E2M1 code -> 2 * value. Codes 0 and 8 are +0 and -0; both decode to 0.
constexpr int8_t kFp4Doubled[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// E8M0 byte e -> 2^(e - 127) / 2 = 2^(e - 128). e = 0 and 1 land below the
// normal float range (2^-128, 2^-127), so they are built as subnormals. Never NaN.
float e8m0_half(uint8_t e) {
  const uint32_t bits = e < 2 ? (0x00200000u << e) : (static_cast<uint32_t>(e - 1) << 23);
  return f32_from_bits(bits);
}

// UE4M3 byte -> value / 2. Bits 6..3 are the exponent (bias 7), bits 2..0 the
// mantissa; bit 7 is ignored except that 0x7F (the NaN code) decodes to 0.
// All results are exact, so building the float from bits matches libggml's
// ldexpf arithmetic.
float ue4m3_half(uint8_t b) {
  if (b == 0x00 || b == 0x7F) return 0.0f;
  const uint32_t exp = (b >> 3) & 0xF;
  const uint32_t man = b & 0x7;
  if (exp == 0) return static_cast<float>(man) * 0x1p-10f;  // man * 2^-9 / 2
  // (1 + man/8) * 2^(exp - 7) / 2: biased float exponent exp - 8 + 127
  return f32_from_bits(((exp + 119) << 23) | (man << 20));
}

// Positive float -> UE4M3 byte, the way libggml encodes NVFP4 scales: non-positive
// and NaN give 0, exponents past 14 (so everything from 2^8 = 256 up, inf
// included) saturate to 0x7E (= 448), the mantissa is rounded half-up on the
// first dropped bit, and values below 2^-6 become subnormal codes (man * 2^-9,
// rounded half-up, at most 7). libggml also clamps to 448 first; that cannot
// change the result, since 448 already saturates.
uint8_t ue4m3_encode(float v) {
  if (!(v > 0.0f)) return 0;
  const uint32_t bits = f32_bits(v);
  int exp = static_cast<int>((bits >> 23) & 0xFF) - 127 + 7;
  if (exp <= 0) {
    const int man = static_cast<int>(v * 512.0f + 0.5f);  // v < 2^-6 here, so this is in [0, 8.5)
    if (man < 1) return 0;
    return static_cast<uint8_t>(man > 7 ? 7 : man);
  }
  if (exp >= 15) return 0x7E;
  int man = static_cast<int>((bits >> 20) & 0x7) + static_cast<int>((bits >> 19) & 0x1);
  if (man > 7) {
    man = 0;
    if (++exp >= 15) return 0x7E;
  }
  return static_cast<uint8_t>((exp << 3) | man);
}

// The code whose scaled value is nearest to x; the lowest code wins ties, and a
// NaN distance never wins (so NaN input gives code 0).
uint8_t nearest_fp4(float x, float scale) {
  uint8_t best = 0;
  float best_err = std::fabs(static_cast<float>(kFp4Doubled[0]) * scale - x);
  for (uint8_t c = 1; c < 16; ++c) {
    const float err = std::fabs(static_cast<float>(kFp4Doubled[c]) * scale - x);
    if (err < best_err) {
      best = c;
      best_err = err;
    }
  }
  return best;
}

// max |x| over n values; NaN never replaces the running maximum.
float abs_max(const float* x, int n) {
  float amax = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (amax < std::fabs(x[j])) amax = std::fabs(x[j]);
  }
  return amax;
}

// What x86's cvttss2si does with a float: truncate, and INT32_MIN for NaN or
// anything out of range. libggml's casts compile to it; we spell it out.
int32_t truncate_like_x86(float f) {
  if (!(f >= -2147483648.0f && f < 2147483648.0f)) return INT32_MIN;
  return static_cast<int32_t>(f);
}

// Pack `group` elements: low nibble element j, high nibble element j + group/2.
void pack_fp4(const float* x, int group, float scale, uint8_t* qs) {
  const int half = group / 2;
  for (int j = 0; j < half; ++j) {
    qs[j] = static_cast<uint8_t>(nearest_fp4(x[j], scale) | (nearest_fp4(x[j + half], scale) << 4));
  }
}

void unpack_fp4(const uint8_t* qs, int group, float scale, float* y) {
  const int half = group / 2;
  for (int j = 0; j < half; ++j) {
    y[j] = static_cast<float>(kFp4Doubled[qs[j] & 0xF]) * scale;
    y[j + half] = static_cast<float>(kFp4Doubled[qs[j] >> 4]) * scale;
  }
}

}  // namespace

void dequantize_row_mxfp4(const void* x, float* y, int64_t k) {
  const auto* b = static_cast<const uint8_t*>(x);
  for (int64_t i = 0; i < k / kMxfp4Block; ++i, b += kMxfp4Bytes, y += kMxfp4Block) {
    unpack_fp4(b + 1, kMxfp4Block, e8m0_half(b[0]), y);
  }
}

void quantize_row_mxfp4_ref(const float* x, void* y, int64_t k) {
  auto* b = static_cast<uint8_t*>(y);
  for (int64_t i = 0; i < k / kMxfp4Block; ++i, b += kMxfp4Bytes, x += kMxfp4Block) {
    const float amax = abs_max(x, kMxfp4Block);
    // Shared exponent: floor(log2 amax) - 2, so that amax / 2^e lands in [4, 8)
    // and the largest code (6.0) covers it. libggml computes it in float and
    // keeps the low byte of the int32 conversion (inf amax -> 0).
    uint8_t e = 0;
    if (amax > 0.0f) {
      const float biased = (std::floor(std::log2(amax)) - 2.0f) + 127.0f;
      e = static_cast<uint8_t>(static_cast<uint32_t>(truncate_like_x86(biased)) & 0xFF);
    }
    b[0] = e;
    pack_fp4(x, kMxfp4Block, e8m0_half(e), b + 1);
  }
}

void dequantize_row_nvfp4(const void* x, float* y, int64_t k) {
  const auto* b = static_cast<const uint8_t*>(x);
  for (int64_t i = 0; i < k / kNvfp4Block; ++i, b += kNvfp4Bytes) {
    for (int s = 0; s < kNvfp4Block / kNvfp4Sub; ++s, y += kNvfp4Sub) {
      unpack_fp4(b + 4 + s * (kNvfp4Sub / 2), kNvfp4Sub, ue4m3_half(b[s]), y);
    }
  }
}

void quantize_row_nvfp4_ref(const float* x, void* y, int64_t k) {
  auto* b = static_cast<uint8_t*>(y);
  for (int64_t i = 0; i < k / kNvfp4Block; ++i, b += kNvfp4Bytes) {
    for (int s = 0; s < kNvfp4Block / kNvfp4Sub; ++s, x += kNvfp4Sub) {
      // The scale maps the largest E2M1 magnitude (6.0) onto amax.
      const uint8_t code = ue4m3_encode(abs_max(x, kNvfp4Sub) / 6.0f);
      b[s] = code;
      pack_fp4(x, kNvfp4Sub, ue4m3_half(code), b + 4 + s * (kNvfp4Sub / 2));
    }
  }
}

}  // namespace strix::quant
