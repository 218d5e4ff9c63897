// GGUF reader: header, metadata, tensor infos and data layout, all validated
// against the bytes actually present before anything is trusted.
//
// Layout (little-endian, v2/v3):
//   "GGUF" u32 version, u64 n_tensors, u64 n_kv,
//   n_kv x { string key, u32 type, value },
//   n_tensors x { string name, u32 n_dims, i64 ne[n_dims], u32 ggml_type, u64 offset },
//   padding to `general.alignment`, then the data section.
// string = u64 length + bytes; array = u32 elem_type + u64 count + items.
//
// Every failure is one line "<file>: <key or tensor> at byte N: <problem>".
// Counts are checked against the remaining bytes before any allocation.
#include "gguf/reader.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <unordered_set>

#include "core/error.h"
#include "quant/types.h"

namespace strix {

namespace {

constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as little-endian u32
constexpr uint64_t kDefaultAlignment = 32;
constexpr int kMaxArrayDepth = 64;  // arrays of arrays: bounds the recursion
constexpr uint64_t kMaxArrayItems = uint64_t(1) << 30;
// Smallest possible encodings, used to reject counts that cannot fit.
constexpr uint64_t kMinKvBytes = 8 + 4;                      // empty key + type (+ value)
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;  // name len, n_dims, ne[0], type, offset

// A name from the file, made safe for a one-line message.
std::string printable(std::string_view s) {
  std::string out;
  const size_t limit = 96;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i == limit) {
      out += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f || c == '\'' || c == '\\') {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string key_subject(std::string_view key) { return "key '" + printable(key) + "'"; }
std::string tensor_subject(std::string_view name) { return "tensor '" + printable(name) + "'"; }

std::string range(uint64_t a, uint64_t b) {
  std::string out = "[";
  out += std::to_string(a);
  out += ", ";
  out += std::to_string(b);
  out += ")";
  return out;
}

bool is_pow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// Where each tensor info was found, for messages about its data.
struct TensorAt {
  uint64_t info = 0;    // byte of its name
  uint64_t offset = 0;  // byte of its offset field
};

}  // namespace

// Parses one file image (one split). Keeps a cursor; never reads past `size_`.
class GgufParser {
 public:
  GgufParser(const uint8_t* data, size_t size, std::string name) : data_(data), size_(size), name_(std::move(name)) {}

  void parse(GgufSplitInfo& info, std::vector<GgufKV>& kvs, std::vector<GgufTensor>& tensors, int split);

  // Split-set helpers (GgufFile::open).
  static void open_parts(GgufFile& file);

