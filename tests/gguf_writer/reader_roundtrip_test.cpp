// Files written by GgufWriter read back by our own reader (GgufFile), and nested
// arrays (arrays of arrays), which the pinned libggml refuses to load: the file
// is checked against libggml for the refusal and against our reader for content.
#include "core/source_dir.h"
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <random>

#include "gguf/reader.h"
#include "gguf_writer/libggml_compare.h"
#include "gguf_writer/sample_files.h"

namespace strix::test {
namespace {

// Exact equality: same types, same integer bits, same float bits (NaN payloads
// and -0.0 included), same string bytes, same array items.
::testing::AssertionResult same_value(const GgufValue& a, const GgufValue& b, const std::string& where) {
  if (a.type() != b.type()) return ::testing::AssertionFailure() << where << ": type differs";
  if (a.is_string()) {
    if (a.as_string() != b.as_string()) return ::testing::AssertionFailure() << where << ": string differs";
    return ::testing::AssertionSuccess();
  }
  if (a.is_array()) {
    if (a.elem_type() != b.elem_type()) return ::testing::AssertionFailure() << where << ": element type differs";
    if (a.items().size() != b.items().size()) return ::testing::AssertionFailure() << where << ": length differs";
    for (size_t i = 0; i < a.items().size(); ++i) {
      auto r = same_value(a.items()[i], b.items()[i], where + "[" + std::to_string(i) + "]");
      if (!r) return r;
    }
    return ::testing::AssertionSuccess();
  }
  if (scalar_bytes(a) != scalar_bytes(b)) return ::testing::AssertionFailure() << where << ": value bytes differ";
  return ::testing::AssertionSuccess();
}

void expect_reader_matches(const GgufFile& f, const ExpectedFile& exp) {
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), exp.alignment);
  ASSERT_EQ(f.kvs().size(), exp.kvs.size());
  for (size_t i = 0; i < exp.kvs.size(); ++i) {
    EXPECT_EQ(f.kvs()[i].key, exp.kvs[i].key);
    EXPECT_TRUE(same_value(f.kvs()[i].value, exp.kvs[i].value, exp.kvs[i].key));
  }
  ASSERT_EQ(f.tensors().size(), exp.tensors.size());
  uint64_t offset = 0;
  for (size_t i = 0; i < exp.tensors.size(); ++i) {
    const GgufTensor& t = f.tensors()[i];
    const ExpectedTensor& e = exp.tensors[i];
    EXPECT_EQ(t.name, e.name);
    EXPECT_EQ(t.type, e.type) << e.name;
    EXPECT_EQ(t.n_dims, static_cast<int>(e.ne.size())) << e.name;
    for (size_t d = 0; d < 4; ++d) EXPECT_EQ(t.ne[d], d < e.ne.size() ? e.ne[d] : 1) << e.name;
    EXPECT_EQ(t.offset, offset) << e.name;
    ASSERT_EQ(t.nbytes, e.data.size()) << e.name;
    ASSERT_NE(t.data, nullptr);
    EXPECT_EQ(std::memcmp(t.data, e.data.data(), e.data.size()), 0) << e.name;
    offset = pad_up(offset + e.data.size(), exp.alignment);
  }
}

TEST(GgufWriterOwnReader, sample_files_read_back_identically) {
  TempDir dir;
  for (uint32_t alignment : {32u, 1u, 64u, 4096u}) {
    SCOPED_TRACE(alignment);
    GgufWriter w;
    const ExpectedFile exp = build_sample(w, alignment, 99);
    const std::string path = dir.file("sample.gguf");
    w.write(path);
    expect_reader_matches(*GgufFile::open(path), exp);
    const std::vector<uint8_t> image = w.to_bytes();
    expect_reader_matches(*GgufFile::parse(image.data(), image.size()), exp);
  }
}

std::vector<GgufKV> nested_kvs() {
  using V = GgufValue;
  const V ints = V::u32_array({1, 2, 3});
  const V strs = V::str_array({"a", "", utf8_string()});
  const V floats = V::f32_array({-0.0f, std::bit_cast<float>(0x7fc0beefu)});
  return {
      {"nested.mixed", V::array(GgufType::ARRAY, {ints, strs, floats, V::array(GgufType::INT64, {})})},
      {"nested.deep",
       V::array(GgufType::ARRAY, {V::array(GgufType::ARRAY, {ints, ints}), V::array(GgufType::ARRAY, {})})},
      {"nested.empty", V::array(GgufType::ARRAY, {})},
  };
}

