// Helpers for the tests/quant suites: seeded inputs, and comparators that check
// our reference row functions against libggml's bit for bit.
//
// Float outputs are compared as raw bits (so -0 vs +0 counts); the one exception
// is a position where libggml's output is NaN: there ours must be NaN too, but the
// payload may differ. Byte outputs are compared with memcmp semantics and the
// first difference is reported as "block B byte O".
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "quant/types.h"
#include "ref/reference.h"

namespace strix::quant_test {

inline uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// "" when equal under the rule above, else the first offending element.
inline std::string compare_floats(const float* ours, const float* ref, size_t n, int64_t block_size = 1) {
  for (size_t i = 0; i < n; ++i) {
    if (bits(ours[i]) == bits(ref[i])) continue;
    if (std::isnan(ref[i]) && std::isnan(ours[i])) continue;
    char buf[200];
    std::snprintf(buf, sizeof buf, "element %zu (block %lld): ours %a (0x%08x) vs libggml %a (0x%08x)", i,
                  static_cast<long long>(static_cast<int64_t>(i) / block_size), static_cast<double>(ours[i]),
                  bits(ours[i]), static_cast<double>(ref[i]), bits(ref[i]));
    return buf;
  }
  return "";
}

inline std::string compare_bytes(const uint8_t* ours, const uint8_t* ref, size_t n, size_t block_bytes) {
  if (std::memcmp(ours, ref, n) == 0) return "";
  for (size_t i = 0; i < n; ++i) {
    if (ours[i] == ref[i]) continue;
    char buf[160];
    std::snprintf(buf, sizeof buf, "block %zu byte %zu: ours 0x%02x vs libggml 0x%02x", i / block_bytes,
                  i % block_bytes, ours[i], ref[i]);
    return buf;
  }
  return "";
}

inline std::vector<uint8_t> random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng() >> 32);
  return v;
}

// Row distributions for the quantizer tests.
enum class Dist {
  kNormal,    // N(0, s)
  kUniform,   // U(-s, s)
  kPositive,  // U(0, s): no negative values, so the min of an affine fit is 0
  kNegative,  // U(-s, -s/4)
  kSparse,    // 90% zeros, the rest N(0, s)
  kZero,      // all +0
  kConstant,  // every element s
  kOutlier,   // N(0, 1) with one element s (huge)
  kGrid,      // multiples of s/4 in [-6s, 6s]: exact ties in rounding
  kTiny,      // N(0, 1) * s with s near the subnormal range
};

inline const char* dist_name(Dist d) {
  switch (d) {
    case Dist::kNormal:
      return "normal";
    case Dist::kUniform:
      return "uniform";
    case Dist::kPositive:
      return "positive";
    case Dist::kNegative:
      return "negative";
    case Dist::kSparse:
      return "sparse";
    case Dist::kZero:
      return "zero";
    case Dist::kConstant:
      return "constant";
    case Dist::kOutlier:
      return "outlier";
    case Dist::kGrid:
      return "grid";
    case Dist::kTiny:
      return "tiny";
  }
  return "?";
}

inline std::vector<float> make_row(Dist dist, float s, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) {
    switch (dist) {
      case Dist::kNormal:
        x = normal(rng) * s;
        break;
      case Dist::kUniform:
        x = (2.0f * unit(rng) - 1.0f) * s;
        break;
      case Dist::kPositive:
        x = unit(rng) * s;
        break;
      case Dist::kNegative:
        x = -(0.25f + 0.75f * unit(rng)) * s;
        break;
      case Dist::kSparse:
        x = unit(rng) < 0.9f ? 0.0f : normal(rng) * s;
        break;
      case Dist::kZero:
        x = 0.0f;
        break;
      case Dist::kConstant:
        x = s;
        break;
      case Dist::kOutlier:
        x = normal(rng);
        break;
      case Dist::kGrid:
        x = static_cast<float>(static_cast<int>(rng() % 49) - 24) * 0.25f * s;
        break;
      case Dist::kTiny:
        x = normal(rng) * s;
        break;
    }
  }
  if (dist == Dist::kOutlier && n > 0) v[rng() % n] = s;
  return v;
}

struct RowCase {
  Dist dist;
  float s;
};

