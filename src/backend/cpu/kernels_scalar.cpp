// Scalar reference kernels. Each dot product sums in the same order as
// ggml-cpu's *_generic function, so on a baseline x86-64 build (no FMA
// contraction: C++20 ISO mode) the result is bit-identical to it. The
// activation quantizers are the quant/ reference ones, which is what ggml-cpu
// uses when it has no SIMD path.
#include <cstdint>

#include "backend/cpu/kernel_blocks.h"
#include "backend/cpu/kernels.h"
#include "quant/iq_grids.h"
#include "quant/quants.h"

namespace strix::cpu {

namespace {

using quant::BlockQ2_K;
using quant::BlockQ3_K;
using quant::BlockQ4_0;
using quant::BlockQ4_1;
using quant::BlockQ4_K;
using quant::BlockQ5_0;
using quant::BlockQ5_1;
using quant::BlockQ5_K;
using quant::BlockQ6_K;
using quant::BlockQ8_0;
using quant::BlockQ8_1;
using quant::BlockQ8_K;
constexpr int kQK = quant::kLegacyBlock;  // 32
constexpr int kQKK = quant::kSuperBlock;  // 256

void dot_q8_0_q8_0(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ8_0*>(vx);
  const auto* y = static_cast<const BlockQ8_0*>(vy);
  float sumf = 0;
  for (int ib = 0; ib < n / kQK; ++ib) {
    int sumi = 0;
    for (int j = 0; j < kQK; ++j) sumi += x[ib].qs[j] * y[ib].qs[j];
    sumf += static_cast<float>(sumi) * (fp16_to_fp32(x[ib].d) * fp16_to_fp32(y[ib].d));
  }
  *s = sumf;
}

void dot_q4_0_q8_0(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ4_0*>(vx);
  const auto* y = static_cast<const BlockQ8_0*>(vy);
  float sumf = 0;
  for (int ib = 0; ib < n / kQK; ++ib) {
    int lo = 0, hi = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      lo += ((x[ib].qs[j] & 0xF) - 8) * y[ib].qs[j];
      hi += ((x[ib].qs[j] >> 4) - 8) * y[ib].qs[j + kQK / 2];
    }
    // ggml: (sumi * dx) * dy, left to right
    sumf += static_cast<float>(lo + hi) * fp16_to_fp32(x[ib].d) * fp16_to_fp32(y[ib].d);
  }
  *s = sumf;
}

void dot_q4_1_q8_1(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ4_1*>(vx);
  const auto* y = static_cast<const BlockQ8_1*>(vy);
  float sumf = 0;
  for (int ib = 0; ib < n / kQK; ++ib) {
    int lo = 0, hi = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      lo += (x[ib].qs[j] & 0xF) * y[ib].qs[j];
      hi += (x[ib].qs[j] >> 4) * y[ib].qs[j + kQK / 2];
    }
    // y.s = dy * sum(qy) carries the min term: m * sum(x_y) = m * s
    sumf += (fp16_to_fp32(x[ib].d) * fp16_to_fp32(y[ib].d)) * static_cast<float>(lo + hi) +
            fp16_to_fp32(x[ib].m) * fp16_to_fp32(y[ib].s);
  }
  *s = sumf;
}

// The 5-bit value of element j (0..31) of a Q5_0 / Q5_1 block.
inline int q5_value(const uint8_t qs[16], uint32_t qh, int j) {
  const int low = j < 16 ? (qs[j] & 0xF) : (qs[j - 16] >> 4);
  return low | static_cast<int>(((qh >> j) & 1) << 4);
}

void dot_q5_0_q8_0(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ5_0*>(vx);
  const auto* y = static_cast<const BlockQ8_0*>(vy);
  float sumf = 0;
  for (int ib = 0; ib < n / kQK; ++ib) {
    uint32_t qh;
    std::memcpy(&qh, x[ib].qh, 4);
    int lo = 0, hi = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      lo += (q5_value(x[ib].qs, qh, j) - 16) * y[ib].qs[j];
      hi += (q5_value(x[ib].qs, qh, j + 16) - 16) * y[ib].qs[j + 16];
    }
    sumf += (fp16_to_fp32(x[ib].d) * fp16_to_fp32(y[ib].d)) * static_cast<float>(lo + hi);
  }
  *s = sumf;
}

