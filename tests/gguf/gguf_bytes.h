// A tiny raw GGUF byte builder for the reader tests: every field is written by
// hand so malformed files can be made on purpose (wrong counts, bad types,
// truncations). Independent of strix's GgufWriter on purpose.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gguf_test {

// GGUF value type ids and ggml tensor type ids, written out from the spec.
enum : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kStr = 8,
  kArr = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};
enum : uint32_t { kTypeF32 = 0, kTypeF16 = 1, kTypeQ8_0 = 8, kTypeQ4_K = 12, kTypeBF16 = 30 };

class Buf {
 public:
  std::vector<uint8_t> b;

  template <typename T>
  Buf& put(T v) {
    uint8_t tmp[sizeof(T)];
    std::memcpy(tmp, &v, sizeof(T));
    b.insert(b.end(), tmp, tmp + sizeof(T));
    return *this;
  }
  Buf& u8(uint8_t v) { return put(v); }
  Buf& u16(uint16_t v) { return put(v); }
  Buf& u32(uint32_t v) { return put(v); }
  Buf& u64(uint64_t v) { return put(v); }
  Buf& i8(int8_t v) { return put(v); }
  Buf& i16(int16_t v) { return put(v); }
  Buf& i32(int32_t v) { return put(v); }
  Buf& i64(int64_t v) { return put(v); }
  Buf& f32(float v) { return put(v); }
  Buf& f64(double v) { return put(v); }
  Buf& str(std::string_view s) {
    u64(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Buf& raw(const Buf& o) {
    b.insert(b.end(), o.b.begin(), o.b.end());
    return *this;
  }
  Buf& fill(size_t n, uint8_t v = 0) {
    b.insert(b.end(), n, v);
    return *this;
  }
  size_t size() const { return b.size(); }
};

// One metadata pair: key, type id, encoded value.
inline Buf kv(std::string_view key, uint32_t type, const Buf& value) {
  Buf o;
  o.str(key).u32(type).raw(value);
  return o;
}
inline Buf kv_u32(std::string_view key, uint32_t v) { return kv(key, kU32, Buf().u32(v)); }
inline Buf kv_str(std::string_view key, std::string_view v) { return kv(key, kStr, Buf().str(v)); }
// An array value: element type, count, already-encoded items.
inline Buf arr(uint32_t elem, uint64_t n, const Buf& items) {
  Buf o;
  o.u32(elem).u64(n).raw(items);
  return o;
}

// Bytes of a tensor of `n` elements for the few types the tests use (from the
// ggml block layouts: q8_0 = 32 elements in 34 bytes, q4_K = 256 in 144).
inline uint64_t tensor_bytes(uint32_t type, uint64_t n) {
  switch (type) {
    case kTypeF32:
      return 4 * n;
    case kTypeF16:
    case kTypeBF16:
      return 2 * n;
    case kTypeQ8_0:
      return n / 32 * 34;
    case kTypeQ4_K:
      return n / 256 * 144;
    default:
      return 0;
  }
}

struct TensorSpec {
  TensorSpec(std::string name_, std::vector<int64_t> ne_, uint32_t type_ = kTypeF32,
             std::optional<uint64_t> offset_ = std::nullopt)
      : name(std::move(name_)), ne(std::move(ne_)), type(type_), offset(offset_) {}
  std::string name;
  std::vector<int64_t> ne;
  uint32_t type = kTypeF32;
  std::optional<uint64_t> offset;  // default: packed after the previous one, aligned
  std::optional<uint32_t> n_dims;  // default: ne.size()
};

struct Spec {
  std::string magic = "GGUF";
  uint32_t version = 3;
  std::optional<uint64_t> n_tensors, n_kv;  // default: the real counts
  std::vector<Buf> kvs;
  std::vector<TensorSpec> tensors;
  uint64_t alignment = 32;  // used for padding and default offsets only
  bool pad_header = true;
  std::optional<uint64_t> data_bytes;  // default: every tensor, last one padded
  uint8_t data_fill = 0x11;
};

struct Built {
  std::vector<uint8_t> bytes;
  std::vector<uint64_t> kv_at;            // byte of each key
  std::vector<uint64_t> tensor_at;        // byte of each tensor name
  std::vector<uint64_t> offset_field_at;  // byte of each tensor's offset field
  std::vector<uint64_t> offsets;          // each tensor's data offset as written
  uint64_t data_offset = 0;
};

inline uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

inline Built build(const Spec& s) {
  Built out;
  Buf h;
  h.b.insert(h.b.end(), s.magic.begin(), s.magic.end());
  h.u32(s.version).u64(s.n_tensors.value_or(s.tensors.size())).u64(s.n_kv.value_or(s.kvs.size()));
  for (const auto& k : s.kvs) {
    out.kv_at.push_back(h.size());
    h.raw(k);
  }
  uint64_t next = 0;
  for (const auto& t : s.tensors) {
    out.tensor_at.push_back(h.size());
    h.str(t.name).u32(t.n_dims.value_or(static_cast<uint32_t>(t.ne.size())));
    uint64_t n = 1;
    for (int64_t d : t.ne) {
      h.i64(d);
      n *= static_cast<uint64_t>(d);
    }
    h.u32(t.type);
    const uint64_t off = t.offset.value_or(next);
    out.offset_field_at.push_back(h.size());
    out.offsets.push_back(off);
    h.u64(off);
    next = align_up(off + tensor_bytes(t.type, n), s.alignment);
  }
  if (s.pad_header && !s.tensors.empty()) h.fill(align_up(h.size(), s.alignment) - h.size());
  out.data_offset = h.size();
  // Shapes made to overflow give absurd sizes: such specs must say data_bytes.
  if (!s.data_bytes && next > (uint64_t(16) << 20)) throw std::runtime_error("gguf_test::build: set data_bytes");
  h.fill(s.data_bytes.value_or(next), s.data_fill);
  out.bytes = std::move(h.b);
  return out;
}

inline void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw std::runtime_error("cannot write " + path);
}

}  // namespace gguf_test
