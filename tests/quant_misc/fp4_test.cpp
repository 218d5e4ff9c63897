// MXFP4 / NVFP4 against libggml: the shared suite, plus sweeps over the scale
// encoders (E8M0 from floor(log2 amax), UE4M3 from amax / 6) across the whole
// float range and around every rounding boundary.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>

#include "quant_misc/harness.h"

namespace strix::test {
namespace {

INSTANTIATE_TEST_SUITE_P(fp4, MiscQuantTest, ::testing::Values(misc_type(GgmlType::MXFP4), misc_type(GgmlType::NVFP4)),
                         misc_type_name);

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Groups of `group` elements whose |max| walks over `amaxes`; the other
// elements are amax times seeded fractions in (-1, 1), so each group's scale is
// set by its amax alone.
std::vector<float> rows_with_amax(const std::vector<float>& amaxes, int group, int block, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> frac(-1.0f, 1.0f);
  std::vector<float> row;
  for (float a : amaxes) {
    row.push_back((rng() & 1) ? a : -a);
    for (int j = 1; j < group; ++j) row.push_back(a * frac(rng));
  }
  while (row.size() % static_cast<size_t>(block) != 0) row.push_back(0.0f);
  return row;
}

// Every power of two (with its neighbours) and a stride through all positive
// floats: floor(log2 amax) and the E8M0 byte wrap exactly as in libggml.
TEST(fp4, mxfp4_quantize_matches_libggml_over_all_exponents) {
  std::vector<float> amaxes;
  for (int e = -149; e <= 127; ++e) {
    const float p = std::ldexp(1.0f, e);
    amaxes.push_back(p);
    amaxes.push_back(std::nextafter(p, 0.0f));
    amaxes.push_back(std::nextafter(p, INFINITY));
    amaxes.push_back(p * 1.5f);
  }
  for (uint32_t u = 1; u < 0x7F800000u; u += 0x8000u + 13) amaxes.push_back(from_bits(u));
  amaxes.push_back(FLT_MAX);
  amaxes.push_back(INFINITY);
  for (size_t first = 0; first < amaxes.size(); first += 8192) {
    const std::vector<float> part(amaxes.begin() + static_cast<long>(first),
                                  amaxes.begin() + static_cast<long>(std::min(amaxes.size(), first + 8192)));
    const auto row = rows_with_amax(part, 32, 32, first);
    ASSERT_EQ(quant_diff(GgmlType::MXFP4, row), "") << "amax chunk from " << first;
  }
}

// amax / 6 sweeps the UE4M3 range (every 4093rd float from 2^-14 to 2^10,
// covering subnormal codes, round-up carries and saturation) plus the exact
// midpoints between neighbouring codes.
TEST(fp4, nvfp4_quantize_matches_libggml_over_the_ue4m3_range) {
  std::vector<float> amaxes;
  for (uint32_t u = 0x38800000u; u < 0x44800000u; u += 4093) amaxes.push_back(from_bits(u) * 6.0f);
  for (int e = -10; e <= 9; ++e) {
    for (int m = 0; m < 16; ++m) {
      const float mid = std::ldexp(1.0f + (m + 0.5f) / 8.0f, e);  // halfway above code m (and carries at m=7)
      for (float v : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)}) amaxes.push_back(v * 6.0f);
    }
  }
  for (float v : {0.0f, 1e-30f, 447.0f, 448.0f, 449.0f, 464.0f, 480.0f, 1e6f, FLT_MAX, INFINITY}) {
    amaxes.push_back(v * 6.0f);
  }
  for (size_t first = 0; first < amaxes.size(); first += 8192) {
    const std::vector<float> part(amaxes.begin() + static_cast<long>(first),
                                  amaxes.begin() + static_cast<long>(std::min(amaxes.size(), first + 8192)));
    const auto row = rows_with_amax(part, 16, 64, first + 1);
    ASSERT_EQ(quant_diff(GgmlType::NVFP4, row), "") << "amax chunk from " << first;
  }
}

// Negative control for the sweep: a row whose sub-block scale differs must give a
// different scale byte in libggml's output (the sweep is sensitive to the encoder).
TEST(fp4, negative_control_nvfp4_scale_byte_follows_amax) {
  const auto a = quantize_both(GgmlType::NVFP4, rows_with_amax({1.0f, 1.0f, 1.0f, 1.0f}, 16, 64, 3));
  const auto b = quantize_both(GgmlType::NVFP4, rows_with_amax({1.0f, 1.3f, 1.0f, 1.0f}, 16, 64, 3));
  EXPECT_EQ(a.ref[0], b.ref[0]);
  EXPECT_NE(a.ref[1], b.ref[1]);
  EXPECT_EQ(a.ours, a.ref);
  EXPECT_EQ(b.ours, b.ref);
}

}  // namespace
}  // namespace strix::test
