// Files written by GgufWriter, read back by libggml's gguf_init_from_file (the
// reference): every key, type, value byte, tensor, offset and data byte must be
// what the test put in.
#include <gtest/gtest.h>

#include <random>

#include "gguf_writer/libggml_compare.h"
#include "gguf_writer/sample_files.h"

namespace strix::test {
namespace {

TEST(GgufWriterRoundTrip, every_scalar_type_with_extremes_reads_back_identically) {
  TempDir dir;
  GgufWriter w;
  ExpectedFile exp;
  for (const auto& c : scalar_cases()) {
    // The comparator derives wire bytes from the value; they must be the C value's.
    ASSERT_EQ(scalar_bytes(c.value), c.wire) << c.key;
    w.set(c.key, c.value);
    exp.kvs.push_back({c.key, c.value});
  }
  for (const auto& kv : string_kvs()) {
    w.set(kv.key, kv.value);
    exp.kvs.push_back(kv);
  }
  const std::string path = dir.file("scalars.gguf");
  w.write(path);
  EXPECT_EQ(join(compare_with_libggml(path, exp)), "");

  // Spot-check through libggml's typed getters too.
  const auto& g = ref::LibGgml::get();
  GgufCtx ctx = libggml_open(path);
  ASSERT_TRUE(ctx);
  auto val = [&](const char* key) { return g.gguf_get_val_data(ctx.get(), g.gguf_find_key(ctx.get(), key)); };
  EXPECT_EQ(*static_cast<const int64_t*>(val("i64.min")), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(*static_cast<const uint64_t*>(val("u64.max")), std::numeric_limits<uint64_t>::max());
  EXPECT_TRUE(std::isnan(*static_cast<const float*>(val("f32.nan_payload"))));
  EXPECT_EQ(std::string(g.gguf_get_val_str(ctx.get(), g.gguf_find_key(ctx.get(), "str.utf8"))), utf8_string());
  EXPECT_STREQ(g.gguf_get_val_str(ctx.get(), g.gguf_find_key(ctx.get(), "str.empty")), "");
}

TEST(GgufWriterRoundTrip, arrays_of_every_scalar_type_and_empty_arrays_read_back_identically) {
  TempDir dir;
  GgufWriter w;
  ExpectedFile exp;
  for (const auto& kv : array_kvs()) {
    w.set(kv.key, kv.value);
    exp.kvs.push_back(kv);
  }
  const std::string path = dir.file("arrays.gguf");
  w.write(path);
  EXPECT_EQ(join(compare_with_libggml(path, exp)), "");

  const auto& g = ref::LibGgml::get();
  GgufCtx ctx = libggml_open(path);
  ASSERT_TRUE(ctx);
  const int64_t k = g.gguf_find_key(ctx.get(), "arr.empty.string");
  ASSERT_GE(k, 0);
  EXPECT_EQ(g.gguf_get_arr_type(ctx.get(), k), static_cast<int>(GgufType::STRING));
  EXPECT_EQ(g.gguf_get_arr_n(ctx.get(), k), 0u);
}

class GgufWriterAlignment : public ::testing::TestWithParam<uint32_t> {};

TEST_P(GgufWriterAlignment, metadata_and_tensors_of_every_ggml_type_read_back_identically) {
  TempDir dir;
  GgufWriter w;
  const ExpectedFile exp = build_sample(w, GetParam(), 1000 + GetParam());
  ASSERT_GE(exp.tensors.size(), 35u);
  const std::string path = dir.file("sample.gguf");
  w.write(path);
  EXPECT_EQ(join(compare_with_libggml(path, exp)), "");
  // to_bytes() is the same image, and libggml reads it from memory as well.
  const std::vector<uint8_t> image = w.to_bytes();
  EXPECT_TRUE(image == read_file_bytes(path));
  GgufCtx ctx = libggml_open_buffer(image);
  EXPECT_EQ(join(compare_ctx(ctx.get(), image, exp)), "");
}

INSTANTIATE_TEST_SUITE_P(Alignments, GgufWriterAlignment, ::testing::Values(32u, 1u, 8u, 64u, 128u, 4096u));

TEST(GgufWriterRoundTrip, many_tensors_with_shapes_of_every_rank) {
  TempDir dir;
  GgufWriter w;
  ExpectedFile exp;
  std::mt19937_64 rng(7);
  w.set_u32("general.quantization_version", 2);
  exp.kvs.push_back({"general.quantization_version", GgufValue::u32(2)});
  add_tensors_of_every_type(w, exp, rng, /*copies=*/8);
  EXPECT_EQ(w.n_tensors(), exp.tensors.size());
  const std::string path = dir.file("many.gguf");
  w.write(path);
  EXPECT_EQ(join(compare_with_libggml(path, exp)), "");
}

TEST(GgufWriterRoundTrip, trailing_unit_dims_keep_their_shape) {
  TempDir dir;
  GgufWriter w;
  ExpectedFile exp;
  std::mt19937_64 rng(3);
  add_random_tensor(w, exp, "a", static_cast<uint32_t>(GgmlType::F32), {1}, rng);
  add_random_tensor(w, exp, "b", static_cast<uint32_t>(GgmlType::Q8_0), {64, 1}, rng);
  add_random_tensor(w, exp, "c", static_cast<uint32_t>(GgmlType::Q6_K), {256, 3, 1, 1}, rng);
  add_random_tensor(w, exp, "d", static_cast<uint32_t>(GgmlType::F16), {1, 1, 1, 1}, rng);
  add_random_tensor(w, exp, "e", static_cast<uint32_t>(GgmlType::BF16), {5, 1, 7}, rng);
  const std::string path = dir.file("unit_dims.gguf");
  w.write(path);
  EXPECT_EQ(join(compare_with_libggml(path, exp)), "");
}

TEST(GgufWriterRoundTrip, set_on_an_existing_key_replaces_it_in_place) {
  TempDir dir;
  GgufWriter w;
  w.set_u32("a", 1);
  w.set_str("b", "first");
  w.set_f32("c", 2.5f);
  w.set("b", GgufValue::i64(-5));  // another type, same position
  w.set_u32("a", 9);
  ExpectedFile exp;
  exp.kvs = {{"a", GgufValue::u32(9)}, {"b", GgufValue::i64(-5)}, {"c", GgufValue::f32(2.5f)}};
  const std::string path = dir.file("replace.gguf");
  w.write(path);
  EXPECT_EQ(join(compare_with_libggml(path, exp)), "");

  w.remove("b");
  w.remove("no.such.key");
  exp.kvs.erase(exp.kvs.begin() + 1);
  w.write(path);  // over the existing file
  EXPECT_EQ(join(compare_with_libggml(path, exp)), "");
}

TEST(GgufWriterRoundTrip, borrowed_and_produced_tensors_are_written_like_copied_ones) {
  TempDir dir;
  GgufWriter w;
  ExpectedFile exp;
  exp.alignment = 64;
  w.set_alignment(64);
  exp.kvs.push_back({"general.alignment", GgufValue::u32(64)});
  std::mt19937_64 rng(11);
  add_random_tensor(w, exp, "copied", static_cast<uint32_t>(GgmlType::Q4_K), {512, 3}, rng);

  ExpectedTensor borrowed{"borrowed", static_cast<uint32_t>(GgmlType::IQ4_XS), {256, 5}, {}};
  borrowed.data.resize(libggml_nbytes(borrowed.type, borrowed.ne));
  for (auto& b : borrowed.data) b = static_cast<uint8_t>(rng());
  w.add_tensor_ref(borrowed.name, borrowed.type, borrowed.ne, borrowed.data.data(), borrowed.data.size());
  exp.tensors.push_back(borrowed);

  ExpectedTensor produced{"produced", static_cast<uint32_t>(GgmlType::F32), {33, 2, 2}, {}};
  produced.data.resize(libggml_nbytes(produced.type, produced.ne));
  for (size_t i = 0; i < produced.data.size(); ++i) produced.data[i] = static_cast<uint8_t>(i * 7 + 1);
  int calls = 0;
  w.add_tensor_fill(produced.name, produced.type, produced.ne, [&](uint8_t* dst, size_t n) {
    ++calls;
    ASSERT_EQ(n, produced.data.size());
    std::memcpy(dst, produced.data.data(), n);
  });
  exp.tensors.push_back(produced);

  const std::string path = dir.file("sources.gguf");
  w.write(path);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(join(compare_with_libggml(path, exp)), "");
  EXPECT_TRUE(w.to_bytes() == read_file_bytes(path));
  EXPECT_EQ(calls, 2);
}

TEST(GgufWriterRoundTrip, files_without_tensors_or_without_anything_open_in_libggml) {
  TempDir dir;
  {
    GgufWriter w;
    const std::string path = dir.file("empty.gguf");
    w.write(path);
    EXPECT_EQ(join(compare_with_libggml(path, ExpectedFile{})), "");
    EXPECT_EQ(read_file_bytes(path).size(), 32u);  // 24-byte header padded to 32
  }
  {
    GgufWriter w;
    w.set_str("general.architecture", "llama");
    w.set_alignment(128);
    ExpectedFile exp;
    exp.alignment = 128;
    exp.kvs = {{"general.architecture", GgufValue::str("llama")}, {"general.alignment", GgufValue::u32(128)}};
    const std::string path = dir.file("kv_only.gguf");
    w.write(path);
    EXPECT_EQ(join(compare_with_libggml(path, exp)), "");
  }
}

TEST(GgufWriterRoundTrip, alignment_key_is_a_u32_only_when_not_the_default) {
  GgufWriter w;
  w.set_alignment(32);
  EXPECT_TRUE(w.kvs().empty());
  w.set_alignment(256);
  ASSERT_EQ(w.kvs().size(), 1u);
  EXPECT_EQ(w.kvs()[0].key, "general.alignment");
  EXPECT_EQ(w.kvs()[0].value.type(), GgufType::UINT32);
  EXPECT_EQ(w.alignment(), 256u);
  w.set_alignment(32);
  EXPECT_TRUE(w.kvs().empty());
  EXPECT_EQ(w.alignment(), 32u);
  // Setting the key directly drives the alignment too.
  w.set_u32("general.alignment", 16);
  EXPECT_EQ(w.alignment(), 16u);
  w.remove("general.alignment");
  EXPECT_EQ(w.alignment(), 32u);
}

}  // namespace
}  // namespace strix::test