 private:
  [[noreturn]] void fail(uint64_t at, const std::string& subject, const std::string& what) const {
    throw Error(name_ + ": " + subject + " at byte " + std::to_string(at) + ": " + what);
  }
  uint64_t remaining() const { return size_ - pos_; }
  std::string past_end(uint64_t n) const {
    return "needs " + std::to_string(n) + " bytes but only " + std::to_string(remaining()) +
           " remain before the end of the file (size " + std::to_string(size_) + ")";
  }
  void need(uint64_t n, const std::string& subject, const char* what) const {
    if (n > remaining()) fail(pos_, subject, std::string(what) + " " + past_end(n));
  }
  template <typename T>
  T read(const std::string& subject, const char* what) {
    need(sizeof(T), subject, what);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string read_string(const std::string& subject, const char* what);
  GgufValue read_value(GgufType type, const std::string& subject, int depth);
  void read_header(GgufSplitInfo& info);

  const uint8_t* data_;
  size_t size_;
  std::string name_;
  uint64_t pos_ = 0;
};

std::string GgufParser::read_string(const std::string& subject, const char* what) {
  const uint64_t at = pos_;
  const auto len = read<uint64_t>(subject, what);
  if (len > remaining()) {
    fail(at, subject,
         std::string(what) + " of length " + std::to_string(len) + " extends past the end of the file (size " +
             std::to_string(size_) + ")");
  }
  std::string s(reinterpret_cast<const char*>(data_ + pos_), static_cast<size_t>(len));
  pos_ += len;
  return s;
}

GgufValue GgufParser::read_value(GgufType type, const std::string& subject, int depth) {
  switch (type) {
    case GgufType::UINT8:
      return GgufValue::u8(read<uint8_t>(subject, "uint8 value"));
    case GgufType::INT8:
      return GgufValue::i8(read<int8_t>(subject, "int8 value"));
    case GgufType::UINT16:
      return GgufValue::u16(read<uint16_t>(subject, "uint16 value"));
    case GgufType::INT16:
      return GgufValue::i16(read<int16_t>(subject, "int16 value"));
    case GgufType::UINT32:
      return GgufValue::u32(read<uint32_t>(subject, "uint32 value"));
    case GgufType::INT32:
      return GgufValue::i32(read<int32_t>(subject, "int32 value"));
    case GgufType::UINT64:
      return GgufValue::u64(read<uint64_t>(subject, "uint64 value"));
    case GgufType::INT64:
      return GgufValue::i64(read<int64_t>(subject, "int64 value"));
    case GgufType::FLOAT32:
      return GgufValue::f32(read<float>(subject, "float32 value"));
    case GgufType::FLOAT64:
      return GgufValue::f64(read<double>(subject, "float64 value"));
    case GgufType::BOOL:
      // Any nonzero byte is true, as libggml reads it.
      return GgufValue::boolean(read<uint8_t>(subject, "bool value") != 0);
    case GgufType::STRING:
      return GgufValue::str(read_string(subject, "string"));
    case GgufType::ARRAY:
      break;
  }
  // An array: u32 element type, u64 count, items.
  const uint64_t at = pos_;
  if (depth >= kMaxArrayDepth) fail(at, subject, "arrays nested deeper than " + std::to_string(kMaxArrayDepth));
  const auto elem_id = read<uint32_t>(subject, "array element type");
  if (!gguf_type_valid(elem_id)) fail(at, subject, "array of unknown GGUF value type " + std::to_string(elem_id));
  const auto elem = static_cast<GgufType>(elem_id);
  const auto n = read<uint64_t>(subject, "array length");
  // The smallest encoding of one item: its scalar size, a string's length
  // prefix, or a nested array's type + count.
  uint64_t min_item = gguf_scalar_size(elem);
  if (elem == GgufType::STRING) min_item = 8;
  if (elem == GgufType::ARRAY) min_item = 12;
  if (n > remaining() / min_item) {
    fail(at, subject,
         "array of " + std::to_string(n) + " " + gguf_type_name(elem) + " items cannot fit in the remaining " +
             std::to_string(remaining()) + " bytes (file size " + std::to_string(size_) + ")");
  }
  // libggml's own cap (GGUF_MAX_ARRAY_ELEMENTS); each item costs ~90 bytes here.
  if (n > kMaxArrayItems) {
    fail(at, subject,
         "array of " + std::to_string(n) + " items exceeds the limit of " + std::to_string(kMaxArrayItems));
  }
  std::vector<GgufValue> items;
  // The count fits in the file, but reserve only a bounded amount up front.
  items.reserve(static_cast<size_t>(std::min<uint64_t>(n, 1u << 16)));
  for (uint64_t i = 0; i < n; ++i) items.push_back(read_value(elem, subject, depth + 1));
  return GgufValue::array(elem, std::move(items));
}

void GgufParser::read_header(GgufSplitInfo& info) {
  const std::string subject = "header";
  if (size_ < 4) fail(0, subject, "file of " + std::to_string(size_) + " bytes is too short for the GGUF magic");
  const auto magic = read<uint32_t>(subject, "magic");
  if (magic != kGgufMagic) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "not a GGUF file (magic %02x %02x %02x %02x, expected \"GGUF\")", data_[0], data_[1],
                  data_[2], data_[3]);
    fail(0, subject, buf);
  }
  const auto version = read<uint32_t>(subject, "version");
  // A big-endian file's small version number reads byte-swapped: 3 -> 0x03000000.
  if (version != 0 && (version & 0xffffu) == 0) {
    throw Refusal(name_ + ": header at byte 4: big-endian GGUF is not supported (version field reads " +
                  std::to_string(version) + ")");
  }
  if (version == 1) {
    throw Refusal(name_ + ": header at byte 4: GGUF version 1 is not supported (only versions 2 and 3)");
  }
  if (version != 2 && version != 3) fail(4, subject, "unsupported GGUF version " + std::to_string(version));
  info.version = version;
  const uint64_t counts_at = pos_;
  info.n_tensors = read<uint64_t>(subject, "n_tensors");
  info.n_kv = read<uint64_t>(subject, "n_kv");
  // Each kv and tensor info has a minimum size; reject counts the file cannot hold.
  const uint64_t rem = remaining();
  if (info.n_kv > rem / kMinKvBytes) {
    fail(counts_at + 8, subject,
         "n_kv " + std::to_string(info.n_kv) + " cannot fit in the remaining " + std::to_string(rem) + " bytes");
  }
  if (info.n_tensors > rem / kMinTensorInfoBytes ||
      info.n_kv * kMinKvBytes + info.n_tensors * kMinTensorInfoBytes > rem) {
    fail(counts_at, subject,
         "n_tensors " + std::to_string(info.n_tensors) + " (with n_kv " + std::to_string(info.n_kv) +
             ") cannot fit in the remaining " + std::to_string(rem) + " bytes");
  }
}

void GgufParser::parse(GgufSplitInfo& info, std::vector<GgufKV>& kvs, std::vector<GgufTensor>& tensors, int split) {
  info.path = name_;
  read_header(info);

  // Metadata.
  std::unordered_set<std::string> keys;
  uint64_t alignment_at = 0;
  size_t alignment_index = SIZE_MAX;
  kvs.clear();
  kvs.reserve(static_cast<size_t>(std::min<uint64_t>(info.n_kv, 4096)));
  for (uint64_t i = 0; i < info.n_kv; ++i) {
    const uint64_t at = pos_;
    const std::string index_subject = "key #" + std::to_string(i);
    std::string key = read_string(index_subject, "key name");
    if (key.empty()) fail(at, index_subject, "empty key name");
    const std::string subject = key_subject(key);
    if (!keys.insert(key).second) fail(at, subject, "duplicate key");
    const uint64_t type_at = pos_;
    const auto type_id = read<uint32_t>(subject, "value type");
    if (!gguf_type_valid(type_id)) fail(type_at, subject, "unknown GGUF value type " + std::to_string(type_id));
    GgufValue value = read_value(static_cast<GgufType>(type_id), subject, 0);
    kvs.push_back(GgufKV{std::move(key), std::move(value)});
    if (kvs.back().key == "general.alignment") {
      alignment_at = at;
      alignment_index = kvs.size() - 1;
    }
  }
  info.alignment = kDefaultAlignment;
  if (alignment_index != SIZE_MAX) {
    const GgufValue* alignment_value = &kvs[alignment_index].value;
    const std::string subject = key_subject("general.alignment");
    if (alignment_value->type() != GgufType::UINT32) {
      fail(alignment_at, subject,
           std::string("must be of type uint32, found ") + gguf_type_name(alignment_value->type()));
    }
    const uint64_t a = alignment_value->as_u64();
    if (!is_pow2(a)) fail(alignment_at, subject, "alignment " + std::to_string(a) + " is not a nonzero power of two");
    info.alignment = a;
  }

  // Tensor infos.
  std::unordered_set<std::string> names;
  std::vector<TensorAt> where;
  const size_t first = tensors.size();
  for (uint64_t i = 0; i < info.n_tensors; ++i) {
    TensorAt at;
    at.info = pos_;
    const std::string index_subject = "tensor #" + std::to_string(i);
    GgufTensor t;
    t.name = read_string(index_subject, "tensor name");
    if (t.name.empty()) fail(at.info, index_subject, "empty tensor name");
    const std::string subject = tensor_subject(t.name);
    if (!names.insert(t.name).second) fail(at.info, subject, "duplicate tensor name");
    const uint64_t dims_at = pos_;
    const auto n_dims = read<uint32_t>(subject, "n_dims");
    if (n_dims < 1 || n_dims > static_cast<uint32_t>(kGgufMaxDims)) {
      fail(dims_at, subject, "n_dims " + std::to_string(n_dims) + " is outside 1.." + std::to_string(kGgufMaxDims));
    }
    t.n_dims = static_cast<int>(n_dims);
    std::string shape = "[";
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t ne_at = pos_;
      t.ne[d] = read<int64_t>(subject, "dimension");
      if (t.ne[d] <= 0) {
        fail(ne_at, subject,
             "dimension " + std::to_string(d) + " is " + std::to_string(t.ne[d]) + " (must be positive)");
      }
      shape += (d ? ", " : "") + std::to_string(t.ne[d]);
    }
    shape += "]";
    int64_t n_elements = 1;
    for (int d = 0; d < kGgufMaxDims; ++d) {
      if (__builtin_mul_overflow(n_elements, t.ne[d], &n_elements)) {
        fail(dims_at, subject, "element count of shape " + shape + " overflows int64");
      }
    }
    const uint64_t type_at = pos_;
    t.type = read<uint32_t>(subject, "tensor type");
    const TypeTraits* traits = type_traits(t.type);
    if (traits == nullptr) {
      throw Refusal(name_ + ": " + subject + " at byte " + std::to_string(type_at) + ": unknown ggml tensor type id " +
                    std::to_string(t.type));
    }
    if (t.ne[0] % traits->block_size != 0) {
      fail(dims_at + 4, subject,
           "ne[0] = " + std::to_string(t.ne[0]) + " is not a multiple of the " + traits->name + " block size " +
               std::to_string(traits->block_size));
    }
    const auto n_blocks = static_cast<uint64_t>(n_elements / traits->block_size);
    if (n_blocks > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / traits->type_size) {
      fail(dims_at, subject, "byte size of shape " + shape + " " + traits->name + " overflows int64");
    }
    t.nbytes = n_blocks * traits->type_size;
    at.offset = pos_;
    t.offset = read<uint64_t>(subject, "data offset");
    t.split = split;
    tensors.push_back(std::move(t));
    where.push_back(at);
  }

