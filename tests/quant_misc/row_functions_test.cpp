// The shared suite for MXFP4, NVFP4, TQ1_0, TQ2_0, Q1_0 and Q2_0: our
// dequantize_row_* / quantize_row_*_ref against libggml-base's exported ones,
// bit for bit. Instantiated per family in fp4_test.cpp, ternary_test.cpp and
// lowbit_test.cpp.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>

#include "quant_misc/harness.h"

namespace strix::test {
namespace {

TEST_P(MiscQuantTest, dequantize_matches_libggml_on_random_blocks) {
  const TypeTraits& t = type_traits(GetParam().type);
  for (uint64_t seed : {1u, 2u, 3u}) {
    const auto blocks = random_bytes(4096 * t.type_size, seed * 1000 + static_cast<uint64_t>(t.type));
    EXPECT_EQ(dequant_diff(t.type, blocks), "") << "seed " << seed;
  }
}

// Every value of every scale field: 0, subnormal, max, inf and NaN fp16 values, or
// all 256 bytes of an 8-bit scale (in each slot alone, and in all slots at once).
TEST_P(MiscQuantTest, dequantize_matches_libggml_on_every_scale_value) {
  const MiscType& mt = GetParam();
  const TypeTraits& t = type_traits(mt.type);
  for (size_t slot = 0; slot <= mt.scales.size(); ++slot) {
    const bool all_slots = slot == mt.scales.size();
    if (all_slots && mt.scales.size() == 1) break;
    const uint32_t n_values = mt.scales[all_slots ? 0 : slot].width == 2 ? 65536 : 256;
    constexpr uint32_t kChunk = 4096;
    for (uint32_t first = 0; first < n_values; first += kChunk) {
      const uint32_t count = std::min(kChunk, n_values - first);
      auto blocks = random_bytes(count * t.type_size, 77 + first + slot);
      for (uint32_t v = 0; v < count; ++v) {
        uint8_t* block = blocks.data() + v * t.type_size;
        for (size_t s = 0; s < mt.scales.size(); ++s) {
          if (all_slots || s == slot) set_scale(block, mt.scales[s], static_cast<uint16_t>(first + v));
        }
      }
      EXPECT_EQ(dequant_diff(t.type, blocks), "") << "slot " << slot << ", scale values from " << first;
    }
  }
}

// Layout map: a block with plain scales and exactly one quant bit set, for every
// bit; then all quant bits set.
TEST_P(MiscQuantTest, dequantize_matches_libggml_on_single_bit_blocks) {
  const MiscType& mt = GetParam();
  const TypeTraits& t = type_traits(mt.type);
  std::vector<uint8_t> blocks;
  std::vector<uint8_t> plain(t.type_size, 0);
  for (const auto& s : mt.scales) set_scale(plain.data(), s, mt.unit_scale);
  for (size_t byte = 0; byte < t.type_size; ++byte) {
    if (is_scale_byte(mt, byte)) continue;
    for (int bit = 0; bit < 8; ++bit) {
      auto block = plain;
      block[byte] = static_cast<uint8_t>(1u << bit);
      blocks.insert(blocks.end(), block.begin(), block.end());
    }
  }
  auto ones = plain;
  for (size_t byte = 0; byte < t.type_size; ++byte) {
    if (!is_scale_byte(mt, byte)) ones[byte] = 0xFF;
  }
  blocks.insert(blocks.end(), ones.begin(), ones.end());
  blocks.insert(blocks.end(), plain.begin(), plain.end());
  EXPECT_EQ(dequant_diff(mt.type, blocks), "");
}

TEST_P(MiscQuantTest, quantize_matches_libggml_across_distributions) {
  const TypeTraits& t = type_traits(GetParam().type);
  const Dist dists[] = {Dist::kNormal,   Dist::kUniform,  Dist::kPositive, Dist::kSparse, Dist::kZero,
                        Dist::kConstant, Dist::kOutliers, Dist::kGrid,     Dist::kTernary};
  const float scales[] = {1e-4f, 1e-2f, 1.0f, 1e2f, 1e4f, -1.0f};
  uint64_t seed = 1;
  for (Dist dist : dists) {
    for (float scale : scales) {
      for (int nblocks = 1; nblocks <= 8; ++nblocks) {
        const auto row = make_row(dist, scale, static_cast<size_t>(nblocks * t.block_size), seed++);
        ASSERT_EQ(quant_diff(t.type, row), "") << dist_name(dist) << " scale " << scale << ", " << nblocks << " blocks";
      }
    }
  }
}

// Magnitudes where the scale encodings saturate or go subnormal: fp16 overflow
// (> 65504), fp16/UE4M3 underflow, float subnormals, FLT_MAX.
TEST_P(MiscQuantTest, quantize_matches_libggml_at_extreme_magnitudes) {
  const TypeTraits& t = type_traits(GetParam().type);
  const float scales[] = {1e-41f,        1e-38f,   1e-30f,   1e-8f, 6e-5f,          0.01f,  447.0f,
                          449.0f * 6.0f, 65504.0f, 70000.0f, 1e30f, FLT_MAX / 2.0f, FLT_MAX};
  uint64_t seed = 500;
  for (float scale : scales) {
    for (Dist dist : {Dist::kUniform, Dist::kConstant, Dist::kGrid}) {
      const auto row = make_row(dist, scale, static_cast<size_t>(4 * t.block_size), seed++);
      ASSERT_EQ(quant_diff(t.type, row), "") << dist_name(dist) << " scale " << scale;
    }
  }
}

// NaN and +-inf inputs: compared only where libggml itself is deterministic
// (same bytes from two calls); all six types are, on x86-64 with glibc.
TEST_P(MiscQuantTest, quantize_matches_libggml_on_nonfinite_input) {
  const TypeTraits& t = type_traits(GetParam().type);
  const auto ref_fn = ref::LibGgml::get().quantize_row_ref(static_cast<uint32_t>(t.type));
  ASSERT_NE(ref_fn, nullptr);
  for (uint64_t seed = 900; seed < 916; ++seed) {
    const auto row = make_row(Dist::kNonFinite, 1.0f, static_cast<size_t>(4 * t.block_size), seed);
    const size_t bytes = row_size(t.type, static_cast<int64_t>(row.size()));
    std::vector<uint8_t> first(bytes, 0), second(bytes, 0xFF);
    ref_fn(row.data(), first.data(), static_cast<int64_t>(row.size()));
    ref_fn(row.data(), second.data(), static_cast<int64_t>(row.size()));
    ASSERT_EQ(first, second) << "libggml is not deterministic on NaN/inf input (seed " << seed << ")";
    EXPECT_EQ(quant_diff(t.type, row), "") << "seed " << seed;
  }
  // One NaN at the end of a block, one at the start, and a block of only inf.
  std::vector<float> row(static_cast<size_t>(3 * t.block_size), 0.25f);
  row[static_cast<size_t>(t.block_size - 1)] = NAN;
  row[static_cast<size_t>(t.block_size)] = -NAN;
  for (int64_t j = 2 * t.block_size; j < 3 * t.block_size; ++j) row[static_cast<size_t>(j)] = INFINITY;
  EXPECT_EQ(quant_diff(t.type, row), "");
}

// Negative controls: the comparators see a one-bit difference, and the inputs
// reach every output (a changed quant bit or input value changes libggml's result,
// so agreeing with libggml on them is not vacuous).
TEST_P(MiscQuantTest, negative_control_dequantize_comparator_sees_one_bit) {
  const MiscType& mt = GetParam();
  const TypeTraits& t = type_traits(mt.type);
  std::vector<uint8_t> blocks(4 * t.type_size, 0);
  for (size_t b = 0; b < 4; ++b) {
    for (size_t i = 0; i < t.type_size; ++i) blocks[b * t.type_size + i] = static_cast<uint8_t>(0x5B + 31 * i + b);
    for (const auto& s : mt.scales) set_scale(blocks.data() + b * t.type_size, s, mt.unit_scale);
  }
  Dequantized d = dequantize_both(mt.type, blocks);
  ASSERT_EQ(float_diff(d.ours.data(), d.ref.data(), d.ours.size()), "");
  d.ours[d.ours.size() / 3] = std::nextafter(d.ours[d.ours.size() / 3], INFINITY);
  EXPECT_NE(float_diff(d.ours.data(), d.ref.data(), d.ours.size()), "");

  // Flip each quant bit of block 2 in turn: libggml's output must change, except
  // where the format has two codes for one value: E2M1 +0/-0 (codes 0 and 8 both
  // give +0), and TQ1_0 (256 byte values for 243 trit tuples; qh bytes carry only
  // 4 trits), of which at least 3/4 of the flips must still show.
  const Dequantized base = dequantize_both(mt.type, blocks);
  const bool fp4 = mt.type == GgmlType::MXFP4 || mt.type == GgmlType::NVFP4;
  int flips = 0, visible = 0;
  for (size_t byte = 0; byte < t.type_size; ++byte) {
    if (is_scale_byte(mt, byte)) continue;
    const uint8_t original = blocks[2 * t.type_size + byte];
    for (int bit = 0; bit < 8; ++bit) {
      auto flipped = blocks;
      flipped[2 * t.type_size + byte] ^= static_cast<uint8_t>(1u << bit);
      const Dequantized f = dequantize_both(mt.type, flipped);
      const bool shows = float_diff(f.ref.data(), base.ref.data(), f.ref.size()) != "";
      const bool zero_sign = fp4 && bit % 4 == 3 && ((original >> (bit - 3)) & 7) == 0;
      ++flips;
      visible += shows ? 1 : 0;
      if (mt.type != GgmlType::TQ1_0) {
        EXPECT_EQ(shows, !zero_sign) << "byte " << byte << " bit " << bit;
      }
      EXPECT_EQ(float_diff(f.ours.data(), f.ref.data(), f.ref.size()), "") << "byte " << byte << " bit " << bit;
    }
  }
  EXPECT_GE(4 * visible, 3 * flips) << visible << " of " << flips << " bit flips changed libggml's output";
}

TEST_P(MiscQuantTest, negative_control_quantize_comparator_sees_one_bit) {
  const TypeTraits& t = type_traits(GetParam().type);
  auto row = make_row(Dist::kNormal, 1.0f, static_cast<size_t>(3 * t.block_size), 4242);
  Quantized q = quantize_both(t.type, row);
  ASSERT_EQ(q.ours, q.ref);
  q.ours[q.ours.size() / 2] ^= 0x10;
  EXPECT_NE(byte_diff(q.ours.data(), q.ref.data(), q.ours.size(), t.type_size), "");

  // A different input value gives different libggml bytes (and ours follow).
  row[static_cast<size_t>(t.block_size + 5)] = -row[static_cast<size_t>(t.block_size + 5)] * 7.0f - 1.0f;
  const Quantized changed = quantize_both(t.type, row);
  EXPECT_NE(changed.ref, quantize_both(t.type, make_row(Dist::kNormal, 1.0f, row.size(), 4242)).ref);
  EXPECT_EQ(changed.ours, changed.ref);
}

}  // namespace
}  // namespace strix::test
