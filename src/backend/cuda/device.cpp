#include "backend/cuda/device.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.h"

namespace strix::cuda {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(e));
}

void check_blas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    throw Error(std::string("cuBLAS error in ") + what + ": " + cublasGetStatusString(s));
  }
}

DevMem::DevMem(size_t bytes, const char* what) : bytes_(bytes) {
  if (bytes == 0) return;
  const cudaError_t e = cudaMalloc(&p_, bytes);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // clear the sticky-free error state
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    auto mib = [](size_t b) { return std::to_string((b + (size_t{1} << 20) - 1) >> 20); };
    throw Error("CUDA out of memory: " + std::string(what) + " needs " + mib(bytes) + " MiB, the GPU has " +
                mib(free_b) + " MiB free of " + mib(total_b) +
                " MiB (offload fewer layers with -ngl N, lower the context -c or the micro-batch -ub, "
                "or use a smaller model / quantization)");
  }
  p_ = e == cudaSuccess ? p_ : nullptr;
  check(e, what);
}

DevMem::~DevMem() {
  if (p_) cudaFree(p_);
}

DevMem& DevMem::operator=(DevMem&& o) noexcept {
  if (this != &o) {
    if (p_) cudaFree(p_);
    p_ = o.p_;
    bytes_ = o.bytes_;
    o.p_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

bool env_is(const char* name, const char* value) {
  const char* e = std::getenv(name);
  return e != nullptr && std::string(e) == value;
}

namespace {
bool pinning_on() {
  static const bool on = !env_is("STRIX_CUDA_PINNED", "0");
  return on;
}
}  // namespace

void HostMem::release() {
  if (p_ == nullptr) return;
  if (pinned_) {
    cudaFreeHost(p_);
  } else {
    std::free(p_);
  }
  p_ = nullptr, bytes_ = 0, pinned_ = false;
}

HostMem::~HostMem() { release(); }

HostMem& HostMem::operator=(HostMem&& o) noexcept {
  if (this != &o) {
    release();
    p_ = o.p_, bytes_ = o.bytes_, pinned_ = o.pinned_;
    o.p_ = nullptr, o.bytes_ = 0;
  }
  return *this;
}

void HostMem::reserve(size_t bytes, const char* what) {
  if (bytes <= bytes_) return;
  release();
  if (pinning_on() && cudaHostAlloc(&p_, bytes, cudaHostAllocDefault) == cudaSuccess) {
    pinned_ = true;
  } else {
    cudaGetLastError();  // a refused pin: fall back to pageable memory
    p_ = std::malloc(bytes);
    if (p_ == nullptr) throw Error(std::string("out of host memory: ") + what);
  }
  bytes_ = bytes;
}

bool device_available(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    if (why) *why = std::string("no usable CUDA device: ") + cudaGetErrorString(e);
    return false;
  }
  if (n == 0) {
    if (why) *why = "no CUDA device is present";
    return false;
  }
  return true;
}

Device::Device() {
  std::string why;
  if (!device_available(&why)) throw Refusal(why);
  check(cudaSetDevice(0), "cudaSetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  name_ = prop.name;
  sm_count_ = prop.multiProcessorCount;
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  check_blas(cublasCreate(&blas_), "cublasCreate");
  check_blas(cublasSetStream(blas_, stream_), "cublasSetStream");
}

Device::~Device() {
  if (blas_) cublasDestroy(blas_);
  if (stream_) cudaStreamDestroy(stream_);
}

void Device::sync(const char* what) const { check(cudaStreamSynchronize(stream_), what); }

double copy_bandwidth(const Device& dev, size_t bytes, int reps) {
  DevMem a(bytes, "the copy-bandwidth source"), b(bytes, "the copy-bandwidth destination");
  // not zeros: fill with a pattern
  check(cudaMemsetAsync(a.as(), 0x5a, bytes, dev.stream()), "cudaMemsetAsync");
  cudaEvent_t e0, e1;
  check(cudaEventCreate(&e0), "cudaEventCreate");
  check(cudaEventCreate(&e1), "cudaEventCreate");
  std::vector<float> ms;
  for (int r = -2; r < reps; ++r) {
    check(cudaEventRecord(e0, dev.stream()), "cudaEventRecord");
    check(cudaMemcpyAsync(b.as(), a.as(), bytes, cudaMemcpyDeviceToDevice, dev.stream()), "cudaMemcpyAsync D2D");
    check(cudaEventRecord(e1, dev.stream()), "cudaEventRecord");
    check(cudaEventSynchronize(e1), "cudaEventSynchronize");
    float t = 0;
    check(cudaEventElapsedTime(&t, e0, e1), "cudaEventElapsedTime");
    if (r >= 0) ms.push_back(t);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  std::sort(ms.begin(), ms.end());
  const double med = ms[ms.size() / 2] * 1e-3;
  return 2.0 * static_cast<double>(bytes) / med;
}

}  // namespace strix::cuda