void dot_q5_1_q8_1(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ5_1*>(vx);
  const auto* y = static_cast<const BlockQ8_1*>(vy);
  float sumf = 0;
  for (int ib = 0; ib < n / kQK; ++ib) {
    uint32_t qh;
    std::memcpy(&qh, x[ib].qh, 4);
    int lo = 0, hi = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      lo += q5_value(x[ib].qs, qh, j) * y[ib].qs[j];
      hi += q5_value(x[ib].qs, qh, j + 16) * y[ib].qs[j + 16];
    }
    sumf += (fp16_to_fp32(x[ib].d) * fp16_to_fp32(y[ib].d)) * static_cast<float>(lo + hi) +
            fp16_to_fp32(x[ib].m) * fp16_to_fp32(y[ib].s);
  }
  *s = sumf;
}

void dot_iq4_nl_q8_0(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockIq4Nl*>(vx);
  const auto* y = static_cast<const BlockQ8_0*>(vy);
  float sumf = 0;
  for (int ib = 0; ib < n / kQK; ++ib) {
    const float d = fp16_to_fp32(y[ib].d) * fp16_to_fp32(x[ib].d);
    int lo = 0, hi = 0;
    for (int j = 0; j < 16; ++j) {
      lo += y[ib].qs[j] * quant::kvalues_iq4nl[x[ib].qs[j] & 0xF];
      hi += y[ib].qs[j + 16] * quant::kvalues_iq4nl[x[ib].qs[j] >> 4];
    }
    sumf += d * static_cast<float>(lo + hi);
  }
  *s = sumf;
}

void dot_mxfp4_q8_0(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockMxfp4*>(vx);
  const auto* y = static_cast<const BlockQ8_0*>(vy);
  float sumf = 0;
  for (int ib = 0; ib < n / kQK; ++ib) {
    const float d = fp16_to_fp32(y[ib].d) * e8m0_half(x[ib].e);
    int lo = 0, hi = 0;
    for (int j = 0; j < 16; ++j) {
      lo += y[ib].qs[j] * kMxfp4Doubled[x[ib].qs[j] & 0xF];
      hi += y[ib].qs[j + 16] * kMxfp4Doubled[x[ib].qs[j] >> 4];
    }
    sumf += d * static_cast<float>(lo + hi);
  }
  *s = sumf;
}

// K-quants: ggml's generic kernels keep 8 float partial sums, lane l holding
// the elements j with j % 8 == l of every block: sums[l] += d * isum[l]; the
// min term is subtracted from a separate running sum; lanes are added last.
// `isum` here is that per-lane integer sum (exact), so only the float order matters.
inline float finish_k_sums(const float sums[8], float sumf) {
  for (int l = 0; l < 8; ++l) sumf += sums[l];
  return sumf;
}

void dot_q4_K_q8_K(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ4_K*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  float sums[8] = {};
  float sumf = 0;
  for (int i = 0; i < n / kQKK; ++i) {
    uint8_t sm[16];  // scales[0..8), mins[8..16)
    unpack_k_scales(x[i].scales, sm);
    int32_t isum[8] = {};
    // sub-block sb (32 elements): byte group sb/2, low nibbles for even sb
    for (int sb = 0; sb < 8; ++sb) {
      const uint8_t* q4 = x[i].qs + 32 * (sb / 2);
      const int shift = (sb & 1) * 4;
      const int8_t* q8 = y[i].qs + 32 * sb;
      for (int l = 0; l < 32; ++l) isum[l % 8] += sm[sb] * (((q4[l] >> shift) & 0xF) * q8[l]);
    }
    int summ = 0;
    for (int j = 0; j < 16; ++j) summ += y[i].bsums[j] * sm[8 + j / 2];
    const float d = fp16_to_fp32(x[i].d) * y[i].d;
    for (int l = 0; l < 8; ++l) sums[l] += d * static_cast<float>(isum[l]);
    const float dmin = fp16_to_fp32(x[i].dmin) * y[i].d;
    sumf -= dmin * static_cast<float>(summ);
  }
  *s = finish_k_sums(sums, sumf);
}

