// GgufValue: typed construction, exact bits, checked access, display, equality.
#include "gguf/value.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace strix {
namespace {

TEST(GgufValue, type_table_matches_the_gguf_specification) {
  EXPECT_STREQ(gguf_type_name(GgufType::UINT8), "uint8");
  EXPECT_STREQ(gguf_type_name(GgufType::FLOAT64), "float64");
  EXPECT_STREQ(gguf_type_name(static_cast<GgufType>(13)), "unknown");
  const size_t sizes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
  for (uint32_t t = 0; t < kGgufTypeCount; ++t) EXPECT_EQ(gguf_scalar_size(static_cast<GgufType>(t)), sizes[t]) << t;
  EXPECT_EQ(gguf_scalar_size(static_cast<GgufType>(99)), 0u);
  EXPECT_TRUE(gguf_type_valid(12));
  EXPECT_FALSE(gguf_type_valid(13));
}

TEST(GgufValue, signed_integers_sign_extend_and_refuse_unsigned_access_when_negative) {
  EXPECT_EQ(GgufValue::i8(-1).as_i64(), -1);
  EXPECT_EQ(GgufValue::i16(-32768).as_i64(), -32768);
  EXPECT_EQ(GgufValue::i32(std::numeric_limits<int32_t>::min()).as_i64(), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(GgufValue::i64(std::numeric_limits<int64_t>::min()).as_i64(), std::numeric_limits<int64_t>::min());
  EXPECT_THROW(GgufValue::i8(-1).as_u64(), Error);
  EXPECT_EQ(GgufValue::i32(7).as_u64(), 7u);
  EXPECT_EQ(GgufValue::i8(-2).as_f64(), -2.0);
  EXPECT_EQ(GgufValue::i16(-3).to_display(), "-3");
}

TEST(GgufValue, unsigned_integers_keep_their_full_range) {
  EXPECT_EQ(GgufValue::u8(255).as_u64(), 255u);
  EXPECT_EQ(GgufValue::u8(255).as_i64(), 255);
  EXPECT_EQ(GgufValue::u32(0xffffffffu).as_i64(), 0xffffffffll);
  EXPECT_EQ(GgufValue::u64(~0ull).as_u64(), ~0ull);
  EXPECT_THROW(GgufValue::u64(~0ull).as_i64(), Error);  // does not fit
  EXPECT_EQ(GgufValue::u64(~0ull).to_display(), "18446744073709551615");
  EXPECT_EQ(GgufValue::u16(65535).raw_bits(), 65535u);
}

TEST(GgufValue, floats_keep_their_exact_bits) {
  const float f_nan = std::bit_cast<float>(0x7fc12345u);
  const float f_snan = std::bit_cast<float>(0x7f800001u);
  EXPECT_EQ(GgufValue::f32(f_nan).raw_bits(), 0x7fc12345u);
  EXPECT_EQ(GgufValue::f32(f_snan).raw_bits(), 0x7f800001u);
  EXPECT_EQ(GgufValue::f32(-0.0f).raw_bits(), 0x80000000u);
  EXPECT_EQ(GgufValue::f64(-0.0).raw_bits(), 0x8000000000000000ull);
  const double d_nan = std::bit_cast<double>(0x7ff80000deadbeefull);
  EXPECT_EQ(GgufValue::f64(d_nan).raw_bits(), 0x7ff80000deadbeefull);
  EXPECT_EQ(GgufValue::f32(1.5f).as_f64(), 1.5);
  EXPECT_EQ(GgufValue::f32(1.5f).raw_float(), 1.5);
  EXPECT_TRUE(std::isinf(GgufValue::f64(-INFINITY).as_f64()));
  EXPECT_THROW(GgufValue::f32(1.0f).as_i64(), Error);
  EXPECT_THROW(GgufValue::f32(1.0f).as_u64(), Error);
  EXPECT_EQ(GgufValue::f32(0.1f).to_display(), "0.100000001");
}

TEST(GgufValue, bools_and_strings_refuse_other_access) {
  EXPECT_TRUE(GgufValue::boolean(true).as_bool());
  EXPECT_FALSE(GgufValue::boolean(false).as_bool());
  EXPECT_EQ(GgufValue::boolean(true).to_display(), "true");
  EXPECT_THROW(GgufValue::u8(1).as_bool(), Error);
  EXPECT_THROW(GgufValue::str("x").as_bool(), Error);
  EXPECT_THROW(GgufValue::str("12").as_i64(), Error);
  EXPECT_THROW(GgufValue::str("1.5").as_f64(), Error);
  EXPECT_THROW(GgufValue::u32(1).as_string(), Error);
  const std::string with_nul("a\0b", 3);
  EXPECT_EQ(GgufValue::str(with_nul).as_string(), with_nul);
  EXPECT_EQ(GgufValue::str(with_nul).as_string().size(), 3u);
  try {
    GgufValue::str("x").as_u64();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("string"), std::string::npos) << e.what();
  }
}

TEST(GgufValue, arrays_hold_one_element_type) {
  const GgufValue a = GgufValue::i32_array({-1, 0, 5});
  EXPECT_TRUE(a.is_array());
  EXPECT_EQ(a.elem_type(), GgufType::INT32);
  EXPECT_EQ(a.as_i64_array(), (std::vector<int64_t>{-1, 0, 5}));
  EXPECT_EQ(a.as_f64_array(), (std::vector<double>{-1.0, 0.0, 5.0}));
  EXPECT_THROW(a.as_str_array(), Error);
  EXPECT_EQ(GgufValue::str_array({"x", ""}).as_str_array(), (std::vector<std::string>{"x", ""}));
  EXPECT_EQ(GgufValue::u32_array({7}).items()[0].as_u64(), 7u);
  EXPECT_EQ(GgufValue::f32_array({0.5f}).as_f64_array()[0], 0.5);
  EXPECT_THROW(GgufValue::u32(1).as_i64_array(), Error);
  EXPECT_THROW(GgufValue::str_array({"a"}).as_i64_array(), Error);
  EXPECT_THROW(GgufValue::array(GgufType::INT32, {GgufValue::i32(1), GgufValue::u32(2)}), Error);
  EXPECT_THROW(GgufValue::array(static_cast<GgufType>(42), {}), Error);
  const GgufValue nested = GgufValue::array(GgufType::ARRAY, {a, GgufValue::str_array({"s"})});
  EXPECT_EQ(nested.items().size(), 2u);
  EXPECT_EQ(nested.items()[1].elem_type(), GgufType::STRING);
  EXPECT_EQ(GgufValue::array(GgufType::FLOAT64, {}).items().size(), 0u);
}

TEST(GgufValue, display_summarizes_long_arrays_and_escapes_strings) {
  std::vector<int32_t> v(100);
  for (int i = 0; i < 100; ++i) v[static_cast<size_t>(i)] = i;
  EXPECT_EQ(GgufValue::i32_array(v).to_display(3), "[0, 1, 2, ... 100 items]");
  EXPECT_EQ(GgufValue::i32_array(v).to_display(0), "[... 100 items]");
  EXPECT_EQ(GgufValue::i32_array({1, 2}).to_display(), "[1, 2]");
  EXPECT_EQ(GgufValue::array(GgufType::UINT8, {}).to_display(), "[]");
  EXPECT_EQ(GgufValue::str("a\"b\\c\nd\x01").to_display(), "\"a\\\"b\\\\c\\nd\\x01\"");
  EXPECT_EQ(GgufValue::str_array({"x"}).to_display(), "[\"x\"]");
  const std::string long_str(500, 'z');
  const std::string shown = GgufValue::str(long_str).to_display();
  EXPECT_LT(shown.size(), 200u);
  EXPECT_NE(shown.find("..."), std::string::npos);
}

TEST(GgufValue, equality_compares_type_and_value) {
  EXPECT_EQ(GgufValue::u32(5), GgufValue::u32(5));
  EXPECT_NE(GgufValue::u32(5), GgufValue::i32(5));
  EXPECT_NE(GgufValue::u32(5), GgufValue::u32(6));
  EXPECT_EQ(GgufValue::f32(NAN), GgufValue::f32(NAN));
  EXPECT_NE(GgufValue::f32(1.0f), GgufValue::f64(1.0));
  EXPECT_EQ(GgufValue::str("a"), GgufValue::str("a"));
  EXPECT_NE(GgufValue::str(std::string("a\0b", 3)), GgufValue::str(std::string("a\0c", 3)));
  EXPECT_EQ(GgufValue::i32_array({1, 2}), GgufValue::i32_array({1, 2}));
  EXPECT_NE(GgufValue::i32_array({1, 2}), GgufValue::i32_array({1, 3}));
  EXPECT_NE(GgufValue::i32_array({}), GgufValue::u32_array({}));
  EXPECT_EQ(GgufValue::i8(-1), GgufValue::i8(-1));
}

}  // namespace
}  // namespace strix
