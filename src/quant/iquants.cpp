// IQ formats: dequantize for IQ1_S IQ1_M IQ2_XXS IQ2_XS IQ2_S IQ3_XXS IQ3_S
// IQ4_NL IQ4_XS, and the reference quantizers of IQ4_NL / IQ4_XS (the grid
// quantizers IQ2_S / IQ3_XXS / IQ3_S live in iquants_grid.cpp).
//
// Bit-exact with libggml: every float expression keeps ggml's operand order
// (d * (0.5f + s) * 0.25f is ((d * (0.5f + s)) * 0.25f), int operands are
// converted to float where C converts them) and nothing is fused into an FMA.
//
// Block layouts (bytes; QK_K = 256, all multi-byte fields little-endian):
//   iq2_xxs  66: d f16 | qs u16[32]: per 32 values two u32: 4 grid bytes, then
//                4x7 sign-index bits + 4-bit scale (bits 28..31)
//   iq2_xs   74: d f16 | qs u16[32]: 9-bit grid index | 7-bit sign index << 9 | scales u8[8] (two nibbles)
//   iq2_s    82: d f16 | qs u8[32] grid low bytes | signs u8[32] | qh u8[8] (2 bits per index) | scales u8[8]
//   iq3_xxs  98: d f16 | qs u8[64] grid indices | u32[8]: 4x7 sign-index bits + 4-bit scale
//   iq3_s   110: d f16 | qs u8[64] | qh u8[8] (bit 8 of each index) | signs u8[32] | scales u8[4]
//   iq1_s    50: d f16 | qs u8[32] | qh u16[8]: 4x3 index high bits, 3-bit scale << 12, delta sign bit 15
//   iq1_m    56: qs u8[32] | qh u8[16] (3 index bits + delta sign per nibble) | scales u16[4]
//                (3-bit scales; the f16 super-scale is the top nibble of each u16)
//   iq4_nl   18: d f16 | qs u8[16] (value j low nibble, value j+16 high nibble)
//   iq4_xs  136: d f16 | scales_h u16 (2 bits each) | scales_l u8[4] (nibbles) | qs u8[128]
#pragma GCC optimize("fp-contract=off")

#include <cmath>
#include <cstring>
#include <string>

#include "core/error.h"
#include "quant/fp16.h"
#include "quant/iq_grids.h"
#include "quant/quants.h"
#include "quant/types.h"

