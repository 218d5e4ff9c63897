// GGUF writer (version 3, little-endian). Files it writes are read back by
// libggml's own gguf_init_from_file with identical keys, values and tensors.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

#include "gguf/value.h"

namespace strix {

class GgufWriter {
 public:
  // Sets (or replaces, keeping the original position) a metadata key.
  // general.alignment must be a uint32 power of two and sets the alignment.
  // Arrays of arrays are written per the GGUF spec (each item: u32 type, u64
  // count, items), but the pinned libggml refuses to load any file holding one.
  void set(const std::string& key, GgufValue value);
  void set_u32(const std::string& key, uint32_t v) { set(key, GgufValue::u32(v)); }
  void set_i32(const std::string& key, int32_t v) { set(key, GgufValue::i32(v)); }
  void set_u64(const std::string& key, uint64_t v) { set(key, GgufValue::u64(v)); }
  void set_f32(const std::string& key, float v) { set(key, GgufValue::f32(v)); }
  void set_bool(const std::string& key, bool v) { set(key, GgufValue::boolean(v)); }
  void set_str(const std::string& key, const std::string& v) { set(key, GgufValue::str(v)); }
  void remove(const std::string& key);
  const std::vector<GgufKV>& kvs() const { return kvs_; }

  // Data alignment of the tensor section (general.alignment is written when it is
  // not the default 32).
  void set_alignment(uint32_t alignment);

  // Adds a tensor; `data` is copied and must hold exactly the bytes that the type
  // and shape need (ggml row size * rows). `ne` has 1..4 dims, ne[0] first.
  void add_tensor(const std::string& name, uint32_t ggml_type, const std::vector<int64_t>& ne, const void* data,
                  size_t nbytes);
  // Adds a tensor without copying: `data` must stay valid until the last write.
  void add_tensor_ref(const std::string& name, uint32_t ggml_type, const std::vector<int64_t>& ne, const void* data,
                      size_t nbytes);
  // Adds a tensor whose bytes are produced while writing (one tensor in memory
  // at a time): `fill(dst, nbytes)` must fill all `nbytes` of dst; it is called
  // once per to_bytes()/write()/write_split().
  using TensorFill = std::function<void(uint8_t* dst, size_t nbytes)>;
  void add_tensor_fill(const std::string& name, uint32_t ggml_type, const std::vector<int64_t>& ne, TensorFill fill);
  size_t n_tensors() const { return tensors_.size(); }
  uint32_t alignment() const { return alignment_; }

  std::vector<uint8_t> to_bytes() const;
  void write(const std::string& path) const;
  // Writes a split set PREFIX-0000i-of-0000n.gguf with at most `max_tensors` per
  // file, with the split.* keys llama.cpp's gguf-split writes; returns the paths.
  std::vector<std::string> write_split(const std::string& prefix, size_t max_tensors) const;

 private:
  struct Tensor {
    std::string name;
    uint32_t type;
    std::vector<int64_t> ne;
    std::vector<uint8_t> data;
    // Exactly one source of bytes: `data` (owned), `ext` (borrowed) or `fill`.
    const uint8_t* ext = nullptr;
    TensorFill fill;
    size_t nbytes = 0;
  };
  Tensor& new_tensor(const std::string& name, uint32_t ggml_type, const std::vector<int64_t>& ne, size_t nbytes);
  std::vector<GgufKV> kvs_;
  std::vector<Tensor> tensors_;
  std::unordered_set<std::string> tensor_names_;
  uint32_t alignment_ = 32;
};

}  // namespace strix
