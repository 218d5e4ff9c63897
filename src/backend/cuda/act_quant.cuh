// Warp-level activation quantizers with the arithmetic of libllama's CPU
// partner quantizers (ggml-cpu's x86 quantize_row_q8_0 / quantize_row_q8_K),
// shared by the kernels that end in a quantized row (rms_norm_quant,
// attention_decode). Q8_0: d = amax / 127 stored as half, q = round_even(x *
// 127 / amax). Q8_K: the value of largest magnitude (the first one on ties)
// sets iscale = -127 / max; q = min(127, round_even(iscale * x)); d = 1 / iscale.
#pragma once

#include <cstdint>

#include "backend/cuda/common.cuh"

namespace strix::cuda {

// The value an activation kernel reads at (token t, column c): x itself, or
// silu(g) * u (SwiGLU fused, as the swiglu kernel computes it).
struct ActPlain {
  const float* x;
  int64_t xs;
  __device__ __forceinline__ float operator()(int64_t t, int64_t c) const { return x[t * xs + c]; }
};
struct ActSwiglu {
  const float *g, *u;
  int64_t gs, us;
  __device__ __forceinline__ float operator()(int64_t t, int64_t c) const {
    const float gv = g[t * gs + c];
    return gv / (1.0f + expf(-gv)) * u[t * us + c];
  }
};

// The warp's largest |value| (amax), its signed value and its element index
// `at`, every lane's (amax, val, at) candidate reduced with the smallest index
// winning ties (the first element in order, as the CPU quantizer keeps).
__device__ __forceinline__ void warp_abs_max_first(float& amax, float& val, int& at) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float oa = __shfl_xor_sync(0xffffffffu, amax, o);
    const float ov = __shfl_xor_sync(0xffffffffu, val, o);
    const int oi = __shfl_xor_sync(0xffffffffu, at, o);
    if (oa > amax || (oa == amax && oi < at)) {
      amax = oa;
      val = ov;
      at = oi;
    }
  }
}

// One Q8_0 block: the warp's 32 values, v = element `lane`.
__device__ __forceinline__ void quant_q8_0_warp(float v, int8_t* __restrict__ q, float* __restrict__ d, int lane) {
  const float amax = warp_max(fabsf(v));
  const float id = amax != 0.0f ? 127.f / amax : 0.0f;
  q[lane] = static_cast<int8_t>(max(-128, min(127, __float2int_rn(v * id))));
  if (lane == 0) *d = h2f(f2h(amax / 127.f));
}

// One Q8_K super-block of 256 values held by a warp as v[k] = element 32 k + lane.
__device__ __forceinline__ void quant_q8_K_warp(const float v[8], int8_t* __restrict__ q, float* __restrict__ d,
                                                int lane) {
  float amax = -1.0f, val = 0.0f;
  int at = 0;
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    const float a = fabsf(v[k]);
    if (a > amax) {  // k ascending: the first of this lane's elements on ties
      amax = a;
      val = v[k];
      at = 32 * k + lane;
    }
  }
  warp_abs_max_first(amax, val, at);
  if (amax == 0.0f) {
#pragma unroll
    for (int k = 0; k < 8; ++k) q[32 * k + lane] = 0;
    if (lane == 0) *d = 0.0f;
    return;
  }
  const float iscale = -127.f / val;
#pragma unroll
  for (int k = 0; k < 8; ++k) q[32 * k + lane] = static_cast<int8_t>(min(127, __float2int_rn(iscale * v[k])));
  if (lane == 0) *d = 1.0f / iscale;
}

}  // namespace strix::cuda