void dot_q5_K_q8_K(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ5_K*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  float sums[8] = {};
  float sumf = 0;
  for (int i = 0; i < n / kQKK; ++i) {
    uint8_t sm[16];
    unpack_k_scales(x[i].scales, sm);
    int32_t isum[8] = {};
    for (int sb = 0; sb < 8; ++sb) {
      const uint8_t* q4 = x[i].qs + 32 * (sb / 2);
      const int shift = (sb & 1) * 4;
      const int8_t* q8 = y[i].qs + 32 * sb;
      for (int l = 0; l < 32; ++l) {
        const int q = ((q4[l] >> shift) & 0xF) | (((x[i].qh[l] >> sb) & 1) << 4);
        isum[l % 8] += sm[sb] * (q * q8[l]);
      }
    }
    int summ = 0;
    for (int j = 0; j < 16; ++j) summ += y[i].bsums[j] * sm[8 + j / 2];
    const float d = fp16_to_fp32(x[i].d) * y[i].d;
    for (int l = 0; l < 8; ++l) sums[l] += d * static_cast<float>(isum[l]);
    const float dmin = fp16_to_fp32(x[i].dmin) * y[i].d;
    sumf -= dmin * static_cast<float>(summ);
  }
  *s = finish_k_sums(sums, sumf);
}

void dot_q6_K_q8_K(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ6_K*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  float sums[8] = {};
  for (int i = 0; i < n / kQKK; ++i) {
    int32_t isum[8] = {};
    // two halves of 128; in each, 4 groups of 32: (ql low, ql+32 low, ql high, ql+32 high)
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = x[i].ql + 64 * h;
      const uint8_t* qh = x[i].qh + 32 * h;
      for (int g = 0; g < 4; ++g) {
        const uint8_t* lo = ql + 32 * (g & 1);
        const int lshift = (g >> 1) * 4;
        const int base = 128 * h + 32 * g;
        for (int l = 0; l < 32; ++l) {
          const int q = (((lo[l] >> lshift) & 0xF) | (((qh[l] >> (2 * g)) & 3) << 4)) - 32;
          const int e = base + l;
          isum[l % 8] += x[i].scales[e / 16] * (q * y[i].qs[e]);
        }
      }
    }
    const float d = fp16_to_fp32(x[i].d) * y[i].d;
    for (int l = 0; l < 8; ++l) sums[l] += d * static_cast<float>(isum[l]);
  }
  *s = finish_k_sums(sums, 0.0f);
}

void dot_iq4_xs_q8_K(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockIq4Xs*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  float sumf = 0;
  for (int i = 0; i < n / kQKK; ++i) {
    const float d4d8 = fp16_to_fp32(x[i].d) * y[i].d;
    for (int sb = 0; sb < 8; ++sb) {
      const int ls = ((x[i].scales_l[sb / 2] >> (4 * (sb & 1))) & 0xF) | (((x[i].scales_h >> (2 * sb)) & 3) << 4);
      const uint8_t* qs = x[i].qs + 16 * sb;
      const int8_t* q8 = y[i].qs + 32 * sb;
      int lo = 0, hi = 0;
      for (int j = 0; j < 16; ++j) {
        lo += q8[j] * quant::kvalues_iq4nl[qs[j] & 0xF];
        hi += q8[j + 16] * quant::kvalues_iq4nl[qs[j] >> 4];
      }
      sumf += (d4d8 * static_cast<float>(ls - 32)) * static_cast<float>(lo + hi);
    }
  }
  *s = sumf;
}

// F16 x F16: products in float, summed in double (ggml_float), like ggml's generic path.
void dot_f16_f16(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const uint16_t*>(vx);
  const auto* y = static_cast<const uint16_t*>(vy);
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += static_cast<double>(fp16_to_fp32(x[i]) * fp16_to_fp32(y[i]));
  *s = static_cast<float>(sum);
}

void dot_f32_f32(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const float*>(vx);
  const auto* y = static_cast<const float*>(vy);
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += static_cast<double>(x[i] * y[i]);
  *s = static_cast<float>(sum);
}

// ---------------------------------------------------------------- Q2_K, Q3_K