namespace strix::quant {
namespace {

constexpr int kQK = 256;    // QK_K
constexpr int kQK4NL = 32;  // IQ4_NL block
constexpr float kIq1sDelta = 0.125f;
constexpr float kGroupMaxEps = 1e-15f;

inline uint16_t rd16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline uint32_t rd32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline void wr16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }

// Coordinate j of a grid word.
inline uint8_t grid_byte(uint64_t word, int j) { return static_cast<uint8_t>(word >> (8 * j)); }
inline float sign_of(uint8_t signs, int j) { return (signs & kmask_iq2xs[j]) ? -1.f : 1.f; }

// ---------------------------------------------------------------- dequantize

void dequant_iq2_xxs(const uint64_t* grid, const void* vx, float* y, int64_t k) {
  const auto* x = static_cast<const uint8_t*>(vx);
  for (int64_t i = 0; i < k / kQK; ++i, x += 66) {
    const float d = fp16_to_fp32(rd16(x));
    for (int ib32 = 0; ib32 < kQK / 32; ++ib32) {
      const uint8_t* q = x + 2 + 8 * ib32;
      const uint32_t aux1 = rd32(q + 4);
      const float db = d * (0.5f + static_cast<float>(aux1 >> 28)) * 0.25f;
      for (int l = 0; l < 4; ++l) {
        const uint64_t g = grid[q[l]];
        const uint8_t signs = ksigns_iq2xs[(aux1 >> (7 * l)) & 127];
        for (int j = 0; j < 8; ++j) y[j] = db * static_cast<float>(grid_byte(g, j)) * sign_of(signs, j);
        y += 8;
      }
    }
  }
}

void dequant_iq2_xs(const uint64_t* grid, const void* vx, float* y, int64_t k) {
  const auto* x = static_cast<const uint8_t*>(vx);
  for (int64_t i = 0; i < k / kQK; ++i, x += 74) {
    const float d = fp16_to_fp32(rd16(x));
    const uint8_t* scales = x + 66;
    for (int ib32 = 0; ib32 < kQK / 32; ++ib32) {
      const float db[2] = {d * (0.5f + static_cast<float>(scales[ib32] & 0xf)) * 0.25f,
                           d * (0.5f + static_cast<float>(scales[ib32] >> 4)) * 0.25f};
      for (int l = 0; l < 4; ++l) {
        const uint16_t q = rd16(x + 2 + 2 * (4 * ib32 + l));
        const uint64_t g = grid[q & 511];
        const uint8_t signs = ksigns_iq2xs[q >> 9];
        for (int j = 0; j < 8; ++j) y[j] = db[l / 2] * static_cast<float>(grid_byte(g, j)) * sign_of(signs, j);
        y += 8;
      }
    }
  }
}

void dequant_iq2_s(const uint64_t* grid, const void* vx, float* y, int64_t k) {
  const auto* x = static_cast<const uint8_t*>(vx);
  for (int64_t i = 0; i < k / kQK; ++i, x += 82) {
    const float d = fp16_to_fp32(rd16(x));
    const uint8_t* qs = x + 2;
    const uint8_t* signs = qs + kQK / 8;
    const uint8_t* qh = x + 66;
    const uint8_t* scales = x + 74;
    for (int ib32 = 0; ib32 < kQK / 32; ++ib32) {
      const float db[2] = {d * (0.5f + static_cast<float>(scales[ib32] & 0xf)) * 0.25f,
                           d * (0.5f + static_cast<float>(scales[ib32] >> 4)) * 0.25f};
      for (int l = 0; l < 4; ++l) {
        const float dl = db[l / 2];
        const uint64_t g = grid[qs[l] | ((qh[ib32] << (8 - 2 * l)) & 0x300)];
        for (int j = 0; j < 8; ++j) y[j] = dl * static_cast<float>(grid_byte(g, j)) * sign_of(signs[l], j);
        y += 8;
      }
      qs += 4;
      signs += 4;
    }
  }
}

void dequant_iq3_xxs(const uint32_t* grid, const void* vx, float* y, int64_t k) {
  const auto* x = static_cast<const uint8_t*>(vx);
  for (int64_t i = 0; i < k / kQK; ++i, x += 98) {
    const float d = fp16_to_fp32(rd16(x));
    const uint8_t* qs = x + 2;
    const uint8_t* scales_and_signs = qs + kQK / 4;
    for (int ib32 = 0; ib32 < kQK / 32; ++ib32) {
      const uint32_t aux = rd32(scales_and_signs + 4 * ib32);
      const float db = d * (0.5f + static_cast<float>(aux >> 28)) * 0.5f;
      for (int l = 0; l < 4; ++l) {
        const uint8_t signs = ksigns_iq2xs[(aux >> (7 * l)) & 127];
        const uint32_t g1 = grid[qs[2 * l + 0]];
        const uint32_t g2 = grid[qs[2 * l + 1]];
        for (int j = 0; j < 4; ++j) {
          y[j + 0] = db * static_cast<float>(grid_byte(g1, j)) * sign_of(signs, j + 0);
          y[j + 4] = db * static_cast<float>(grid_byte(g2, j)) * sign_of(signs, j + 4);
        }
        y += 8;
      }
      qs += 8;
    }
  }
}

void dequant_iq3_s(const uint32_t* grid, const void* vx, float* y, int64_t k) {
  const auto* x = static_cast<const uint8_t*>(vx);
  for (int64_t i = 0; i < k / kQK; ++i, x += 110) {
    const float d = fp16_to_fp32(rd16(x));
    const uint8_t* qs = x + 2;
    const uint8_t* qh = x + 66;
    const uint8_t* signs = x + 74;
    const uint8_t* scales = x + 106;
    // Two 32-value groups share one scale byte (low nibble, high nibble).
    for (int ib32 = 0; ib32 < kQK / 32; ib32 += 2) {
      for (int half = 0; half < 2; ++half) {
        const int s = half == 0 ? (scales[ib32 / 2] & 0xf) : (scales[ib32 / 2] >> 4);
        const float db = d * static_cast<float>(1 + 2 * s);
        for (int l = 0; l < 4; ++l) {
          const uint32_t g1 = grid[qs[2 * l + 0] | ((qh[half] << (8 - 2 * l)) & 256)];
          const uint32_t g2 = grid[qs[2 * l + 1] | ((qh[half] << (7 - 2 * l)) & 256)];
          for (int j = 0; j < 4; ++j) {
            y[j + 0] = db * static_cast<float>(grid_byte(g1, j)) * sign_of(signs[l], j + 0);
            y[j + 4] = db * static_cast<float>(grid_byte(g2, j)) * sign_of(signs[l], j + 4);
          }
          y += 8;
        }
        qs += 8;
        signs += 4;
      }
      qh += 2;
    }
  }
}

void dequant_iq1_s(const uint64_t* grid, const void* vx, float* y, int64_t k) {
  const auto* x = static_cast<const uint8_t*>(vx);
  for (int64_t i = 0; i < k / kQK; ++i, x += 50) {
    const float d = fp16_to_fp32(rd16(x));
    const uint8_t* qs = x + 2;
    for (int ib = 0; ib < kQK / 32; ++ib) {
      const uint16_t qh = rd16(x + 34 + 2 * ib);
      const float dl = d * static_cast<float>(2 * ((qh >> 12) & 7) + 1);
      const float delta = (qh & 0x8000) ? -kIq1sDelta : kIq1sDelta;
      for (int l = 0; l < 4; ++l) {
        const uint64_t g = grid[qs[l] | (((qh >> (3 * l)) & 7) << 8)];
        for (int j = 0; j < 8; ++j) {
          y[j] = dl * (static_cast<float>(static_cast<int8_t>(grid_byte(g, j))) + delta);
        }
        y += 8;
      }
      qs += 4;
    }
  }
}

void dequant_iq1_m(const uint64_t* grid, const void* vx, float* y, int64_t k) {
  const auto* x = static_cast<const uint8_t*>(vx);
  for (int64_t i = 0; i < k / kQK; ++i, x += 56) {
    uint16_t sc[4];
    for (int j = 0; j < 4; ++j) sc[j] = rd16(x + 48 + 2 * j);
    const uint16_t d16 =
        static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000));
    const float d = fp16_to_fp32(d16);
    const uint8_t* qs = x;
    const uint8_t* qh = x + 32;
    for (int ib = 0; ib < kQK / 32; ++ib) {
      const float dl1 = d * static_cast<float>(2 * ((sc[ib / 2] >> (6 * (ib % 2) + 0)) & 0x7) + 1);
      const float dl2 = d * static_cast<float>(2 * ((sc[ib / 2] >> (6 * (ib % 2) + 3)) & 0x7) + 1);
      const uint16_t idx[4] = {
          static_cast<uint16_t>(qs[0] | ((qh[0] << 8) & 0x700)), static_cast<uint16_t>(qs[1] | ((qh[0] << 4) & 0x700)),
          static_cast<uint16_t>(qs[2] | ((qh[1] << 8) & 0x700)), static_cast<uint16_t>(qs[3] | ((qh[1] << 4) & 0x700))};
      const float delta[4] = {(qh[0] & 0x08) ? -kIq1sDelta : kIq1sDelta, (qh[0] & 0x80) ? -kIq1sDelta : kIq1sDelta,
                              (qh[1] & 0x08) ? -kIq1sDelta : kIq1sDelta, (qh[1] & 0x80) ? -kIq1sDelta : kIq1sDelta};
      for (int l = 0; l < 4; ++l) {
        const float dl = l < 2 ? dl1 : dl2;
        const uint64_t g = grid[idx[l]];
        for (int j = 0; j < 8; ++j) {
          y[j] = dl * (static_cast<float>(static_cast<int8_t>(grid_byte(g, j))) + delta[l]);
        }
        y += 8;
      }
      qs += 4;
      qh += 2;
    }
  }
}

