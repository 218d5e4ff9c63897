// MappedFile's two ways of holding a file (map in place, read into
// anonymous huge-page memory): the bytes are the file's either way, checked
// against std::ifstream's read of the same file; bad paths are errors.
#include "core/mmap.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"

namespace strix {
namespace {

class WeightMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "strix_mmap_test_" + std::to_string(::getpid()) + ".bin";
    std::mt19937 rng(5);
    bytes_.resize(3 * 1024 * 1024 + 12345);  // not a multiple of 2 MiB
    for (auto& b : bytes_) b = static_cast<char>(rng());
    std::ofstream(path_, std::ios::binary).write(bytes_.data(), static_cast<std::streamsize>(bytes_.size()));
    std::ifstream in(path_, std::ios::binary);
    reread_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  void TearDown() override {
    std::remove(path_.c_str());
    set_weight_memory(WeightMemory::kMap);
  }
  void expect_file_bytes(const MappedFile& f) {
    ASSERT_EQ(f.size(), reread_.size());
    ASSERT_EQ(0, std::memcmp(f.data(), reread_.data(), reread_.size()));
  }
  std::string path_;
  std::vector<char> bytes_, reread_;
};

TEST_F(WeightMemoryTest, MapAndCopyHoldTheFileBytes) {
  ASSERT_EQ(reread_.size(), bytes_.size());
  set_weight_memory(WeightMemory::kMap);
  MappedFile mapped(path_);
  EXPECT_FALSE(mapped.copied());
  expect_file_bytes(mapped);
  set_weight_memory(WeightMemory::kCopy);
  MappedFile copied(path_);
  EXPECT_TRUE(copied.copied());
  expect_file_bytes(copied);
  // a small file fits in half of any machine's available memory
  set_weight_memory(WeightMemory::kAuto);
  MappedFile automatic(path_);
  EXPECT_TRUE(automatic.copied());
  expect_file_bytes(automatic);
  // moved-from objects hand over the memory
  MappedFile moved(std::move(copied));
  EXPECT_TRUE(moved.copied());
  expect_file_bytes(moved);
  EXPECT_EQ(copied.data(), nullptr);
  // negative control: another file's bytes differ
  std::vector<char> other = reread_;
  other[other.size() / 2] ^= 1;
  EXPECT_NE(0, std::memcmp(moved.data(), other.data(), other.size()));
}

TEST_F(WeightMemoryTest, MissingFileIsAnErrorEitherWay) {
  for (WeightMemory m : {WeightMemory::kMap, WeightMemory::kCopy}) {
    set_weight_memory(m);
    EXPECT_THROW(MappedFile(path_ + ".absent"), Error);
  }
}

}  // namespace
}  // namespace strix
