// The reader against libggml's own GGUF parser (gguf_* from the pinned
// libggml-base): every key, type and value, every tensor's name, type, shape,
// offset and size, the data offset and the alignment must agree.
#include "core/source_dir.h"
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_bytes.h"
#include "gguf/reader.h"
#include "gguf/ref_gguf.h"
#include "quant/types.h"

namespace {

using namespace gguf_test;
using strix::GgufFile;
using strix::GgufType;
using strix::GgufValue;

const std::string kStories = std::string(STRIX_SOURCE_DIR) + "/../shared/data/stories260K.gguf";

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("strix_gguf_ref_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// One scalar of ours against libggml's raw little-endian bytes of that type.
void expect_scalar(const GgufValue& v, const void* ref, const std::string& where) {
  switch (v.type()) {
    case GgufType::FLOAT32: {
      float r;
      std::memcpy(&r, ref, 4);
      const float ours = static_cast<float>(v.raw_float());
      EXPECT_EQ(std::memcmp(&ours, &r, 4), 0) << where << ": " << ours << " vs " << r;
      break;
    }
    case GgufType::FLOAT64: {
      double r;
      std::memcpy(&r, ref, 8);
      const double ours = v.raw_float();
      EXPECT_EQ(std::memcmp(&ours, &r, 8), 0) << where;
      break;
    }
    case GgufType::BOOL:
      EXPECT_EQ(v.as_bool(), *static_cast<const uint8_t*>(ref) != 0) << where;
      break;
    default: {
      // Integers: the low bytes of the stored bits are the wire encoding.
      const size_t n = strix::gguf_scalar_size(v.type());
      ASSERT_GT(n, 0u) << where;
      const uint64_t bits = v.raw_bits();
      EXPECT_EQ(std::memcmp(&bits, ref, n), 0) << where;
    }
  }
}

void expect_same_as_libggml(const GgufFile& f, const std::string& path) {
  RefGguf ref(path, /*load_data=*/false);
  ASSERT_TRUE(ref.ok()) << "libggml rejects " << path;
  const LibGgml& g = LibGgml::get();
  auto* c = ref.get();
  EXPECT_EQ(f.version(), g.gguf_get_version(c));
  EXPECT_EQ(f.alignment(), g.gguf_get_alignment(c));
  EXPECT_EQ(f.splits()[0].data_offset, g.gguf_get_data_offset(c));

  ASSERT_EQ(static_cast<int64_t>(f.kvs().size()), g.gguf_get_n_kv(c));
  for (size_t i = 0; i < f.kvs().size(); ++i) {
    const auto& kv = f.kvs()[i];
    const auto id = static_cast<int64_t>(i);
    SCOPED_TRACE(kv.key);
    ASSERT_STREQ(kv.key.c_str(), g.gguf_get_key(c, id));
    ASSERT_EQ(static_cast<int>(kv.value.type()), g.gguf_get_kv_type(c, id));
    if (kv.value.is_array()) {
      ASSERT_EQ(static_cast<int>(kv.value.elem_type()), g.gguf_get_arr_type(c, id));
      const auto& items = kv.value.items();
      ASSERT_EQ(items.size(), g.gguf_get_arr_n(c, id));
      if (kv.value.elem_type() == GgufType::STRING) {
        for (size_t j = 0; j < items.size(); ++j) ASSERT_EQ(items[j].as_string(), g.gguf_get_arr_str(c, id, j)) << j;
      } else {
        const auto* data = static_cast<const uint8_t*>(g.gguf_get_arr_data(c, id));
        const size_t size = strix::gguf_scalar_size(kv.value.elem_type());
        for (size_t j = 0; j < items.size(); ++j)
          expect_scalar(items[j], data + j * size, kv.key + "[" + std::to_string(j) + "]");
      }
    } else if (kv.value.is_string()) {
      EXPECT_EQ(kv.value.as_string(), g.gguf_get_val_str(c, id));
    } else {
      expect_scalar(kv.value, g.gguf_get_val_data(c, id), kv.key);
    }
  }

  ASSERT_EQ(static_cast<int64_t>(f.tensors().size()), g.gguf_get_n_tensors(c));
  for (size_t i = 0; i < f.tensors().size(); ++i) {
    const auto& t = f.tensors()[i];
    const auto id = static_cast<int64_t>(i);
    SCOPED_TRACE(t.name);
    EXPECT_STREQ(t.name.c_str(), g.gguf_get_tensor_name(c, id));
    EXPECT_EQ(static_cast<int>(t.type), g.gguf_get_tensor_type(c, id));
    const int64_t* ne = g.gguf_get_tensor_ne(c, id);
    for (int d = 0; d < strix::kGgufMaxDims; ++d) EXPECT_EQ(t.ne[d], ne[d]) << "ne[" << d << "]";
    EXPECT_EQ(t.offset, g.gguf_get_tensor_offset(c, id));
    EXPECT_EQ(t.nbytes, g.gguf_get_tensor_size(c, id));
    EXPECT_EQ(t.file_offset, g.gguf_get_data_offset(c) + t.offset);
    EXPECT_EQ(f.find_tensor(t.name), &t);
  }
}

TEST(ReaderVsLibggml, stories260k_agrees_on_every_key_and_tensor) {
  if (!std::filesystem::exists(kStories)) GTEST_SKIP() << kStories << " is absent";
  auto f = GgufFile::open(kStories);
  EXPECT_EQ(f->architecture(), "llama");
  EXPECT_EQ(f->tensors().size(), 48u);
  ASSERT_NE(f->find("tokenizer.ggml.tokens"), nullptr);
  EXPECT_EQ(f->find("tokenizer.ggml.tokens")->items().size(), 512u);
  expect_same_as_libggml(*f, kStories);
}

TEST(ReaderVsLibggml, stories260k_tensor_data_points_at_the_file_bytes) {
  if (!std::filesystem::exists(kStories)) GTEST_SKIP() << kStories << " is absent";
  auto f = GgufFile::open(kStories);
  std::ifstream in(kStories, std::ios::binary);
  for (const auto& t : f->tensors()) {
    std::vector<char> expect(t.nbytes);
    in.seekg(static_cast<std::streamoff>(t.file_offset));
    in.read(expect.data(), static_cast<std::streamsize>(t.nbytes));
    ASSERT_TRUE(in) << t.name;
    EXPECT_EQ(std::memcmp(expect.data(), t.data, t.nbytes), 0) << t.name;
  }
}

// Every scalar type, arrays of each, v2 and v3, a 64-byte alignment and several
// tensor types, all checked against libggml.
Spec every_type(uint32_t version) {
  Spec s;
  s.version = version;
  s.alignment = 64;
  s.kvs = {
      kv_str("general.architecture", "llama"),
      kv("t.u8", kU8, Buf().u8(200)),
      kv("t.i8", kI8, Buf().i8(-100)),
      kv("t.u16", kU16, Buf().u16(60000)),
      kv("t.i16", kI16, Buf().i16(-30000)),
      kv("t.u32", kU32, Buf().u32(4000000000u)),
      kv("t.i32", kI32, Buf().i32(-2000000000)),
      kv("t.f32", kF32, Buf().f32(-1.25e-7f)),
      kv("t.bool", kBool, Buf().u8(1)),
      kv("t.u64", kU64, Buf().u64(0xfedcba9876543210ull)),
      kv("t.i64", kI64, Buf().i64(-(int64_t(1) << 62))),
      kv("t.f64", kF64, Buf().f64(3.141592653589793)),
      kv_str("t.str", "h\xc3\xa9llo \"w\"\n"),
      kv_str("t.empty_str", ""),
      kv("t.a.u8", kArr, arr(kU8, 3, Buf().u8(1).u8(2).u8(255))),
      kv("t.a.i16", kArr, arr(kI16, 2, Buf().i16(-1).i16(7))),
      kv("t.a.u32", kArr, arr(kU32, 0, Buf())),
      kv("t.a.f32", kArr, arr(kF32, 2, Buf().f32(0.5f).f32(-0.0f))),
      kv("t.a.bool", kArr, arr(kBool, 3, Buf().u8(0).u8(1).u8(0))),
      kv("t.a.i64", kArr, arr(kI64, 2, Buf().i64(-5).i64(int64_t(1) << 40))),
      kv("t.a.f64", kArr, arr(kF64, 1, Buf().f64(1e300))),
      kv("t.a.str", kArr, arr(kStr, 3, Buf().str("").str("b").str("\xe2\x96\x81the"))),
      kv_u32("general.alignment", 64),
  };
  s.tensors = {{"w.f32", {8, 3}},
               {"w.q8_0", {64, 2}, kTypeQ8_0},
               {"w.q4_k", {256, 1, 2}, kTypeQ4_K},
               {"w.bf16", {2, 3, 4, 5}, kTypeBF16},
               {"w.f16", {6}, kTypeF16}};
  return s;
}

TEST(ReaderVsLibggml, every_scalar_and_array_type_v3_and_v2) {
  for (uint32_t version : {3u, 2u}) {
    SCOPED_TRACE(version);
    const Built b = build(every_type(version));
    const std::string path = temp_path("every_type_v" + std::to_string(version) + ".gguf");
    write_file(path, b.bytes);
    auto f = GgufFile::open(path);
    EXPECT_EQ(f->version(), version);
    EXPECT_EQ(f->alignment(), 64u);
    EXPECT_EQ(f->splits()[0].data_offset, b.data_offset);
    EXPECT_EQ(f->get_i64("t.i8"), -100);
    EXPECT_EQ(f->get_u64("t.u64"), 0xfedcba9876543210ull);
    EXPECT_TRUE(f->get_bool("t.bool"));
    EXPECT_EQ(f->get_string("t.str"), "h\xc3\xa9llo \"w\"\n");
    expect_same_as_libggml(*f, path);
    // parse() of the same bytes gives the same result as open().
    auto m = GgufFile::parse(b.bytes.data(), b.bytes.size(), "mem");
    ASSERT_EQ(m->kvs().size(), f->kvs().size());
    for (size_t i = 0; i < m->kvs().size(); ++i) EXPECT_EQ(m->kvs()[i].value, f->kvs()[i].value) << m->kvs()[i].key;
    ASSERT_EQ(m->tensors().size(), f->tensors().size());
    for (size_t i = 0; i < m->tensors().size(); ++i) {
      EXPECT_EQ(m->tensors()[i].file_offset, f->tensors()[i].file_offset);
      EXPECT_EQ(m->tensors()[i].data, b.bytes.data() + f->tensors()[i].file_offset);
    }
    std::remove(path.c_str());
  }
}

TEST(ReaderVsLibggml, metadata_only_file_has_an_unpadded_data_offset) {
  Spec s;
  s.kvs = {kv_str("general.architecture", "llama")};  // 24 + 8+20 + 4 + 8+5 = 69 bytes, not aligned
  const Built b = build(s);
  const std::string path = temp_path("meta_only.gguf");
  write_file(path, b.bytes);
  auto f = GgufFile::open(path);
  EXPECT_EQ(f->splits()[0].data_offset, b.bytes.size());
  expect_same_as_libggml(*f, path);
  std::remove(path.c_str());
}

// Strix reads arrays of arrays (the GGUF spec allows them); the pinned libggml
// refuses every nested array ("invalid GGUF type 9"), so only Strix is checked.
TEST(Reader, reads_nested_arrays) {
  Spec s;
  s.kvs = {kv("t.nested", kArr,
              arr(kArr, 3,
                  Buf()
                      .raw(arr(kU32, 2, Buf().u32(1).u32(2)))
                      .raw(arr(kStr, 1, Buf().str("x")))
                      .raw(arr(kArr, 1, arr(kI8, 1, Buf().i8(-3))))))};
  const Built b = build(s);
  auto f = GgufFile::parse(b.bytes.data(), b.bytes.size());
  const GgufValue* v = f->find("t.nested");
  ASSERT_NE(v, nullptr);
  ASSERT_EQ(v->elem_type(), GgufType::ARRAY);
  ASSERT_EQ(v->items().size(), 3u);
  EXPECT_EQ(v->items()[0].as_i64_array(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(v->items()[1].as_str_array(), std::vector<std::string>{"x"});
  EXPECT_EQ(v->items()[2].items()[0].items()[0].as_i64(), -3);
  EXPECT_EQ(v->to_display(), "[[1, 2], [\"x\"], [[-3]]]");

  const std::string path = temp_path("nested.gguf");
  write_file(path, b.bytes);
  RefGguf ref(path);
  EXPECT_FALSE(ref.ok()) << "the pinned libggml now reads nested arrays: compare them too";
  std::remove(path.c_str());
}

// Strix accepts any aligned, non-overlapping layout; libggml insists that the
// tensors are packed in file order (offset == running padded size).
TEST(Reader, accepts_tensors_stored_out_of_order) {
  Spec s;
  s.tensors = {{"b", {8}, kTypeF32, 32}, {"a", {8}, kTypeF32, 0}};
  s.data_bytes = 64;
  const Built b = build(s);
  auto f = GgufFile::parse(b.bytes.data(), b.bytes.size());
  ASSERT_EQ(f->tensors().size(), 2u);
  EXPECT_EQ(f->find_tensor("b")->offset, 32u);
  EXPECT_EQ(f->find_tensor("a")->file_offset, b.data_offset);
  const std::string path = temp_path("reordered.gguf");
  write_file(path, b.bytes);
  RefGguf ref(path);
  EXPECT_FALSE(ref.ok()) << "libggml now accepts out-of-order tensors";
  std::remove(path.c_str());
}

// For every tensor type id, Strix accepts a well-formed tensor of that type
// exactly when libggml does; sizes come from libggml's blck_size / type_size.
TEST(ReaderVsLibggml, accepts_exactly_the_tensor_types_libggml_accepts) {
  const LibGgml& g = LibGgml::get();
  for (uint32_t id = 0; id < 48; ++id) {
    SCOPED_TRACE(id);
    // ids past the table: blck_size would read past libggml's type table.
    const int64_t blck = id < strix::kGgmlTypeCount ? g.blck_size(static_cast<int>(id)) : 0;
    const uint64_t bytes = blck > 0 ? 256 / static_cast<uint64_t>(blck) * g.type_size(static_cast<int>(id)) : 0;
    Spec s;
    s.tensors = {{"t", {256}, id}};
    s.data_bytes = align_up(bytes, 32);
    const Built b = build(s);
    const std::string path = temp_path("type_" + std::to_string(id) + ".gguf");
    write_file(path, b.bytes);
    bool ours = true;
    try {
      auto f = GgufFile::open(path);
      EXPECT_EQ(f->tensors()[0].nbytes, bytes);
    } catch (const strix::Refusal& e) {
      ours = false;
      EXPECT_NE(std::string(e.what()).find("unknown ggml tensor type id " + std::to_string(id)), std::string::npos)
          << e.what();
    }
    RefGguf ref(path);
    EXPECT_EQ(ours, ref.ok()) << "strix " << (ours ? "accepts" : "refuses") << " type id " << id;
    std::remove(path.c_str());
  }
}

TEST(Reader, typed_getters_name_the_key_on_a_type_mismatch) {
  Spec s;
  s.kvs = {kv_u32("llama.block_count", 5), kv_str("general.name", "x"), kv("t.neg", kI32, Buf().i32(-1))};
  const Built b = build(s);
  auto f = GgufFile::parse(b.bytes.data(), b.bytes.size());
  EXPECT_EQ(f->get_u64("llama.block_count"), 5u);
  EXPECT_EQ(f->get_u64("absent", 9), 9u);
  EXPECT_EQ(f->get_string("absent", "d"), "d");
  try {
    f->get_string("llama.block_count");
    FAIL() << "no error";
  } catch (const strix::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'llama.block_count'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(f->get_u64("general.name"), strix::Error);
  EXPECT_THROW(f->get_u64("t.neg"), strix::Error);
  EXPECT_EQ(f->get_i64("t.neg"), -1);
}

TEST(Reader, bool_accepts_any_nonzero_byte_like_libggml) {
  Spec s;
  s.kvs = {kv("t.b", kBool, Buf().u8(2))};
  const Built b = build(s);
  auto f = GgufFile::parse(b.bytes.data(), b.bytes.size());
  EXPECT_TRUE(f->get_bool("t.b"));
  const std::string path = temp_path("bool2.gguf");
  write_file(path, b.bytes);
  RefGguf ref(path);
  ASSERT_TRUE(ref.ok());
  EXPECT_NE(*static_cast<const uint8_t*>(LibGgml::get().gguf_get_val_data(ref.get(), 0)), 0);
  std::remove(path.c_str());
}

}  // namespace
