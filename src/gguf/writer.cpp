// GGUF v3 writer.
//
// File layout (every field little-endian):
//   "GGUF", u32 version = 3, i64 n_tensors, i64 n_kv
//   n_kv      x { string key, u32 value type, value }
//   n_tensors x { string name, u32 n_dims, i64 ne[n_dims], u32 ggml type, u64 offset }
//   zero padding up to a multiple of `alignment`           <- data section starts here
//   tensor data: tensor i at data_start + offset[i], each followed by zero padding
//   to the next multiple of `alignment` (the last one too, as libggml writes it)
// A string is a u64 byte count and the bytes (no NUL). An array is u32 element
// type, u64 count, then the elements; an element of an array of arrays is itself
// (u32 type, u64 count, elements). libggml requires offset[i] to be exactly the
// running sum of the padded sizes, so offsets are never chosen freely.
#include "gguf/writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "quant/types.h"

namespace strix {

namespace {

constexpr uint32_t kGgufVersion = 3;
constexpr uint32_t kDefaultAlignment = 32;
// ggml's GGML_MAX_NAME is 64 bytes including the terminating NUL, and
// gguf_init_from_file rejects names of 64 bytes or more.
constexpr size_t kMaxTensorNameBytes = 63;
constexpr size_t kMaxDims = 4;
constexpr const char* kAlignmentKey = "general.alignment";
// The keys llama.cpp's gguf-split writes (LLM_KV_SPLIT_*), with its types.
constexpr const char* kSplitNoKey = "split.no";                       // u16, 0-based
constexpr const char* kSplitCountKey = "split.count";                 // u16
constexpr const char* kSplitTensorsCountKey = "split.tensors.count";  // i32, whole set
// Small writes are gathered into buffers of this size; tensor data larger than it
// goes to write(2) directly from its source.
constexpr size_t kWriteBufferBytes = 8u << 20;

bool is_power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }
uint64_t pad_to(uint64_t n, uint64_t alignment) { return (n + alignment - 1) & ~(alignment - 1); }

// One tensor as the encoder sees it: where its bytes come from.
struct TensorSource {
  const std::string* name;
  uint32_t type;
  const std::vector<int64_t>* ne;
  size_t nbytes;
  const uint8_t* bytes;                // owned or borrowed data, or
  const GgufWriter::TensorFill* fill;  // produced on demand
};

// Appends little-endian metadata fields to a byte vector.
class Encoder {
 public:
  explicit Encoder(std::vector<uint8_t>& out) : out_(out) {}
  void le(uint64_t v, size_t nbytes) {
    for (size_t i = 0; i < nbytes; ++i) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void u32(uint32_t v) { le(v, 4); }
  void u64(uint64_t v) { le(v, 8); }
  void str(const std::string& s) {
    u64(s.size());
    out_.insert(out_.end(), s.begin(), s.end());
  }
  // The value without its leading type tag.
  void value_body(const GgufValue& v) {
    switch (v.type()) {
      case GgufType::STRING:
        str(v.as_string());
        return;
      case GgufType::ARRAY:
        u32(static_cast<uint32_t>(v.elem_type()));
        u64(v.items().size());
        for (const auto& item : v.items()) value_body(item);
        return;
      case GgufType::BOOL:
        le(v.as_bool() ? 1 : 0, 1);
        return;
      default:
        // Integers keep their two's complement bits, floats their exact IEEE
        // bits (NaN payloads included); the low bytes are the wire value.
        le(v.raw_bits(), gguf_scalar_size(v.type()));
        return;
    }
  }

 private:
  std::vector<uint8_t>& out_;
};

// Header, metadata and tensor infos, padded to the alignment; offsets[i] is
// tensor i's offset in the data section, data_bytes the padded section size.
struct Layout {
  std::vector<uint8_t> meta;
  std::vector<uint64_t> offsets;
  uint64_t data_bytes = 0;
};

Layout plan_layout(const std::vector<GgufKV>& kvs, const std::vector<TensorSource>& tensors, uint32_t alignment) {
  Layout l;
  Encoder e(l.meta);
  e.u32(0x46554747u);  // "GGUF" read as a little-endian u32
  e.u32(kGgufVersion);
  e.u64(tensors.size());
  e.u64(kvs.size());
  for (const auto& kv : kvs) {
    e.str(kv.key);
    e.u32(static_cast<uint32_t>(kv.value.type()));
    e.value_body(kv.value);
  }
  l.offsets.reserve(tensors.size());
  for (const auto& t : tensors) {
    l.offsets.push_back(l.data_bytes);
    e.str(*t.name);
    e.u32(static_cast<uint32_t>(t.ne->size()));
    for (int64_t d : *t.ne) e.u64(static_cast<uint64_t>(d));
    e.u32(t.type);
    e.u64(l.data_bytes);
    l.data_bytes += pad_to(t.nbytes, alignment);
  }
  l.meta.resize(pad_to(l.meta.size(), alignment), 0);
  return l;
}

class Sink {
 public:
  virtual ~Sink() = default;
  virtual void put(const uint8_t* p, size_t n) = 0;
  void zeros(size_t n) {
    static const uint8_t kZeros[4096] = {};
    while (n > 0) {
      const size_t k = std::min(n, sizeof kZeros);
      put(kZeros, k);
      n -= k;
    }
  }
};

class VectorSink final : public Sink {
 public:
  explicit VectorSink(std::vector<uint8_t>& out) : out_(out) {}
  void put(const uint8_t* p, size_t n) override { out_.insert(out_.end(), p, p + n); }

