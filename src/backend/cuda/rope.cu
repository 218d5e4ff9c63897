// RoPE (llama.cpp's NORM and NEOX modes, linear and YaRN scaling), as
// ops::rope computes it: the angle of pair i is pos * theta_scale^i formed by
// repeated multiplication, the YaRN mix and rotations as fmas.
#include <algorithm>
#include <cmath>

#include "backend/cuda/common.cuh"
#include "backend/cuda/kernels.h"

namespace strix::cuda {

namespace {

struct RopeConsts {
  int n_rot;
  bool neox;
  float theta_scale;
  float freq_scale;
  float ext_factor;
  float attn_factor;
  float ext_mscale;  // YaRN's magnitude factor (1 + 0.1 ln(1/freq_scale)), ext_factor != 0 only
  float corr0, corr1;
};

__global__ void rope_kernel(float* __restrict__ x, int n_heads, int head_dim, int64_t stride,
                            const int32_t* __restrict__ pos, const float* __restrict__ ff, RopeConsts c,
                            int64_t total) {
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= total) return;
  const int half = c.n_rot / 2;
  const int i = static_cast<int>(j % half);
  const int64_t th_idx = j / half;
  const int h = static_cast<int>(th_idx % n_heads);
  const int64_t t = th_idx / n_heads;
  float theta = static_cast<float>(pos[t]);
  for (int k = 0; k < i; ++k) theta *= c.theta_scale;
  const float f = ff ? ff[i] : 1.0f;
  const float theta_extrap = theta / f;
  const float theta_interp = c.freq_scale * theta_extrap;
  float th = theta_interp;
  float mscale = c.attn_factor;
  if (c.ext_factor != 0.0f) {
    const float y = (static_cast<float>(i) - c.corr0) / fmaxf(0.001f, c.corr1 - c.corr0);
    const float ramp_mix = (1.0f - fminf(1.0f, fmaxf(0.0f, y))) * c.ext_factor;
    th = fmaf(theta_interp, 1 - ramp_mix, theta_extrap * ramp_mix);
    mscale *= c.ext_mscale;
  }
  const float cs = cosf(th) * mscale, sn = sinf(th) * mscale;
  float* xr = x + t * stride + static_cast<int64_t>(h) * head_dim;
  const int a = c.neox ? i : 2 * i;
  const int b = c.neox ? i + half : 2 * i + 1;
  const float x0 = xr[a], x1 = xr[b];
  xr[a] = fmaf(x0, cs, -(x1 * sn));
  xr[b] = fmaf(x0, sn, x1 * cs);
}

}  // namespace

void rope(float* x, int n, int64_t n_heads, int64_t head_dim, int64_t stride, const int32_t* pos, const RopeParams& rp,
          const float* freq_factors, cudaStream_t st) {
  if (rp.mode != RopeMode::kNorm && rp.mode != RopeMode::kNeox) {
    throw Refusal("rope: the CUDA backend runs the NORM and NEOX RoPE modes only");
  }
  if (rp.n_rot <= 0 || rp.n_rot % 2 != 0 || rp.n_rot > head_dim) throw Error("rope: bad rotary dimension count");
  RopeConsts c{};
  c.n_rot = rp.n_rot;
  c.neox = rp.mode == RopeMode::kNeox;
  c.theta_scale = std::pow(rp.freq_base, -2.0f / static_cast<float>(rp.n_rot));
  c.freq_scale = rp.freq_scale;
  c.ext_factor = rp.ext_factor;
  c.attn_factor = rp.attn_factor;
  if (rp.ext_factor != 0.0f) {
    // yarn_corr_dims of ops::rope, on the host in the same float arithmetic
    auto corr_dim = [&](float n_rot) {
      return static_cast<float>(rp.n_rot) *
             std::log(static_cast<float>(rp.n_ctx_orig) / (n_rot * 2.0f * static_cast<float>(M_PI))) /
             (2.0f * std::log(rp.freq_base));
    };
    c.corr0 = std::max(0.0f, std::floor(corr_dim(rp.beta_fast)));
    c.corr1 = std::min(static_cast<float>(rp.n_rot - 1), std::ceil(corr_dim(rp.beta_slow)));
    c.ext_mscale = std::fma(0.1f, std::log(1.0f / rp.freq_scale), 1.0f);
  }
  const int64_t total = static_cast<int64_t>(n) * n_heads * (rp.n_rot / 2);
  if (total == 0) return;
  rope_kernel<<<blocks_for(total, 256), 256, 0, st>>>(x, static_cast<int>(n_heads), static_cast<int>(head_dim), stride,
                                                      pos, freq_factors, c, total);
  check_launch("rope");
}

}  // namespace strix::cuda
