// Legacy block formats (Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q8_1) against libggml-base:
// dequantize_row_* and quantize_row_*_ref, bit for bit.
#include <gtest/gtest.h>

#include <cmath>

#include "quant/quants.h"
#include "quant/types.h"
#include "quant_test_util.h"
#include "ref/reference.h"

namespace strix {
namespace {

using namespace quant_test;

// Q8_1 is left out where libggml has no dequantize for it (see the Q8_1 tests).
const std::vector<BlockLayout>& layouts() {
  static const std::vector<BlockLayout> v = {
      {GgmlType::Q4_0, {{0, 2}}, 2},         {GgmlType::Q4_1, {{0, 2}, {2, 2}}, 4}, {GgmlType::Q5_0, {{0, 2}}, 6},
      {GgmlType::Q5_1, {{0, 2}, {2, 2}}, 8}, {GgmlType::Q8_0, {{0, 2}}, 2},
  };
  return v;
}

TEST(QuantLegacy, traits_point_at_our_functions) {
  struct Row {
    GgmlType type;
    DequantizeRowFn deq;
    QuantizeRowFn quant;
  };
  const Row rows[] = {
      {GgmlType::Q4_0, quant::dequantize_row_q4_0, quant::quantize_row_q4_0_ref},
      {GgmlType::Q4_1, quant::dequantize_row_q4_1, quant::quantize_row_q4_1_ref},
      {GgmlType::Q5_0, quant::dequantize_row_q5_0, quant::quantize_row_q5_0_ref},
      {GgmlType::Q5_1, quant::dequantize_row_q5_1, quant::quantize_row_q5_1_ref},
      {GgmlType::Q8_0, quant::dequantize_row_q8_0, quant::quantize_row_q8_0_ref},
      {GgmlType::Q8_1, quant::dequantize_row_q8_1, quant::quantize_row_q8_1_ref},
  };
  for (const Row& r : rows) {
    const TypeTraits& t = type_traits(r.type);
    EXPECT_EQ(t.to_float, r.deq) << t.name;
    EXPECT_EQ(t.from_float_ref, r.quant) << t.name;
    EXPECT_EQ(t.block_size, 32) << t.name;
    EXPECT_TRUE(t.is_quantized) << t.name;
  }
}

TEST(QuantLegacy, libggml_exports_every_function_we_compare_against) {
  const auto& g = ref::LibGgml::get();
  for (const auto& l : layouts()) {
    EXPECT_NE(g.dequantize_row(static_cast<uint32_t>(l.type)), nullptr) << type_traits(l.type).name;
    EXPECT_NE(g.quantize_row_ref(static_cast<uint32_t>(l.type)), nullptr) << type_traits(l.type).name;
  }
  EXPECT_EQ(g.dequantize_row(static_cast<uint32_t>(GgmlType::Q8_1)), nullptr)
      << "libggml now exports dequantize_row_q8_1";
  EXPECT_NE(g.quantize_row_ref(static_cast<uint32_t>(GgmlType::Q8_1)), nullptr);
}

TEST(QuantLegacy, dequantize_random_blocks_bit_exact) {
  for (const auto& l : layouts()) {
    for (uint64_t seed : {1u, 2u, 3u}) check_dequant_random(l.type, 4096, seed);
  }
}

TEST(QuantLegacy, dequantize_extreme_scales_bit_exact) {
  for (const auto& l : layouts()) check_dequant_extreme_scales(l, 77);
}

TEST(QuantLegacy, quantize_q4_0_bit_exact) { check_quantize_rows(GgmlType::Q4_0); }
TEST(QuantLegacy, quantize_q4_1_bit_exact) { check_quantize_rows(GgmlType::Q4_1); }
TEST(QuantLegacy, quantize_q5_0_bit_exact) { check_quantize_rows(GgmlType::Q5_0); }
TEST(QuantLegacy, quantize_q5_1_bit_exact) { check_quantize_rows(GgmlType::Q5_1); }
TEST(QuantLegacy, quantize_q8_0_bit_exact) { check_quantize_rows(GgmlType::Q8_0); }
TEST(QuantLegacy, quantize_q8_1_bit_exact) { check_quantize_rows(GgmlType::Q8_1); }

TEST(QuantLegacy, flipped_quant_bit_is_detected) {
  for (const auto& l : layouts()) check_bit_flip_detected(l);
}

TEST(QuantLegacy, mismatching_quantized_byte_is_reported_with_block_and_byte) {
  // The comparator itself: one corrupted byte is found and located.
  const auto row = make_row(Dist::kNormal, 1.0f, 96, 5);
  std::vector<uint8_t> a(row_size(GgmlType::Q4_0, 96)), b;
  ref::LibGgml::get().quantize_row_ref(static_cast<uint32_t>(GgmlType::Q4_0))(row.data(), a.data(), 96);
  b = a;
  b[18 + 7] ^= 0x10;
  EXPECT_EQ(compare_bytes(b.data(), a.data(), a.size(), 18).rfind("block 1 byte 7:", 0), 0u);
}

// Q8_1: libggml exports no dequantize_row_q8_1. The expected values are derived
// from the layout quantize_row_q8_1_ref writes: x[j] = half(d) * qs[j], with
// half(d) converted by libggml's own ggml_fp16_to_fp32_row.
std::vector<float> q8_1_expected(const std::vector<uint8_t>& blocks) {
  const auto& g = ref::LibGgml::get();
  std::vector<float> out;
  for (size_t off = 0; off + 36 <= blocks.size(); off += 36) {
    const uint16_t dh = static_cast<uint16_t>(blocks[off] | (blocks[off + 1] << 8));
    float d;
    g.fp16_to_fp32_row(&dh, &d, 1);
    for (int j = 0; j < 32; ++j) out.push_back(d * static_cast<float>(static_cast<int8_t>(blocks[off + 4 + j])));
  }
  return out;
}

TEST(QuantLegacy, dequantize_q8_1_matches_layout_of_libggml_quantizer) {
  const auto& g = ref::LibGgml::get();
  const auto q8_1 = g.quantize_row_ref(static_cast<uint32_t>(GgmlType::Q8_1));
  // Blocks written by libggml's quantizer: the derived dequantize must also
  // reproduce the input to within half a step, and s must be half(d * sum(q)).
  const int64_t k = 32 * 64;
  const auto row = make_row(Dist::kNormal, 2.0f, static_cast<size_t>(k), 99);
  std::vector<uint8_t> q(row_size(GgmlType::Q8_1, k));
  q8_1(row.data(), q.data(), k);
  const auto expected = q8_1_expected(q);
  std::vector<float> ours(static_cast<size_t>(k));
  quant::dequantize_row_q8_1(q.data(), ours.data(), k);
  EXPECT_EQ(compare_floats(ours.data(), expected.data(), ours.size(), 32), "");
  for (int64_t b = 0; b < k / 32; ++b) {
    const uint8_t* blk = q.data() + 36 * b;
    const uint16_t dh = static_cast<uint16_t>(blk[0] | (blk[1] << 8));
    const uint16_t sh = static_cast<uint16_t>(blk[2] | (blk[3] << 8));
    float d, s;
    g.fp16_to_fp32_row(&dh, &d, 1);
    g.fp16_to_fp32_row(&sh, &s, 1);
    int sum = 0;
    for (int j = 0; j < 32; ++j) {
      sum += static_cast<int8_t>(blk[4 + j]);
      EXPECT_LE(std::fabs(ours[32 * b + j] - row[32 * b + j]), 0.5f * d + 127.0f * d * 0x1p-11f)
          << "block " << b << " element " << j;
    }
    EXPECT_NEAR(s, d * static_cast<float>(sum), std::fabs(d * static_cast<float>(sum)) * 1e-3f + 1e-6f);
  }
  // Random bytes, including inf/NaN/subnormal scales.
  const auto blocks = random_bytes(36 * 4096, 3);
  ours.assign(32 * 4096, 0.0f);
  quant::dequantize_row_q8_1(blocks.data(), ours.data(), 32 * 4096);
  const auto exp2 = q8_1_expected(blocks);
  EXPECT_EQ(compare_floats(ours.data(), exp2.data(), ours.size(), 32), "");
  // Negative control for the derived comparison: one flipped quant bit in a
  // block libggml quantized (non-zero scale).
  auto bad = q;
  bad[36 * 5 + 4 + 3] ^= 0x01;
  ours.assign(static_cast<size_t>(k), 0.0f);
  quant::dequantize_row_q8_1(bad.data(), ours.data(), k);
  EXPECT_NE(compare_floats(ours.data(), expected.data(), ours.size(), 32), "");
}

}  // namespace
}  // namespace strix
