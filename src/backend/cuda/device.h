// The GPU the CUDA backend runs on: device 0, one stream, one cuBLAS handle,
// and the device memory it owns. Every CUDA and cuBLAS call goes through
// check() / check_blas(), which throw strix::Error naming the call; an
// allocation that does not fit says how much it wanted, how much is free and
// what to lower.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <string>

namespace strix::cuda {

void check(cudaError_t e, const char* what);
void check_blas(cublasStatus_t s, const char* what);

// Owns one device allocation (cudaMalloc; freed on destruction).
class DevMem {
 public:
  DevMem() = default;
  // `what` names the buffer in the out-of-memory message.
  DevMem(size_t bytes, const char* what);
  ~DevMem();
  DevMem(DevMem&& o) noexcept : p_(o.p_), bytes_(o.bytes_) { o.p_ = nullptr, o.bytes_ = 0; }
  DevMem& operator=(DevMem&& o) noexcept;
  DevMem(const DevMem&) = delete;
  DevMem& operator=(const DevMem&) = delete;

  template <class T = void>
  T* as() const {
    return static_cast<T*>(p_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

// Host memory that copies to and from the GPU: page-locked (cudaHostAlloc),
// so a copy is one DMA that does not stage through the driver's pageable
// buffer and a small copy does not block the host for a second round trip.
// Pageable when pinning fails or STRIX_CUDA_PINNED=0 (A/B of its cost). It
// only grows; resize() keeps no contents.
class HostMem {
 public:
  HostMem() = default;
  ~HostMem();
  HostMem(HostMem&& o) noexcept : p_(o.p_), bytes_(o.bytes_), pinned_(o.pinned_) { o.p_ = nullptr, o.bytes_ = 0; }
  HostMem& operator=(HostMem&& o) noexcept;
  HostMem(const HostMem&) = delete;
  HostMem& operator=(const HostMem&) = delete;

  // At least `bytes`; throws strix::Error naming `what` when no memory is left.
  void reserve(size_t bytes, const char* what);
  void* data() const { return p_; }

 private:
  void release();
  void* p_ = nullptr;
  size_t bytes_ = 0;
  bool pinned_ = false;
};

// n values of T in a HostMem (T trivially copyable).
template <class T>
class HostVec {
 public:
  void resize(size_t n, const char* what) {
    mem_.reserve(n * sizeof(T), what);
    n_ = n;
  }
  T* data() const { return static_cast<T*>(mem_.data()); }
  size_t size() const { return n_; }
  T& operator[](size_t i) const { return data()[i]; }

 private:
  HostMem mem_;
  size_t n_ = 0;
};

class Device {
 public:
  // Device 0. Throws Refusal when no CUDA device is usable (with the driver's reason).
  Device();
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  cudaStream_t stream() const { return stream_; }
  cublasHandle_t blas() const { return blas_; }
  const std::string& name() const { return name_; }
  int sm_count() const { return sm_count_; }
  // Waits for the stream; a kernel's execution error surfaces here, named by `what`.
  void sync(const char* what) const;

 private:
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  std::string name_;
  int sm_count_ = 0;
};

// Whether environment variable `name` is set to `value`: the backend's A/B
// switches (each caller keeps the answer in a static: read once per process).
bool env_is(const char* name, const char* value);

// Whether a CUDA device is usable; `why` gets the reason when not.
bool device_available(std::string* why);

// Device-to-device copy bandwidth (bytes read + bytes written per second) over
// a buffer of `bytes`, the median of `reps` timed copies after a warmup.
double copy_bandwidth(const Device& dev, size_t bytes, int reps);

}  // namespace strix::cuda
