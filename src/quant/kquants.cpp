// K-quant super-block formats (256 elements): Q2_K Q3_K Q4_K Q5_K Q6_K Q8_K.
//
// Bit-exact with libggml's dequantize_row_* / quantize_row_*_ref. The reference
// quantizers search for good scales with float arithmetic, so exactness needs the
// same operation order in every sum and product (kept below, products are never
// fused into adds: see the pragma) and the same rounding helper (nearest_int, the
// add-1.5*2^23 trick, including its behaviour on inf/NaN).
#pragma GCC optimize("fp-contract=off")

#include <cmath>
#include <cstdint>
#include <cstring>

#include "quant/fp16.h"
#include "quant/kquant_blocks.h"
#include "quant/quants.h"

namespace strix::quant {

namespace {

// Groups whose largest |x| is below this are treated as all zero.
constexpr float kGroupMaxEps = 1e-15f;

// Round to nearest, ties to even, by adding 1.5 * 2^23 and reading the mantissa.
// Exact for |f| <= 2^22; other inputs (including inf/NaN) give the same garbage
// libggml's helper gives, never undefined behaviour.
inline int nearest_int(float f) {
  const float biased = f + 12582912.0f;
  int32_t bits;
  std::memcpy(&bits, &biased, 4);
  return (bits & 0x007fffff) - 0x00400000;
}

inline int clamp_int(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

// Symmetric scale fit used by Q6_K: levels l in [-nmax, nmax), weights x^2.
// Tries 19 candidate inverse scales around -nmax/max and keeps the one with the
// best weighted least-squares fit. Writes L[i] = l + nmax; returns the scale.
float fit_symmetric(int n, int nmax, const float* x, int8_t* L) {
  float max = 0.0f;
  float amax = 0.0f;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.0f;
  }
  float iscale = static_cast<float>(-nmax) / max;
  float sumlx = 0.0f;
  float suml2 = 0.0f;
  for (int i = 0; i < n; ++i) {
    const int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
    L[i] = static_cast<int8_t>(l + nmax);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * static_cast<float>(l);
    suml2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
    sumlx = 0.0f;
    suml2 = 0.0f;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
      const float w = x[i] * x[i];
      sumlx += w * x[i] * static_cast<float>(l);
      suml2 += w * static_cast<float>(l) * static_cast<float>(l);
    }
    if (suml2 > 0.0f && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) {
        L[i] = static_cast<int8_t>(nmax + clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1));
      }
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// Q3_K's sub-block fit: levels in [-nmax, nmax), weights x^2, then up to five
// passes of coordinate descent moving single levels while the fit improves.
// Writes L[i] = l + nmax; returns the scale.
float fit_symmetric_refined(int n, int nmax, const float* x, int8_t* L) {
  float max = 0.0f;
  float amax = 0.0f;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.0f;
  }
  const float iscale = static_cast<float>(-nmax) / max;
  float sumlx = 0.0f;
  float suml2 = 0.0f;
  for (int i = 0; i < n; ++i) {
    const int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
    L[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * static_cast<float>(l);
    suml2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  for (int pass = 0; pass < 5; ++pass) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      const auto li = static_cast<float>(L[i]);
      float slx = sumlx - w * x[i] * li;
      if (!(slx > 0.0f)) continue;
      float sl2 = suml2 - w * li * li;
      const int new_l = clamp_int(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
      if (new_l == L[i]) continue;
      const auto nl = static_cast<float>(new_l);
      slx += w * x[i] * nl;
      sl2 += w * nl * nl;
      if (sl2 > 0.0f && slx * slx * suml2 > sumlx * sumlx * sl2) {
        L[i] = static_cast<int8_t>(new_l);
        sumlx = slx;
        suml2 = sl2;
        ++changed;
      }
    }
    if (changed == 0) break;
  }
  for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

// Asymmetric fit x ~ scale * l - min_out, l in [0, nmax], used by Q2_K/Q4_K/Q5_K:
// starts from the min/max grid, then tries nstep+1 inverse scales
// (rmin + rdelta*is + nmax) / (max - min), solving the weighted 2x2 least-squares
// for (scale, min) at each and keeping the lowest weighted error (absolute when
// use_mad, squared otherwise). `Laux` is scratch of n bytes.
float fit_affine(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* min_out, uint8_t* Laux,
                 float rmin, float rdelta, int nstep, bool use_mad) {
  float min = x[0];
  float max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0.0f) min = 0.0f;
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *min_out = -min;
    return 0.0f;
  }
  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1.0f / iscale;
  float best_error = 0.0f;
  for (int i = 0; i < n; ++i) {
    L[i] = static_cast<uint8_t>(clamp_int(nearest_int(iscale * (x[i] - min)), 0, nmax));
    float diff = scale * static_cast<float>(L[i]) + min - x[i];
    diff = use_mad ? std::fabs(diff) : diff * diff;
    best_error += weights[i] * diff;
  }
  if (nstep < 1) {
    *min_out = -min;
    return scale;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
    float sum_l = 0.0f;
    float sum_l2 = 0.0f;
    float sum_xl = 0.0f;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_int(nearest_int(iscale * (x[i] - min)), 0, nmax);
      Laux[i] = static_cast<uint8_t>(l);
      const float w = weights[i];
      const auto fl = static_cast<float>(l);
      sum_l += w * fl;
      sum_l2 += w * fl * fl;
      sum_xl += w * fl * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (!(D > 0.0f)) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
    if (this_min > 0.0f) {
      this_min = 0.0f;
      this_scale = sum_xl / sum_l2;
    }
    float cur_error = 0.0f;
    for (int i = 0; i < n; ++i) {
      float diff = this_scale * static_cast<float>(Laux[i]) + this_min - x[i];
      diff = use_mad ? std::fabs(diff) : diff * diff;
      cur_error += weights[i] * diff;
    }
    if (cur_error < best_error) {
      for (int i = 0; i < n; ++i) L[i] = Laux[i];
      best_error = cur_error;
      scale = this_scale;
      min = this_min;
    }
  }
  *min_out = -min;
  return scale;
}

// Q4_K/Q5_K: 6-bit scale and min of sub-block j (0..7) from the 12 packed bytes.
// j < 4: low six bits of bytes j and j+4; j >= 4: nibbles of byte j+4, top two
// bits from the spare bits of bytes j-4 and j.
inline void get_scale_min(int j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

inline void put_scale_min(int j, uint8_t ls, uint8_t lm, uint8_t* q) {
  if (j < 4) {
    q[j] = ls;
    q[j + 4] = lm;
  } else {
    q[j + 4] = static_cast<uint8_t>((ls & 0x0f) | ((lm & 0x0f) << 4));
    q[j - 4] = static_cast<uint8_t>(q[j - 4] | ((ls >> 4) << 6));
    q[j] = static_cast<uint8_t>(q[j] | ((lm >> 4) << 6));
  }
}

// Q3_K: 6-bit scale j (0..15, biased by 32) from the 12 packed bytes.
inline int q3_scale(const uint8_t* s, int j) {
  const int lo = j < 8 ? (s[j] & 0x0f) : (s[j - 8] >> 4);
  const int hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
  return lo | (hi << 4);
}

// 2-bit packing shared by Q2_K and Q3_K: in each half of 128, byte l holds
// elements l, l+32, l+64, l+96 in bit pairs 0, 2, 4, 6.
template <typename T>
inline void pack_2bit(const T* L, uint8_t* qs) {
  for (int j = 0; j < kSuperBlock; j += 128) {
    for (int l = 0; l < 32; ++l) {
      qs[j / 4 + l] =
          static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
    }
  }
}

// Q4_K/Q5_K super-block scales: the 8 sub-block (scale, min) pairs become 6-bit
// codes against d = max_scale/63 and dmin = max_min/63.
void encode_scales_k4(const float* scales, const float* mins, float max_scale, float max_min, uint8_t* packed,
                      uint16_t* d, uint16_t* dmin) {
  const float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
  for (int j = 0; j < kSuperBlock / 32; ++j) {
    auto ls = static_cast<uint8_t>(nearest_int(inv_scale * scales[j]));
    auto lm = static_cast<uint8_t>(nearest_int(inv_min * mins[j]));
    ls = ls < 63 ? ls : 63;
    lm = lm < 63 ? lm : 63;
    put_scale_min(j, ls, lm, packed);
  }
  *d = fp32_to_fp16(max_scale / 63.0f);
  *dmin = fp32_to_fp16(max_min / 63.0f);
}

// Q4_K/Q5_K: the first pass of both, up to the final levels L[256] in [0, nmax]
// and the packed scales. Sub-blocks of 32 are fitted with weights av_x + |x|.
void quantize_k4_levels(const float* x, int nmax, float rmin, float rdelta, int nstep, uint8_t* L, uint8_t* packed,
                        uint16_t* d_out, uint16_t* dmin_out) {
  float scales[kSuperBlock / 32];
  float mins[kSuperBlock / 32];
  float weights[32];
  uint8_t Laux[32];
  float max_scale = 0.0f;
  float max_min = 0.0f;
  for (int j = 0; j < kSuperBlock / 32; ++j) {
    const float* xs = x + 32 * j;
    float sum_x2 = 0.0f;
    for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
    const float av_x = std::sqrt(sum_x2 / 32.0f);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xs[l]);
    scales[j] = fit_affine(32, nmax, xs, weights, L + 32 * j, &mins[j], Laux, rmin, rdelta, nstep, false);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  encode_scales_k4(scales, mins, max_scale, max_min, packed, d_out, dmin_out);

  // Re-quantize against the scales as stored (half d, 6-bit codes).
  const float d_all = fp16_to_fp32(*d_out);
  const float dmin_all = fp16_to_fp32(*dmin_out);
  for (int j = 0; j < kSuperBlock / 32; ++j) {
    uint8_t sc, m;
    get_scale_min(j, packed, &sc, &m);
    const float d = d_all * static_cast<float>(sc);
    if (d == 0.0f) continue;
    const float dm = dmin_all * static_cast<float>(m);
    for (int ii = 0; ii < 32; ++ii) {
      L[32 * j + ii] = static_cast<uint8_t>(clamp_int(nearest_int((x[32 * j + ii] + dm) / d), 0, nmax));
    }
  }
}

}  // namespace

// ---------------------------------------------------------------- dequantize

void dequantize_row_q2_K(const void* vx, float* y, int64_t k) {
  const auto* x = static_cast<const BlockQ2_K*>(vx);
  for (int64_t i = 0; i < k / kSuperBlock; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const float dmin = fp16_to_fp32(x[i].dmin);
    const uint8_t* q = x[i].qs;
    int is = 0;
    for (int half = 0; half < 2; ++half, q += 32) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int part = 0; part < 2; ++part) {  // 16 elements from q[0..16), then q[16..32)
          const uint8_t sc = x[i].scales[is++];
          const float dl = d * static_cast<float>(sc & 0x0f);
          const float ml = dmin * static_cast<float>(sc >> 4);
          for (int l = 0; l < 16; ++l) *y++ = dl * static_cast<float>((q[16 * part + l] >> shift) & 3) - ml;
        }
      }
    }
  }
}