  // The data section starts at the aligned end of the header (libggml pads only
  // when there are tensors).
  info.data_offset = pos_;
  if (info.n_tensors > 0) info.data_offset = (pos_ + info.alignment - 1) / info.alignment * info.alignment;

  // Tensor data: aligned, inside the file, not overlapping.
  std::vector<size_t> order;
  for (size_t i = first; i < tensors.size(); ++i) {
    GgufTensor& t = tensors[i];
    const TensorAt& at = where[i - first];
    const std::string subject = tensor_subject(t.name);
    if (t.offset % info.alignment != 0) {
      fail(at.offset, subject,
           "data offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
               std::to_string(info.alignment));
    }
    const uint64_t room = size_ - std::min<uint64_t>(size_, info.data_offset);
    if (t.offset > room || t.nbytes > room - t.offset) {
      uint64_t start = 0, end = 0;
      if (__builtin_add_overflow(info.data_offset, t.offset, &start) || __builtin_add_overflow(start, t.nbytes, &end)) {
        // The range does not even fit in 64 bits: name the offset instead.
        fail(at.offset, subject,
             "data offset " + std::to_string(t.offset) + " (after the data section start " +
                 std::to_string(info.data_offset) + ") is past the end of the file (size " + std::to_string(size_) +
                 ")");
      }
      fail(at.offset, subject,
           "data " + range(start, end) + " extends past the end of the file (size " + std::to_string(size_) + ")");
    }
    t.file_offset = info.data_offset + t.offset;
    t.data = data_ + t.file_offset;
    order.push_back(i);
  }
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return tensors[a].file_offset < tensors[b].file_offset; });
  for (size_t k = 1; k < order.size(); ++k) {
    const GgufTensor& prev = tensors[order[k - 1]];
    const GgufTensor& cur = tensors[order[k]];
    if (cur.file_offset < prev.file_offset + prev.nbytes) {
      fail(where[order[k] - first].offset, tensor_subject(cur.name),
           "data " + range(cur.file_offset, cur.file_offset + cur.nbytes) + " overlaps tensor '" +
               printable(prev.name) + "' " + range(prev.file_offset, prev.file_offset + prev.nbytes));
    }
  }
}

