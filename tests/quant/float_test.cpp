// F16 and BF16 rows against libggml-base's ggml_fp16_to_fp32_row,
// ggml_fp32_to_fp16_row, ggml_bf16_to_fp32_row and ggml_fp32_to_bf16_row_ref.
#include <gtest/gtest.h>

#include <random>

#include "quant/quants.h"
#include "quant/types.h"
#include "quant_test_util.h"
#include "ref/reference.h"

namespace strix {
namespace {

using namespace quant_test;

std::vector<uint16_t> all_halves() {
  std::vector<uint16_t> v(65536);
  for (uint32_t i = 0; i < 65536; ++i) v[i] = static_cast<uint16_t>(i);
  return v;
}

// Float bit patterns that probe every rounding boundary of both narrow formats:
// each of the 2^16 top halves combined with low halves at and around the
// bf16 tie (0x8000) and the half tie of normal results (bit 12), plus
// zero/all-ones low halves, plus 2^22 random patterns.
std::vector<float> probe_floats() {
  std::vector<float> v;
  const uint16_t lows[] = {0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x2000, 0x3000, 0x5000, 0x7000,
                           0x7fff, 0x8000, 0x8001, 0x9000, 0xb000, 0xd000, 0xf000, 0xffff};
  for (uint32_t hi = 0; hi < 65536; ++hi) {
    for (uint16_t lo : lows) v.push_back(from_bits((hi << 16) | lo));
  }
  std::mt19937 rng(123);
  for (int i = 0; i < (1 << 22); ++i) v.push_back(from_bits(rng()));
  return v;
}

TEST(QuantFloat, traits_point_at_our_functions) {
  EXPECT_EQ(type_traits(GgmlType::F16).to_float, quant::dequantize_row_f16);
  EXPECT_EQ(type_traits(GgmlType::F16).from_float_ref, quant::quantize_row_f16_ref);
  EXPECT_EQ(type_traits(GgmlType::BF16).to_float, quant::dequantize_row_bf16);
  EXPECT_EQ(type_traits(GgmlType::BF16).from_float_ref, quant::quantize_row_bf16_ref);
  EXPECT_EQ(type_traits(GgmlType::F32).to_float, quant::dequantize_row_f32);
}

TEST(QuantFloat, f16_to_f32_all_65536_patterns_bit_exact) {
  const auto h = all_halves();
  std::vector<float> ours(h.size()), ref(h.size());
  quant::dequantize_row_f16(h.data(), ours.data(), static_cast<int64_t>(h.size()));
  ref::LibGgml::get().fp16_to_fp32_row(h.data(), ref.data(), static_cast<int64_t>(h.size()));
  EXPECT_EQ(compare_floats(ours.data(), ref.data(), h.size()), "");
  // NaN payloads are kept too (not just "both NaN").
  for (size_t i = 0; i < h.size(); ++i) ASSERT_EQ(bits(ours[i]), bits(ref[i])) << "half 0x" << std::hex << i;
}

TEST(QuantFloat, bf16_to_f32_all_65536_patterns_bit_exact) {
  const auto h = all_halves();
  std::vector<float> ours(h.size()), ref(h.size());
  quant::dequantize_row_bf16(h.data(), ours.data(), static_cast<int64_t>(h.size()));
  ref::LibGgml::get().bf16_to_fp32_row(h.data(), ref.data(), static_cast<int64_t>(h.size()));
  for (size_t i = 0; i < h.size(); ++i) ASSERT_EQ(bits(ours[i]), bits(ref[i])) << "bf16 0x" << std::hex << i;
}

TEST(QuantFloat, f32_to_f16_rounding_boundaries_bit_exact) {
  const auto x = probe_floats();
  std::vector<uint16_t> ours(x.size()), ref(x.size());
  quant::quantize_row_f16_ref(x.data(), ours.data(), static_cast<int64_t>(x.size()));
  ref::LibGgml::get().fp32_to_fp16_row(x.data(), ref.data(), static_cast<int64_t>(x.size()));
  size_t bad = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (ours[i] != ref[i] && ++bad <= 5) {
      ADD_FAILURE() << "f32 0x" << std::hex << bits(x[i]) << ": ours 0x" << ours[i] << " libggml 0x" << ref[i];
    }
  }
  EXPECT_EQ(bad, 0u);
}

TEST(QuantFloat, f32_to_bf16_rounding_boundaries_bit_exact) {
  const auto x = probe_floats();
  std::vector<uint16_t> ours(x.size()), ref(x.size());
  quant::quantize_row_bf16_ref(x.data(), ours.data(), static_cast<int64_t>(x.size()));
  ref::LibGgml::get().fp32_to_bf16_row_ref(x.data(), ref.data(), static_cast<int64_t>(x.size()));
  size_t bad = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (ours[i] != ref[i] && ++bad <= 5) {
      ADD_FAILURE() << "f32 0x" << std::hex << bits(x[i]) << ": ours 0x" << ours[i] << " libggml 0x" << ref[i];
    }
  }
  EXPECT_EQ(bad, 0u);
}

// Every half-precision value round-trips through f32 and back unchanged, on both
// sides (NaNs come back quiet).
TEST(QuantFloat, f16_round_trip_matches_libggml) {
  const auto h = all_halves();
  std::vector<float> f(h.size());
  quant::dequantize_row_f16(h.data(), f.data(), static_cast<int64_t>(h.size()));
  std::vector<uint16_t> ours(h.size()), ref(h.size());
  quant::quantize_row_f16_ref(f.data(), ours.data(), static_cast<int64_t>(h.size()));
  ref::LibGgml::get().fp32_to_fp16_row(f.data(), ref.data(), static_cast<int64_t>(h.size()));
  EXPECT_EQ(ours, ref);
}

TEST(QuantFloat, flipped_bit_is_detected) {
  const auto h = all_halves();
  std::vector<float> ref(h.size()), ours(h.size());
  ref::LibGgml::get().fp16_to_fp32_row(h.data(), ref.data(), static_cast<int64_t>(h.size()));
  auto bad = h;
  bad[0x3c00] ^= 0x0001;
  quant::dequantize_row_f16(bad.data(), ours.data(), static_cast<int64_t>(h.size()));
  EXPECT_NE(compare_floats(ours.data(), ref.data(), h.size()), "");
  ref::LibGgml::get().bf16_to_fp32_row(h.data(), ref.data(), static_cast<int64_t>(h.size()));
  quant::dequantize_row_bf16(bad.data(), ours.data(), static_cast<int64_t>(h.size()));
  EXPECT_NE(compare_floats(ours.data(), ref.data(), h.size()), "");
}

}  // namespace
}  // namespace strix
