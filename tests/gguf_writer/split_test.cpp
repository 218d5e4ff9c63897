// write_split: a split set as llama.cpp's gguf-split writes it. Each part must
// open in libggml with the split.* keys of the types llama.cpp reads (split.no
// u16, split.count u16, split.tensors.count i32), the first part carrying all
// metadata and later parts only the split keys.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "gguf/reader.h"
#include "gguf_writer/libggml_compare.h"
#include "gguf_writer/sample_files.h"

namespace strix::test {
namespace {

// Expected contents of each part, built from the sample's expectation: the
// keys gguf-split sets, in the order its gguf_set_val_* calls leave them.
std::vector<ExpectedFile> expected_parts(const ExpectedFile& whole, size_t max_tensors) {
  const size_t n = whole.tensors.size();
  const size_t n_split = std::max<size_t>(1, (n + max_tensors - 1) / max_tensors);
  std::vector<ExpectedFile> parts(n_split);
  for (size_t i = 0; i < n_split; ++i) {
    ExpectedFile& p = parts[i];
    p.alignment = whole.alignment;
    if (i == 0) {
      p.kvs = whole.kvs;
    } else if (whole.alignment != 32) {
      p.kvs.push_back({"general.alignment", GgufValue::u32(whole.alignment)});
    }
    p.kvs.push_back({"split.no", GgufValue::u16(static_cast<uint16_t>(i))});
    p.kvs.push_back({"split.tensors.count", GgufValue::i32(static_cast<int32_t>(n))});
    p.kvs.push_back({"split.count", GgufValue::u16(static_cast<uint16_t>(n_split))});
    for (size_t j = i * max_tensors; j < std::min(n, (i + 1) * max_tensors); ++j) p.tensors.push_back(whole.tensors[j]);
  }
  return parts;
}

void check_split_keys(const std::string& path, uint16_t no, uint16_t count, int32_t n_tensors) {
  const auto& g = ref::LibGgml::get();
  GgufCtx ctx = libggml_open(path);
  ASSERT_TRUE(ctx) << path;
  const int64_t k_no = g.gguf_find_key(ctx.get(), "split.no");
  const int64_t k_count = g.gguf_find_key(ctx.get(), "split.count");
  const int64_t k_tensors = g.gguf_find_key(ctx.get(), "split.tensors.count");
  ASSERT_GE(k_no, 0);
  ASSERT_GE(k_count, 0);
  ASSERT_GE(k_tensors, 0);
  ASSERT_EQ(g.gguf_get_kv_type(ctx.get(), k_no), static_cast<int>(GgufType::UINT16));
  ASSERT_EQ(g.gguf_get_kv_type(ctx.get(), k_count), static_cast<int>(GgufType::UINT16));
  ASSERT_EQ(g.gguf_get_kv_type(ctx.get(), k_tensors), static_cast<int>(GgufType::INT32));
  EXPECT_EQ(*static_cast<const uint16_t*>(g.gguf_get_val_data(ctx.get(), k_no)), no);
  EXPECT_EQ(*static_cast<const uint16_t*>(g.gguf_get_val_data(ctx.get(), k_count)), count);
  EXPECT_EQ(*static_cast<const int32_t*>(g.gguf_get_val_data(ctx.get(), k_tensors)), n_tensors);
}

class GgufWriterSplit : public ::testing::TestWithParam<uint32_t> {};

TEST_P(GgufWriterSplit, every_part_opens_in_libggml_with_the_split_keys) {
  TempDir dir;
  GgufWriter w;
  const ExpectedFile whole = build_sample(w, GetParam(), 77);
  const size_t n = whole.tensors.size();  // 35
  const size_t max_tensors = 8;
  const std::string prefix = dir.file("model");
  const std::vector<std::string> paths = w.write_split(prefix, max_tensors);

  const size_t n_split = (n + max_tensors - 1) / max_tensors;
  ASSERT_EQ(paths.size(), n_split);
  const auto parts = expected_parts(whole, max_tensors);
  for (size_t i = 0; i < n_split; ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "-%05zu-of-%05zu.gguf", i + 1, n_split);
    EXPECT_EQ(paths[i], prefix + name);
    EXPECT_EQ(join(compare_with_libggml(paths[i], parts[i])), "") << paths[i];
    check_split_keys(paths[i], static_cast<uint16_t>(i), static_cast<uint16_t>(n_split), static_cast<int32_t>(n));
  }
  // Later parts hold only the split keys (and the alignment when not 32).
  GgufCtx last = libggml_open(paths.back());
  ASSERT_TRUE(last);
  EXPECT_EQ(ref::LibGgml::get().gguf_get_n_kv(last.get()), GetParam() == 32 ? 3 : 4);

  // Our reader opens the first part and merges the set.
  const auto file = GgufFile::open(paths[0]);
  ASSERT_EQ(file->splits().size(), n_split);
  ASSERT_EQ(file->tensors().size(), n);
  for (size_t j = 0; j < n; ++j) {
    const GgufTensor& t = file->tensors()[j];
    EXPECT_EQ(t.name, whole.tensors[j].name);
    EXPECT_EQ(t.split, static_cast<int>(j / max_tensors));
    ASSERT_EQ(t.nbytes, whole.tensors[j].data.size());
    EXPECT_EQ(std::memcmp(t.data, whole.tensors[j].data.data(), t.nbytes), 0) << t.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Alignments, GgufWriterSplit, ::testing::Values(32u, 64u));

TEST(GgufWriterSplitEdges, fewer_tensors_than_the_limit_make_one_part) {
  TempDir dir;
  GgufWriter w;
  w.set_str("general.architecture", "llama");
  std::mt19937_64 rng(1);
  ExpectedFile whole;
  whole.kvs = {{"general.architecture", GgufValue::str("llama")}};
  add_random_tensor(w, whole, "a", static_cast<uint32_t>(GgmlType::Q4_0), {64, 2}, rng);
  const auto paths = w.write_split(dir.file("one"), 128);
  ASSERT_EQ(paths.size(), 1u);
  EXPECT_EQ(paths[0], dir.file("one-00001-of-00001.gguf"));
  EXPECT_EQ(join(compare_with_libggml(paths[0], expected_parts(whole, 128)[0])), "");
  check_split_keys(paths[0], 0, 1, 1);
  EXPECT_THROW(w.write_split(dir.file("zero"), 0), Error);
}

// Source metadata that already holds split keys (a set being re-split) gets
// them replaced and moved last, as gguf_set_val does.
TEST(GgufWriterSplitEdges, existing_split_keys_are_replaced) {
  TempDir dir;
  GgufWriter w;
  w.set("split.count", GgufValue::u16(9));
  w.set_str("general.name", "x");
  std::mt19937_64 rng(2);
  ExpectedFile whole;
  whole.kvs = {{"general.name", GgufValue::str("x")}};
  for (int i = 0; i < 3; ++i) {
    add_random_tensor(w, whole, "t" + std::to_string(i), static_cast<uint32_t>(GgmlType::F32), {4}, rng);
  }
  const auto paths = w.write_split(dir.file("re"), 2);
  ASSERT_EQ(paths.size(), 2u);
  const auto parts = expected_parts(whole, 2);
  EXPECT_EQ(join(compare_with_libggml(paths[0], parts[0])), "");
  EXPECT_EQ(join(compare_with_libggml(paths[1], parts[1])), "");
}

}  // namespace
}  // namespace strix::test
