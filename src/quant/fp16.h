// IEEE half and bfloat16 conversions, with ggml's rounding and NaN rules
// (round to nearest even; NaN stays NaN and is made quiet).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace strix {

inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float f32_from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float fp16_to_fp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t man = h & 0x3ff;
  if (exp == 0) {
    // zero or subnormal: man * 2^-24, exact in float
    const float v = static_cast<float>(man) * 0x1p-24f;
    return f32_from_bits(f32_bits(v) | sign);
  }
  if (exp == 31) {
    // inf or NaN; NaN payload kept in the top mantissa bits, made quiet
    return f32_from_bits(sign | 0x7f800000 | (man << 13) | (man ? 0x400000u : 0u));
  }
  return f32_from_bits(sign | ((exp + 112) << 23) | (man << 13));
}

inline uint16_t fp32_to_fp16(float f) {
  const uint32_t x = f32_bits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t ax = x & 0x7fffffff;
  if (ax > 0x7f800000) return sign | 0x7e00;  // NaN
  if (ax >= 0x477ff000) return sign | 0x7c00;  // rounds past 65504: inf
  if (ax < 0x38800000) {
    // below the smallest normal half: a multiple of 2^-24, rounded to nearest even
    const float scaled = f32_from_bits(ax) * 0x1p24f;  // exact
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  const uint32_t r = ax + 0xfff + ((ax >> 13) & 1);  // round the 13 dropped bits to even
  return sign | static_cast<uint16_t>((r - 0x38000000) >> 13);
}

inline float bf16_to_fp32(uint16_t h) { return f32_from_bits(static_cast<uint32_t>(h) << 16); }

inline uint16_t fp32_to_bf16(float f) {
  const uint32_t x = f32_bits(f);
  if ((x & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((x >> 16) | 64);  // quiet NaN
  return static_cast<uint16_t>((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

}  // namespace strix
