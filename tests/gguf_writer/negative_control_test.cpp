// Negative controls: the comparator behind the round-trip tests must report a
// difference for each deliberately damaged file, or its silence proves nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <random>

#include "gguf_writer/libggml_compare.h"
#include "gguf_writer/sample_files.h"

namespace strix::test {
namespace {

// Byte position of the first occurrence of `needle` in `hay` (fails the test if absent).
size_t find_bytes(const std::vector<uint8_t>& hay, const std::vector<uint8_t>& needle) {
  const auto it = std::search(hay.begin(), hay.end(), needle.begin(), needle.end());
  EXPECT_NE(it, hay.end());
  return static_cast<size_t>(it - hay.begin());
}

std::vector<uint8_t> str_bytes(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

class NegativeControl : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937_64 rng(5);
    w_.set_u32("marker.u32", 0xa1b2c3d4u);
    w_.set_str("marker.str", std::string("visible\0hidden-tail", 19));
    w_.set("marker.arr", GgufValue::i32_array({0x11223344, 0x55667788}));
    exp_.kvs = {{"marker.u32", GgufValue::u32(0xa1b2c3d4u)},
                {"marker.str", GgufValue::str(std::string("visible\0hidden-tail", 19))},
                {"marker.arr", GgufValue::i32_array({0x11223344, 0x55667788})}};
    add_random_tensor(w_, exp_, "first.weight", static_cast<uint32_t>(GgmlType::Q8_0), {64, 3}, rng);
    add_random_tensor(w_, exp_, "second.weight", static_cast<uint32_t>(GgmlType::F16), {7, 2}, rng);
    path_ = dir_.file("control.gguf");
    w_.write(path_);
    image_ = read_file_bytes(path_);
  }

  // Diffs the comparator finds after `damage` is applied to a copy of the file.
  std::vector<std::string> diffs_after(const std::function<void(std::vector<uint8_t>&)>& damage) {
    std::vector<uint8_t> bad = image_;
    damage(bad);
    EXPECT_FALSE(bad == image_) << "the damage changed nothing";
    const std::string path = dir_.file("damaged.gguf");
    write_file_bytes(path, bad);
    return compare_with_libggml(path, exp_);
  }

  TempDir dir_;
  GgufWriter w_;
  ExpectedFile exp_;
  std::string path_;
  std::vector<uint8_t> image_;
};

TEST_F(NegativeControl, undamaged_file_compares_clean) { EXPECT_EQ(join(compare_with_libggml(path_, exp_)), ""); }

TEST_F(NegativeControl, one_flipped_byte_of_a_scalar_value_is_detected) {
  const auto d =
      diffs_after([](std::vector<uint8_t>& b) { b[find_bytes(b, bytes_of<uint32_t>(0xa1b2c3d4u)) + 1] ^= 1; });
  ASSERT_FALSE(d.empty());
  EXPECT_NE(join(d).find("marker.u32"), std::string::npos) << join(d);
}

TEST_F(NegativeControl, one_flipped_array_item_byte_is_detected) {
  const auto d = diffs_after([](std::vector<uint8_t>& b) { b[find_bytes(b, bytes_of<int32_t>(0x55667788))] ^= 0x80; });
  ASSERT_FALSE(d.empty());
  EXPECT_NE(join(d).find("marker.arr"), std::string::npos) << join(d);
}

// The C API stops at the NUL; only the re-serialized metadata sees the tail.
TEST_F(NegativeControl, a_changed_byte_after_an_embedded_nul_is_detected) {
  const auto d = diffs_after([](std::vector<uint8_t>& b) { b[find_bytes(b, str_bytes("hidden-tail"))] = 'H'; });
  ASSERT_FALSE(d.empty());
  EXPECT_NE(join(d).find("re-serialized"), std::string::npos) << join(d);
}

TEST_F(NegativeControl, one_flipped_tensor_data_byte_is_detected) {
  GgufCtx ctx = libggml_open(path_);
  ASSERT_TRUE(ctx);
  const auto& g = ref::LibGgml::get();
  const size_t at = g.gguf_get_data_offset(ctx.get()) + g.gguf_get_tensor_offset(ctx.get(), 1) + 5;
  const auto d = diffs_after([&](std::vector<uint8_t>& b) { b[at] ^= 0xff; });
  ASSERT_FALSE(d.empty());
  EXPECT_NE(join(d).find("second.weight': data bytes"), std::string::npos) << join(d);
}

TEST_F(NegativeControl, nonzero_padding_is_detected) {
  GgufCtx ctx = libggml_open(path_);
  ASSERT_TRUE(ctx);
  const auto& g = ref::LibGgml::get();
  // first.weight: 2 rows of 34-byte Q8_0 blocks x 3 = 204 bytes, padded to 224.
  const size_t at = g.gguf_get_data_offset(ctx.get()) + 204;
  const auto d = diffs_after([&](std::vector<uint8_t>& b) { b[at] = 1; });
  ASSERT_FALSE(d.empty());
  EXPECT_NE(join(d).find("padding"), std::string::npos) << join(d);
}

// The offset field of the second tensor info moved by one alignment step:
// libggml refuses the file (offsets must be the running padded sum).
TEST_F(NegativeControl, a_wrong_tensor_offset_is_detected) {
  const auto d = diffs_after([](std::vector<uint8_t>& b) {
    // name (u64 length + bytes), n_dims u32, ne 2 x i64, type u32, offset u64
    const size_t name_at = find_bytes(b, str_bytes("second.weight"));
    const size_t offset_at = name_at + 13 + 4 + 16 + 4;
    uint64_t off = 0;
    std::memcpy(&off, b.data() + offset_at, 8);
    EXPECT_EQ(off, 224u);
    off += 32;
    std::memcpy(b.data() + offset_at, &off, 8);
  });
  ASSERT_FALSE(d.empty());
  EXPECT_NE(join(d).find("refused"), std::string::npos) << join(d);
}

TEST_F(NegativeControl, a_wrong_expectation_is_detected) {
  ExpectedFile wrong = exp_;
  wrong.kvs[0].value = GgufValue::u32(0xa1b2c3d5u);
  EXPECT_FALSE(compare_with_libggml(path_, wrong).empty());
  wrong = exp_;
  wrong.tensors[1].ne = {14, 1};
  EXPECT_FALSE(compare_with_libggml(path_, wrong).empty());
  wrong = exp_;
  wrong.alignment = 64;
  EXPECT_FALSE(compare_with_libggml(path_, wrong).empty());
  wrong = exp_;
  std::swap(wrong.kvs[0], wrong.kvs[1]);
  EXPECT_FALSE(compare_with_libggml(path_, wrong).empty());
}

}  // namespace
}  // namespace strix::test
