// RoPE (llama.cpp's NORM and NEOX modes, linear and YaRN scaling), as
// ops::rope computes it: the angle of pair i is pos * theta_scale^i formed by
// repeated multiplication, the YaRN mix and rotations as fmas.
#include <algorithm>
#include <cmath>

#include "backend/cuda/common.cuh"
#include "backend/cuda/device.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/pdl.cuh"
#include "backend/cuda/rope.cuh"

namespace strix::cuda {

namespace {

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
  rope_pair(x + t * stride + static_cast<int64_t>(h) * head_dim, i, pos[t], ff, c);
}

// Grid over (token, unit): units [0, qu) are q's rotated pairs, [qu, qu + ku)
// k's dim pairs (rotated ones are rotated first, then both values stored),
// the rest v's dims.
__global__ void rope_kv_kernel(float* __restrict__ q, int64_t qs, float* __restrict__ k, int64_t ks,
                               const float* __restrict__ v, int64_t vs, int n_head, int n_head_kv, int head_dim,
                               const int32_t* __restrict__ pos, const int32_t* __restrict__ seq,
                               const float* __restrict__ ff, RopeConsts c, KvLayout kv) {
  griddep_wait();
  const int64_t t = blockIdx.y;
  const int j = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int half = c.n_rot / 2, pairs = head_dim / 2;
  const int qu = n_head * half, ku = n_head_kv * pairs;
  const int32_t p = pos[t];
  if (j < qu) {
    rope_pair(q + t * qs + static_cast<int64_t>(j / half) * head_dim, j % half, p, ff, c);
    return;
  }
  const int64_t cell = kv_cell(kv, seq[t], p);
  if (j < qu + ku) {
    const int h = (j - qu) / pairs, i = (j - qu) % pairs;
    float* kr = k + t * ks + static_cast<int64_t>(h) * head_dim;
    uint16_t* kc = kv.k + cell * kv.k_dim + static_cast<int64_t>(h) * head_dim;
    if (i < half) {
      rope_pair(kr, i, p, ff, c);
      const int a = c.neox ? i : 2 * i;
      const int b = c.neox ? i + half : 2 * i + 1;
      kc[a] = f2h(kr[a]);
      kc[b] = f2h(kr[b]);
    } else {
      const int a = c.n_rot + 2 * (i - half);
      kc[a] = f2h(kr[a]);
      kc[a + 1] = f2h(kr[a + 1]);
    }
    return;
  }
  const int e = j - qu - ku;
  if (e < kv.v_dim) kv.v[cell * kv.v_dim + e] = f2h(v[t * vs + e]);
}

}  // namespace

RopeConsts make_rope_consts(const RopeParams& rp, int64_t head_dim) {
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
  return c;
}

void rope(float* x, int n, int64_t n_heads, int64_t head_dim, int64_t stride, const int32_t* pos, const RopeParams& rp,
          const float* freq_factors, cudaStream_t st) {
  const RopeConsts c = make_rope_consts(rp, head_dim);
  const int64_t total = static_cast<int64_t>(n) * n_heads * (rp.n_rot / 2);
  if (total == 0) return;
  rope_kernel<<<blocks_for(total, 256), 256, 0, st>>>(x, static_cast<int>(n_heads), static_cast<int>(head_dim), stride,
                                                      pos, freq_factors, c, total);
  check_launch("rope");
}

void rope_kv_store(float* q, int64_t q_stride, float* k, int64_t k_stride, const float* v, int64_t v_stride, int n,
                   int64_t n_head, int64_t n_head_kv, int64_t head_dim, const int32_t* pos, const int32_t* seq,
                   const RopeParams& rp, const float* freq_factors, const KvLayout& kv, cudaStream_t st) {
  const RopeConsts c = make_rope_consts(rp, head_dim);
  if (head_dim % 2 != 0 || kv.k_dim != n_head_kv * head_dim) throw Error("rope_kv_store: K rows are not whole heads");
  if (n == 0) return;
  const int64_t units = n_head * (rp.n_rot / 2) + n_head_kv * (head_dim / 2) + kv.v_dim;
  const dim3 grid(blocks_for(units, 128), static_cast<unsigned>(n));
  check(pdl_launch(rope_kv_kernel, grid, dim3(128), 0, st, q, q_stride, k, k_stride, v, v_stride,
                   static_cast<int>(n_head), static_cast<int>(n_head_kv), static_cast<int>(head_dim), pos, seq,
                   freq_factors, c, kv),
        "rope_kv_store");
  check_launch("rope_kv_store");
}

}  // namespace strix::cuda
