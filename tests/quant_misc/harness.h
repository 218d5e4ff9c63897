// Shared pieces of the quant_misc tests: run our reference row functions and
// libggml's on the same input and describe the first bit that differs.
//
// Comparisons are on raw bits (floats as uint32), so -0 vs +0 and NaN payloads
// count, and NaN positions must agree.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "quant/types.h"
#include "ref/reference.h"

namespace strix::test {

// Where a block keeps its scale(s): `width` bytes (1: an 8-bit float format,
// 2: little-endian fp16) at `offset`.
struct ScaleSlot {
  size_t offset;
  int width;
};

struct MiscType {
  GgmlType type;
  std::vector<ScaleSlot> scales;
  uint16_t unit_scale;  // the encoding of a "plain" scale (1.0 or close) for layout probes
};

inline std::vector<MiscType> misc_types() {
  return {
      {GgmlType::MXFP4, {{0, 1}}, 127},                           // 2^(127-127)
      {GgmlType::NVFP4, {{0, 1}, {1, 1}, {2, 1}, {3, 1}}, 0x38},  // UE4M3 1.0
      {GgmlType::TQ1_0, {{52, 2}}, 0x3C00},
      {GgmlType::TQ2_0, {{64, 2}}, 0x3C00},
      {GgmlType::Q1_0, {{0, 2}}, 0x3C00},
      {GgmlType::Q2_0, {{0, 2}}, 0x3C00},
  };
}

inline void set_scale(uint8_t* block, const ScaleSlot& s, uint16_t v) {
  block[s.offset] = static_cast<uint8_t>(v & 0xFF);
  if (s.width == 2) block[s.offset + 1] = static_cast<uint8_t>(v >> 8);
}

inline bool is_scale_byte(const MiscType& t, size_t byte) {
  for (const auto& s : t.scales) {
    if (byte >= s.offset && byte < s.offset + static_cast<size_t>(s.width)) return true;
  }
  return false;
}

inline std::vector<uint8_t> random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng() >> 56);
  return v;
}

inline uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// "" when a and b are bit-identical; else the first differing element.
inline std::string float_diff(const float* a, const float* b, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (bits_of(a[i]) != bits_of(b[i])) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "element %zu: ours %a (0x%08x) vs libggml %a (0x%08x)", i, a[i], bits_of(a[i]),
                    b[i], bits_of(b[i]));
      return buf;
    }
  }
  return "";
}

inline std::string byte_diff(const uint8_t* a, const uint8_t* b, size_t n, size_t block_bytes) {
  for (size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "block %zu byte %zu: ours 0x%02x vs libggml 0x%02x", i / block_bytes,
                    i % block_bytes, a[i], b[i]);
      return buf;
    }
  }
  return "";
}

struct Dequantized {
  std::vector<float> ours, ref;
};

// Dequantize whole blocks with both implementations.
inline Dequantized dequantize_both(GgmlType type, const std::vector<uint8_t>& blocks) {
  const TypeTraits& t = type_traits(type);
  const auto ref_fn = ref::LibGgml::get().dequantize_row(static_cast<uint32_t>(type));
  if (ref_fn == nullptr) throw std::runtime_error(std::string("libggml-base has no dequantize_row_") + t.name);
  const int64_t k = static_cast<int64_t>(blocks.size() / t.type_size) * t.block_size;
  Dequantized d;
  d.ours.assign(static_cast<size_t>(k), 0.0f);
  d.ref.assign(static_cast<size_t>(k), 1.0f);  // different fill: an unwritten element shows up
  t.to_float(blocks.data(), d.ours.data(), k);
  ref_fn(blocks.data(), d.ref.data(), k);
  return d;
}

inline std::string dequant_diff(GgmlType type, const std::vector<uint8_t>& blocks) {
  const Dequantized d = dequantize_both(type, blocks);
  return float_diff(d.ours.data(), d.ref.data(), d.ours.size());
}

struct Quantized {
  std::vector<uint8_t> ours, ref;
};