void dot_q2_K_q8_K(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ2_K*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  float sumf = 0;
  for (int i = 0; i < n / kQKK; ++i) {
    const uint8_t* sc = x[i].scales;
    int summs = 0;
    for (int j = 0; j < 16; ++j) summs += y[i].bsums[j] * (sc[j] >> 4);
    const float dall = y[i].d * fp16_to_fp32(x[i].d);
    const float dmin = y[i].d * fp16_to_fp32(x[i].dmin);
    // sub-block g (16 elements): byte group g / 8, shift 2 * ((g / 2) % 4), bytes 16 * (g % 2)
    int isum = 0;
    for (int g = 0; g < 16; ++g) {
      const uint8_t* q2 = x[i].qs + 32 * (g / 8) + 16 * (g % 2);
      const int shift = 2 * ((g / 2) % 4);
      const int8_t* q8 = y[i].qs + 16 * g;
      int part = 0;
      for (int l = 0; l < 16; ++l) part += q8[l] * ((q2[l] >> shift) & 3);
      isum += (sc[g] & 0xF) * part;
    }
    sumf += dall * static_cast<float>(isum) - dmin * static_cast<float>(summs);
  }
  *s = sumf;
}

// The 256 signed 3-bit values of a Q3_K block, in element order: low bits
// from qs (32 bytes per 128 elements, 2 bits per 32-element group), the third
// bit from hmask (bit g of byte l for element 32 * g + l); value - 4 when clear.
inline void q3_k_values(const BlockQ3_K& b, int8_t out[256]) {
  for (int g = 0; g < 8; ++g) {
    const uint8_t* q3 = b.qs + 32 * (g / 4);
    const int shift = 2 * (g % 4);
    for (int l = 0; l < 32; ++l) {
      out[32 * g + l] = static_cast<int8_t>(((q3[l] >> shift) & 3) - ((b.hmask[l] >> g) & 1 ? 0 : 4));
    }
  }
}

void dot_q3_K_q8_K(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ3_K*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  float sums[8] = {};
  for (int i = 0; i < n / kQKK; ++i) {
    int8_t q[256];
    q3_k_values(x[i], q);
    int8_t sc[16];
    unpack_q3_k_scales(x[i].scales, sc);
    int32_t isum[8] = {};
    for (int e = 0; e < 256; ++e) isum[e % 8] += sc[e / 16] * (q[e] * y[i].qs[e]);
    const float d = fp16_to_fp32(x[i].d) * y[i].d;
    for (int l = 0; l < 8; ++l) sums[l] += d * static_cast<float>(isum[l]);
  }
  *s = finish_k_sums(sums, 0.0f);
}

// ---------------------------------------------------------------- IQ2 / IQ3 / IQ1

inline int grid_dot8(uint64_t grid, uint8_t signs, const int8_t* q8) {
  int sum = 0;
  for (int j = 0; j < 8; ++j) {
    const int v = static_cast<int>((grid >> (8 * j)) & 0xFF) * q8[j];
    sum += (signs >> j) & 1 ? -v : v;
  }
  return sum;
}

inline int grid_dot4(uint32_t grid, uint8_t signs, const int8_t* q8) {
  int sum = 0;
  for (int j = 0; j < 4; ++j) {
    const int v = static_cast<int>((grid >> (8 * j)) & 0xFF) * q8[j];
    sum += (signs >> j) & 1 ? -v : v;
  }
  return sum;
}

void dot_iq2_xxs_q8_K(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockIq2Xxs*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  float sumf = 0;
  for (int i = 0; i < n / kQKK; ++i) {
    const float d = fp16_to_fp32(x[i].d) * y[i].d;
    const int8_t* q8 = y[i].qs;
    int32_t bsum = 0;
    for (int ib = 0; ib < 8; ++ib) {
      uint32_t aux[2];
      std::memcpy(aux, x[i].qs + 4 * ib, 8);
      const int ls = 2 * static_cast<int>(aux[1] >> 28) + 1;
      int sumi = 0;
      for (int l = 0; l < 4; ++l, q8 += 8) {
        const uint8_t idx = static_cast<uint8_t>(aux[0] >> (8 * l));
        sumi += grid_dot8(quant::iq2xxs_grid[idx], quant::ksigns_iq2xs[(aux[1] >> (7 * l)) & 127], q8);
      }
      bsum += sumi * ls;
    }
    sumf += d * static_cast<float>(bsum);
  }
  *s = 0.125f * sumf;
}

