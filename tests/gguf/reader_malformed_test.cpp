// Malformed GGUF files, built byte by byte: each must be refused with one line
// that names the key or tensor and the byte offset, and never read out of bounds
// (run under ASan). As a negative control each case is also given to libggml's
// own gguf_init_from_file: where libggml rejects it too, the test says so; where
// libggml is more lenient than Strix the case says kLibggmlAccepts and why.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_bytes.h"
#include "gguf/reader.h"
#include "gguf/ref_gguf.h"

namespace {

using namespace gguf_test;

enum class Ref {
  kRejects,         // libggml rejects it as well
  kLibggmlAccepts,  // libggml is more lenient here (documented per case)
};

struct Case {
  Case(std::string name_, std::vector<uint8_t> bytes_, std::string subject_, std::vector<std::string> expect_,
       std::optional<uint64_t> at_ = std::nullopt, Ref ref_ = Ref::kRejects, bool refusal_ = false)
      : name(std::move(name_)),
        bytes(std::move(bytes_)),
        subject(std::move(subject_)),
        expect(std::move(expect_)),
        at(at_),
        ref(ref_),
        refusal(refusal_) {}
  std::string name;
  std::vector<uint8_t> bytes;
  std::string subject;              // "key 'x'", "tensor 'y'", "header", "key #3" ...
  std::vector<std::string> expect;  // more substrings of the message
  std::optional<uint64_t> at;       // expected "at byte N" when pinned down
  Ref ref = Ref::kRejects;
  bool refusal = false;  // strix::Refusal (unsupported) rather than a plain Error
};

// A small valid file: three tensors (f32, q8_0, f32) and some metadata.
//   tok.weight  [8, 2]     f32   64 bytes at 0
//   q.weight    [32]       q8_0  34 bytes at 64
//   norm.weight [4, 2, 1]  f32   32 bytes at 128
Spec base() {
  Spec s;
  s.kvs = {kv_str("general.architecture", "llama"), kv_u32("test.n", 7),
           kv("tokenizer.ggml.tokens", kArr, arr(kStr, 3, Buf().str("a").str("bb").str("ccc")))};
  s.tensors = {{"tok.weight", {8, 2}}, {"q.weight", {32}, kTypeQ8_0}, {"norm.weight", {4, 2, 1}}};
  return s;
}

// Metadata only, no tensors: the last value ends the file.
Spec meta_only(Buf last) {
  Spec s;
  s.kvs = {kv_str("general.architecture", "llama"), std::move(last)};
  return s;
}

std::vector<uint8_t> cut(std::vector<uint8_t> b, size_t n) {
  b.resize(n);
  return b;
}

std::vector<uint8_t> header(std::string_view magic, uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
  Buf h;
  h.b.assign(magic.begin(), magic.end());
  h.u32(version).u64(n_tensors).u64(n_kv);
  return h.b;
}

// A nested array `depth` levels deep around an empty uint32 array.
Buf nested(int depth) {
  Buf inner = arr(kU32, 0, Buf());
  for (int i = 0; i < depth; ++i) inner = arr(kArr, 1, inner);
  return inner;
}

std::vector<Case> make_cases() {
  std::vector<Case> c;
  auto add = [&](Case k) { c.push_back(std::move(k)); };

  // --- header ---
  add({"empty_file", std::vector<uint8_t>{}, "header", {"too short"}, 0});
  add({"short_magic", std::vector<uint8_t>{'G', 'G'}, "header", {"too short"}, 0});
  {
    auto b = build(base()).bytes;
    b[3] = 'L';
    add({"bad_magic", b, "header", {"not a GGUF file"}, 0});
  }
  add({"truncated_version", cut(build(base()).bytes, 6), "header", {"version"}, 4});
  add({"version_0", header("GGUF", 0, 0, 0), "header", {"unsupported GGUF version 0"}, 4});
  add({"version_4", header("GGUF", 4, 0, 0), "header", {"unsupported GGUF version 4"}, 4});
  add({"version_1_refused", header("GGUF", 1, 0, 0), "header", {"version 1 is not supported"}, 4, Ref::kRejects, true});
  add({"big_endian_refused",
       header("GGUF", 0x03000000, 0, 0),
       "header",
       {"big-endian GGUF is not supported"},
       4,
       Ref::kRejects,
       true});
  add({"truncated_n_tensors", cut(build(base()).bytes, 12), "header", {"n_tensors"}, 8});
  add({"truncated_n_kv", cut(build(base()).bytes, 20), "header", {"n_kv"}, 16});
  {
    Spec s = base();
    s.n_kv = 1000000;
    add({"n_kv_past_file", build(s).bytes, "header", {"n_kv 1000000 cannot fit"}, 16});
    s.n_kv = std::numeric_limits<uint64_t>::max();
    add({"n_kv_uint64_max", build(s).bytes, "header", {"cannot fit"}, 16});
  }
  {
    Spec s = base();
    s.n_tensors = uint64_t(1) << 40;
    add({"n_tensors_past_file", build(s).bytes, "header", {"n_tensors 1099511627776", "cannot fit"}, 8});
  }

  // --- metadata ---
  {
    Spec s = base();
    s.kvs.insert(s.kvs.begin(), Buf().u64(uint64_t(1) << 40).u32(kU32).u32(1));
    add({"key_name_past_file", build(s).bytes, "key #0", {"key name of length 1099511627776", "past the end"}, 24});
  }
  {
    const Built b = build(meta_only(kv_u32("test.last_key", 1)));
    add({"key_name_truncated",
         cut(b.bytes, b.kv_at[1] + 10),
         "key #1",
         {"key name of length 13", "past the end"},
         b.kv_at[1]});
  }
  {
    Spec s = base();
    s.kvs.insert(s.kvs.begin() + 1, kv_u32("", 1));
    const Built b = build(s);
    add({"empty_key", b.bytes, "key #1", {"empty key name"}, b.kv_at[1]});
  }
  {
    Spec s = base();
    s.kvs.push_back(kv_u32("test.n", 8));
    const Built b = build(s);
    add({"duplicate_key", b.bytes, "key 'test.n'", {"duplicate key"}, b.kv_at[3]});
  }
  {
    Spec s = base();
    s.kvs.push_back(kv("test.bad", 13, Buf().u32(0)));
    const Built b = build(s);
    add({"unknown_value_type", b.bytes, "key 'test.bad'", {"unknown GGUF value type 13"}, b.kv_at[3] + 8 + 8});
  }
  {
    Spec s = base();
    s.kvs.push_back(kv("test.bad", 0xffffffffu, Buf().u32(0)));
    add({"value_type_uint32_max", build(s).bytes, "key 'test.bad'", {"unknown GGUF value type 4294967295"}});
  }
  {
    const Built b = build(meta_only(kv("test.big", kU64, Buf().u64(5))));
    add({"u64_value_truncated",
         cut(b.bytes, b.bytes.size() - 4),
         "key 'test.big'",
         {"uint64 value", "needs 8 bytes"},
         b.bytes.size() - 8});
  }
  {
    const Built b = build(meta_only(kv("test.f", kF64, Buf().f64(1.0))));
    add({"f64_value_truncated", cut(b.bytes, b.bytes.size() - 1), "key 'test.f'", {"float64 value"}});
  }
  {
    Spec s = base();
    s.kvs.push_back(kv("test.s", kStr, Buf().u64(uint64_t(1) << 33)));
    add({"string_value_past_file", build(s).bytes, "key 'test.s'", {"string of length 8589934592", "past the end"}});
  }
  {
    const Built b = build(meta_only(kv_str("test.s", "0123456789abcdef")));
    add({"string_value_truncated",
         cut(b.bytes, b.bytes.size() - 3),
         "key 'test.s'",
         {"string of length 16"},
         b.bytes.size() - 24});
  }
  {
    Spec s = base();
    s.kvs.push_back(kv("test.a", kArr, arr(13, 1, Buf().u32(0))));
    add({"array_unknown_element_type", build(s).bytes, "key 'test.a'", {"array of unknown GGUF value type 13"}});
  }
  {
    Spec s = base();
    s.kvs.push_back(kv("test.a", kArr, arr(kU32, uint64_t(1) << 40, Buf().u32(1))));
    add({"array_count_past_file",
         build(s).bytes,
         "key 'test.a'",
         {"array of 1099511627776 uint32 items", "cannot fit"}});
  }
  {
    Spec s = base();
    s.kvs.push_back(kv("test.a", kArr, arr(kU8, std::numeric_limits<uint64_t>::max(), Buf())));
    add({"array_count_uint64_max", build(s).bytes, "key 'test.a'", {"cannot fit"}});
  }
  {
    Spec s = base();
    s.kvs.push_back(kv("tokenizer.ggml.merges", kArr, arr(kStr, 1000000000, Buf().str("a b"))));
    add({"string_array_count_past_file",
         build(s).bytes,
         "key 'tokenizer.ggml.merges'",
         {"array of 1000000000 string items"}});
  }
  {
    Spec s = base();
    s.kvs.push_back(kv("test.strs", kArr, arr(kStr, 3, Buf().str("x").str("y").u64(uint64_t(1) << 50))));
    add({"string_array_item_past_file", build(s).bytes, "key 'test.strs'", {"string of length 1125899906842624"}});
  }
  {
    Spec s = base();
    s.kvs.push_back(kv("test.deep", kArr, nested(80)));
    // libggml refuses every nested array; Strix reads them, up to a depth of 64.
    add({"nested_array_too_deep", build(s).bytes, "key 'test.deep'", {"nested deeper than 64"}});
  }
  {
    Spec s = base();
    s.kvs.push_back(kv("test.nest", kArr, arr(kArr, 2, arr(kU32, 1, Buf().u32(1)).raw(arr(kU32, 1u << 30, Buf())))));
    add({"nested_array_inner_count_past_file", build(s).bytes, "key 'test.nest'", {"1073741824 uint32 items"}});
  }
  {
    Spec s = base();
    s.kvs.push_back(kv_u32("general.alignment", 0));
    const Built b = build(s);
    add({"alignment_zero", b.bytes, "key 'general.alignment'", {"not a nonzero power of two"}, b.kv_at[3]});
  }
  {
    Spec s = base();
    s.kvs.push_back(kv_u32("general.alignment", 48));
    add({"alignment_not_power_of_two", build(s).bytes, "key 'general.alignment'", {"alignment 48"}});
  }
  {
    Spec s = base();
    s.kvs.push_back(kv("general.alignment", kU64, Buf().u64(32)));
    add({"alignment_wrong_type", build(s).bytes, "key 'general.alignment'", {"must be of type uint32, found uint64"}});
  }

  // --- tensor infos ---
  {
    Spec s = base();
    Built b = build(s);
    // Overwrite the first tensor's name length.
    const uint64_t len = uint64_t(1) << 40;
    std::memcpy(b.bytes.data() + b.tensor_at[0], &len, 8);
    add({"tensor_name_past_file", b.bytes, "tensor #0", {"tensor name of length 1099511627776"}, b.tensor_at[0]});
  }
  {
    Spec s = base();
    s.tensors[1].name = "";
    const Built b = build(s);
    // libggml accepts an empty tensor name.
    add({"empty_tensor_name", b.bytes, "tensor #1", {"empty tensor name"}, b.tensor_at[1], Ref::kLibggmlAccepts});
  }
  {
    Spec s = base();
    s.tensors[2].name = "tok.weight";
    const Built b = build(s);
    add({"duplicate_tensor_name", b.bytes, "tensor 'tok.weight'", {"duplicate tensor name"}, b.tensor_at[2]});
  }
  {
    Spec s = base();
    s.tensors.push_back({"scalar", {}});
    const Built b = build(s);
    // libggml accepts n_dims 0 (a one-element tensor); Strix wants 1..4.
    add({"n_dims_zero",
         b.bytes,
         "tensor 'scalar'",
         {"n_dims 0 is outside 1..4"},
         b.tensor_at[3] + 8 + 6,
         Ref::kLibggmlAccepts});
  }
  {
    Spec s = base();
    s.tensors[0].ne = {8, 2, 1, 1, 1};
    add({"n_dims_five", build(s).bytes, "tensor 'tok.weight'", {"n_dims 5"}});
  }
  {
    Spec s = base();
    s.tensors[0].n_dims = 0xffffffffu;
    add({"n_dims_uint32_max", build(s).bytes, "tensor 'tok.weight'", {"n_dims 4294967295"}});
  }
  {
    Spec s = base();
    s.tensors[0].ne = {8, -2};
    s.data_bytes = 160;
    add({"negative_dimension", build(s).bytes, "tensor 'tok.weight'", {"dimension 1 is -2"}});
  }
  {
    Spec s = base();
    s.tensors[2].ne = {4, 0};
    // libggml accepts a zero-element tensor; Strix refuses zero dimensions.
    add({"zero_dimension",
         build(s).bytes,
         "tensor 'norm.weight'",
         {"dimension 1 is 0"},
         std::nullopt,
         Ref::kLibggmlAccepts});
  }
  {
    Spec s = base();
    s.tensors[0].ne = {(int64_t(1) << 33) + 1, int64_t(1) << 31};  // 2^64 + 2^31 elements
    s.data_bytes = 160;
    add({"element_count_overflow", build(s).bytes, "tensor 'tok.weight'", {"element count", "overflows int64"}});
  }
  {
    // Exactly 2^64 elements: libggml's guard computes ne0*ne1*ne2*ne3 first, which
    // wraps to 0, and skips its overflow check, so the pinned libggml accepts
    // these shapes. Strix checks every multiplication.
    Spec s = base();
    s.tensors[0].ne = {int64_t(1) << 32, int64_t(1) << 32};
    s.data_bytes = 160;
    add({"element_count_wraps_to_zero",
         build(s).bytes,
         "tensor 'tok.weight'",
         {"element count", "overflows int64"},
         std::nullopt,
         Ref::kLibggmlAccepts});
    s.tensors[0].ne = {1 << 16, 1 << 16, 1 << 16, 1 << 16};
    add({"element_count_wraps_to_zero_4d",
         build(s).bytes,
         "tensor 'tok.weight'",
         {"overflows int64"},
         std::nullopt,
         Ref::kLibggmlAccepts});
  }
  {
    Spec s = base();
    s.tensors[0].ne = {int64_t(1) << 31, int64_t(1) << 31};
    s.data_bytes = 160;
    add({"byte_size_overflow", build(s).bytes, "tensor 'tok.weight'", {"byte size", "overflows int64"}});
  }
  {
    Spec s = base();
    s.tensors[1].type = 99;
    const Built b = build(s);
    add({"unknown_tensor_type",
         b.bytes,
         "tensor 'q.weight'",
         {"unknown ggml tensor type id 99"},
         b.offset_field_at[1] - 4,
         Ref::kRejects,
         true});
  }
  {
    Spec s = base();
    s.tensors[1].type = 4;  // Q4_2, removed from ggml
    add({"removed_tensor_type",
         build(s).bytes,
         "tensor 'q.weight'",
         {"unknown ggml tensor type id 4"},
         std::nullopt,
         Ref::kRejects,
         true});
  }
  {
    Spec s = base();
    s.tensors[1].type = 43;  // one past the pinned libggml's GGML_TYPE_COUNT
    add({"tensor_type_past_last",
         build(s).bytes,
         "tensor 'q.weight'",
         {"unknown ggml tensor type id 43"},
         std::nullopt,
         Ref::kRejects,
         true});
  }
  {
    Spec s = base();
    s.tensors[1].type = 0x80000000u;
    add({"tensor_type_negative_as_int32",
         build(s).bytes,
         "tensor 'q.weight'",
         {"unknown ggml tensor type id 2147483648"},
         std::nullopt,
         Ref::kRejects,
         true});
  }
  {
    Spec s = base();
    s.tensors[1].ne = {16};
    add({"ne0_not_multiple_of_block",
         build(s).bytes,
         "tensor 'q.weight'",
         {"ne[0] = 16 is not a multiple of the q8_0 block size 32"}});
  }
  {
    const Built b = build(base());
    add({"tensor_info_truncated_in_shape",
         cut(b.bytes, b.tensor_at[1] + 8 + 8 + 4 + 3),
         "tensor 'q.weight'",
         {"dimension", "needs 8 bytes"},
         b.tensor_at[1] + 8 + 8 + 4});
  }
  {
    const Built b = build(base());
    add({"tensor_info_truncated_in_offset",
         cut(b.bytes, b.offset_field_at[2] + 5),
         "tensor 'norm.weight'",
         {"data offset", "needs 8 bytes"},
         b.offset_field_at[2]});
  }

  // --- tensor data ---
  {
    Spec s = base();
    s.tensors[1].offset = 65;
    const Built b = build(s);
    add({"misaligned_offset",
         b.bytes,
         "tensor 'q.weight'",
         {"data offset 65 is not a multiple of the alignment 32"},
         b.offset_field_at[1]});
  }
  {
    Spec s = base();
    s.alignment = 64;
    s.kvs.push_back(kv_u32("general.alignment", 64));
    s.tensors[2].offset = 160;  // 32-aligned but not 64-aligned
    add({"misaligned_custom_alignment",
         build(s).bytes,
         "tensor 'norm.weight'",
         {"not a multiple of the alignment 64"}});
  }
  {
    Spec s = base();
    s.tensors[1].offset = 32;  // inside tok.weight [0, 64)
    s.data_bytes = 192;
    const Built b = build(s);
    const std::string tok = "[" + std::to_string(b.data_offset) + ", " + std::to_string(b.data_offset + 64) + ")";
    add({"overlapping_tensors",
         b.bytes,
         "tensor 'q.weight'",
         {"overlaps tensor 'tok.weight' " + tok},
         b.offset_field_at[1]});
  }
  {
    Spec s = base();
    s.data_bytes = 100;
    const Built b = build(s);
    const std::string r = "[" + std::to_string(b.data_offset + 128) + ", " + std::to_string(b.data_offset + 160) + ")";
    add({"tensor_past_end_of_file",
         b.bytes,
         "tensor 'norm.weight'",
         {"data " + r + " extends past the end of the file (size " + std::to_string(b.bytes.size()) + ")"},
         b.offset_field_at[2]});
  }
  {
    Spec s = base();
    s.data_bytes = 159;  // norm.weight ends at 160
    add({"tensor_past_end_by_one_byte", build(s).bytes, "tensor 'norm.weight'", {"extends past the end of the file"}});
  }
  {
    Spec s = base();
    s.tensors[2].offset = uint64_t(1) << 62;
    s.data_bytes = 160;
    add({"tensor_offset_huge",
         build(s).bytes,
         "tensor 'norm.weight'",
         {"data [4611686018427388224, 4611686018427388256) extends past the end of the file"}});
  }
  {
    Spec s = base();
    s.tensors[2].offset = std::numeric_limits<uint64_t>::max() - 31;  // aligned, wraps when added
    s.data_bytes = 160;
    add({"tensor_offset_wraps_uint64",
         build(s).bytes,
         "tensor 'norm.weight'",
         {"data offset 18446744073709551584", "is past the end of the file"}});
  }
  {
    Spec s = base();
    s.pad_header = false;
    s.data_bytes = 0;
    add({"data_section_missing", build(s).bytes, "tensor 'tok.weight'", {"extends past the end of the file"}});
  }
  return c;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = make_cases();
  return all;
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("strix_gguf_" + std::to_string(::getpid()) + "_" + name + ".gguf"))
      .string();
}

