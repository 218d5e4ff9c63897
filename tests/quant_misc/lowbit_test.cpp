// Q1_0 / Q2_0 against libggml: the shared suite, plus signed zeros and tiny
// negatives (Q1_0 keeps the bit of x >= 0, so -0 is "positive") and round-half
// ties of Q2_0's round(x / amax).
#include <gtest/gtest.h>

#include <cmath>

#include "quant_misc/harness.h"

namespace strix::test {
namespace {

INSTANTIATE_TEST_SUITE_P(lowbit, MiscQuantTest, ::testing::Values(misc_type(GgmlType::Q1_0), misc_type(GgmlType::Q2_0)),
                         misc_type_name);

TEST(lowbit, quantize_matches_libggml_on_signed_zeros_and_tiny_values) {
  for (GgmlType type : {GgmlType::Q1_0, GgmlType::Q2_0}) {
    const int64_t n = 2 * type_traits(type).block_size;
    std::vector<float> row(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) {
      const float vals[] = {0.0f, -0.0f, 1e-45f, -1e-45f, 1e-39f, -1e-39f, 3.0f, -3.0f};
      row[static_cast<size_t>(j)] = vals[j % 8];
    }
    EXPECT_EQ(quant_diff(type, row), "") << type_traits(type).name;
    // Only zeros of both signs: d = 0 and the sign bits differ per element.
    for (auto& v : row) v = std::signbit(v) ? -0.0f : 0.0f;
    EXPECT_EQ(quant_diff(type, row), "") << type_traits(type).name << " zeros";
  }
}

// Q2_0 codes from x / amax at exact halves: -0.5 -> -1, 0.5 -> +1, 1.5 (not
// reachable as |x| <= amax) so also amax = 0 and amax subnormal (1/amax = inf).
TEST(lowbit, q2_0_quantize_matches_libggml_on_ties_and_tiny_amax) {
  for (float amax : {2.0f, 1e-3f, 1e-39f, 1e-45f}) {
    std::vector<float> row(64);
    for (size_t j = 0; j < row.size(); ++j) row[j] = amax * static_cast<float>(static_cast<int>(j % 5) - 2) * 0.5f;
    EXPECT_EQ(quant_diff(GgmlType::Q2_0, row), "") << "amax " << amax;
  }
}

}  // namespace
}  // namespace strix::test