void dot_iq2_xs_q8_K(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockIq2Xs*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  float sumf = 0;
  for (int i = 0; i < n / kQKK; ++i) {
    const float d = fp16_to_fp32(x[i].d) * y[i].d;
    const int8_t* q8 = y[i].qs;
    int32_t bsum = 0;
    for (int ib = 0; ib < 8; ++ib) {
      const uint16_t* q2 = x[i].qs + 4 * ib;
      for (int h = 0; h < 2; ++h) {
        const int ls = 2 * ((x[i].scales[ib] >> (4 * h)) & 0xF) + 1;
        int sumi = 0;
        for (int l = 2 * h; l < 2 * h + 2; ++l, q8 += 8) {
          sumi += grid_dot8(quant::iq2xs_grid[q2[l] & 511], quant::ksigns_iq2xs[q2[l] >> 9], q8);
        }
        bsum += sumi * ls;
      }
    }
    sumf += d * static_cast<float>(bsum);
  }
  *s = 0.125f * sumf;
}

void dot_iq2_s_q8_K(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockIq2S*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  float sumf = 0;
  for (int i = 0; i < n / kQKK; ++i) {
    const float d = fp16_to_fp32(x[i].d) * y[i].d;
    const int8_t* q8 = y[i].qs;
    const uint8_t* qs = x[i].qs;
    const uint8_t* signs = x[i].qs + 32;
    int bsum = 0;
    for (int ib = 0; ib < 8; ++ib, qs += 4, signs += 4) {
      int sumi[2] = {0, 0};
      for (int l = 0; l < 4; ++l, q8 += 8) {
        const int idx = qs[l] | ((x[i].qh[ib] << (8 - 2 * l)) & 0x300);
        sumi[l / 2] += grid_dot8(quant::iq2s_grid[idx], signs[l], q8);
      }
      const int ls1 = 1 + 2 * (x[i].scales[ib] & 0xF);
      const int ls2 = 1 + 2 * (x[i].scales[ib] >> 4);
      bsum += ls1 * sumi[0] + ls2 * sumi[1];
    }
    sumf += d * static_cast<float>(bsum);
  }
  *s = 0.125f * sumf;
}

void dot_iq3_xxs_q8_K(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockIq3Xxs*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  float sumf = 0;
  for (int i = 0; i < n / kQKK; ++i) {
    const float d = fp16_to_fp32(x[i].d) * y[i].d;
    const uint8_t* q3 = x[i].qs;
    const int8_t* q8 = y[i].qs;
    int32_t bsum = 0;
    for (int ib = 0; ib < 8; ++ib, q3 += 8) {
      uint32_t aux;
      std::memcpy(&aux, x[i].qs + 64 + 4 * ib, 4);
      const int ls = 2 * static_cast<int>(aux >> 28) + 1;
      int sumi = 0;
      for (int l = 0; l < 4; ++l, q8 += 8) {
        const uint8_t signs = quant::ksigns_iq2xs[(aux >> (7 * l)) & 127];
        sumi += grid_dot4(quant::iq3xxs_grid[q3[2 * l]], signs, q8);
        sumi += grid_dot4(quant::iq3xxs_grid[q3[2 * l + 1]], static_cast<uint8_t>(signs >> 4), q8 + 4);
      }
      bsum += sumi * ls;
    }
    sumf += d * static_cast<float>(bsum);
  }
  *s = 0.25f * sumf;
}

void dot_iq3_s_q8_K(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockIq3S*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  float sumf = 0;
  for (int i = 0; i < n / kQKK; ++i) {
    const float d = fp16_to_fp32(x[i].d) * y[i].d;
    const uint8_t* qs = x[i].qs;
    const uint8_t* signs = x[i].signs;
    const int8_t* q8 = y[i].qs;
    int32_t bsum = 0;
    for (int ib = 0; ib < 8; ++ib, qs += 8, signs += 4) {
      const int ls = 2 * ((x[i].scales[ib / 2] >> (4 * (ib % 2))) & 0xF) + 1;
      const int qh = x[i].qh[ib];
      int sumi = 0;
      for (int l = 0; l < 4; ++l, q8 += 8) {
        const uint32_t g1 = quant::iq3s_grid[qs[2 * l] | ((qh << (8 - 2 * l)) & 256)];
        const uint32_t g2 = quant::iq3s_grid[qs[2 * l + 1] | ((qh << (7 - 2 * l)) & 256)];
        sumi += grid_dot4(g1, signs[l], q8);
        sumi += grid_dot4(g2, static_cast<uint8_t>(signs[l] >> 4), q8 + 4);
      }
      bsum += sumi * ls;
    }
    sumf += d * static_cast<float>(bsum);
  }
  *s = sumf;
}