 private:
  std::vector<uint8_t>& out_;
};

// Writes to a temporary file next to `path` and renames it over `path` on
// commit(), so readers never see a half-written file; the temporary file is
// removed when the sink is destroyed without commit().
class FileSink final : public Sink {
 public:
  explicit FileSink(const std::string& path) : path_(path) {
    static std::atomic<uint64_t> counter{0};
    for (int attempt = 0; fd_ < 0; ++attempt) {
      tmp_ = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
      fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd_ < 0 && (errno != EEXIST || attempt > 100)) fail("cannot create " + tmp_ + " to write " + path_);
    }
    buf_.reserve(kWriteBufferBytes);
  }
  ~FileSink() override {
    if (fd_ >= 0) {
      ::close(fd_);
      ::unlink(tmp_.c_str());
    }
  }
  FileSink(const FileSink&) = delete;
  FileSink& operator=(const FileSink&) = delete;

  void put(const uint8_t* p, size_t n) override {
    if (buf_.size() + n <= kWriteBufferBytes) {
      buf_.insert(buf_.end(), p, p + n);
      return;
    }
    flush();
    if (n >= kWriteBufferBytes) {
      write_all(p, n);
    } else {
      buf_.insert(buf_.end(), p, p + n);
    }
  }

  void commit() {
    flush();
    if (::close(fd_) != 0) {
      fd_ = -1;
      ::unlink(tmp_.c_str());
      fail("cannot write " + path_);
    }
    fd_ = -1;
    if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
      const int err = errno;
      ::unlink(tmp_.c_str());
      errno = err;
      fail("cannot rename " + tmp_ + " to " + path_);
    }
  }

 private:
  [[noreturn]] static void fail(const std::string& what) { throw Error(what + ": " + std::strerror(errno)); }