namespace {

// "model-00001-of-00003.gguf" -> prefix "model"; false when the name does not
// follow llama.cpp's split naming for part `no` (1-based) of `count`.
bool split_prefix(const std::string& path, uint64_t no, uint64_t count, std::string& prefix) {
  char suffix[64];
  std::snprintf(suffix, sizeof suffix, "-%05llu-of-%05llu.gguf", static_cast<unsigned long long>(no),
                static_cast<unsigned long long>(count));
  const size_t n = std::strlen(suffix);
  if (path.size() <= n || path.compare(path.size() - n, n, suffix) != 0) return false;
  prefix = path.substr(0, path.size() - n);
  return true;
}

std::string split_path(const std::string& prefix, uint64_t no, uint64_t count) {
  char suffix[64];
  std::snprintf(suffix, sizeof suffix, "-%05llu-of-%05llu.gguf", static_cast<unsigned long long>(no),
                static_cast<unsigned long long>(count));
  return prefix + suffix;
}

// An integer split key of one part; Error naming the file and key when it has
// another type.
bool split_key(const std::vector<GgufKV>& kvs, const std::string& path, const char* key, uint64_t& out) {
  for (const auto& kv : kvs) {
    if (kv.key != key) continue;
    if (!kv.value.is_integer()) {
      throw Error(path + ": key '" + key + "': expected an integer, found " + gguf_type_name(kv.value.type()));
    }
    try {
      out = kv.value.as_u64();
    } catch (const Error& e) {
      throw Error(path + ": key '" + key + "': " + e.what());
    }
    return true;
  }
  return false;
}

}  // namespace

