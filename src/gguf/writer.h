// GGUF writer (version 3, little-endian). Files it writes are read back by
// libggml's own gguf_init_from_file with identical keys, values and tensors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/value.h"

namespace strix {

class GgufWriter {
 public:
  // Sets (or replaces, keeping the original position) a metadata key.
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
  size_t n_tensors() const { return tensors_.size(); }

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
  };
  std::vector<GgufKV> kvs_;
  std::vector<Tensor> tensors_;
  uint32_t alignment_ = 32;
};

}  // namespace strix
