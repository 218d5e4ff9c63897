// SHA-256 (FIPS 180-4), streaming: the hub names LFS files by the SHA-256 of their
// bytes (the ETag of /resolve/), so a download is verified before it enters the cache.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace strix::download {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t n);
  // Finishes the hash; the object must not be updated afterwards.
  std::array<uint8_t, 32> digest();
  std::string hex_digest();  // 64 lowercase hex digits

 private:
  void compress(const uint8_t* block);  // one 64-byte block into state_

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

// The SHA-256 of a whole file, read in chunks; throws strix::Error when it cannot be read.
std::string sha256_file_hex(const std::string& path);

}  // namespace strix::download