// Quantize a row (a multiple of the block size) with both implementations.
inline Quantized quantize_both(GgmlType type, const std::vector<float>& row) {
  const TypeTraits& t = type_traits(type);
  const auto ref_fn = ref::LibGgml::get().quantize_row_ref(static_cast<uint32_t>(type));
  if (ref_fn == nullptr) throw std::runtime_error(std::string("libggml-base has no quantize_row_") + t.name + "_ref");
  const int64_t k = static_cast<int64_t>(row.size());
  const size_t bytes = row_size(type, k);
  Quantized q;
  q.ours.assign(bytes, 0xA5);
  q.ref.assign(bytes, 0x5A);  // different fill: an unwritten byte shows up
  t.from_float_ref(row.data(), q.ours.data(), k);
  ref_fn(row.data(), q.ref.data(), k);
  return q;
}

inline std::string quant_diff(GgmlType type, const std::vector<float>& row) {
  const Quantized q = quantize_both(type, row);
  return byte_diff(q.ours.data(), q.ref.data(), q.ours.size(), type_traits(type).type_size);
}

// Row generators. Every one is seeded; `n` is the element count.
enum class Dist {
  kNormal,     // N(0, scale)
  kUniform,    // U(-scale, scale)
  kPositive,   // U(0, scale)
  kSparse,     // 90% zeros, the rest N(0, scale)
  kZero,       // all +0
  kConstant,   // every element = scale
  kOutliers,   // N(0, scale) with 1% of elements x1000
  kGrid,       // multiples of scale/4 in [-6 scale, 6 scale]: exact ties for rounding
  kTernary,    // {-1, -0.5, 0, 0.5, 1} * scale: round-half ties in the ternary/2-bit codes
  kNonFinite,  // N(0, scale) with NaN, +inf, -inf sprinkled in
};

inline const char* dist_name(Dist d) {
  switch (d) {
    case Dist::kNormal:
      return "normal";
    case Dist::kUniform:
      return "uniform";
    case Dist::kPositive:
      return "positive";
    case Dist::kSparse:
      return "sparse";
    case Dist::kZero:
      return "zero";
    case Dist::kConstant:
      return "constant";
    case Dist::kOutliers:
      return "outliers";
    case Dist::kGrid:
      return "grid";
    case Dist::kTernary:
      return "ternary";
    case Dist::kNonFinite:
      return "nonfinite";
  }
  return "?";
}

inline std::vector<float> make_row(Dist dist, float scale, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) {
    switch (dist) {
      case Dist::kNormal:
        x = normal(rng) * scale;
        break;
      case Dist::kUniform:
        x = (2.0f * unit(rng) - 1.0f) * scale;
        break;
      case Dist::kPositive:
        x = unit(rng) * scale;
        break;
      case Dist::kSparse:
        x = unit(rng) < 0.9f ? 0.0f : normal(rng) * scale;
        break;
      case Dist::kZero:
        x = 0.0f;
        break;
      case Dist::kConstant:
        x = scale;
        break;
      case Dist::kOutliers:
        x = normal(rng) * scale * (unit(rng) < 0.01f ? 1000.0f : 1.0f);
        break;
      case Dist::kGrid:
        x = static_cast<float>(static_cast<int>(rng() % 49) - 24) * 0.25f * scale;
        break;
      case Dist::kTernary:
        x = static_cast<float>(static_cast<int>(rng() % 5) - 2) * 0.5f * scale;
        break;
      case Dist::kNonFinite: {
        const float u = unit(rng);
        x = u < 0.03f ? NAN : u < 0.05f ? INFINITY : u < 0.07f ? -INFINITY : normal(rng) * scale;
        break;
      }
    }
  }
  return v;
}

// The shared suite (row_functions_test.cpp) runs once per type; each family's
// test file instantiates it for its types.
class MiscQuantTest : public ::testing::TestWithParam<MiscType> {};

inline MiscType misc_type(GgmlType type) {
  for (const auto& t : misc_types()) {
    if (t.type == type) return t;
  }
  throw std::runtime_error("not a quant_misc type");
}

inline std::string misc_type_name(const ::testing::TestParamInfo<MiscType>& info) {
  return type_traits(info.param.type).name;
}

}  // namespace strix::test