// ---------------------------------------------------------------- IQ4 quantizer

// ggml's nearest_int: round-to-nearest-even through the 1.5*2^23 trick (valid
// for |f| <= 2^22; the same garbage outside, bit for bit).
inline int nearest_int(float f) {
  const float v = f + 12582912.f;
  int32_t i;
  std::memcpy(&i, &v, 4);
  return (i & 0x007fffff) - 0x00400000;
}

// ggml's MIN / MAX macros on ints.
inline int imin(int a, int b) { return a < b ? a : b; }
inline int imax(int a, int b) { return a > b ? a : b; }

// Index of the level nearest to x in the ascending `values`; ties go up.
// This is the pinned libggml's form (early outs, bisection, float compare).
// Current public ggml uses a branchless midpoint test instead, which gives 0
// rather than n-1 for a NaN x; the nan_and_inf rows in tests/quant_iq tell
// the two apart, and the pinned library agrees with this one.
inline int best_index_int8(int n, const int8_t* values, float x) {
  if (x <= values[0]) return 0;
  if (x >= values[n - 1]) return n - 1;
  int ml = 0;
  int mu = n - 1;
  while (mu - ml > 1) {
    const int mav = (ml + mu) / 2;
    if (x < values[mav]) {
      mu = mav;
    } else {
      ml = mav;
    }
  }
  return x - values[mu - 1] < values[mu] - x ? mu - 1 : mu;
}