class MalformedGguf : public ::testing::TestWithParam<size_t> {};

TEST_P(MalformedGguf, refused_with_one_line_naming_the_place) {
  const Case& k = cases()[GetParam()];
  // In-memory parse: an exact-size heap copy, so ASan sees any read past the end.
  std::vector<uint8_t> copy = k.bytes;
  std::string message;
  bool refusal = false;
  try {
    strix::GgufFile::parse(copy.data(), copy.size(), "bad.gguf");
    ADD_FAILURE() << k.name << ": parsed without error";
    return;
  } catch (const strix::Refusal& e) {
    message = e.what();
    refusal = true;
  } catch (const strix::Error& e) {
    message = e.what();
  }
  SCOPED_TRACE(message);
  std::printf("[ message  ] %s\n", message.c_str());
  EXPECT_EQ(refusal, k.refusal) << "Refusal (unsupported) vs Error (malformed)";
  EXPECT_EQ(message.find('\n'), std::string::npos) << "one line";
  EXPECT_EQ(message.rfind("bad.gguf: ", 0), 0u) << "starts with the file name";
  EXPECT_NE(message.find(k.subject + " at byte "), std::string::npos) << "names " << k.subject;
  if (k.at) {
    EXPECT_NE(message.find("at byte " + std::to_string(*k.at) + ":"), std::string::npos);
  }
  for (const auto& s : k.expect) EXPECT_NE(message.find(s), std::string::npos) << "expected: " << s;

  // The same bytes from a file, through open() and the mmap.
  const std::string path = temp_path(k.name);
  write_file(path, k.bytes);
  try {
    strix::GgufFile::open(path);
    ADD_FAILURE() << "open() accepted it";
  } catch (const strix::Error& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": " + k.subject), std::string::npos) << e.what();
  }

  // Negative control: libggml's own parser on the same file.
  {
    RefGguf ref(path);
    if (k.ref == Ref::kRejects) {
      EXPECT_FALSE(ref.ok()) << "libggml accepts " << k.name;
    } else {
      EXPECT_TRUE(ref.ok()) << "libggml was expected to be lenient on " << k.name;
    }
  }
  std::remove(path.c_str());
}

