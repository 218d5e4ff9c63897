// Split GGUF sets as llama.cpp's gguf-split writes them: name-0000i-of-0000n.gguf,
// each part carrying split.no (u16), split.count (u16) and split.tensors.count
// (i32); metadata lives in the first part. Opening the first part opens all.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_bytes.h"
#include "gguf/reader.h"
#include "gguf/ref_gguf.h"

namespace {

using namespace gguf_test;
namespace fs = std::filesystem;

// The part names from libllama's own llama_split_path (the reference).
std::string llama_split_path(const std::string& prefix, int no, int count) {
  static const strix::ref::SharedLib lib(strix::ref::reference_dir() + "/libllama.v0.5.0.so");
  auto fn = lib.fn<int (*)(char*, size_t, const char*, int, int)>("llama_split_path");
  char buf[4096];
  fn(buf, sizeof buf, prefix.c_str(), no, count);
  return buf;
}

void add_split_kvs(Spec& s, uint16_t no, uint16_t count, int32_t n_tensors) {
  s.kvs.push_back(kv("split.no", kU16, Buf().u16(no)));
  s.kvs.push_back(kv("split.count", kU16, Buf().u16(count)));
  s.kvs.push_back(kv("split.tensors.count", kI32, Buf().i32(n_tensors)));
}

class SplitGguf : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("strix_split_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    prefix_ = (dir_ / "model").string();
    // part 1: metadata + 2 tensors, part 2: 2 tensors, part 3: 1 tensor.
    const std::vector<std::vector<TensorSpec>> tensors = {
        {{"token_embd.weight", {8, 4}}, {"output_norm.weight", {8}}},
        {{"blk.0.attn_q.weight", {8, 8}}, {"blk.0.ffn_up.weight", {32, 2}, kTypeQ8_0}},
        {{"output.weight", {8, 4}}},
    };
    for (int i = 0; i < 3; ++i) {
      Spec s;
      if (i == 0) s.kvs.push_back(kv_str("general.architecture", "llama"));
      add_split_kvs(s, static_cast<uint16_t>(i), 3, 5);
      s.tensors = tensors[static_cast<size_t>(i)];
      s.data_fill = static_cast<uint8_t>(0xa0 + i);  // tells the parts' data apart
      paths_.push_back(llama_split_path(prefix_, i, 3));
      write_file(paths_.back(), build(s).bytes);
    }
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  std::string prefix_;
  std::vector<std::string> paths_;
};

TEST_F(SplitGguf, part_names_follow_llama_split_path) {
  EXPECT_EQ(paths_[0], prefix_ + "-00001-of-00003.gguf");
  EXPECT_EQ(paths_[2], prefix_ + "-00003-of-00003.gguf");
}

TEST_F(SplitGguf, first_part_opens_all_and_merges_tensors) {
  auto f = strix::GgufFile::open(paths_[0]);
  ASSERT_EQ(f->splits().size(), 3u);
  ASSERT_EQ(f->tensors().size(), 5u);
  EXPECT_EQ(f->architecture(), "llama");
  const char* names[] = {"token_embd.weight", "output_norm.weight", "blk.0.attn_q.weight", "blk.0.ffn_up.weight",
                         "output.weight"};
  const int split_of[] = {0, 0, 1, 1, 2};
  for (size_t i = 0; i < 5; ++i) {
    const auto& t = f->tensors()[i];
    EXPECT_EQ(t.name, names[i]);
    EXPECT_EQ(t.split, split_of[i]) << t.name;
    EXPECT_EQ(f->find_tensor(names[i]), &t);
    // The data pointer is inside that part's map: its fill byte says which.
    for (uint64_t j = 0; j < t.nbytes; ++j) ASSERT_EQ(t.data[j], 0xa0 + split_of[i]) << t.name << " byte " << j;
    EXPECT_EQ(f->splits()[static_cast<size_t>(t.split)].path, paths_[static_cast<size_t>(t.split)]);
  }
  EXPECT_EQ(f->find_tensor("blk.0.ffn_up.weight")->nbytes, 68u);
  // Each part on its own is a valid GGUF for libggml too (positive control).
  for (const auto& p : paths_) {
    RefGguf ref(p);
    EXPECT_TRUE(ref.ok()) << p;
  }
}

TEST_F(SplitGguf, missing_part_is_an_error_naming_the_file) {
  fs::remove(paths_[1]);
  try {
    strix::GgufFile::open(paths_[0]);
    FAIL() << "opened a split set with a missing part";
  } catch (const strix::Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("missing"), std::string::npos) << m;
    EXPECT_NE(m.find(paths_[1]), std::string::npos) << m;
  }
}

TEST_F(SplitGguf, opening_a_later_part_says_to_open_the_first) {
  try {
    strix::GgufFile::open(paths_[1]);
    FAIL() << "opened part 2";
  } catch (const strix::Error& e) {
    EXPECT_NE(std::string(e.what()).find("split part 2 of 3"), std::string::npos) << e.what();
  }
}

TEST_F(SplitGguf, malformed_part_is_reported_with_its_own_name) {
  // Truncate part 3 inside its tensor data.
  fs::resize_file(paths_[2], fs::file_size(paths_[2]) - 100);
  try {
    strix::GgufFile::open(paths_[0]);
    FAIL() << "accepted a truncated part";
  } catch (const strix::Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind(paths_[2] + ": tensor 'output.weight' at byte ", 0), 0u) << m;
  }
}

TEST_F(SplitGguf, wrong_tensor_count_is_an_error) {
  Spec s;
  s.kvs.push_back(kv_str("general.architecture", "llama"));
  add_split_kvs(s, 0, 3, 7);
  s.tensors = {{"token_embd.weight", {8, 4}}, {"output_norm.weight", {8}}};
  write_file(paths_[0], build(s).bytes);
  try {
    strix::GgufFile::open(paths_[0]);
    FAIL() << "accepted split.tensors.count 7 for 5 tensors";
  } catch (const strix::Error& e) {
    EXPECT_NE(std::string(e.what()).find("split.tensors.count"), std::string::npos) << e.what();
  }
}

}  // namespace