// One IQ4 super-block without importance weights (weight = x^2): per 32-value
// block search the scale (ntry > 0: 2*ntry+1 extra candidates), then, for more
// than one block, quantize the block scales to 6 bits against a super-scale.
//   x: [super_block_size]; q4: super_block_size/2 bytes; L: [super_block_size]
//   scales_h / scales_l only used when super_block_size > 32.
void quantize_iq4_block(int super_block_size, const float* x, uint8_t* dh, uint8_t* q4, uint8_t* scales_h,
                        uint8_t* scales_l, float* scales, float* weight, uint8_t* L, int ntry) {
  constexpr int kBlock = 32;
  const int8_t* values = kvalues_iq4nl;
  std::memset(q4, 0, super_block_size / 2);
  wr16(dh, fp32_to_fp16(0.f));

  float max_scale = 0;
  float amax_scale = 0;
  for (int ib = 0; ib < super_block_size / kBlock; ++ib) {
    const float* xb = x + ib * kBlock;
    uint8_t* Lb = L + ib * kBlock;
    for (int j = 0; j < kBlock; ++j) weight[j] = xb[j] * xb[j];
    float amax = 0;
    float max = 0;
    for (int j = 0; j < kBlock; ++j) {
      const float ax = std::fabs(xb[j]);
      if (ax > amax) {
        amax = ax;
        max = xb[j];
      }
    }
    if (amax < kGroupMaxEps) {
      // Lb is left as it was, as in the pinned libggml: for IQ4_NL that is
      // the previous block's levels (our row starts from zeros, libggml's from
      // uninitialized stack); IQ4_XS recomputes it below.
      scales[ib] = 0;
      continue;
    }
    float d = ntry > 0 ? -max / static_cast<float>(values[0]) : max / static_cast<float>(values[0]);
    float id = 1 / d;
    float sumqx = 0;
    float sumq2 = 0;
    for (int j = 0; j < kBlock; ++j) {
      const float al = id * xb[j];
      const int l = best_index_int8(16, values, al);
      Lb[j] = static_cast<uint8_t>(l);
      const float q = values[l];
      const float w = weight[j];
      sumqx += w * q * xb[j];
      sumq2 += w * q * q;
    }
    d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
    float best = d * sumqx;
    for (int itry = -ntry; itry <= ntry; ++itry) {
      id = static_cast<float>(itry + values[0]) / max;
      sumqx = sumq2 = 0;
      for (int j = 0; j < kBlock; ++j) {
        const float al = id * xb[j];
        const int l = best_index_int8(16, values, al);
        const float q = values[l];
        const float w = weight[j];
        sumqx += w * q * xb[j];
        sumq2 += w * q * q;
      }
      if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
        d = sumqx / sumq2;
        best = d * sumqx;
      }
    }
    scales[ib] = d;
    const float abs_d = std::fabs(d);
    if (abs_d > amax_scale) {
      amax_scale = abs_d;
      max_scale = d;
    }
  }

  if (super_block_size / kBlock > 1) {
    const int nb = super_block_size / kBlock;
    uint16_t sh = 0;  // scales_h, written once at the end
    const float d = -max_scale / 32;
    wr16(dh, fp32_to_fp16(d));
    const float id = d ? 1 / d : 0.f;
    for (int ib = 0; ib < nb; ++ib) {
      int l = nearest_int(id * scales[ib]);
      l = imax(-32, imin(31, l));
      const float dl = d * static_cast<float>(l);
      const float idl = dl ? 1 / dl : 0.f;
      uint8_t* Lb = L + ib * kBlock;
      const float* xb = x + ib * kBlock;
      for (int j = 0; j < kBlock; ++j) Lb[j] = static_cast<uint8_t>(best_index_int8(16, values, idl * xb[j]));
      l += 32;
      const uint8_t l_l = l & 0xf;
      const uint8_t l_h = static_cast<uint8_t>(l >> 4);
      if (ib % 2 == 0) {
        scales_l[ib / 2] = l_l;
      } else {
        scales_l[ib / 2] |= static_cast<uint8_t>(l_l << 4);
      }
      sh = static_cast<uint16_t>(sh | (l_h << 2 * (ib % 8)));
    }
    wr16(scales_h, sh);
  } else {
    wr16(dh, fp32_to_fp16(scales[0]));
    if (ntry > 0) {
      const float id = scales[0] ? 1 / scales[0] : 0;
      for (int j = 0; j < super_block_size; ++j) L[j] = static_cast<uint8_t>(best_index_int8(16, values, id * x[j]));
    }
  }

  for (int i = 0; i < super_block_size / 32; ++i) {
    for (int j = 0; j < 16; ++j) q4[16 * i + j] = static_cast<uint8_t>(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
  }
}

}  // namespace

