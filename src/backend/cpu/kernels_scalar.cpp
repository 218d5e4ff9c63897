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
  k.quantize_act[static_cast<uint32_t>(GgmlType::Q8_0)] = quant::quantize_row_q8_0_ref;
  k.quantize_act[static_cast<uint32_t>(GgmlType::Q8_1)] = quant::quantize_row_q8_1_ref;
  k.quantize_act[static_cast<uint32_t>(GgmlType::Q8_K)] = quant::quantize_row_q8_K_ref;
  k.quantize_act[static_cast<uint32_t>(GgmlType::F16)] = quant::quantize_row_f16_ref;
}

}  // namespace detail

}  // namespace strix::cpu