void dequantize_row_q3_K(const void* vx, float* y, int64_t k) {
  const auto* x = static_cast<const BlockQ3_K*>(vx);
  for (int64_t i = 0; i < k / kSuperBlock; ++i) {
    const float d_all = fp16_to_fp32(x[i].d);
    const uint8_t* q = x[i].qs;
    const uint8_t* hm = x[i].hmask;
    int is = 0;
    uint8_t m = 1;
    for (int half = 0; half < 2; ++half, q += 32) {
      for (int shift = 0; shift < 8; shift += 2, m = static_cast<uint8_t>(m << 1)) {
        for (int part = 0; part < 2; ++part) {
          const float dl = d_all * static_cast<float>(q3_scale(x[i].scales, is++) - 32);
          for (int l = 16 * part; l < 16 * part + 16; ++l) {
            const int v = ((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4);
            *y++ = dl * static_cast<float>(v);
          }
        }
      }
    }
  }
}

void dequantize_row_q4_K(const void* vx, float* y, int64_t k) {
  const auto* x = static_cast<const BlockQ4_K*>(vx);
  for (int64_t i = 0; i < k / kSuperBlock; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const float dmin = fp16_to_fp32(x[i].dmin);
    const uint8_t* q = x[i].qs;
    for (int is = 0; is < 8; is += 2, q += 32) {
      uint8_t sc, m;
      get_scale_min(is, x[i].scales, &sc, &m);
      const float d1 = d * static_cast<float>(sc);
      const float m1 = dmin * static_cast<float>(m);
      get_scale_min(is + 1, x[i].scales, &sc, &m);
      const float d2 = d * static_cast<float>(sc);
      const float m2 = dmin * static_cast<float>(m);
      for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0x0f) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
    }
  }
}