void dequantize_row_iq2_xxs(const void* x, float* y, int64_t k) { dequant_iq2_xxs(iq2xxs_grid, x, y, k); }
void dequantize_row_iq2_xs(const void* x, float* y, int64_t k) { dequant_iq2_xs(iq2xs_grid, x, y, k); }
void dequantize_row_iq2_s(const void* x, float* y, int64_t k) { dequant_iq2_s(iq2s_grid, x, y, k); }
void dequantize_row_iq3_xxs(const void* x, float* y, int64_t k) { dequant_iq3_xxs(iq3xxs_grid, x, y, k); }
void dequantize_row_iq3_s(const void* x, float* y, int64_t k) { dequant_iq3_s(iq3s_grid, x, y, k); }
void dequantize_row_iq1_s(const void* x, float* y, int64_t k) { dequant_iq1_s(iq1s_grid, x, y, k); }
void dequantize_row_iq1_m(const void* x, float* y, int64_t k) { dequant_iq1_m(iq1s_grid, x, y, k); }

void dequantize_row_iq4_nl(const void* vx, float* y, int64_t k) {
  const auto* x = static_cast<const uint8_t*>(vx);
  for (int64_t i = 0; i < k / kQK4NL; ++i, x += 18) {
    const float d = fp16_to_fp32(rd16(x));
    const uint8_t* qs = x + 2;
    for (int j = 0; j < kQK4NL / 2; ++j) {
      y[j + 0] = d * static_cast<float>(kvalues_iq4nl[qs[j] & 0xf]);
      y[j + kQK4NL / 2] = d * static_cast<float>(kvalues_iq4nl[qs[j] >> 4]);
    }
    y += kQK4NL;
  }
}

