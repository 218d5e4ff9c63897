// Sample contents for the writer tests: metadata covering every GGUF value type
// with its extreme values, and tensors of every ggml type Strix knows.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gguf/value.h"
#include "gguf/writer.h"
#include "gguf_writer/libggml_compare.h"
#include "quant/types.h"

namespace strix::test {

// A scalar with the exact little-endian bytes it must have on the wire, taken
// from the C value it was built from.
struct ScalarCase {
  std::string key;
  GgufValue value;
  std::vector<uint8_t> wire;
};

inline std::string embedded_nul_string() { return std::string("left\0middle\0right", 17); }
inline std::string utf8_string() {
  return "h\xc3\xa9llo w\xc3\xb6rld \xe2\x9c\x93 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\xa6\x89";
}

inline std::vector<ScalarCase> scalar_cases() {
  using L8 = std::numeric_limits<int8_t>;
  using L16 = std::numeric_limits<int16_t>;
  using L32 = std::numeric_limits<int32_t>;
  using L64 = std::numeric_limits<int64_t>;
  const float f_nan_payload = std::bit_cast<float>(0x7fc12345u);
  const float f_snan = std::bit_cast<float>(0x7f800001u);
  const double d_nan_payload = std::bit_cast<double>(0x7ff80000deadbeefull);
  std::vector<ScalarCase> c = {
      {"u8.zero", GgufValue::u8(0), bytes_of<uint8_t>(0)},
      {"u8.max", GgufValue::u8(255), bytes_of<uint8_t>(255)},
      {"i8.min", GgufValue::i8(L8::min()), bytes_of<int8_t>(L8::min())},
      {"i8.max", GgufValue::i8(L8::max()), bytes_of<int8_t>(L8::max())},
      {"u16.max", GgufValue::u16(65535), bytes_of<uint16_t>(65535)},
      {"i16.min", GgufValue::i16(L16::min()), bytes_of<int16_t>(L16::min())},
      {"i16.minus_one", GgufValue::i16(-1), bytes_of<int16_t>(-1)},
      {"u32.max", GgufValue::u32(0xffffffffu), bytes_of<uint32_t>(0xffffffffu)},
      {"u32.pattern", GgufValue::u32(0x01020304u), bytes_of<uint32_t>(0x01020304u)},
      {"i32.min", GgufValue::i32(L32::min()), bytes_of<int32_t>(L32::min())},
      {"i32.max", GgufValue::i32(L32::max()), bytes_of<int32_t>(L32::max())},
      {"u64.max", GgufValue::u64(std::numeric_limits<uint64_t>::max()),
       bytes_of<uint64_t>(std::numeric_limits<uint64_t>::max())},
      {"u64.pattern", GgufValue::u64(0x0102030405060708ull), bytes_of<uint64_t>(0x0102030405060708ull)},
      {"i64.min", GgufValue::i64(L64::min()), bytes_of<int64_t>(L64::min())},
      {"i64.max", GgufValue::i64(L64::max()), bytes_of<int64_t>(L64::max())},
      {"f32.nan_payload", GgufValue::f32(f_nan_payload), bytes_of<uint32_t>(0x7fc12345u)},
      {"f32.signaling_nan", GgufValue::f32(f_snan), bytes_of<uint32_t>(0x7f800001u)},
      {"f32.inf", GgufValue::f32(INFINITY), bytes_of<float>(INFINITY)},
      {"f32.minus_inf", GgufValue::f32(-INFINITY), bytes_of<float>(-INFINITY)},
      {"f32.minus_zero", GgufValue::f32(-0.0f), bytes_of<float>(-0.0f)},
      {"f32.denormal", GgufValue::f32(std::numeric_limits<float>::denorm_min()),
       bytes_of<float>(std::numeric_limits<float>::denorm_min())},
      {"f32.max", GgufValue::f32(std::numeric_limits<float>::max()),
       bytes_of<float>(std::numeric_limits<float>::max())},
      {"f32.pi", GgufValue::f32(3.14159265f), bytes_of<float>(3.14159265f)},
      {"f64.nan_payload", GgufValue::f64(d_nan_payload), bytes_of<uint64_t>(0x7ff80000deadbeefull)},
      {"f64.minus_inf", GgufValue::f64(-INFINITY), bytes_of<double>(-INFINITY)},
      {"f64.minus_zero", GgufValue::f64(-0.0), bytes_of<double>(-0.0)},
      {"f64.denormal", GgufValue::f64(std::numeric_limits<double>::denorm_min()),
       bytes_of<double>(std::numeric_limits<double>::denorm_min())},
      {"f64.e", GgufValue::f64(2.718281828459045), bytes_of<double>(2.718281828459045)},
      {"bool.true", GgufValue::boolean(true), bytes_of<uint8_t>(1)},
      {"bool.false", GgufValue::boolean(false), bytes_of<uint8_t>(0)},
  };
  return c;
}

inline std::vector<GgufKV> string_kvs() {
  return {
      {"general.name", GgufValue::str("writer round trip")},
      {"str.empty", GgufValue::str("")},
      {"str.utf8", GgufValue::str(utf8_string())},
      {"str.embedded_nul", GgufValue::str(embedded_nul_string())},
      {"str.long", GgufValue::str(std::string(100000, 'x') + "end")},
      {"\xd0\xba\xd0\xbb\xd1\x8e\xd1\x87.utf8_key", GgufValue::str("key in Cyrillic")},
  };
}

// Arrays of every scalar type (with extremes), of strings, and empty ones.
inline std::vector<GgufKV> array_kvs() {
  std::vector<GgufKV> kvs;
  auto arr = [](GgufType t, std::vector<GgufValue> v) { return GgufValue::array(t, std::move(v)); };
  kvs.push_back({"arr.u8", arr(GgufType::UINT8, {GgufValue::u8(0), GgufValue::u8(1), GgufValue::u8(255)})});
  kvs.push_back({"arr.i8", arr(GgufType::INT8, {GgufValue::i8(-128), GgufValue::i8(0), GgufValue::i8(127)})});
  kvs.push_back({"arr.u16", arr(GgufType::UINT16, {GgufValue::u16(0), GgufValue::u16(65535)})});
  kvs.push_back({"arr.i16", arr(GgufType::INT16, {GgufValue::i16(-32768), GgufValue::i16(32767)})});
  kvs.push_back({"arr.u32", GgufValue::u32_array({0, 1, 0xffffffffu, 0xdeadbeefu})});
  kvs.push_back({"arr.i32", GgufValue::i32_array(
                                {std::numeric_limits<int32_t>::min(), -1, 0, 1, std::numeric_limits<int32_t>::max()})});
  kvs.push_back({"arr.u64", arr(GgufType::UINT64, {GgufValue::u64(0), GgufValue::u64(~0ull)})});
  kvs.push_back({"arr.i64", arr(GgufType::INT64, {GgufValue::i64(std::numeric_limits<int64_t>::min()),
                                                  GgufValue::i64(std::numeric_limits<int64_t>::max())})});
  kvs.push_back(
      {"arr.f32", GgufValue::f32_array({0.0f, -0.0f, 1.5f, INFINITY, -INFINITY, std::bit_cast<float>(0x7fc00001u),
                                        std::numeric_limits<float>::denorm_min()})});
  kvs.push_back({"arr.f64", arr(GgufType::FLOAT64, {GgufValue::f64(1e300), GgufValue::f64(-1e-300),
                                                    GgufValue::f64(std::bit_cast<double>(0x7ff8000000000123ull))})});
  kvs.push_back({"arr.bool",
                 arr(GgufType::BOOL, {GgufValue::boolean(true), GgufValue::boolean(false), GgufValue::boolean(true)})});
  kvs.push_back({"arr.str", GgufValue::str_array({"", "a", utf8_string(), "tokens \xe2\x96\x81with", "<s>"})});
  std::vector<int32_t> big(10000);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<int32_t>(i * 2654435761u);
  kvs.push_back({"arr.i32.big", GgufValue::i32_array(big)});
  for (uint32_t t = 0; t < kGgufTypeCount; ++t) {
    if (t == static_cast<uint32_t>(GgufType::ARRAY)) continue;
    kvs.push_back({std::string("arr.empty.") + gguf_type_name(static_cast<GgufType>(t)),
                   GgufValue::array(static_cast<GgufType>(t), {})});
  }
  return kvs;
}

// All metadata: scalars, strings, arrays, in that order.
inline std::vector<GgufKV> all_kvs() {
  std::vector<GgufKV> kvs;
  for (auto& c : scalar_cases()) kvs.push_back({c.key, c.value});
  for (auto& kv : string_kvs()) kvs.push_back(kv);
  for (auto& kv : array_kvs()) kvs.push_back(kv);
  return kvs;
}

// Every ggml type Strix knows, ranks 1..4 in turn, random shapes whose last
// dim is > 1 (libggml drops trailing 1s when it re-serializes; tested apart).
inline void add_tensors_of_every_type(GgufWriter& w, ExpectedFile& exp, std::mt19937_64& rng, int copies = 1) {
  int rank = 0;
  for (int copy = 0; copy < copies; ++copy) {
    for (uint32_t id = 0; id < kGgmlTypeCount; ++id) {
      const TypeTraits* tt = type_traits(id);
      if (tt == nullptr) continue;
      std::vector<int64_t> ne = {tt->block_size * static_cast<int64_t>(1 + rng() % 3)};
      const int dims = 1 + (rank++ % 4);
      for (int d = 1; d < dims; ++d) ne.push_back(static_cast<int64_t>(2 + rng() % 3));
      add_random_tensor(w, exp, std::string("blk.") + std::to_string(copy) + "." + tt->name + ".weight", id, ne, rng);
    }
  }
}

// Writer + expectation holding all_kvs() and tensors of every type.
inline ExpectedFile build_sample(GgufWriter& w, uint32_t alignment, uint64_t seed) {
  ExpectedFile exp;
  std::mt19937_64 rng(seed);
  exp.kvs.push_back({"general.architecture", GgufValue::str("llama")});
  for (const auto& kv : all_kvs()) exp.kvs.push_back(kv);
  for (const auto& kv : exp.kvs) w.set(kv.key, kv.value);
  w.set_alignment(alignment);
  // set_alignment appends the key (as u32) only when it is not the default.
  if (alignment != 32) exp.kvs.push_back({"general.alignment", GgufValue::u32(alignment)});
  exp.alignment = alignment;
  add_tensors_of_every_type(w, exp, rng);
  return exp;
}

}  // namespace strix::test