  void flush() {
    write_all(buf_.data(), buf_.size());
    buf_.clear();
  }
  void write_all(const uint8_t* p, size_t n) {
    while (n > 0) {
      const ssize_t w = ::write(fd_, p, std::min<size_t>(n, size_t{1} << 30));
      if (w < 0) {
        if (errno == EINTR) continue;
        fail("cannot write " + path_);
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
  }

  std::string path_;
  std::string tmp_;
  int fd_ = -1;
  std::vector<uint8_t> buf_;
};

void emit(Sink& sink, const Layout& layout, const std::vector<TensorSource>& tensors, uint32_t alignment) {
  sink.put(layout.meta.data(), layout.meta.size());
  std::vector<uint8_t> scratch;  // for produced tensors, one at a time
  for (const auto& t : tensors) {
    const uint8_t* bytes = t.bytes;
    if (t.fill != nullptr) {
      scratch.assign(t.nbytes, 0);
      (*t.fill)(scratch.data(), t.nbytes);
      bytes = scratch.data();
    }
    if (t.nbytes > 0) sink.put(bytes, t.nbytes);
    sink.zeros(pad_to(t.nbytes, alignment) - t.nbytes);
  }
}

std::string shape_string(const std::vector<int64_t>& ne) {
  std::string s = "[";
  for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

// Gives the byte size of a tensor, after checking everything libggml's reader
// checks (and that the dims are positive); Error names the tensor.
size_t checked_tensor_bytes(const std::string& name, uint32_t type, const std::vector<int64_t>& ne) {
  if (name.empty()) throw Error("GGUF tensor name must not be empty");
  if (name.size() > kMaxTensorNameBytes) {
    throw Error("GGUF tensor name '" + name + "' is " + std::to_string(name.size()) + " bytes; ggml allows at most " +
                std::to_string(kMaxTensorNameBytes));
  }
  if (ne.empty() || ne.size() > kMaxDims) {
    throw Error("GGUF tensor '" + name + "' has " + std::to_string(ne.size()) + " dimensions; 1 to 4 are allowed");
  }
  for (size_t d = 0; d < ne.size(); ++d) {
    if (ne[d] <= 0) {
      throw Error("GGUF tensor '" + name + "' has ne[" + std::to_string(d) + "] = " + std::to_string(ne[d]) +
                  "; dimensions must be positive");
    }
  }
  const TypeTraits* tt = type_traits(type);
  if (tt == nullptr) throw Error("GGUF tensor '" + name + "' has unknown ggml type id " + std::to_string(type));
  if (ne[0] % tt->block_size != 0) {
    throw Error("GGUF tensor '" + name + "' of type " + tt->name + " has ne[0] = " + std::to_string(ne[0]) +
                ", not a multiple of its block size " + std::to_string(tt->block_size));
  }
  // ggml keeps the element count and the byte size in int64 / size_t.
  int64_t n_elements = ne[0];
  uint64_t n_rows = 1;
  for (size_t d = 1; d < ne.size(); ++d) {
    if (__builtin_mul_overflow(n_elements, ne[d], &n_elements) ||
        __builtin_mul_overflow(n_rows, static_cast<uint64_t>(ne[d]), &n_rows)) {
      throw Error("GGUF tensor '" + name + "' of shape " + shape_string(ne) + " has too many elements");
    }
  }
  const uint64_t row_bytes = static_cast<uint64_t>(ne[0] / tt->block_size) * tt->type_size;
  uint64_t nbytes = 0;
  if (__builtin_mul_overflow(row_bytes, n_rows, &nbytes) || nbytes > std::numeric_limits<size_t>::max() / 2) {
    throw Error("GGUF tensor '" + name + "' of shape " + shape_string(ne) + " is too large");
  }
  return static_cast<size_t>(nbytes);
}

// gguf_set_val semantics (what gguf-split relies on): drop the key, append it.
void set_last(std::vector<GgufKV>& kvs, const std::string& key, GgufValue value) {
  kvs.erase(std::remove_if(kvs.begin(), kvs.end(), [&](const GgufKV& kv) { return kv.key == key; }), kvs.end());
  kvs.push_back({key, std::move(value)});
}

void check_value_types(const std::string& key, const GgufValue& v) {
  if (!gguf_type_valid(static_cast<uint32_t>(v.type()))) {
    throw Error("GGUF key '" + key + "' has invalid value type " + std::to_string(static_cast<uint32_t>(v.type())));
  }
  if (!v.is_array()) return;
  if (!gguf_type_valid(static_cast<uint32_t>(v.elem_type()))) {
    throw Error("GGUF key '" + key + "' is an array of invalid type " +
                std::to_string(static_cast<uint32_t>(v.elem_type())));
  }
  for (const auto& item : v.items()) check_value_types(key, item);
}

}  // namespace

void GgufWriter::set(const std::string& key, GgufValue value) {
  if (key.empty()) throw Error("GGUF metadata key must not be empty");
  check_value_types(key, value);
  if (key == kAlignmentKey) {
    // libggml refuses any other type for this key, and non-powers of two.
    if (value.type() != GgufType::UINT32) {
      throw Error(std::string(kAlignmentKey) + " must be a uint32, not " + gguf_type_name(value.type()));
    }
    if (!is_power_of_two(value.as_u64())) {
      throw Error(std::string(kAlignmentKey) + " must be a power of two, not " + std::to_string(value.as_u64()));
    }
    alignment_ = static_cast<uint32_t>(value.as_u64());
  }
  for (auto& kv : kvs_) {
    if (kv.key == key) {
      kv.value = std::move(value);
      return;
    }
  }
  kvs_.push_back({key, std::move(value)});
}

void GgufWriter::remove(const std::string& key) {
  kvs_.erase(std::remove_if(kvs_.begin(), kvs_.end(), [&](const GgufKV& kv) { return kv.key == key; }), kvs_.end());
  if (key == kAlignmentKey) alignment_ = kDefaultAlignment;
}

void GgufWriter::set_alignment(uint32_t alignment) {
  if (!is_power_of_two(alignment)) {
    throw Error("GGUF alignment must be a power of two, not " + std::to_string(alignment));
  }
  if (alignment == kDefaultAlignment) {
    remove(kAlignmentKey);
  } else {
    set(kAlignmentKey, GgufValue::u32(alignment));
  }
}

GgufWriter::Tensor& GgufWriter::new_tensor(const std::string& name, uint32_t ggml_type, const std::vector<int64_t>& ne,
                                           size_t nbytes) {
  const size_t expected = checked_tensor_bytes(name, ggml_type, ne);
  if (nbytes != expected) {
    throw Error("GGUF tensor '" + name + "' (" + type_name(ggml_type) + " " + shape_string(ne) + ") needs " +
                std::to_string(expected) + " bytes, given " + std::to_string(nbytes));
  }
  if (tensor_names_.count(name) != 0) throw Error("duplicate GGUF tensor name '" + name + "'");
  tensor_names_.insert(name);
  Tensor& t = tensors_.emplace_back();
  t.name = name;
  t.type = ggml_type;
  t.ne = ne;
  t.nbytes = nbytes;
  return t;
}

void GgufWriter::add_tensor(const std::string& name, uint32_t ggml_type, const std::vector<int64_t>& ne,
                            const void* data, size_t nbytes) {
  if (data == nullptr) throw Error("GGUF tensor '" + name + "' given no data");
  Tensor& t = new_tensor(name, ggml_type, ne, nbytes);
  const auto* p = static_cast<const uint8_t*>(data);
  t.data.assign(p, p + nbytes);
}

void GgufWriter::add_tensor_ref(const std::string& name, uint32_t ggml_type, const std::vector<int64_t>& ne,
                                const void* data, size_t nbytes) {
  if (data == nullptr) throw Error("GGUF tensor '" + name + "' given no data");
  new_tensor(name, ggml_type, ne, nbytes).ext = static_cast<const uint8_t*>(data);
}

void GgufWriter::add_tensor_fill(const std::string& name, uint32_t ggml_type, const std::vector<int64_t>& ne,
                                 TensorFill fill) {
  if (!fill) throw Error("GGUF tensor '" + name + "' given no fill function");
  new_tensor(name, ggml_type, ne, checked_tensor_bytes(name, ggml_type, ne)).fill = std::move(fill);
}

namespace {

template <typename T>
TensorSource source_of(const T& t) {
  TensorSource s{&t.name, t.type, &t.ne, t.nbytes, nullptr, nullptr};
  if (t.fill) {
    s.fill = &t.fill;
  } else {
    s.bytes = t.ext != nullptr ? t.ext : t.data.data();
  }
  return s;
}

}  // namespace

std::vector<uint8_t> GgufWriter::to_bytes() const {
  std::vector<TensorSource> sources;
  sources.reserve(tensors_.size());
  for (const auto& t : tensors_) sources.push_back(source_of(t));
  const Layout layout = plan_layout(kvs_, sources, alignment_);
  std::vector<uint8_t> out;
  out.reserve(layout.meta.size() + layout.data_bytes);
  VectorSink sink(out);
  emit(sink, layout, sources, alignment_);
  return out;
}

void GgufWriter::write(const std::string& path) const {
  std::vector<TensorSource> sources;
  sources.reserve(tensors_.size());
  for (const auto& t : tensors_) sources.push_back(source_of(t));
  const Layout layout = plan_layout(kvs_, sources, alignment_);
  FileSink sink(path);
  emit(sink, layout, sources, alignment_);
  sink.commit();
}

std::vector<std::string> GgufWriter::write_split(const std::string& prefix, size_t max_tensors) const {
  if (max_tensors == 0) throw Error("GGUF split of " + prefix + ": at most 0 tensors per file is impossible");
  const size_t n_tensors = tensors_.size();
  const size_t n_split = std::max<size_t>(1, (n_tensors + max_tensors - 1) / max_tensors);
  if (n_split > std::numeric_limits<uint16_t>::max()) {
    throw Error("GGUF split of " + prefix + " would need " + std::to_string(n_split) +
                " files; split.count is a uint16");
  }
  if (n_tensors > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    throw Error("GGUF split of " + prefix + ": " + std::to_string(n_tensors) +
                " tensors do not fit split.tensors.count (int32)");
  }
  std::vector<std::string> paths;
  for (size_t i = 0; i < n_split; ++i) {
    char suffix[48];
    std::snprintf(suffix, sizeof suffix, "-%05zu-of-%05zu.gguf", i + 1, n_split);
    paths.push_back(prefix + suffix);
  }
  for (size_t i = 0; i < n_split; ++i) {
    // As gguf-split: the first file carries all metadata, every file gets
    // split.no, then split.tensors.count, then split.count (which gguf-split sets
    // last, once the count is known). A non-default alignment is repeated in every
    // file, since each file's data section is padded to it.
    std::vector<GgufKV> kvs;
    if (i == 0) {
      kvs = kvs_;
    } else if (alignment_ != kDefaultAlignment) {
      kvs.push_back({kAlignmentKey, GgufValue::u32(alignment_)});
    }
    set_last(kvs, kSplitNoKey, GgufValue::u16(static_cast<uint16_t>(i)));
    set_last(kvs, kSplitTensorsCountKey, GgufValue::i32(static_cast<int32_t>(n_tensors)));
    set_last(kvs, kSplitCountKey, GgufValue::u16(static_cast<uint16_t>(n_split)));

    std::vector<TensorSource> sources;
    for (size_t j = i * max_tensors; j < std::min(n_tensors, (i + 1) * max_tensors); ++j) {
      sources.push_back(source_of(tensors_[j]));
    }
    const Layout layout = plan_layout(kvs, sources, alignment_);
    FileSink sink(paths[i]);
    emit(sink, layout, sources, alignment_);
    sink.commit();
  }
  return paths;
}

}  // namespace strix
