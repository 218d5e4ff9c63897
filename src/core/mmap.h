// A whole file in memory, read-only: mapped in place (no copy), or read once
// into anonymous memory on transparent huge pages. Move-only; frees on
// destruction.
//
// Why a copy at all: decode streams every weight once per token, and the
// file's page-cache mapping comes in 4 KiB pages, one TLB entry (and one
// prefetcher restart) per 4 KiB of each row stream; 2 MiB pages remove that.
// libllama gets the same effect for the weights it repacks (Q4_0, Q4_K,
// IQ4_NL), which it copies into anonymous memory at load.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace strix {

enum class WeightMemory {
  kMap,   // mmap in place (every tool that only reads metadata; -ngl offload)
  kCopy,  // read into anonymous huge-page memory (--no-mmap)
  kAuto,  // copy when the file takes at most half of MemAvailable, else map
};
// The policy of MappedFile objects made from now on (process-wide; the
// inference commands set it before loading a model). Default kMap.
void set_weight_memory(WeightMemory m);
WeightMemory weight_memory();

class MappedFile {
 public:
  MappedFile() = default;
  // Throws Error naming the path and the OS reason when the file cannot be mapped.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  bool copied() const { return anon_size_ > 0; }

 private:
  void reset();
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t anon_size_ = 0;  // > 0: the file was read into anonymous (huge-page) memory of this size
  std::string path_;
};

}  // namespace strix
