// GGUF reader: versions 2 and 3, memory-mapped, validated, split files.
//
// Every malformed file is refused with one line naming the key or tensor and the
// byte offset where the problem was found (strix::Error); nothing is read past the
// end of the mapping. Tensor data is never copied: GgufTensor::data points into the
// map of the split file that holds it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/mmap.h"
#include "gguf/value.h"

namespace strix {

constexpr int kGgufMaxDims = 4;

struct GgufTensor {
  std::string name;
  int n_dims = 0;
  int64_t ne[kGgufMaxDims] = {1, 1, 1, 1};  // ggml order: ne[0] is the row length
  uint32_t type = 0;                        // ggml type id (quant/types.h)
  uint64_t offset = 0;                      // relative to its split's data section
  uint64_t nbytes = 0;
  int split = 0;                            // which split file holds the data
  uint64_t file_offset = 0;                 // absolute offset in that file
  const uint8_t* data = nullptr;            // into the mmap

  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
};

struct GgufSplitInfo {
  std::string path;
  uint32_t version = 0;
  uint64_t alignment = 32;
  uint64_t data_offset = 0;  // start of the tensor data section
  uint64_t n_kv = 0;
  uint64_t n_tensors = 0;
};

class GgufFile {
 public:
  // Opens `path`. When the file is the first of a split set (general key
  // "split.count" > 1, names like model-00001-of-00003.gguf) the other parts are
  // opened too and their tensors merged, as llama.cpp does.
  static std::unique_ptr<GgufFile> open(const std::string& path);
  // Parses an in-memory image (the fuzzer and tests). `data` must outlive the result.
  static std::unique_ptr<GgufFile> parse(const uint8_t* data, size_t size, const std::string& name = "<memory>");

  uint32_t version() const { return splits_.empty() ? 0 : splits_[0].version; }
  uint64_t alignment() const { return splits_.empty() ? 32 : splits_[0].alignment; }
  const std::vector<GgufSplitInfo>& splits() const { return splits_; }

  // Metadata of the first split, in file order.
  const std::vector<GgufKV>& kvs() const { return kvs_; }
  const GgufValue* find(std::string_view key) const;
  // Typed lookups: the default when the key is absent; Error naming the key when
  // the value has the wrong type.
  std::string get_string(std::string_view key, const std::string& def = "") const;
  uint64_t get_u64(std::string_view key, uint64_t def = 0) const;
  int64_t get_i64(std::string_view key, int64_t def = 0) const;
  double get_f64(std::string_view key, double def = 0.0) const;
  bool get_bool(std::string_view key, bool def = false) const;
  std::string architecture() const { return get_string("general.architecture"); }

  // Tensors of all splits, in file order.
  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufTensor* find_tensor(std::string_view name) const;

 private:
  std::vector<MappedFile> maps_;
  std::vector<GgufSplitInfo> splits_;
  std::vector<GgufKV> kvs_;
  std::vector<GgufTensor> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;  // name -> index in tensors_
  void build_index();
  friend class GgufParser;
};

}  // namespace strix
