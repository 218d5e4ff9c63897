// ggml-order attention helpers shared by the scalar and AVX2 levels: the
// lane-wise arithmetic is IEEE-exact (fma, mul, add), so emulating ggml's
// 16-lane AVX-512 code one lane at a time gives identical bits.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace strix::cpu::attn_ref {

// GCC's _mm512_reduce_add_ps: halves, then quarters, then pairs.
inline float reduce16(const float* a) {
  float t8[8], t4[4];
  for (int l = 0; l < 8; ++l) t8[l] = a[8 + l] + a[l];
  for (int l = 0; l < 4; ++l) t4[l] = t8[4 + l] + t8[l];
  const float u0 = t4[0] + t4[2], u1 = t4[1] + t4[3];
  return u0 + u1;
}

// ggml_vec_dot_f16's fold of its four 16-lane accumulators, rows [16j, 16j + 16)
// of acc (row length hd): acc0 += acc2, acc1 += acc3, acc0 += acc1.
inline void fold64(int hd, float* acc) {
  auto row = [&](int r) { return acc + static_cast<size_t>(r) * hd; };
  for (int l = 0; l < 16; ++l) {
    float* a0 = row(l);
    float* a1 = row(16 + l);
    const float* a2 = row(32 + l);
    const float* a3 = row(48 + l);
    for (int d = 0; d < hd; ++d) {
      a0[d] = a0[d] + a2[d];
      a1[d] = a1[d] + a3[d];
      a0[d] = a0[d] + a1[d];
    }
  }
}

// ggml_v_expf of the AVX-512 build, one lane.
inline float expf16(float x) {
  const float r = 0x1.8p23f;
  const float z = std::fma(x, 0x1.715476p+0f, r);
  const float n = z - r;
  const float b = std::fma(-n, 0x1.7f7d1cp-20f, std::fma(-n, 0x1.62e4p-1f, x));
  const float u = b * b;
  const float j =
      std::fma(std::fma(std::fma(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, std::fma(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)), u,
               std::fma(0x1.ffffecp-1f, b, 1.0f));
  if (std::fabs(n) > 192.0f) return n <= 0.0f ? 0.0f : INFINITY;
  if (std::isnan(n)) return n;
  return std::ldexp(j, static_cast<int>(n));  // scalef: exact scaling by 2^n
}

}  // namespace strix::cpu::attn_ref
