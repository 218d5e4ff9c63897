// Row-wise elementwise ops: RMS norm (plain and fused with the residual add),
// add, bias, SwiGLU and row gathering.
#include "backend/cuda/common.cuh"
#include "backend/cuda/kernels.h"

namespace strix::cuda {

namespace {

constexpr int kNormThreads = 256;


// add: x += y first (fused residual add), then out = rms_norm(x) * w.
template <bool kAdd>
__global__ void rms_norm_kernel(float* __restrict__ x, const float* __restrict__ y, int64_t dim, int64_t xs,
                                float* __restrict__ out, int64_t os, const float* __restrict__ w, float eps) {
  const int64_t r = blockIdx.x;
  float* xr = x + r * xs;
  double sum = 0;
  for (int64_t i = threadIdx.x; i < dim; i += kNormThreads) {
    float v = xr[i];
    if constexpr (kAdd) {
      v = v + y[r * dim + i];
      xr[i] = v;
    }
    sum += static_cast<double>(v * v);
  }
  sum = block_sum<kNormThreads>(sum);
  const float mean = static_cast<float>(sum / static_cast<double>(dim));
  const float scale = 1.0f / sqrtf(mean + eps);
  float* o = out + r * os;
  for (int64_t i = threadIdx.x; i < dim; i += kNormThreads) {
    const float v = xr[i] * scale;
    o[i] = w ? v * w[i] : v;
  }
}

__global__ void add_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out,
                           int64_t total) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < total) out[i] = a[i] + b[i];
}

__global__ void add_bias_kernel(float* __restrict__ y, int64_t ys, const float* __restrict__ bias, int64_t width,
                                int64_t total) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int64_t t = i / width, c = i % width;
  y[t * ys + c] += bias[c];
}

__global__ void swiglu_kernel(const float* __restrict__ g, int64_t gs, const float* __restrict__ u, int64_t us,
                              float* __restrict__ out, int64_t os, int64_t width, int64_t total) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int64_t t = i / width, c = i % width;
  const float gv = g[t * gs + c];
  out[t * os + c] = gv / (1.0f + expf(-gv)) * u[t * us + c];
}

__global__ void gather_kernel(const float* __restrict__ src, int64_t stride, int64_t width,
                              const int32_t* __restrict__ ids, float* __restrict__ dst, int64_t total) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int64_t t = i / width, c = i % width;
  dst[t * stride + c] = src[static_cast<int64_t>(ids[t]) * stride + c];
}

}  // namespace

void rms_norm(const float* x, int64_t rows, int64_t dim, int64_t x_stride, float* out, int64_t out_stride,
              const float* w, float eps, cudaStream_t st) {
  if (rows == 0) return;
  rms_norm_kernel<false><<<static_cast<unsigned>(rows), kNormThreads, 0, st>>>(const_cast<float*>(x), nullptr, dim,
                                                                               x_stride, out, out_stride, w, eps);
  check_launch("rms_norm");
}

void add_rms_norm(float* x, const float* y, float* out, int n, int64_t dim, const float* w, float eps,
                  cudaStream_t st) {
  if (n == 0) return;
  rms_norm_kernel<true><<<static_cast<unsigned>(n), kNormThreads, 0, st>>>(x, y, dim, dim, out, dim, w, eps);
  check_launch("add_rms_norm");
}

void add(const float* a, const float* b, float* out, int n, int64_t width, cudaStream_t st) {
  const int64_t total = static_cast<int64_t>(n) * width;
  if (total == 0) return;
  add_kernel<<<blocks_for(total, 256), 256, 0, st>>>(a, b, out, total);
  check_launch("add");
}

void add_bias(float* y, int64_t y_stride, const float* bias, int n, int64_t width, cudaStream_t st) {
  const int64_t total = static_cast<int64_t>(n) * width;
  if (total == 0) return;
  add_bias_kernel<<<blocks_for(total, 256), 256, 0, st>>>(y, y_stride, bias, width, total);
  check_launch("add_bias");
}

void swiglu(const float* gate, int64_t gate_stride, const float* up, int64_t up_stride, float* out, int64_t out_stride,
            int n, int64_t width, cudaStream_t st) {
  const int64_t total = static_cast<int64_t>(n) * width;
  if (total == 0) return;
  swiglu_kernel<<<blocks_for(total, 256), 256, 0, st>>>(gate, gate_stride, up, up_stride, out, out_stride, width,
                                                        total);
  check_launch("swiglu");
}

void gather_rows(const float* src, int64_t stride, int64_t width, const int32_t* ids, int m, float* dst,
                 cudaStream_t st) {
  const int64_t total = static_cast<int64_t>(m) * width;
  if (total == 0) return;
  gather_kernel<<<blocks_for(total, 256), 256, 0, st>>>(src, stride, width, ids, dst, total);
  check_launch("gather_rows");
}

}  // namespace strix::cuda