TEST(GgufWriterNestedArrays, pinned_libggml_refuses_arrays_of_arrays) {
  // Finding: gguf_init_from_file rejects an array whose element type is ARRAY
  // ("key '...' has invalid GGUF type 9"), even an empty one.
  for (const auto& kv : nested_kvs()) {
    GgufWriter w;
    w.set_u32("before", 1);
    w.set(kv.key, kv.value);
    const std::vector<uint8_t> image = w.to_bytes();
    EXPECT_FALSE(libggml_open_buffer(image)) << kv.key;
  }
  // Control: the same file without the nested array opens.
  GgufWriter w;
  w.set_u32("before", 1);
  EXPECT_TRUE(libggml_open_buffer(w.to_bytes()));
}

TEST(GgufWriterNestedArrays, our_reader_reads_them_back_identically) {
  TempDir dir;
  GgufWriter w;
  ExpectedFile exp;
  std::mt19937_64 rng(4);
  for (const auto& kv : nested_kvs()) {
    w.set(kv.key, kv.value);
    exp.kvs.push_back(kv);
  }
  w.set_str("after", "tail");
  exp.kvs.push_back({"after", GgufValue::str("tail")});
  add_random_tensor(w, exp, "t", static_cast<uint32_t>(GgmlType::Q5_K), {256, 2}, rng);
  const std::string path = dir.file("nested.gguf");
  w.write(path);
  expect_reader_matches(*GgufFile::open(path), exp);
}

// A real model written by llama.cpp's converter, read by our reader and written
// back by our writer (kvs in order, tensors borrowed from the map), comes out
// byte for byte identical: same metadata encoding, padding and tensor layout.
TEST(GgufWriterOwnReader, rewriting_a_real_model_reproduces_it_byte_for_byte) {
  const std::string model = std::string(STRIX_SOURCE_DIR) + "/../shared/data/stories260K.gguf";
  if (!std::filesystem::exists(model)) GTEST_SKIP() << model << " is absent";
  const auto f = GgufFile::open(model);
  GgufWriter w;
  for (const auto& kv : f->kvs()) w.set(kv.key, kv.value);
  for (const auto& t : f->tensors()) {
    w.add_tensor_ref(t.name, t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims), t.data, t.nbytes);
  }
  const std::vector<uint8_t> original = read_file_bytes(model);
  const std::vector<uint8_t> rewritten = w.to_bytes();
  ASSERT_EQ(rewritten.size(), original.size());
  const auto mismatch = std::mismatch(rewritten.begin(), rewritten.end(), original.begin());
  EXPECT_EQ(mismatch.first, rewritten.end()) << "first difference at byte " << (mismatch.first - rewritten.begin());
  // Control: the comparison sees a one-value change.
  w.set_u32("llama.context_length", f->get_u64("llama.context_length") + 1);
  EXPECT_FALSE(w.to_bytes() == original);
}

// Control for same_value / expect_reader_matches: they see a wrong value.
TEST(GgufWriterOwnReader, comparison_detects_a_wrong_value) {
  EXPECT_FALSE(same_value(GgufValue::f32(-0.0f), GgufValue::f32(0.0f), "zero sign"));
  EXPECT_FALSE(same_value(GgufValue::f32(std::bit_cast<float>(0x7fc00001u)),
                          GgufValue::f32(std::bit_cast<float>(0x7fc00002u)), "nan payload"));
  EXPECT_FALSE(same_value(nested_kvs()[0].value, nested_kvs()[1].value, "nested"));
  EXPECT_FALSE(same_value(GgufValue::str(std::string("a\0b", 3)), GgufValue::str(std::string("a\0c", 3)), "nul"));
  EXPECT_TRUE(same_value(nested_kvs()[0].value, nested_kvs()[0].value, "same"));
}

}  // namespace
}  // namespace strix::test