void GgufParser::open_parts(GgufFile& file) {
  const std::string first_path = file.splits_[0].path;  // a copy: splits_ grows below
  uint64_t count = 0;
  if (!split_key(file.kvs_, first_path, "split.count", count) || count <= 1) return;
  uint64_t no = 0;
  split_key(file.kvs_, first_path, "split.no", no);
  if (no != 0) {
    throw Error(first_path + ": is split part " + std::to_string(no + 1) + " of " + std::to_string(count) +
                "; open the first part (-00001-of-" + std::to_string(count) + ".gguf)");
  }
  if (count > 99999) throw Error(first_path + ": key 'split.count': " + std::to_string(count) + " parts is too many");
  std::string prefix;
  if (!split_prefix(first_path, 1, count, prefix)) {
    throw Error(first_path + ": key 'split.count' says " + std::to_string(count) +
                " parts but the file name does not end in " + split_path("", 1, count) +
                ", so the other parts cannot be found");
  }
  for (uint64_t i = 1; i < count; ++i) {
    const std::string path = split_path(prefix, i + 1, count);
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      throw Error(first_path + ": split part " + std::to_string(i + 1) + " of " + std::to_string(count) +
                  " is missing: " + path);
    }
    MappedFile map(path);
    GgufSplitInfo info;
    std::vector<GgufKV> kvs;
    GgufParser parser(map.data(), map.size(), path);
    parser.parse(info, kvs, file.tensors_, static_cast<int>(i));
    uint64_t part_no = 0, part_count = 0;
    if (!split_key(kvs, path, "split.no", part_no) || part_no != i) {
      throw Error(path + ": key 'split.no' should be " + std::to_string(i) + " for split part " +
                  std::to_string(i + 1));
    }
    if (!split_key(kvs, path, "split.count", part_count) || part_count != count) {
      throw Error(path + ": key 'split.count' should be " + std::to_string(count) + " as in " + first_path);
    }
    file.maps_.push_back(std::move(map));
    file.splits_.push_back(std::move(info));
  }
  uint64_t expected = 0;
  if (split_key(file.kvs_, first_path, "split.tensors.count", expected) && expected != file.tensors_.size()) {
    throw Error(first_path + ": key 'split.tensors.count' says " + std::to_string(expected) + " tensors but the " +
                std::to_string(count) + " parts hold " + std::to_string(file.tensors_.size()));
  }
}