inline int grid_dot8_signed(uint64_t grid, const int8_t* q8) {
  int sum = 0;
  for (int j = 0; j < 8; ++j) sum += q8[j] * static_cast<int8_t>(grid >> (8 * j));
  return sum;
}

constexpr float kIq1Delta = 0.125f;

void dot_iq1_s_q8_K(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockIq1S*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  float sumf = 0;
  for (int i = 0; i < n / kQKK; ++i) {
    const int8_t* q8 = y[i].qs;
    const uint8_t* qs = x[i].qs;
    int sumi = 0, sumi1 = 0;
    for (int ib = 0; ib < 8; ++ib, qs += 4) {
      const int qh = x[i].qh[ib];
      const int ls = 2 * ((qh >> 12) & 7) + 1;
      const int delta = qh & 0x8000 ? -1 : 1;
      int lsum = 0;
      for (int l = 0; l < 4; ++l, q8 += 8) {
        lsum += grid_dot8_signed(quant::iq1s_grid[qs[l] | (((qh >> (3 * l)) & 7) << 8)], q8);
      }
      sumi += ls * lsum;
      sumi1 += ls * delta * (y[i].bsums[2 * ib] + y[i].bsums[2 * ib + 1]);
    }
    sumf += fp16_to_fp32(x[i].d) * y[i].d * (static_cast<float>(sumi) + kIq1Delta * static_cast<float>(sumi1));
  }
  *s = sumf;
}

// IQ1_M's f16 super-scale, spread over the top nibbles of its four scale words.
inline uint16_t iq1m_scale(const uint8_t scales[8], uint16_t sc[4]) {
  std::memcpy(sc, scales, 8);
  return static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000));
}

void dot_iq1_m_q8_K(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockIq1M*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  float sumf = 0;
  for (int i = 0; i < n / kQKK; ++i) {
    uint16_t sc[4];
    const uint16_t scale = iq1m_scale(x[i].scales, sc);
    const int8_t* q8 = y[i].qs;
    const uint8_t* qs = x[i].qs;
    const uint8_t* qh = x[i].qh;
    int sumi1 = 0, sumi2 = 0;
    for (int ib = 0; ib < 8; ++ib, qs += 4, qh += 2) {
      int sum1[2] = {0, 0}, sum2[2] = {0, 0};
      for (int l = 0; l < 4; ++l, q8 += 8) {
        const int idx = qs[l] | ((static_cast<int>(qh[l / 2]) << (8 - 4 * (l % 2))) & 0x700);
        const int delta = qh[l / 2] & (l % 2 ? 0x80 : 0x08) ? -1 : 1;
        int qsum = 0;
        for (int j = 0; j < 8; ++j) qsum += q8[j];
        sum1[l / 2] += grid_dot8_signed(quant::iq1s_grid[idx], q8);
        sum2[l / 2] += qsum * delta;
      }
      const int ls1 = 2 * ((sc[ib / 2] >> (6 * (ib % 2))) & 7) + 1;
      const int ls2 = 2 * ((sc[ib / 2] >> (6 * (ib % 2) + 3)) & 7) + 1;
      sumi1 += sum1[0] * ls1 + sum1[1] * ls2;
      sumi2 += sum2[0] * ls1 + sum2[1] * ls2;
    }
    sumf += fp16_to_fp32(scale) * y[i].d * (static_cast<float>(sumi1) + kIq1Delta * static_cast<float>(sumi2));
  }
  *s = sumf;
}

// ---------------------------------------------------------------- ternary, FP4, low-bit

// Trit n (0 = most significant) of a TQ1_0 byte, as 0, 1, 2.
inline int tq1_trit(uint8_t packed, int n) {
  static constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
  const uint8_t q = static_cast<uint8_t>(packed * kPow3[n]);
  return (q * 3) >> 8;
}

