// The GPU test fixture shared by the CUDA kernel tests: skips when the build
// has no CUDA backend or no GPU is present (CI), uploads inputs, poisons
// outputs (0xff bytes: NaN floats, -1 ints) and downloads after a sync; and
// attention_decode's usual arguments (decode_args).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/cuda_context.h"
#include "backend/cuda/device.h"
#include "backend/cuda/kernels.h"

namespace strix::cuda {

class CudaFixture : public ::testing::Test {
 protected:
  explicit CudaFixture(uint32_t seed) : rng_(seed) {}
  void SetUp() override {
    std::string why;
    if (!available(&why)) GTEST_SKIP() << why;
    dev_ = std::make_unique<Device>();
  }
  cudaStream_t st() const { return dev_->stream(); }

  template <class T>
  DevMem up(const std::vector<T>& v) {
    DevMem m(sizeof(T) * std::max<size_t>(v.size(), 1), "test input");
    check(cudaMemcpy(m.as(), v.data(), sizeof(T) * v.size(), cudaMemcpyHostToDevice), "upload");
    return m;
  }
  // an output buffer of `bytes`, every byte 0xff
  DevMem poisoned_bytes(size_t bytes) {
    DevMem m(bytes, "test output");
    check(cudaMemset(m.as(), 0xff, bytes), "poison");
    return m;
  }
  // a poisoned (NaN) output buffer of n floats
  DevMem poisoned_floats(size_t n) { return poisoned_bytes(sizeof(float) * n); }
  template <class T>
  std::vector<T> down(const DevMem& m, size_t n) {
    dev_->sync("test kernel");
    std::vector<T> v(n);
    check(cudaMemcpy(v.data(), m.as(), sizeof(T) * n, cudaMemcpyDeviceToHost), "download");
    return v;
  }
  std::vector<float> randn(size_t n, float scale = 1.0f) {
    std::normal_distribution<float> d(0.0f, scale);
    std::vector<float> v(n);
    for (auto& x : v) x = d(rng_);
    return v;
  }

  std::unique_ptr<Device> dev_;
  std::mt19937 rng_;
};

// attention_decode's arguments for one token of head_dim hd over a cache of cap cells.
inline AttnDecode decode_args(const DevMem& q, const DevMem& k, const DevMem& v, const DevMem& pos, const DevMem& seq,
                              int n_head, int n_kv, int hd, int cap, const DevMem& out) {
  AttnDecode ad;
  ad.q = q.as<float>(), ad.k = k.as<float>(), ad.v = v.as<float>();
  ad.pos = pos.as<int32_t>(), ad.seq = seq.as<int32_t>();
  ad.n_head = n_head, ad.n_head_kv = n_kv, ad.head_dim_k = ad.head_dim_v = hd;
  ad.kq_scale = 1.0f / std::sqrt(static_cast<float>(hd));
  ad.max_cells = cap;
  ad.out = out.as<float>();
  return ad;
}

}  // namespace strix::cuda
