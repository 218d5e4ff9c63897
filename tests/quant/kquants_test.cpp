// K-quant super-block formats (Q2_K Q3_K Q4_K Q5_K Q6_K Q8_K) against
// libggml-base: dequantize_row_* and quantize_row_*_ref, bit for bit.
#include <gtest/gtest.h>

#include "quant/quants.h"
#include "quant/types.h"
#include "quant_test_util.h"
#include "ref/reference.h"

namespace strix {
namespace {

using namespace quant_test;

// Scale slots: byte offsets of d / dmin (halves) or Q8_K's float d; and the
// first byte of the quant payload.
const std::vector<BlockLayout>& layouts() {
  static const std::vector<BlockLayout> v = {
      {GgmlType::Q2_K, {{80, 2}, {82, 2}}, 16},  // scales[16] qs[64] d dmin
      {GgmlType::Q3_K, {{108, 2}}, 32},          // hmask[32] qs[64] scales[12] d
      {GgmlType::Q4_K, {{0, 2}, {2, 2}}, 16},    // d dmin scales[12] qs[128]
      {GgmlType::Q5_K, {{0, 2}, {2, 2}}, 48},    // d dmin scales[12] qh[32] qs[128]
      {GgmlType::Q6_K, {{208, 2}}, 0},           // ql[128] qh[64] scales[16] d
      {GgmlType::Q8_K, {{0, 4}}, 4},             // float d, qs[256], bsums[16]
  };
  return v;
}

TEST(QuantKQuants, traits_point_at_our_functions) {
  struct Row {
    GgmlType type;
    DequantizeRowFn deq;
    QuantizeRowFn quant;
  };
  const Row rows[] = {
      {GgmlType::Q2_K, quant::dequantize_row_q2_K, quant::quantize_row_q2_K_ref},
      {GgmlType::Q3_K, quant::dequantize_row_q3_K, quant::quantize_row_q3_K_ref},
      {GgmlType::Q4_K, quant::dequantize_row_q4_K, quant::quantize_row_q4_K_ref},
      {GgmlType::Q5_K, quant::dequantize_row_q5_K, quant::quantize_row_q5_K_ref},
      {GgmlType::Q6_K, quant::dequantize_row_q6_K, quant::quantize_row_q6_K_ref},
      {GgmlType::Q8_K, quant::dequantize_row_q8_K, quant::quantize_row_q8_K_ref},
  };
  for (const Row& r : rows) {
    const TypeTraits& t = type_traits(r.type);
    EXPECT_EQ(t.to_float, r.deq) << t.name;
    EXPECT_EQ(t.from_float_ref, r.quant) << t.name;
    EXPECT_EQ(t.block_size, 256) << t.name;
  }
}

TEST(QuantKQuants, dequantize_random_blocks_bit_exact) {
  for (const auto& l : layouts()) {
    for (uint64_t seed : {11u, 12u, 13u}) check_dequant_random(l.type, 2048, seed);
  }
}

TEST(QuantKQuants, dequantize_extreme_scales_bit_exact) {
  for (const auto& l : layouts()) check_dequant_extreme_scales(l, 91);
}

TEST(QuantKQuants, quantize_q2_K_bit_exact) { check_quantize_rows(GgmlType::Q2_K); }
TEST(QuantKQuants, quantize_q3_K_bit_exact) { check_quantize_rows(GgmlType::Q3_K); }
TEST(QuantKQuants, quantize_q4_K_bit_exact) { check_quantize_rows(GgmlType::Q4_K); }
TEST(QuantKQuants, quantize_q5_K_bit_exact) { check_quantize_rows(GgmlType::Q5_K); }
TEST(QuantKQuants, quantize_q6_K_bit_exact) { check_quantize_rows(GgmlType::Q6_K); }
// Both outputs start zeroed: libggml leaves the bsums of an all-zero block
// unwritten where we write zeros.
TEST(QuantKQuants, quantize_q8_K_bit_exact) { check_quantize_rows(GgmlType::Q8_K, /*same_fill=*/true); }

TEST(QuantKQuants, q8_K_all_zero_block_gets_zero_bsums) {
  std::vector<float> row(256, 0.0f);
  std::vector<uint8_t> out(292, 0xEE);
  quant::quantize_row_q8_K_ref(row.data(), out.data(), 256);
  for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], 0) << "byte " << i;
}

TEST(QuantKQuants, flipped_quant_bit_is_detected) {
  for (const auto& l : layouts()) check_bit_flip_detected(l);
}

}  // namespace
}  // namespace strix