INSTANTIATE_TEST_SUITE_P(Cases, MalformedGguf, ::testing::Range<size_t>(0, cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) { return cases()[info.param].name; });

TEST(MalformedGgufCorpus, has_at_least_40_distinct_cases) {
  EXPECT_GE(cases().size(), 40u);
  std::set<std::string> names;
  for (const auto& k : cases()) EXPECT_TRUE(names.insert(k.name).second) << k.name;
}

// An array longer than libggml's cap of 2^30 items that does fit in the file: a
// sparse file of 1 GiB (no disk used), refused by both readers before any item
// is read.
TEST(MalformedGgufLarge, array_over_2_pow_30_items_is_refused_like_libggml) {
  const uint64_t n = (uint64_t(1) << 30) + 1;
  Spec s;
  s.kvs = {kv("test.huge", kArr, arr(kU8, n, Buf()))};
  const Built b = build(s);
  const std::string path = temp_path("huge_array");
  write_file(path, b.bytes);
  std::filesystem::resize_file(path, b.bytes.size() + n + 64);
  try {
    strix::GgufFile::open(path);
    ADD_FAILURE() << "accepted";
  } catch (const strix::Error& e) {
    EXPECT_NE(std::string(e.what()).find("key 'test.huge' at byte 45: array of 1073741825 items exceeds the limit"),
              std::string::npos)
        << e.what();
  }
  RefGguf ref(path, /*load_data=*/false);
  EXPECT_FALSE(ref.ok());
  std::remove(path.c_str());
}

// Positive control for the whole table: the base file parses in both readers.
TEST(MalformedGgufCorpus, base_file_is_valid_for_strix_and_libggml) {
  const Built b = build(base());
  auto f = strix::GgufFile::parse(b.bytes.data(), b.bytes.size(), "base.gguf");
  ASSERT_EQ(f->tensors().size(), 3u);
  EXPECT_EQ(f->tensors()[1].nbytes, 34u);
  EXPECT_EQ(f->splits()[0].data_offset, b.data_offset);
  const std::string path = temp_path("base");
  write_file(path, b.bytes);
  RefGguf ref(path);
  EXPECT_TRUE(ref.ok());
  std::remove(path.c_str());
}

}  // namespace
