// Shared helpers of the IQ format tests: float comparison by bits (NaN only
// by position), seeded random bytes, f16 special values.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "quant/types.h"
#include "ref/reference.h"

namespace strix::iq_test {

inline uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Number of positions where the two rows differ: raw bits, except that two
// NaNs agree whatever their payloads. `first` gets the first differing index.
inline int64_t count_float_mismatches(const float* a, const float* b, int64_t n, int64_t* first = nullptr) {
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    const bool both_nan = std::isnan(a[i]) && std::isnan(b[i]);
    if (!both_nan && bits_of(a[i]) != bits_of(b[i])) {
      if (bad == 0 && first) *first = i;
      ++bad;
    }
  }
  return bad;
}

inline std::vector<uint8_t> random_bytes(std::mt19937& rng, size_t n) {
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng() & 0xff);
  return v;
}

// A finite f16 with a moderate exponent (2^-10 .. 2^5), random sign and mantissa.
inline uint16_t random_moderate_f16(std::mt19937& rng) {
  const uint16_t exp = static_cast<uint16_t>(5 + rng() % 16);
  return static_cast<uint16_t>(((rng() & 1) << 15) | (exp << 10) | (rng() & 0x3ff));
}

// f16 bit patterns at the edges: max, subnormals, zeros, infinities, NaNs.
inline const std::vector<uint16_t>& special_f16() {
  static const std::vector<uint16_t> v = {0x7bff, 0xfbff, 0x0001, 0x8001, 0x03ff, 0x0400, 0x0000, 0x8000,
                                          0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7c01, 0x7fff, 0x3c00, 0x3555};
  return v;
}

// Our and libggml's dequantize of the same bytes; returns mismatches.
inline int64_t compare_dequant(uint32_t type, const std::vector<uint8_t>& data, int64_t* first = nullptr) {
  const TypeTraits& t = type_traits(type_traits_checked(type).type);
  const int64_t nblocks = static_cast<int64_t>(data.size() / t.type_size);
  const int64_t k = nblocks * t.block_size;
  std::vector<float> ours(k), theirs(k);
  auto ref = ref::LibGgml::get().dequantize_row(type);
  EXPECT_NE(ref, nullptr) << t.name;
  if (!ref) return k;
  ref(data.data(), theirs.data(), k);
  t.to_float(data.data(), ours.data(), k);
  return count_float_mismatches(theirs.data(), ours.data(), k, first);
}

}  // namespace strix::iq_test
