// TQ1_0 / TQ2_0 against libggml: the shared suite, plus every byte value in
// every packed position (TQ1_0 bytes 243..255 are never written by the
// quantizer but still decode to something).
#include <gtest/gtest.h>

#include "quant_misc/harness.h"

namespace strix::test {
namespace {

INSTANTIATE_TEST_SUITE_P(ternary, MiscQuantTest,
                         ::testing::Values(misc_type(GgmlType::TQ1_0), misc_type(GgmlType::TQ2_0)), misc_type_name);

// 256 blocks per type: block v has every quant byte = v and scale 1.0.
TEST(ternary, dequantize_matches_libggml_for_every_byte_value) {
  for (GgmlType type : {GgmlType::TQ1_0, GgmlType::TQ2_0}) {
    const MiscType mt = misc_type(type);
    const size_t ts = type_traits(type).type_size;
    std::vector<uint8_t> blocks(256 * ts);
    for (size_t v = 0; v < 256; ++v) {
      uint8_t* block = blocks.data() + v * ts;
      for (size_t i = 0; i < ts; ++i) block[i] = static_cast<uint8_t>(v);
      set_scale(block, mt.scales[0], 0x3C00);
    }
    EXPECT_EQ(dequant_diff(type, blocks), "") << type_traits(type).name;
  }
}

// Values exactly at +-amax/2 (round-half-away ties in lroundf) and exact trits.
TEST(ternary, quantize_matches_libggml_on_exact_trits_and_ties) {
  for (GgmlType type : {GgmlType::TQ1_0, GgmlType::TQ2_0}) {
    for (uint64_t seed = 0; seed < 32; ++seed) {
      auto row = make_row(Dist::kTernary, 0.75f, 256 * 2, seed);
      row[0] = 0.75f;  // amax exactly 0.75 so the +-0.375 values are exact ties
      ASSERT_EQ(quant_diff(type, row), "") << type_traits(type).name << " seed " << seed;
    }
  }
}

// libggml folds the block max with MAX(a, b) = a > b ? a : b, so a NaN makes the
// running max NaN and the next element replaces it: values before the NaN can be
// far larger than the scale, and lroundf then sees x / d from 1.5 up to 3e38
// (half-way ties, past 2^23 where floats are integers, past the int64 range).
TEST(ternary, quantize_matches_libggml_when_nan_resets_the_block_max) {
  const float ratios[] = {0.5f,       -0.5f,      1.5f,        -1.5f, 2.5f,   -2.5f, 3.49f, 100.5f,
                          4194304.5f, 8388608.0f, -8388609.0f, 1e10f, -1e18f, 1e19f, 1e30f, -3e38f};
  for (GgmlType type : {GgmlType::TQ1_0, GgmlType::TQ2_0}) {
    std::vector<float> row(512);
    for (size_t j = 0; j < 200; ++j) row[j] = ratios[j % 16];
    row[200] = NAN;
    for (size_t j = 201; j < 256; ++j) row[j] = (j % 3 == 0) ? 1.0f : -0.25f;  // max after the NaN: 1.0
    for (size_t j = 256; j < 512; ++j) row[j] = ratios[j % 16] * 1e-3f;        // a second, ordinary block
    row[300] = NAN;
    EXPECT_EQ(quant_diff(type, row), "") << type_traits(type).name;
  }
}

}  // namespace
}  // namespace strix::test