// Every (distribution, parameter) pair the quantizer tests run, for each row
// length of 1..8 blocks and a few seeds.
inline std::vector<RowCase> row_cases() {
  std::vector<RowCase> c;
  for (float s : {1e-3f, 1e-1f, 1.0f, 10.0f, 1e3f}) c.push_back({Dist::kNormal, s});
  for (float s : {1.0f, 1e2f}) c.push_back({Dist::kUniform, s});
  c.push_back({Dist::kPositive, 1.0f});
  c.push_back({Dist::kNegative, 3.0f});
  c.push_back({Dist::kSparse, 1.0f});
  c.push_back({Dist::kZero, 0.0f});
  for (float s : {0.7f, -3.0f, 1e-20f}) c.push_back({Dist::kConstant, s});
  for (float s : {1e4f, -1e8f, 1e30f}) c.push_back({Dist::kOutlier, s});
  for (float s : {1.0f, 0.1f}) c.push_back({Dist::kGrid, s});
  // 1e-39 and 1e-43: subnormal inputs; 1e-37: normal inputs whose scales go
  // subnormal and whose reciprocal scales overflow.
  for (float s : {1e-37f, 1e-39f, 1e-43f}) c.push_back({Dist::kTiny, s});
  return c;
}

// Dequantize `blocks` with our table entry and with libggml's export.
struct DequantPair {
  std::vector<float> ours, ref;
};

inline DequantPair dequantize_both(GgmlType type, const std::vector<uint8_t>& blocks) {
  const TypeTraits& t = type_traits(type);
  const auto ref_fn = ref::LibGgml::get().dequantize_row(static_cast<uint32_t>(type));
  const int64_t k = static_cast<int64_t>(blocks.size() / t.type_size) * t.block_size;
  DequantPair p;
  p.ours.assign(static_cast<size_t>(k), 1.5f);  // different fills: an unwritten element shows up
  p.ref.assign(static_cast<size_t>(k), -2.5f);
  t.to_float(blocks.data(), p.ours.data(), k);
  ref_fn(blocks.data(), p.ref.data(), k);
  return p;
}

inline std::string dequant_mismatch(GgmlType type, const std::vector<uint8_t>& blocks) {
  const DequantPair p = dequantize_both(type, blocks);
  return compare_floats(p.ours.data(), p.ref.data(), p.ours.size(), type_traits(type).block_size);
}

// Quantize a row with our table entry and with libggml's quantize_row_*_ref.
// Output buffers get different fills so that a byte one side leaves unwritten
// shows up, except where `same_fill` is set (Q8_K: libggml leaves the bsums of
// an all-zero block unwritten, we write zeros; both start zeroed).
inline std::string quant_mismatch(GgmlType type, const std::vector<float>& row, bool same_fill = false) {
  const TypeTraits& t = type_traits(type);
  const auto ref_fn = ref::LibGgml::get().quantize_row_ref(static_cast<uint32_t>(type));
  const int64_t k = static_cast<int64_t>(row.size());
  const size_t n = row_size(type, k);
  std::vector<uint8_t> ours(n, same_fill ? 0x00 : 0xA5);
  std::vector<uint8_t> ref(n, same_fill ? 0x00 : 0x5A);
  t.from_float_ref(row.data(), ours.data(), k);
  ref_fn(row.data(), ref.data(), k);
  return compare_bytes(ours.data(), ref.data(), n, t.type_size);
}

// Half-float bit patterns for the extreme-scale tests.
inline std::vector<uint16_t> extreme_halves() {
  return {
      0x7bff,  // 65504, the largest finite half
      0xfbff,  // -65504
      0x0001,  // the smallest subnormal
      0x03ff,  // the largest subnormal
      0x0400,  // the smallest normal
      0x0000,  // +0
      0x8000,  // -0
      0x7c00,  // +inf
      0xfc00,  // -inf
      0x7e00,  // quiet NaN
      0x7c01,  // signalling NaN
      0xfe00,  // negative NaN
      0x3c00,  // 1
  };
}

// ---------------------------------------------------------------- shared checks

// Where a block format keeps its scales: `width` bytes at `offset` (2: a little
// endian half, 4: a float), and where its quant payload starts.
struct BlockLayout {
  GgmlType type;
  std::vector<std::pair<size_t, int>> scales;  // (offset, width)
  size_t quants_offset;
};

inline void put_scale(uint8_t* block, std::pair<size_t, int> slot, uint32_t v) {
  for (int b = 0; b < slot.second; ++b) block[slot.first + b] = static_cast<uint8_t>(v >> (8 * b));
}