void dequantize_row_q5_K(const void* vx, float* y, int64_t k) {
  const auto* x = static_cast<const BlockQ5_K*>(vx);
  for (int64_t i = 0; i < k / kSuperBlock; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const float dmin = fp16_to_fp32(x[i].dmin);
    const uint8_t* ql = x[i].qs;
    const uint8_t* qh = x[i].qh;
    int u1 = 1;  // qh bit of the low-nibble run, then u2 = u1 << 1 of the high
    for (int is = 0; is < 8; is += 2, ql += 32, u1 <<= 2) {
      const int u2 = u1 << 1;
      uint8_t sc, m;
      get_scale_min(is, x[i].scales, &sc, &m);
      const float d1 = d * static_cast<float>(sc);
      const float m1 = dmin * static_cast<float>(m);
      get_scale_min(is + 1, x[i].scales, &sc, &m);
      const float d2 = d * static_cast<float>(sc);
      const float m2 = dmin * static_cast<float>(m);
      for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>((ql[l] & 0x0f) + ((qh[l] & u1) ? 16 : 0)) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>((ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) - m2;
    }
  }
}

void dequantize_row_q6_K(const void* vx, float* y, int64_t k) {
  const auto* x = static_cast<const BlockQ6_K*>(vx);
  for (int64_t i = 0; i < k / kSuperBlock; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const uint8_t* ql = x[i].ql;
    const uint8_t* qh = x[i].qh;
    const int8_t* sc = x[i].scales;
    for (int half = 0; half < 2; ++half, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
    }
  }
}

void dequantize_row_q8_K(const void* vx, float* y, int64_t k) {
  const auto* x = static_cast<const BlockQ8_K*>(vx);
  for (int64_t i = 0; i < k / kSuperBlock; ++i) {
    for (int j = 0; j < kSuperBlock; ++j) *y++ = x[i].d * static_cast<float>(x[i].qs[j]);
  }
}

// ---------------------------------------------------------------- quantize

// Q2_K: 16 sub-blocks of 16, each fitted as scale * l - min (l in 0..3, weights
// |x|, absolute error); scales and mins become 4-bit codes against d, dmin.
void quantize_row_q2_K_ref(const float* x, void* vy, int64_t k) {
  auto* y = static_cast<BlockQ2_K*>(vy);
  uint8_t L[kSuperBlock];
  uint8_t Laux[16];
  float weights[16];
  float scales[kSuperBlock / 16];
  float mins[kSuperBlock / 16];
  for (int64_t i = 0; i < k / kSuperBlock; ++i, x += kSuperBlock) {
    float max_scale = 0.0f;
    float max_min = 0.0f;
    for (int j = 0; j < kSuperBlock / 16; ++j) {
      for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
      scales[j] = fit_affine(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f, 0.1f, 15, true);
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }
    if (max_scale > 0.0f) {
      const float iscale = 15.0f / max_scale;
      for (int j = 0; j < kSuperBlock / 16; ++j) y[i].scales[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
      y[i].d = fp32_to_fp16(max_scale / 15.0f);
    } else {
      for (int j = 0; j < kSuperBlock / 16; ++j) y[i].scales[j] = 0;
      y[i].d = fp32_to_fp16(0.0f);
    }
    if (max_min > 0.0f) {
      const float iscale = 15.0f / max_min;
      for (int j = 0; j < kSuperBlock / 16; ++j) {
        y[i].scales[j] = static_cast<uint8_t>(y[i].scales[j] | (nearest_int(iscale * mins[j]) << 4));
      }
      y[i].dmin = fp32_to_fp16(max_min / 15.0f);
    } else {
      y[i].dmin = fp32_to_fp16(0.0f);
    }
    // Re-quantize against the stored scales.
    const float d_all = fp16_to_fp32(y[i].d);
    const float dmin_all = fp16_to_fp32(y[i].dmin);
    for (int j = 0; j < kSuperBlock / 16; ++j) {
      const float d = d_all * static_cast<float>(y[i].scales[j] & 0x0f);
      if (d == 0.0f) continue;
      const float dm = dmin_all * static_cast<float>(y[i].scales[j] >> 4);
      for (int ii = 0; ii < 16; ++ii) {
        L[16 * j + ii] = static_cast<uint8_t>(clamp_int(nearest_int((x[16 * j + ii] + dm) / d), 0, 3));
      }
    }
    pack_2bit(L, y[i].qs);
  }
}

// Q3_K: 16 sub-blocks of 16, symmetric levels -4..3 with a refined fit; the
// signed sub-block scales become 6-bit codes against d = max_scale / -32.
void quantize_row_q3_K_ref(const float* x, void* vy, int64_t k) {
  auto* y = static_cast<BlockQ3_K*>(vy);
  int8_t L[kSuperBlock];
  float scales[kSuperBlock / 16];
  for (int64_t i = 0; i < k / kSuperBlock; ++i, x += kSuperBlock) {
    float max_scale = 0.0f;
    float amax = 0.0f;
    for (int j = 0; j < kSuperBlock / 16; ++j) {
      scales[j] = fit_symmetric_refined(16, 4, x + 16 * j, L + 16 * j);
      const float a = std::fabs(scales[j]);
      if (a > amax) {
        amax = a;
        max_scale = scales[j];
      }
    }
    std::memset(y[i].scales, 0, sizeof(y[i].scales));
    if (max_scale != 0.0f) {
      const float iscale = -32.0f / max_scale;
      for (int j = 0; j < kSuperBlock / 16; ++j) {
        // libggml stores nearest_int's result in an int8_t before clamping.
        const auto raw = static_cast<int8_t>(nearest_int(iscale * scales[j]));
        const int l = clamp_int(raw, -32, 31) + 32;
        if (j < 8) {
          y[i].scales[j] = static_cast<uint8_t>(l & 0x0f);
        } else {
          y[i].scales[j - 8] = static_cast<uint8_t>(y[i].scales[j - 8] | ((l & 0x0f) << 4));
        }
        y[i].scales[8 + j % 4] = static_cast<uint8_t>(y[i].scales[8 + j % 4] | ((l >> 4) << (2 * (j / 4))));
      }
      y[i].d = fp32_to_fp16(1.0f / iscale);
    } else {
      y[i].d = fp32_to_fp16(0.0f);
    }
    const float d_all = fp16_to_fp32(y[i].d);
    for (int j = 0; j < kSuperBlock / 16; ++j) {
      const float d = d_all * static_cast<float>(q3_scale(y[i].scales, j) - 32);
      if (d == 0.0f) continue;
      for (int ii = 0; ii < 16; ++ii) {
        L[16 * j + ii] = static_cast<int8_t>(clamp_int(nearest_int(x[16 * j + ii] / d), -4, 3) + 4);
      }
    }
    // Third bit: element j goes to bit j / 32 of hmask[j % 32].
    std::memset(y[i].hmask, 0, sizeof(y[i].hmask));
    for (int j = 0; j < kSuperBlock; ++j) {
      if (L[j] > 3) {
        y[i].hmask[j % 32] = static_cast<uint8_t>(y[i].hmask[j % 32] | (1 << (j / 32)));
        L[j] = static_cast<int8_t>(L[j] - 4);
      }
    }
    pack_2bit(L, y[i].qs);
  }
}

void quantize_row_q4_K_ref(const float* x, void* vy, int64_t k) {
  auto* y = static_cast<BlockQ4_K*>(vy);
  uint8_t L[kSuperBlock];
  for (int64_t i = 0; i < k / kSuperBlock; ++i, x += kSuperBlock) {
    quantize_k4_levels(x, 15, -1.0f, 0.1f, 20, L, y[i].scales, &y[i].d, &y[i].dmin);
    // Each 32-byte run holds two sub-blocks: the first in low nibbles.
    uint8_t* q = y[i].qs;
    for (int j = 0; j < kSuperBlock; j += 64, q += 32) {
      for (int l = 0; l < 32; ++l) q[l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
    }
  }
}

void quantize_row_q5_K_ref(const float* x, void* vy, int64_t k) {
  auto* y = static_cast<BlockQ5_K*>(vy);
  uint8_t L[kSuperBlock];
  for (int64_t i = 0; i < k / kSuperBlock; ++i, x += kSuperBlock) {
    quantize_k4_levels(x, 31, -0.5f, 0.1f, 15, L, y[i].scales, &y[i].d, &y[i].dmin);
    // Low nibbles as Q4_K; the fifth bits of run r (two sub-blocks) go to bits
    // 2r and 2r+1 of qh[l].
    std::memset(y[i].qh, 0, sizeof(y[i].qh));
    uint8_t* ql = y[i].qs;
    int m1 = 1;
    for (int n = 0; n < kSuperBlock; n += 64, ql += 32, m1 <<= 2) {
      const int m2 = m1 << 1;
      for (int j = 0; j < 32; ++j) {
        int l1 = L[n + j];
        int l2 = L[n + j + 32];
        if (l1 > 15) {
          l1 -= 16;
          y[i].qh[j] = static_cast<uint8_t>(y[i].qh[j] | m1);
        }
        if (l2 > 15) {
          l2 -= 16;
          y[i].qh[j] = static_cast<uint8_t>(y[i].qh[j] | m2);
        }
        ql[j] = static_cast<uint8_t>(l1 | (l2 << 4));
      }
    }
  }
}

// Q6_K: 16 sub-blocks of 16, symmetric levels -32..31; int8 sub-block scales
// against d = max_scale / -128.
void quantize_row_q6_K_ref(const float* x, void* vy, int64_t k) {
  auto* y = static_cast<BlockQ6_K*>(vy);
  int8_t L[kSuperBlock];
  float scales[kSuperBlock / 16];
  for (int64_t i = 0; i < k / kSuperBlock; ++i, x += kSuperBlock) {
    float max_scale = 0.0f;
    float max_abs_scale = 0.0f;
    for (int ib = 0; ib < kSuperBlock / 16; ++ib) {
      scales[ib] = fit_symmetric(16, 32, x + 16 * ib, L + 16 * ib);
      const float a = std::fabs(scales[ib]);
      if (a > max_abs_scale) {
        max_abs_scale = a;
        max_scale = scales[ib];
      }
    }
    if (max_abs_scale < kGroupMaxEps) {
      std::memset(&y[i], 0, sizeof(BlockQ6_K));
      continue;
    }
    const float iscale = -128.0f / max_scale;
    y[i].d = fp32_to_fp16(1.0f / iscale);
    for (int ib = 0; ib < kSuperBlock / 16; ++ib) {
      const int v = nearest_int(iscale * scales[ib]);
      y[i].scales[ib] = static_cast<int8_t>(v < 127 ? v : 127);
    }
    const float d_all = fp16_to_fp32(y[i].d);
    for (int j = 0; j < kSuperBlock / 16; ++j) {
      const float d = d_all * static_cast<float>(y[i].scales[j]);
      if (d == 0.0f) continue;
      for (int ii = 0; ii < 16; ++ii) {
        L[16 * j + ii] = static_cast<int8_t>(clamp_int(nearest_int(x[16 * j + ii] / d), -32, 31) + 32);
      }
    }
    // Per half of 128: ql[l] = low nibbles of elements l (lo) and l+64 (hi),
    // ql[l+32] of l+32 and l+96; qh[l] = top two bits of l, l+32, l+64, l+96.
    uint8_t* ql = y[i].ql;
    uint8_t* qh = y[i].qh;
    for (int j = 0; j < kSuperBlock; j += 128, ql += 64, qh += 32) {
      for (int l = 0; l < 32; ++l) {
        const int a = L[j + l], b = L[j + l + 32], c = L[j + l + 64], e = L[j + l + 96];
        ql[l] = static_cast<uint8_t>((a & 0x0f) | ((c & 0x0f) << 4));
        ql[l + 32] = static_cast<uint8_t>((b & 0x0f) | ((e & 0x0f) << 4));
        qh[l] = static_cast<uint8_t>((a >> 4) | ((b >> 4) << 2) | ((c >> 4) << 4) | ((e >> 4) << 6));
      }
    }
  }
}

// Q8_K: q = nearest(x * -127 / max) capped at 127, float d, sums of 16.
// An all-zero block gets d = 0, q = 0 and bsums = 0 (libggml leaves its bsums
// unwritten in that case).
void quantize_row_q8_K_ref(const float* x, void* vy, int64_t k) {
  auto* y = static_cast<BlockQ8_K*>(vy);
  for (int64_t i = 0; i < k / kSuperBlock; ++i, x += kSuperBlock) {
    float max = 0.0f;
    float amax = 0.0f;
    for (int j = 0; j < kSuperBlock; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    if (amax == 0.0f) {
      std::memset(&y[i], 0, sizeof(BlockQ8_K));
      continue;
    }
    const float iscale = -127.0f / max;
    for (int j = 0; j < kSuperBlock; ++j) {
      const int v = nearest_int(iscale * x[j]);
      y[i].qs[j] = static_cast<int8_t>(v < 127 ? v : 127);
    }
    for (int j = 0; j < kSuperBlock / 16; ++j) {
      int sum = 0;
      for (int ii = 0; ii < 16; ++ii) sum += y[i].qs[16 * j + ii];
      y[i].bsums[j] = static_cast<int16_t>(sum);
    }
    y[i].d = 1.0f / iscale;
  }
}

}  // namespace strix::quant