void dot_tq1_0_q8_K(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockTq1_0*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  float sumf = 0;
  for (int i = 0; i < n / kQKK; ++i) {
    const int8_t* q8 = y[i].qs;
    int sum = 0;
    for (int l = 0; l < 5; ++l) {
      for (int m = 0; m < 32; ++m) sum += (tq1_trit(x[i].qs[m], l) - 1) * q8[l * 32 + m];
    }
    for (int l = 0; l < 5; ++l) {
      for (int m = 0; m < 16; ++m) sum += (tq1_trit(x[i].qs[32 + m], l) - 1) * q8[160 + l * 16 + m];
    }
    for (int l = 0; l < 4; ++l) {
      for (int j = 0; j < 4; ++j) sum += (tq1_trit(x[i].qh[j], l) - 1) * q8[240 + l * 4 + j];
    }
    sumf += static_cast<float>(sum) * (fp16_to_fp32(x[i].d) * y[i].d);
  }
  *s = sumf;
}

void dot_tq2_0_q8_K(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockTq2_0*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  float sumf = 0;
  for (int i = 0; i < n / kQKK; ++i) {
    int sumi = 0;
    for (int c = 0; c < 2; ++c) {
      for (int l = 0; l < 4; ++l) {
        for (int m = 0; m < 32; ++m) {
          sumi += y[i].qs[128 * c + 32 * l + m] * (((x[i].qs[32 * c + m] >> (2 * l)) & 3) - 1);
        }
      }
    }
    const float d = y[i].d * fp16_to_fp32(x[i].d);
    sumf += static_cast<float>(sumi) * d;
  }
  *s = sumf;
}

void dot_nvfp4_q8_0(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockNvfp4*>(vx);
  const auto* y = static_cast<const BlockQ8_0*>(vy);
  float sumf = 0;
  for (int ib = 0; ib < n / 64; ++ib) {
    for (int sb = 0; sb < 4; ++sb) {
      const float d = ue4m3_half(x[ib].d[sb]);
      const BlockQ8_0& yb = y[2 * ib + sb / 2];
      const int8_t* q8 = yb.qs + 16 * (sb % 2);
      const float dy = fp16_to_fp32(yb.d);
      int lo = 0, hi = 0;
      for (int j = 0; j < 8; ++j) {
        const uint8_t q = x[ib].qs[8 * sb + j];
        lo += q8[j] * kMxfp4Doubled[q & 0xF];
        hi += q8[j + 8] * kMxfp4Doubled[q >> 4];
      }
      sumf += dy * d * static_cast<float>(lo + hi);
    }
  }
  *s = sumf;
}

void dot_q1_0_q8_0(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ1_0*>(vx);
  const auto* y = static_cast<const BlockQ8_0*>(vy);
  float sumf = 0;
  for (int i = 0; i < n / 128; ++i) {
    const float d0 = fp16_to_fp32(x[i].d);
    float sumi = 0;
    for (int k = 0; k < 4; ++k) {
      const BlockQ8_0& yb = y[4 * i + k];
      int block = 0;
      for (int j = 0; j < 32; ++j) {
        const int bit = (x[i].qs[4 * k + j / 8] >> (j % 8)) & 1;
        block += bit ? yb.qs[j] : -yb.qs[j];
      }
      sumi += fp16_to_fp32(yb.d) * static_cast<float>(block);
    }
    sumf += d0 * sumi;
  }
  *s = sumf;
}

void dot_q2_0_q8_0(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ2_0*>(vx);
  const auto* y = static_cast<const BlockQ8_0*>(vy);
  float sumf = 0;
  for (int i = 0; i < n / 64; ++i) {
    const float d0 = fp16_to_fp32(x[i].d);
    float sumi = 0;
    for (int k = 0; k < 2; ++k) {
      const BlockQ8_0& yb = y[2 * i + k];
      int block = 0;
      for (int j = 0; j < 32; ++j) {
        const int e = 32 * k + j;
        block += (((x[i].qs[e / 4] >> (2 * (e % 4))) & 3) - 1) * yb.qs[j];
      }
      sumi += fp16_to_fp32(yb.d) * static_cast<float>(block);
    }
    sumf += d0 * sumi;
  }
  *s = sumf;
}

// BF16 x BF16: products in float, summed in double (ggml_float), like ggml's generic path.
void dot_bf16_bf16(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const uint16_t*>(vx);
  const auto* y = static_cast<const uint16_t*>(vy);
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += static_cast<double>(bf16_to_fp32(x[i]) * bf16_to_fp32(y[i]));
  *s = static_cast<float>(sum);
}

