// RoPE's per-pair arithmetic, shared by the RoPE kernels (rope.cu) and the
// fused decode attention (attn_decode.cu), so both rotate bit for bit alike.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "models/hparams.h"

namespace strix::cuda {

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

// The cosine and sine (times the magnitude factor) of pair i, from its angle
// before frequency scaling (theta = p * theta_scale^i by repeated
// multiplication, as ggml).
__device__ __forceinline__ void rope_cs(float theta, int i, const float* __restrict__ ff, const RopeConsts& c,
                                        float& cs, float& sn) {
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
  cs = cosf(th) * mscale, sn = sinf(th) * mscale;
}

// Rotates pair i of one head (xr) by cs, sn.
__device__ __forceinline__ void rope_rotate(float* xr, int i, float cs, float sn, const RopeConsts& c) {
  const int half = c.n_rot / 2;
  const int a = c.neox ? i : 2 * i;
  const int b = c.neox ? i + half : 2 * i + 1;
  const float x0 = xr[a], x1 = xr[b];
  xr[a] = fmaf(x0, cs, -(x1 * sn));
  xr[b] = fmaf(x0, sn, x1 * cs);
}

// Rotates pair i of one head (xr) at position p.
__device__ __forceinline__ void rope_pair(float* xr, int i, int32_t p, const float* __restrict__ ff,
                                          const RopeConsts& c) {
  float theta = static_cast<float>(p);
  for (int k = 0; k < i; ++k) theta *= c.theta_scale;
  float cs, sn;
  rope_cs(theta, i, ff, c, cs, sn);
  rope_rotate(xr, i, cs, sn, c);
}

// The constants of rp for heads of head_dim (NORM and NEOX modes; others refused).
RopeConsts make_rope_consts(const RopeParams& rp, int64_t head_dim);

}  // namespace strix::cuda