std::unique_ptr<GgufFile> GgufFile::parse(const uint8_t* data, size_t size, const std::string& name) {
  auto file = std::unique_ptr<GgufFile>(new GgufFile());
  GgufSplitInfo info;
  GgufParser parser(data, size, name);
  parser.parse(info, file->kvs_, file->tensors_, 0);
  file->splits_.push_back(std::move(info));
  file->build_index();
  return file;
}

std::unique_ptr<GgufFile> GgufFile::open(const std::string& path) {
  auto file = std::unique_ptr<GgufFile>(new GgufFile());
  MappedFile map(path);
  GgufSplitInfo info;
  GgufParser parser(map.data(), map.size(), path);
  parser.parse(info, file->kvs_, file->tensors_, 0);
  file->maps_.push_back(std::move(map));
  file->splits_.push_back(std::move(info));
  GgufParser::open_parts(*file);
  file->build_index();
  return file;
}

void GgufFile::build_index() {
  tensor_index_.clear();
  tensor_index_.reserve(tensors_.size());
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (!tensor_index_.emplace(tensors_[i].name, i).second) {
      const GgufTensor& t = tensors_[i];
      throw Error(splits_[static_cast<size_t>(t.split)].path + ": tensor '" + printable(t.name) +
                  "': duplicate tensor name across split parts");
    }
  }
}

const GgufValue* GgufFile::find(std::string_view key) const {
  for (const auto& kv : kvs_) {
    if (kv.key == key) return &kv.value;
  }
  return nullptr;
}

const GgufTensor* GgufFile::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {

template <typename Fn>
auto typed(const GgufValue* v, std::string_view key, Fn fn) {
  try {
    return fn(*v);
  } catch (const Refusal&) {
    throw;
  } catch (const Error& e) {
    throw Error("GGUF key '" + std::string(key) + "': " + e.what());
  }
}

}  // namespace

std::string GgufFile::get_string(std::string_view key, const std::string& def) const {
  const GgufValue* v = find(key);
  return v ? typed(v, key, [](const GgufValue& x) { return x.as_string(); }) : def;
}

uint64_t GgufFile::get_u64(std::string_view key, uint64_t def) const {
  const GgufValue* v = find(key);
  return v ? typed(v, key, [](const GgufValue& x) { return x.as_u64(); }) : def;
}

int64_t GgufFile::get_i64(std::string_view key, int64_t def) const {
  const GgufValue* v = find(key);
  return v ? typed(v, key, [](const GgufValue& x) { return x.as_i64(); }) : def;
}

double GgufFile::get_f64(std::string_view key, double def) const {
  const GgufValue* v = find(key);
  return v ? typed(v, key, [](const GgufValue& x) { return x.as_f64(); }) : def;
}

bool GgufFile::get_bool(std::string_view key, bool def) const {
  const GgufValue* v = find(key);
  return v ? typed(v, key, [](const GgufValue& x) { return x.as_bool(); }) : def;
}

}  // namespace strix