void set(CpuKernels& k, GgmlType w, GgmlType a, VecDotFn fn) {
  k.vec_dot[static_cast<uint32_t>(w)] = fn;
  k.vec_dot_type[static_cast<uint32_t>(w)] = a;
}

}  // namespace

namespace detail {

void fill_scalar(CpuKernels& k) {
  set(k, GgmlType::Q8_0, GgmlType::Q8_0, dot_q8_0_q8_0);
  set(k, GgmlType::Q4_0, GgmlType::Q8_0, dot_q4_0_q8_0);
  set(k, GgmlType::Q4_1, GgmlType::Q8_1, dot_q4_1_q8_1);
  set(k, GgmlType::Q5_0, GgmlType::Q8_0, dot_q5_0_q8_0);
  set(k, GgmlType::Q5_1, GgmlType::Q8_1, dot_q5_1_q8_1);
  set(k, GgmlType::IQ4_NL, GgmlType::Q8_0, dot_iq4_nl_q8_0);
  set(k, GgmlType::MXFP4, GgmlType::Q8_0, dot_mxfp4_q8_0);
  set(k, GgmlType::Q4_K, GgmlType::Q8_K, dot_q4_K_q8_K);
  set(k, GgmlType::Q5_K, GgmlType::Q8_K, dot_q5_K_q8_K);
  set(k, GgmlType::Q6_K, GgmlType::Q8_K, dot_q6_K_q8_K);
  set(k, GgmlType::IQ4_XS, GgmlType::Q8_K, dot_iq4_xs_q8_K);
  set(k, GgmlType::F16, GgmlType::F16, dot_f16_f16);
  set(k, GgmlType::F32, GgmlType::F32, dot_f32_f32);
  set(k, GgmlType::BF16, GgmlType::BF16, dot_bf16_bf16);
  set(k, GgmlType::Q2_K, GgmlType::Q8_K, dot_q2_K_q8_K);
  set(k, GgmlType::Q3_K, GgmlType::Q8_K, dot_q3_K_q8_K);
  set(k, GgmlType::IQ2_XXS, GgmlType::Q8_K, dot_iq2_xxs_q8_K);
  set(k, GgmlType::IQ2_XS, GgmlType::Q8_K, dot_iq2_xs_q8_K);
  set(k, GgmlType::IQ2_S, GgmlType::Q8_K, dot_iq2_s_q8_K);
  set(k, GgmlType::IQ3_XXS, GgmlType::Q8_K, dot_iq3_xxs_q8_K);
  set(k, GgmlType::IQ3_S, GgmlType::Q8_K, dot_iq3_s_q8_K);
  set(k, GgmlType::IQ1_S, GgmlType::Q8_K, dot_iq1_s_q8_K);
  set(k, GgmlType::IQ1_M, GgmlType::Q8_K, dot_iq1_m_q8_K);
  set(k, GgmlType::TQ1_0, GgmlType::Q8_K, dot_tq1_0_q8_K);
  set(k, GgmlType::TQ2_0, GgmlType::Q8_K, dot_tq2_0_q8_K);
  set(k, GgmlType::NVFP4, GgmlType::Q8_0, dot_nvfp4_q8_0);
  set(k, GgmlType::Q1_0, GgmlType::Q8_0, dot_q1_0_q8_0);
  set(k, GgmlType::Q2_0, GgmlType::Q8_0, dot_q2_0_q8_0);
  k.quantize_act[static_cast<uint32_t>(GgmlType::Q8_0)] = quant::quantize_row_q8_0_ref;
  k.quantize_act[static_cast<uint32_t>(GgmlType::Q8_1)] = quant::quantize_row_q8_1_ref;
  k.quantize_act[static_cast<uint32_t>(GgmlType::Q8_K)] = quant::quantize_row_q8_K_ref;
  k.quantize_act[static_cast<uint32_t>(GgmlType::F16)] = quant::quantize_row_f16_ref;
  k.quantize_act[static_cast<uint32_t>(GgmlType::BF16)] = quant::quantize_row_bf16_ref;
}

}  // namespace detail

}  // namespace strix::cpu