// Dequantize `n_blocks` blocks of random bytes (every field random, so some
// scales are inf/NaN/subnormal) with both implementations.
inline void check_dequant_random(GgmlType type, size_t n_blocks, uint64_t seed) {
  const TypeTraits& t = type_traits(type);
  const auto blocks = random_bytes(n_blocks * t.type_size, seed);
  EXPECT_EQ(dequant_mismatch(type, blocks), "") << t.name << " seed " << seed;
}

// Random quants with every scale slot set to each extreme value in turn, and
// then all slots extreme at once.
inline void check_dequant_extreme_scales(const BlockLayout& layout, uint64_t seed) {
  const TypeTraits& t = type_traits(layout.type);
  std::vector<uint32_t> extremes;
  for (const auto& slot : layout.scales) {
    if (slot.second == 4) {
      extremes = {0x7f7fffffu, 0xff7fffffu, 0x00000001u, 0x007fffffu, 0x00800000u, 0x00000000u,
                  0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u, 0x3f800000u};
    }
  }
  if (extremes.empty()) {
    for (uint16_t h : extreme_halves()) extremes.push_back(h);
  }
  const size_t per_case = 16;
  std::vector<uint8_t> blocks;
  size_t case_index = 0;
  for (size_t s = 0; s <= layout.scales.size(); ++s) {  // s == size(): all slots at once
    for (uint32_t v : extremes) {
      auto part = random_bytes(per_case * t.type_size, seed + 1000 * case_index++);
      for (size_t b = 0; b < per_case; ++b) {
        uint8_t* block = part.data() + b * t.type_size;
        for (size_t k = 0; k < layout.scales.size(); ++k) {
          if (k == s || s == layout.scales.size()) put_scale(block, layout.scales[k], v);
        }
      }
      blocks.insert(blocks.end(), part.begin(), part.end());
    }
  }
  EXPECT_EQ(dequant_mismatch(layout.type, blocks), "") << t.name;
}

// Quantize every row case at 1..8 blocks with two seeds; every mismatch is
// reported with its distribution, row length and first differing byte.
inline void check_quantize_rows(GgmlType type, bool same_fill = false) {
  const TypeTraits& t = type_traits(type);
  int rows = 0;
  int failures = 0;
  uint64_t seed = 1;
  for (const RowCase& c : row_cases()) {
    for (int64_t nb = 1; nb <= 8; ++nb) {
      for (int rep = 0; rep < 2; ++rep, ++seed) {
        const auto row = make_row(c.dist, c.s, static_cast<size_t>(nb * t.block_size), seed * 7919 + 17);
        const std::string m = quant_mismatch(type, row, same_fill);
        ++rows;
        if (!m.empty() && ++failures <= 8) {
          ADD_FAILURE() << t.name << " " << dist_name(c.dist) << "(" << c.s << ") " << nb << " blocks seed " << seed
                        << ": " << m;
        }
      }
    }
  }
  EXPECT_EQ(failures, 0) << t.name << ": " << failures << " of " << rows << " rows differ";
}

// Negative control: a single flipped quant bit must be seen by the comparator
// (ours on the corrupted block vs libggml on the original). Blocks come from
// libggml's own quantizer on N(0, 1) data so that every scale is non-zero.
inline void check_bit_flip_detected(const BlockLayout& layout) {
  const TypeTraits& t = type_traits(layout.type);
  const auto ref_q = ref::LibGgml::get().quantize_row_ref(static_cast<uint32_t>(layout.type));
  const auto ref_dq = ref::LibGgml::get().dequantize_row(static_cast<uint32_t>(layout.type));
  const int64_t k = 2 * t.block_size;
  const auto row = make_row(Dist::kNormal, 1.0f, static_cast<size_t>(k), 4242);
  std::vector<uint8_t> q(row_size(layout.type, k), 0);
  ref_q(row.data(), q.data(), k);
  std::vector<float> ref_out(static_cast<size_t>(k)), ours(static_cast<size_t>(k));
  ref_dq(q.data(), ref_out.data(), k);
  t.to_float(q.data(), ours.data(), k);
  ASSERT_EQ(compare_floats(ours.data(), ref_out.data(), ours.size()), "") << t.name;
  q[t.type_size + layout.quants_offset + 3] ^= 0x01;  // block 1, fourth quant byte, lowest bit
  t.to_float(q.data(), ours.data(), k);
  EXPECT_NE(compare_floats(ours.data(), ref_out.data(), ours.size()), "") << t.name << ": bit flip not detected";
}

}  // namespace strix::quant_test
