// GgufWriter refuses, with an Error naming the tensor / key / path, anything
// libggml's reader would refuse; the limits are checked against libggml itself.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.h"
#include "gguf_writer/libggml_compare.h"
#include "quant/types.h"

namespace strix::test {
namespace {

constexpr uint32_t kF32 = static_cast<uint32_t>(GgmlType::F32);
constexpr uint32_t kQ4K = static_cast<uint32_t>(GgmlType::Q4_K);

// Runs `f`, expects an Error whose message contains every one of `parts`.
template <typename F>
void expect_error(F&& f, std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "no Error thrown";
  } catch (const Error& e) {
    for (const auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

TEST(GgufWriterValidation, refuses_bad_shapes_naming_the_tensor) {
  GgufWriter w;
  std::vector<uint8_t> buf(1 << 16);
  expect_error([&] { w.add_tensor("no_dims", kF32, {}, buf.data(), 0); }, {"no_dims", "dimensions"});
  expect_error([&] { w.add_tensor("five_dims", kF32, {1, 1, 1, 1, 1}, buf.data(), 4); }, {"five_dims"});
  expect_error([&] { w.add_tensor("zero_dim", kF32, {4, 0}, buf.data(), 0); }, {"zero_dim", "ne[1]"});
  expect_error([&] { w.add_tensor("negative", kF32, {-4}, buf.data(), 16); }, {"negative", "ne[0]"});
  expect_error([&] { w.add_tensor("ragged", kQ4K, {100, 2}, buf.data(), 288); }, {"ragged", "block size 256"});
  expect_error([&] { w.add_tensor("short", kQ4K, {256, 2}, buf.data(), 287); }, {"short", "288", "287"});
  expect_error([&] { w.add_tensor("long", kF32, {3}, buf.data(), 13); }, {"long", "12", "13"});
  expect_error([&] { w.add_tensor("removed_type", 4, {32}, buf.data(), 18); }, {"removed_type", "type id 4"});
  expect_error([&] { w.add_tensor("huge", kF32, {1ll << 40, 1ll << 40}, buf.data(), 4); }, {"huge"});
  expect_error([&] { w.add_tensor("null", kF32, {1}, nullptr, 4); }, {"null"});
  expect_error([&] { w.add_tensor("", kF32, {1}, buf.data(), 4); }, {"empty"});
  EXPECT_EQ(w.n_tensors(), 0u);  // nothing half-added
}

TEST(GgufWriterValidation, refuses_duplicate_tensor_names) {
  GgufWriter w;
  float x[4] = {};
  w.add_tensor("tok_embd.weight", kF32, {4}, x, sizeof x);
  expect_error([&] { w.add_tensor("tok_embd.weight", kF32, {4}, x, sizeof x); }, {"duplicate", "tok_embd.weight"});
  expect_error([&] { w.add_tensor_ref("tok_embd.weight", kF32, {4}, x, sizeof x); }, {"tok_embd.weight"});
  EXPECT_EQ(w.n_tensors(), 1u);
}

TEST(GgufWriterValidation, tensor_name_limit_is_libggml_s_63_bytes) {
  GgufWriter w;
  float x[1] = {};
  const std::string ok(63, 'n');
  w.add_tensor(ok, kF32, {1}, x, 4);
  expect_error([&] { w.add_tensor(std::string(64, 'm'), kF32, {1}, x, 4); }, {std::string(64, 'm'), "63"});

  // libggml accepts the 63-byte name ...
  std::vector<uint8_t> image = w.to_bytes();
  GgufCtx ctx = libggml_open_buffer(image);
  ASSERT_TRUE(ctx);
  EXPECT_STREQ(ref::LibGgml::get().gguf_get_tensor_name(ctx.get(), 0), ok.c_str());

  // ... and refuses the same file with a 64-byte name: one more byte in the name
  // (length field bumped), one padding byte less, so the data stays in place.
  const size_t len_at = 24;  // header, then the tensor info (no kvs)
  ASSERT_EQ(image[len_at], 63);
  ASSERT_EQ(image[24 + 8 + 63 + 4 + 8 + 4 + 8], 0) << "expected a padding byte after the tensor info";
  image[len_at] = 64;
  image.insert(image.begin() + 24 + 8 + 63, 'n');
  image.erase(image.begin() + 24 + 8 + 64 + 4 + 8 + 4 + 8);
  EXPECT_FALSE(libggml_open_buffer(image));
}

TEST(GgufWriterValidation, refuses_bad_keys_and_alignment) {
  GgufWriter w;
  expect_error([&] { w.set("", GgufValue::u32(1)); }, {"empty"});
  expect_error([&] { w.set("general.alignment", GgufValue::u64(64)); }, {"general.alignment", "uint32"});
  expect_error([&] { w.set_u32("general.alignment", 48); }, {"general.alignment", "48"});
  expect_error([&] { w.set_u32("general.alignment", 0); }, {"general.alignment"});
  expect_error([&] { w.set_alignment(24); }, {"24"});
  EXPECT_EQ(w.alignment(), 32u);
  EXPECT_TRUE(w.kvs().empty());
}

// libggml itself refuses a general.alignment of another type; our writer must
// never produce one.
TEST(GgufWriterValidation, libggml_refuses_alignment_of_another_type) {
  GgufWriter w;
  w.set_u32("general.alignment", 64);
  std::vector<uint8_t> image = w.to_bytes();
  ASSERT_TRUE(libggml_open_buffer(image));
  // The kv's type tag follows the key: u64 length + 17 bytes.
  const size_t type_at = 24 + 8 + 17;
  ASSERT_EQ(image[type_at], static_cast<uint8_t>(GgufType::UINT32));
  image[type_at] = static_cast<uint8_t>(GgufType::INT32);
  EXPECT_FALSE(libggml_open_buffer(image));
}

TEST(GgufWriterValidation, write_errors_name_the_path_and_leave_nothing_behind) {
  TempDir dir;
  GgufWriter w;
  w.set_u32("a", 1);
  const std::string bad = dir.file("no_such_dir/model.gguf");
  expect_error([&] { w.write(bad); }, {bad});
  expect_error([&] { w.write_split(dir.file("no_such_dir/model"), 1); }, {"no_such_dir/model-00001-of-00001.gguf"});

  // A fill that throws aborts the write: the old file stays, no temp file is left.
  const std::string path = dir.file("model.gguf");
  w.write(path);
  const auto before = read_file_bytes(path);
  w.add_tensor_fill("t", kF32, {4}, [](uint8_t*, size_t) { throw Error("producer failed"); });
  expect_error([&] { w.write(path); }, {"producer failed"});
  EXPECT_TRUE(read_file_bytes(path) == before);
  size_t n_files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    ++n_files;
    EXPECT_EQ(e.path().filename(), "model.gguf");
  }
  EXPECT_EQ(n_files, 1u);
}

TEST(GgufWriterValidation, value_model_refuses_mixed_and_invalid_arrays) {
  EXPECT_THROW(GgufValue::array(GgufType::UINT32, {GgufValue::u32(1), GgufValue::i32(2)}), Error);
  EXPECT_THROW(GgufValue::array(static_cast<GgufType>(13), {}), Error);
}

}  // namespace
}  // namespace strix::test