void dequantize_row_iq4_xs(const void* vx, float* y, int64_t k) {
  const auto* x = static_cast<const uint8_t*>(vx);
  for (int64_t i = 0; i < k / kQK; ++i, x += 136) {
    const float d = fp16_to_fp32(rd16(x));
    const uint16_t scales_h = rd16(x + 2);
    const uint8_t* scales_l = x + 4;
    const uint8_t* qs = x + 8;
    for (int ib = 0; ib < kQK / 32; ++ib) {
      const int ls = ((scales_l[ib / 2] >> 4 * (ib % 2)) & 0xf) | (((scales_h >> 2 * ib) & 3) << 4);
      const float dl = d * static_cast<float>(ls - 32);
      for (int j = 0; j < 16; ++j) {
        y[j + 0] = dl * static_cast<float>(kvalues_iq4nl[qs[j] & 0xf]);
        y[j + 16] = dl * static_cast<float>(kvalues_iq4nl[qs[j] >> 4]);
      }
      y += 32;
      qs += 16;
    }
  }
}

// IQ4_NL's reference quantizer: one 32-value block at a time, scale max/-127
// refined once by least squares, no extra scale candidates (ntry = -1).
void quantize_row_iq4_nl_ref(const float* x, void* vy, int64_t k) {
  auto* y = static_cast<uint8_t*>(vy);
  uint8_t L[kQK4NL] = {};  // carried from block to block (see quantize_iq4_block)
  float weight[kQK4NL];
  float scale;
  for (int64_t ib = 0; ib < k / kQK4NL; ++ib, y += 18) {
    quantize_iq4_block(kQK4NL, x + kQK4NL * ib, y, y + 2, nullptr, nullptr, &scale, weight, L, -1);
  }
}

// IQ4_XS: 8 blocks of 32 per super-block, 15 scale candidates each (ntry = 7).
void quantize_row_iq4_xs_ref(const float* x, void* vy, int64_t k) {
  auto* y = static_cast<uint8_t*>(vy);
  uint8_t L[kQK] = {};
  float weight[32];
  float scales[kQK / 32];
  for (int64_t ibl = 0; ibl < k / kQK; ++ibl, y += 136) {
    quantize_iq4_block(kQK, x + kQK * ibl, y, y + 8, y + 2, y + 4, scales, weight, L, 7);
  }
}

namespace testing {
void dequantize_row_with_grid(uint32_t type, const void* grid, const void* x, float* y, int64_t k) {
  const auto* g64 = static_cast<const uint64_t*>(grid);
  const auto* g32 = static_cast<const uint32_t*>(grid);
  switch (static_cast<GgmlType>(type)) {
    case GgmlType::IQ2_XXS:
      return dequant_iq2_xxs(g64, x, y, k);
    case GgmlType::IQ2_XS:
      return dequant_iq2_xs(g64, x, y, k);
    case GgmlType::IQ2_S:
      return dequant_iq2_s(g64, x, y, k);
    case GgmlType::IQ3_XXS:
      return dequant_iq3_xxs(g32, x, y, k);
    case GgmlType::IQ3_S:
      return dequant_iq3_s(g32, x, y, k);
    case GgmlType::IQ1_S:
      return dequant_iq1_s(g64, x, y, k);
    case GgmlType::IQ1_M:
      return dequant_iq1_m(g64, x, y, k);
    default:
      throw Refusal("dequantize_row_with_grid: type " + std::to_string(type) + " has no grid");
  }
}
}  // namespace testing

}  // namespace strix::quant
