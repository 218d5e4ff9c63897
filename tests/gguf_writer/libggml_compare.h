// Test helpers: what a test expects a GGUF file to hold, and a comparator that
// reads the file back with libggml's own gguf_init_from_file (the reference) and
// lists every difference. An empty list means libggml sees exactly the expected
// version, alignment, keys (in order), value types and bytes, tensors, offsets
// and tensor data. libggml's re-serialization of its view of the metadata is
// also compared with the metadata the test expects (encoded from the GGUF
// specification) and with the file's bytes: that covers what the C API cannot
// show, such as string bytes after an embedded NUL.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/value.h"
#include "gguf/writer.h"
#include "ref/reference.h"

namespace strix::test {

struct ExpectedTensor {
  std::string name;
  uint32_t type = 0;
  std::vector<int64_t> ne;  // as given to the writer, ne[0] first
  std::vector<uint8_t> data;
};

struct ExpectedFile {
  std::vector<GgufKV> kvs;  // in file order
  std::vector<ExpectedTensor> tensors;
  uint32_t alignment = 32;
};

template <typename T>
std::vector<uint8_t> bytes_of(T v) {
  std::vector<uint8_t> out(sizeof v);
  std::memcpy(out.data(), &v, sizeof v);
  return out;
}

// The wire bytes of a scalar, derived from the value's typed accessors.
inline std::vector<uint8_t> scalar_bytes(const GgufValue& v) {
  switch (v.type()) {
    case GgufType::UINT8:
      return bytes_of(static_cast<uint8_t>(v.as_u64()));
    case GgufType::INT8:
      return bytes_of(static_cast<int8_t>(v.as_i64()));
    case GgufType::UINT16:
      return bytes_of(static_cast<uint16_t>(v.as_u64()));
    case GgufType::INT16:
      return bytes_of(static_cast<int16_t>(v.as_i64()));
    case GgufType::UINT32:
      return bytes_of(static_cast<uint32_t>(v.as_u64()));
    case GgufType::INT32:
      return bytes_of(static_cast<int32_t>(v.as_i64()));
    case GgufType::UINT64:
      return bytes_of(v.as_u64());
    case GgufType::INT64:
      return bytes_of(v.as_i64());
    case GgufType::FLOAT32:
      return bytes_of(static_cast<uint32_t>(v.raw_bits()));
    case GgufType::FLOAT64:
      return bytes_of(v.raw_bits());
    case GgufType::BOOL:
      return bytes_of(static_cast<uint8_t>(v.as_bool() ? 1 : 0));
    default:
      throw Error("scalar_bytes: not a scalar");
  }
}

// libggml functions the reference loader does not bind.
struct ExtraGguf {
  size_t (*get_meta_size)(const ref::gguf_context*);
  void (*get_meta_data)(const ref::gguf_context*, void*);
  ref::gguf_context* (*init_from_buffer)(const void*, size_t, ref::GgufInitParams);
  static const ExtraGguf& get() {
    static const ExtraGguf e = [] {
      const auto& lib = ref::LibGgml::get().lib();
      ExtraGguf x{};
      x.get_meta_size = lib.fn<decltype(x.get_meta_size)>("gguf_get_meta_size");
      x.get_meta_data = lib.fn<decltype(x.get_meta_data)>("gguf_get_meta_data");
      x.init_from_buffer = lib.fn<decltype(x.init_from_buffer)>("gguf_init_from_buffer");
      return x;
    }();
    return e;
  }
};

struct GgufCtxDeleter {
  void operator()(ref::gguf_context* c) const { ref::LibGgml::get().gguf_free(c); }
};
using GgufCtx = std::unique_ptr<ref::gguf_context, GgufCtxDeleter>;

inline GgufCtx libggml_open(const std::string& path) {
  return GgufCtx(ref::LibGgml::get().gguf_init_from_file(path.c_str(), ref::GgufInitParams{true, nullptr}));
}

inline GgufCtx libggml_open_buffer(const std::vector<uint8_t>& bytes) {
  return GgufCtx(ExtraGguf::get().init_from_buffer(bytes.data(), bytes.size(), ref::GgufInitParams{true, nullptr}));
}

inline std::vector<uint8_t> read_file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

inline void write_file_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// The C API hands strings out as C strings: compare up to the first NUL.
inline bool c_string_matches(const char* got, const std::string& want) {
  const size_t n = std::min(want.find('\0'), want.size());
  return got != nullptr && std::strlen(got) == n && std::memcmp(got, want.data(), n) == 0;
}

// Byte size of a tensor as libggml computes it (its own type table).
inline size_t libggml_nbytes(uint32_t type, const std::vector<int64_t>& ne) {
  const auto& g = ref::LibGgml::get();
  size_t rows = 1;
  for (size_t d = 1; d < ne.size(); ++d) rows *= static_cast<size_t>(ne[d]);
  return static_cast<size_t>(ne[0] / g.blck_size(static_cast<int>(type))) * g.type_size(static_cast<int>(type)) * rows;
}

inline size_t pad_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// The metadata bytes the GGUF specification gives for `exp` (header, kvs, tensor
// infos, zero padding), with n_dims as libggml re-serializes it: trailing 1s
// dropped. Written from the specification, independently of GgufWriter.
inline void put_le(std::vector<uint8_t>& out, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
inline void put_str(std::vector<uint8_t>& out, const std::string& s) {
  put_le(out, s.size(), 8);
  out.insert(out.end(), s.begin(), s.end());
}
inline void put_value(std::vector<uint8_t>& out, const GgufValue& v) {
  if (v.is_string()) {
    put_str(out, v.as_string());
  } else if (v.is_array()) {
    put_le(out, static_cast<uint32_t>(v.elem_type()), 4);
    put_le(out, v.items().size(), 8);
    for (const auto& item : v.items()) put_value(out, item);
  } else {
    const auto b = scalar_bytes(v);
    out.insert(out.end(), b.begin(), b.end());
  }
}
inline std::vector<uint8_t> expected_metadata(const ExpectedFile& exp) {
  std::vector<uint8_t> out = {'G', 'G', 'U', 'F'};
  put_le(out, 3, 4);
  put_le(out, exp.tensors.size(), 8);
  put_le(out, exp.kvs.size(), 8);
  for (const auto& kv : exp.kvs) {
    put_str(out, kv.key);
    put_le(out, static_cast<uint32_t>(kv.value.type()), 4);
    put_value(out, kv.value);
  }
  size_t offset = 0;
  for (const auto& t : exp.tensors) {
    size_t n_dims = t.ne.size();
    while (n_dims > 1 && t.ne[n_dims - 1] == 1) --n_dims;
    put_str(out, t.name);
    put_le(out, n_dims, 4);
    for (size_t d = 0; d < n_dims; ++d) put_le(out, static_cast<uint64_t>(t.ne[d]), 8);
    put_le(out, t.type, 4);
    put_le(out, offset, 8);
    offset = pad_up(offset + t.data.size(), exp.alignment);
  }
  out.resize(pad_up(out.size(), exp.alignment), 0);
  return out;
}

// Every difference between `image` (a whole file's bytes, parsed by libggml as
// `ctx`) and `exp`.
inline std::vector<std::string> compare_ctx(const ref::gguf_context* ctx, const std::vector<uint8_t>& image,
                                            const ExpectedFile& exp) {
  const auto& g = ref::LibGgml::get();
  std::vector<std::string> diffs;
  auto diff = [&](const std::string& s) { diffs.push_back(s); };
  if (ctx == nullptr) return {"libggml refused the file"};

  if (g.gguf_get_version(ctx) != 3) diff("version " + std::to_string(g.gguf_get_version(ctx)));
  if (g.gguf_get_alignment(ctx) != exp.alignment) diff("alignment " + std::to_string(g.gguf_get_alignment(ctx)));

  const int64_t n_kv = g.gguf_get_n_kv(ctx);
  if (n_kv != static_cast<int64_t>(exp.kvs.size())) diff("n_kv " + std::to_string(n_kv));
  for (int64_t i = 0; i < std::min<int64_t>(n_kv, static_cast<int64_t>(exp.kvs.size())); ++i) {
    const GgufKV& kv = exp.kvs[static_cast<size_t>(i)];
    const std::string where = "kv " + std::to_string(i) + " '" + kv.key + "'";
    if (!c_string_matches(g.gguf_get_key(ctx, i), kv.key)) diff(where + ": key is '" + g.gguf_get_key(ctx, i) + "'");
    const int type = g.gguf_get_kv_type(ctx, i);
    if (type != static_cast<int>(kv.value.type())) {
      diff(where + ": type " + std::to_string(type));
      continue;  // libggml asserts on getters of the wrong type
    }
    const GgufValue& v = kv.value;
    if (v.is_array()) {
      const int at = g.gguf_get_arr_type(ctx, i);
      const size_t n = g.gguf_get_arr_n(ctx, i);
      if (at != static_cast<int>(v.elem_type())) {
        diff(where + ": array type " + std::to_string(at));
        continue;
      }
      if (n != v.items().size()) {
        diff(where + ": array length " + std::to_string(n));
        continue;
      }
      if (v.elem_type() == GgufType::STRING) {
        for (size_t j = 0; j < n; ++j) {
          if (!c_string_matches(g.gguf_get_arr_str(ctx, i, j), v.items()[j].as_string())) {
            diff(where + ": item " + std::to_string(j));
          }
        }
      } else if (n > 0) {
        std::vector<uint8_t> want;
        for (const auto& item : v.items()) {
          const auto b = scalar_bytes(item);
          want.insert(want.end(), b.begin(), b.end());
        }
        if (std::memcmp(g.gguf_get_arr_data(ctx, i), want.data(), want.size()) != 0) diff(where + ": array data");
      }
    } else if (v.is_string()) {
      if (!c_string_matches(g.gguf_get_val_str(ctx, i), v.as_string())) diff(where + ": string value");
    } else {
      const auto want = scalar_bytes(v);
      if (std::memcmp(g.gguf_get_val_data(ctx, i), want.data(), want.size()) != 0) diff(where + ": value bytes");
    }
  }

  const int64_t n_tensors = g.gguf_get_n_tensors(ctx);
  if (n_tensors != static_cast<int64_t>(exp.tensors.size())) diff("n_tensors " + std::to_string(n_tensors));
  const size_t data_offset = g.gguf_get_data_offset(ctx);
  if (n_tensors > 0 && data_offset % exp.alignment != 0) diff("data offset " + std::to_string(data_offset));
  size_t want_offset = 0;  // running sum of padded sizes, as libggml requires
  bool trailing_unit_dims = false;
  for (int64_t i = 0; i < std::min<int64_t>(n_tensors, static_cast<int64_t>(exp.tensors.size())); ++i) {
    const ExpectedTensor& t = exp.tensors[static_cast<size_t>(i)];
    const std::string where = "tensor " + std::to_string(i) + " '" + t.name + "'";
    if (t.ne.size() > 1 && t.ne.back() == 1) trailing_unit_dims = true;
    if (!c_string_matches(g.gguf_get_tensor_name(ctx, i), t.name)) diff(where + ": name");
    if (g.gguf_get_tensor_type(ctx, i) != static_cast<int>(t.type)) diff(where + ": type");
    const int64_t* ne = g.gguf_get_tensor_ne(ctx, i);
    for (size_t d = 0; d < 4; ++d) {
      const int64_t want = d < t.ne.size() ? t.ne[d] : 1;
      if (ne[d] != want) diff(where + ": ne[" + std::to_string(d) + "] = " + std::to_string(ne[d]));
    }
    const size_t offset = g.gguf_get_tensor_offset(ctx, i);
    if (offset != want_offset) diff(where + ": offset " + std::to_string(offset));
    const size_t size = g.gguf_get_tensor_size(ctx, i);
    if (size != t.data.size() || size != libggml_nbytes(t.type, t.ne)) diff(where + ": size " + std::to_string(size));
    const size_t at = data_offset + offset;
    if (at + t.data.size() > image.size()) {
      diff(where + ": data past the end of the file");
    } else {
      if (std::memcmp(image.data() + at, t.data.data(), t.data.size()) != 0) diff(where + ": data bytes");
      const size_t pad_end = std::min(image.size(), data_offset + pad_up(offset + size, exp.alignment));
      for (size_t b = at + t.data.size(); b < pad_end; ++b) {
        if (image[b] != 0) {
          diff(where + ": nonzero padding at byte " + std::to_string(b));
          break;
        }
      }
    }
    want_offset = pad_up(want_offset + t.data.size(), exp.alignment);
  }
  if (n_tensors > 0 && image.size() != data_offset + want_offset) diff("file size " + std::to_string(image.size()));

  // libggml's own serialization of what it read must equal the metadata the
  // test expects (this covers string bytes after an embedded NUL, which the C
  // API cannot show) and, unless libggml dropped trailing 1 dims, the file's.
  const size_t meta_size = ExtraGguf::get().get_meta_size(ctx);
  std::vector<uint8_t> meta(meta_size);
  ExtraGguf::get().get_meta_data(ctx, meta.data());
  if (n_tensors > 0 && !trailing_unit_dims && meta_size != data_offset)
    diff("libggml metadata size " + std::to_string(meta_size));
  if (meta != expected_metadata(exp)) diff("libggml's re-serialized metadata differs from the expected metadata");
  if (!trailing_unit_dims && (meta_size > image.size() || std::memcmp(meta.data(), image.data(), meta_size) != 0)) {
    diff("libggml's re-serialized metadata differs from the file");
  }
  return diffs;
}

inline std::vector<std::string> compare_with_libggml(const std::string& path, const ExpectedFile& exp) {
  GgufCtx ctx = libggml_open(path);
  if (!ctx) return {"libggml refused " + path};
  return compare_ctx(ctx.get(), read_file_bytes(path), exp);
}

// Adds a tensor of random bytes, sized by libggml's type table, to both the
// writer and the expectation.
inline void add_random_tensor(GgufWriter& w, ExpectedFile& exp, const std::string& name, uint32_t type,
                              const std::vector<int64_t>& ne, std::mt19937_64& rng) {
  ExpectedTensor t{name, type, ne, std::vector<uint8_t>(libggml_nbytes(type, ne))};
  for (auto& b : t.data) b = static_cast<uint8_t>(rng());
  w.add_tensor(name, type, ne, t.data.data(), t.data.size());
  exp.tensors.push_back(std::move(t));
}

// A fresh directory under the system temp dir, removed with the object.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("strix_gguf_writer_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x + "\n";
  return s;
}

}  // namespace strix::test
