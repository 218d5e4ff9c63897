#include "core/mmap.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <utility>

#include "core/error.h"

namespace strix {

namespace {

std::atomic<WeightMemory> g_weight_memory{WeightMemory::kMap};

// MemAvailable of /proc/meminfo in bytes (0 when unknown).
uint64_t mem_available() {
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (!f) return 0;
  char line[256];
  uint64_t kb = 0;
  while (std::fgets(line, sizeof line, f)) {
    if (std::sscanf(line, "MemAvailable: %" SCNu64 " kB", &kb) == 1) break;
  }
  std::fclose(f);
  return kb * 1024;
}

}  // namespace

void set_weight_memory(WeightMemory m) { g_weight_memory = m; }
WeightMemory weight_memory() { return g_weight_memory; }

MappedFile::MappedFile(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("cannot open " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    throw Error("cannot stat " + path + ": " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error("cannot map " + path + ": not a regular file");
  }
  size_ = static_cast<size_t>(st.st_size);
  const WeightMemory policy = g_weight_memory;
  const bool copy = policy == WeightMemory::kCopy ||
                    (policy == WeightMemory::kAuto && static_cast<uint64_t>(size_) <= mem_available() / 2);
  if (size_ > 0 && copy) {
    constexpr size_t kHuge = size_t{2} << 20;
    anon_size_ = (size_ + kHuge - 1) / kHuge * kHuge;
    void* p = ::mmap(nullptr, anon_size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      const int e = errno;
      ::close(fd);
      throw Error("cannot allocate memory for " + path + ": " + std::strerror(e));
    }
    ::madvise(p, anon_size_, MADV_HUGEPAGE);
    size_t done = 0;
    while (done < size_) {
      const ssize_t r = ::pread(fd, static_cast<uint8_t*>(p) + done, size_ - done, static_cast<off_t>(done));
      if (r <= 0) {
        const int e = errno;
        ::munmap(p, anon_size_);
        ::close(fd);
        throw Error("cannot read " + path + ": " + std::strerror(e));
      }
      done += static_cast<size_t>(r);
    }
    ::mprotect(p, anon_size_, PROT_READ);
    data_ = static_cast<const uint8_t*>(p);
  } else if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      const int e = errno;
      ::close(fd);
      throw Error("cannot map " + path + ": " + std::strerror(e));
    }
    data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
}

MappedFile::~MappedFile() { reset(); }

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      anon_size_(std::exchange(other.anon_size_, 0)),
      path_(std::move(other.path_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    anon_size_ = std::exchange(other.anon_size_, 0);
    path_ = std::move(other.path_);
  }
  return *this;
}

void MappedFile::reset() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), anon_size_ ? anon_size_ : size_);
  data_ = nullptr;
  size_ = 0;
  anon_size_ = 0;
}

}  // namespace strix
