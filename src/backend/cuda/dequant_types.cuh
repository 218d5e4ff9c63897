// The float path's readers of the weight types beyond common.cuh's F32, F16,
// Q8_0, Q4_K and Q6_K (BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q5_K,
// IQ4_NL, IQ4_XS, MXFP4), under common.cuh's "8 weights at a time" contract,
// and the dispatch over all of them. Included by matmul.cu and (through
// gemv_rows.cuh) by the GEMV files.
//
// Each part() repeats its scalar dequantizer in src/quant (legacy.cpp,
// kquants.cpp, iquants.cpp, fp4.cpp, float.cpp) product for product, so the
// values are bit-identical. Those files are compiled without contraction;
// nvcc contracts a * b + c into an fma by default, so every product that
// meets an add here is written __fmul_rn (never fused).
//
// Block alignment: rows start 256-byte aligned, so a block is aligned to the
// largest power of two dividing its size (18, 22, 110 bytes: 2; 20, 84: 4;
// 24, 136: 8; 176: 16; 17: 1); loads are never wider than that.
#pragma once

#include "backend/cuda/common.cuh"

namespace strix::cuda {

__device__ __forceinline__ uint32_t ld16(const uint8_t* p) { return *reinterpret_cast<const uint16_t*>(p); }
__device__ __forceinline__ uint32_t ld32(const uint8_t* p) { return *reinterpret_cast<const uint32_t*>(p); }
// 4 bytes at a 2-byte aligned address
__device__ __forceinline__ uint32_t ld32_a2(const uint8_t* p) { return ld16(p) | (ld16(p + 2) << 16); }
// 4 bytes at any address
__device__ __forceinline__ uint32_t ld32_a1(const uint8_t* p) {
  return p[0] | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}
__device__ __forceinline__ uint32_t byte_at(uint32_t w, int i) { return (w >> (8 * i)) & 0xff; }

// Entry i (0..15) of a table of 16 signed bytes packed little endian into
// four words, without a memory lookup (lanes index it independently).
__host__ __device__ constexpr uint32_t pack_i8(int a, int b, int c, int d) {
  return (static_cast<uint32_t>(a) & 0xff) | ((static_cast<uint32_t>(b) & 0xff) << 8) |
         ((static_cast<uint32_t>(c) & 0xff) << 16) | ((static_cast<uint32_t>(d) & 0xff) << 24);
}
__device__ __forceinline__ int lut16(uint32_t w0, uint32_t w1, uint32_t w2, uint32_t w3, uint32_t i) {
  const uint32_t lo = __byte_perm(w0, w1, i & 7), hi = __byte_perm(w2, w3, i & 7);
  return static_cast<int8_t>(static_cast<uint8_t>((i & 8) ? hi : lo));
}
// kvalues_iq4nl (src/quant/iq_grids.cpp): the IQ4_NL / IQ4_XS levels
__device__ __forceinline__ int iq4nl_value(uint32_t i) {
  return lut16(pack_i8(-127, -104, -83, -65), pack_i8(-49, -35, -22, -10), pack_i8(1, 13, 25, 38),
               pack_i8(53, 69, 89, 113), i);
}
// kFp4Doubled (src/quant/fp4.cpp): E2M1 code -> twice its value
__device__ __forceinline__ int fp4_doubled(uint32_t i) {
  return lut16(pack_i8(0, 1, 2, 3), pack_i8(4, 6, 8, 12), pack_i8(0, -1, -2, -3), pack_i8(-4, -6, -8, -12), i);
}

// Nibble blocks of 32 (byte j: element j low, j + 16 high): part p takes
// bytes 4p..4p+3, elements 4p.. (v[0..3]) and 4p+16.. (v[4..7]).
__device__ __forceinline__ void nibble_idx(int p, int idx[4]) {
  idx[0] = 4 * p, idx[1] = 4 * p + 2, idx[2] = 4 * p + 16, idx[3] = 4 * p + 18;
}

struct QBF16 {
  static constexpr int kElems = 8, kBytes = 16, kPart = 8, kPairs = 4;
  __device__ __forceinline__ static void part(const uint8_t* b, int, float v[8], int idx[4]) {
    const uint4 u = *reinterpret_cast<const uint4*>(b);
    const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      v[2 * r] = __uint_as_float(w[r] << 16);
      v[2 * r + 1] = __uint_as_float(w[r] & 0xffff0000u);
      idx[r] = 2 * r;
    }
  }
};

struct QBF16N {
  static constexpr int kElems = 2, kBytes = 4, kPart = 2, kPairs = 1;
  __device__ __forceinline__ static void part(const uint8_t* b, int, float v[8], int idx[4]) {
    const uint32_t w = *reinterpret_cast<const uint32_t*>(b);
    v[0] = __uint_as_float(w << 16);
    v[1] = __uint_as_float(w & 0xffff0000u);
    idx[0] = 0;
  }
};

// block_q4_0: half d, qs[16]; x = (q - 8) * d.
struct QQ4_0 {
  static constexpr int kElems = 32, kBytes = 18, kPart = 8, kPairs = 4;
  __device__ __forceinline__ static void part(const uint8_t* b, int p, float v[8], int idx[4]) {
    const float d = h2f(static_cast<uint16_t>(ld16(b)));
    const uint32_t q = ld32_a2(b + 2 + 4 * p);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int c = static_cast<int>(byte_at(q, i));
      v[i] = static_cast<float>((c & 0x0f) - 8) * d;
      v[4 + i] = static_cast<float>((c >> 4) - 8) * d;
    }
    nibble_idx(p, idx);
  }
};

// block_q4_1: half d, half m, qs[16]; x = q * d + m.
struct QQ4_1 {
  static constexpr int kElems = 32, kBytes = 20, kPart = 8, kPairs = 4;
  __device__ __forceinline__ static void part(const uint8_t* b, int p, float v[8], int idx[4]) {
    const float d = h2f(static_cast<uint16_t>(ld16(b)));
    const float m = h2f(static_cast<uint16_t>(ld16(b + 2)));
    const uint32_t q = ld32(b + 4 + 4 * p);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int c = static_cast<int>(byte_at(q, i));
      v[i] = __fmul_rn(static_cast<float>(c & 0x0f), d) + m;
      v[4 + i] = __fmul_rn(static_cast<float>(c >> 4), d) + m;
    }
    nibble_idx(p, idx);
  }
};

// block_q5_0: half d, qh (fifth bit of element j = bit j), qs[16]; x = (q - 16) * d.
struct QQ5_0 {
  static constexpr int kElems = 32, kBytes = 22, kPart = 8, kPairs = 4;
  __device__ __forceinline__ static void part(const uint8_t* b, int p, float v[8], int idx[4]) {
    const float d = h2f(static_cast<uint16_t>(ld16(b)));
    const uint32_t qh = ld32_a2(b + 2);
    const uint32_t q = ld32_a2(b + 6 + 4 * p);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int c = static_cast<int>(byte_at(q, i)), j = 4 * p + i;
      const int hi0 = static_cast<int>((qh >> j) & 1) << 4;
      const int hi1 = static_cast<int>((qh >> (j + 16)) & 1) << 4;
      v[i] = static_cast<float>(((c & 0x0f) | hi0) - 16) * d;
      v[4 + i] = static_cast<float>(((c >> 4) | hi1) - 16) * d;
    }
    nibble_idx(p, idx);
  }
};

// block_q5_1: half d, half m, qh, qs[16]; x = q * d + m.
struct QQ5_1 {
  static constexpr int kElems = 32, kBytes = 24, kPart = 8, kPairs = 4;
  __device__ __forceinline__ static void part(const uint8_t* b, int p, float v[8], int idx[4]) {
    const float d = h2f(static_cast<uint16_t>(ld16(b)));
    const float m = h2f(static_cast<uint16_t>(ld16(b + 2)));
    const uint32_t qh = ld32(b + 4);
    const uint32_t q = ld32(b + 8 + 4 * p);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int c = static_cast<int>(byte_at(q, i)), j = 4 * p + i;
      const int hi0 = static_cast<int>((qh >> j) & 1) << 4;
      const int hi1 = static_cast<int>((qh >> (j + 16)) & 1) << 4;
      v[i] = __fmul_rn(static_cast<float>((c & 0x0f) | hi0), d) + m;
      v[4 + i] = __fmul_rn(static_cast<float>((c >> 4) | hi1), d) + m;
    }
    nibble_idx(p, idx);
  }
};

// block_iq4_nl: half d, qs[16]; x = d * kvalues_iq4nl[q].
struct QIQ4_NL {
  static constexpr int kElems = 32, kBytes = 18, kPart = 8, kPairs = 4;
  __device__ __forceinline__ static void part(const uint8_t* b, int p, float v[8], int idx[4]) {
    const float d = h2f(static_cast<uint16_t>(ld16(b)));
    const uint32_t q = ld32_a2(b + 2 + 4 * p);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint32_t c = byte_at(q, i);
      v[i] = d * static_cast<float>(iq4nl_value(c & 0x0f));
      v[4 + i] = d * static_cast<float>(iq4nl_value(c >> 4));
    }
    nibble_idx(p, idx);
  }
};

// block_mxfp4: E8M0 exponent e, qs[16]; x = kFp4Doubled[q] * 2^(e - 128)
// (the doubled codes times half the scale, as src/quant/fp4.cpp).
struct QMXFP4 {
  static constexpr int kElems = 32, kBytes = 17, kPart = 8, kPairs = 4;
  __device__ __forceinline__ static void part(const uint8_t* b, int p, float v[8], int idx[4]) {
    const uint32_t e = b[0];
    // e8m0_half: e = 0, 1 are the subnormals 2^-128, 2^-127
    const float s = __uint_as_float(e < 2 ? (0x00200000u << e) : ((e - 1) << 23));
    const uint32_t q = ld32_a1(b + 1 + 4 * p);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint32_t c = byte_at(q, i);
      v[i] = static_cast<float>(fp4_doubled(c & 0x0f)) * s;
      v[4 + i] = static_cast<float>(fp4_doubled(c >> 4)) * s;
    }
    nibble_idx(p, idx);
  }
};

// block_iq4_xs: half d, scales_h (2 bits per sub-block), scales_l[4]
// (nibbles), qs[128]: 8 sub-blocks of 32 laid out as IQ4_NL's; x = d * (ls -
// 32) * kvalues_iq4nl[q]. Part p: sub-block p / 4, its bytes 4 (p % 4)...
struct QIQ4_XS {
  static constexpr int kElems = 256, kBytes = 136, kPart = 8, kPairs = 4;
  __device__ __forceinline__ static void part(const uint8_t* b, int p, float v[8], int idx[4]) {
    const float d = h2f(static_cast<uint16_t>(ld16(b)));
    const uint32_t scales_h = ld16(b + 2);
    const int ib = p >> 2, o = (p & 3) * 4;
    const int ls = static_cast<int>(((b[4 + ib / 2] >> (4 * (ib % 2))) & 0x0f) | (((scales_h >> (2 * ib)) & 3) << 4));
    const float dl = d * static_cast<float>(ls - 32);
    const uint32_t q = ld32(b + 8 + 16 * ib + o);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint32_t c = byte_at(q, i);
      v[i] = dl * static_cast<float>(iq4nl_value(c & 0x0f));
      v[4 + i] = dl * static_cast<float>(iq4nl_value(c >> 4));
    }
    idx[0] = 32 * ib + o, idx[1] = 32 * ib + o + 2, idx[2] = 32 * ib + 16 + o, idx[3] = 32 * ib + 18 + o;
  }
};

// block_q2_K: scales[16] (scale nibble | min nibble << 4), qs[64], half d,
// half dmin. Element e = 128 h + 32 s + l (l < 32) is bits 2s of qs[32 h +
// l], in sub-block e / 16: x = d * sc * q - dmin * m. Part p is elements
// 8p..8p+7, one sub-block and one shift.
struct QQ2_K {
  static constexpr int kElems = 256, kBytes = 84, kPart = 8, kPairs = 4;
  __device__ __forceinline__ static void part(const uint8_t* b, int p, float v[8], int idx[4]) {
    const float d = h2f(static_cast<uint16_t>(ld16(b + 80)));
    const float dmin = h2f(static_cast<uint16_t>(ld16(b + 82)));
    const uint32_t sc = b[p >> 1];
    const float dl = d * static_cast<float>(sc & 0x0f);
    const float ml = dmin * static_cast<float>(sc >> 4);
    const uint8_t* qs = b + 16 + 32 * (p >> 4) + 8 * (p & 3);
    const uint32_t q[2] = {ld32(qs), ld32(qs + 4)};
    const int shift = 2 * ((p >> 2) & 3);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      v[i] = __fmul_rn(dl, static_cast<float>((byte_at(q[i / 4], i % 4) >> shift) & 3)) - ml;
    }
#pragma unroll
    for (int r = 0; r < 4; ++r) idx[r] = 8 * p + 2 * r;
  }
};

// block_q3_K: hmask[32], qs[64], scales[12] (6-bit, biased by 32), half d.
// Element e = 128 h + 32 s + l: low bits 2s of qs[32 h + l], third bit
// (1 << (4h + s)) of hmask[l] (clear: minus 4); x = d * (scale - 32) * q.
// Part p is elements 8p..8p+7 as Q2_K's.
__device__ __forceinline__ int q3k_scale(const uint8_t* s, int j) {
  const int lo = j < 8 ? (s[j] & 0x0f) : (s[j - 8] >> 4);
  const int hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
  return lo | (hi << 4);
}
struct QQ3_K {
  static constexpr int kElems = 256, kBytes = 110, kPart = 8, kPairs = 4;
  __device__ __forceinline__ static void part(const uint8_t* b, int p, float v[8], int idx[4]) {
    const float d = h2f(static_cast<uint16_t>(ld16(b + 108)));
    const float dl = d * static_cast<float>(q3k_scale(b + 96, p >> 1) - 32);
    const int l = 8 * (p & 3), h = p >> 4, s = (p >> 2) & 3;
    const uint8_t* qs = b + 32 + 32 * h + l;
    const uint32_t q[2] = {ld32_a2(qs), ld32_a2(qs + 4)};
    const uint32_t hm[2] = {ld32_a2(b + l), ld32_a2(b + l + 4)};
    const uint32_t m = 1u << (4 * h + s);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int c =
          static_cast<int>((byte_at(q[i / 4], i % 4) >> (2 * s)) & 3) - ((byte_at(hm[i / 4], i % 4) & m) ? 0 : 4);
      v[i] = dl * static_cast<float>(c);
    }
#pragma unroll
    for (int r = 0; r < 4; ++r) idx[r] = 8 * p + 2 * r;
  }
};

// block_q5_K: half d, half dmin, scales[12] (as Q4_K), qh[32], qs[128].
// As Q4_K's parts, the fifth bit of element 64j + l (low nibble) being bit
// 2j of qh[l], of 64j + 32 + l (high nibble) bit 2j + 1.
struct QQ5_K {
  static constexpr int kElems = 256, kBytes = 176, kPart = 8, kPairs = 4;
  __device__ __forceinline__ static void part(const uint8_t* b, int p, float v[8], int idx[4]) {
    const float d = h2f(static_cast<uint16_t>(ld16(b)));
    const float dmin = h2f(static_cast<uint16_t>(ld16(b + 2)));
    const int j = p >> 3, o = (p & 7) * 4;
    int sc, m;
    q4k_scale_min(2 * j, b + 4, sc, m);
    const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
    q4k_scale_min(2 * j + 1, b + 4, sc, m);
    const float d2 = d * static_cast<float>(sc), m2 = dmin * static_cast<float>(m);
    const uint32_t q = ld32(b + 48 + 32 * j + o);
    const uint32_t qh = ld32(b + 16 + o);
    const uint32_t u1 = 1u << (2 * j), u2 = u1 << 1;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint32_t c = byte_at(q, i), hb = byte_at(qh, i);
      v[i] = __fmul_rn(d1, static_cast<float>((c & 0x0f) + ((hb & u1) ? 16 : 0))) - m1;
      v[4 + i] = __fmul_rn(d2, static_cast<float>((c >> 4) + ((hb & u2) ? 16 : 0))) - m2;
    }
    idx[0] = 64 * j + o, idx[1] = 64 * j + o + 2, idx[2] = 64 * j + 32 + o, idx[3] = 64 * j + 32 + o + 2;
  }
};

// Calls FN<Q>(args...) with Q the block type of `t` for rows of `ne0`
// (refused when not supported).
#define STRIX_CUDA_DISPATCH_PAIRWISE(Q8, QN, ne0, FN, ...) \
  if ((ne0) % 8 == 0) {                                    \
    FN<Q8>(__VA_ARGS__);                                   \
  } else {                                                 \
    FN<QN>(__VA_ARGS__);                                   \
  }
#define STRIX_CUDA_DISPATCH_TYPE(t, ne0, FN, ...)                              \
  switch (t) {                                                                 \
    case GgmlType::F32:                                                        \
      STRIX_CUDA_DISPATCH_PAIRWISE(QF32, QF32N, ne0, FN, __VA_ARGS__) break;   \
    case GgmlType::F16:                                                        \
      STRIX_CUDA_DISPATCH_PAIRWISE(QF16, QF16N, ne0, FN, __VA_ARGS__) break;   \
    case GgmlType::BF16:                                                       \
      STRIX_CUDA_DISPATCH_PAIRWISE(QBF16, QBF16N, ne0, FN, __VA_ARGS__) break; \
    case GgmlType::Q8_0:                                                       \
      FN<QQ8_0>(__VA_ARGS__);                                                  \
      break;                                                                   \
    case GgmlType::Q4_0:                                                       \
      FN<QQ4_0>(__VA_ARGS__);                                                  \
      break;                                                                   \
    case GgmlType::Q4_1:                                                       \
      FN<QQ4_1>(__VA_ARGS__);                                                  \
      break;                                                                   \
    case GgmlType::Q5_0:                                                       \
      FN<QQ5_0>(__VA_ARGS__);                                                  \
      break;                                                                   \
    case GgmlType::Q5_1:                                                       \
      FN<QQ5_1>(__VA_ARGS__);                                                  \
      break;                                                                   \
    case GgmlType::IQ4_NL:                                                     \
      FN<QIQ4_NL>(__VA_ARGS__);                                                \
      break;                                                                   \
    case GgmlType::MXFP4:                                                      \
      FN<QMXFP4>(__VA_ARGS__);                                                 \
      break;                                                                   \
    case GgmlType::Q2_K:                                                       \
      FN<QQ2_K>(__VA_ARGS__);                                                  \
      break;                                                                   \
    case GgmlType::Q3_K:                                                       \
      FN<QQ3_K>(__VA_ARGS__);                                                  \
      break;                                                                   \
    case GgmlType::Q4_K:                                                       \
      FN<QQ4_K>(__VA_ARGS__);                                                  \
      break;                                                                   \
    case GgmlType::Q5_K:                                                       \
      FN<QQ5_K>(__VA_ARGS__);                                                  \
      break;                                                                   \
    case GgmlType::Q6_K:                                                       \
      FN<QQ6_K>(__VA_ARGS__);                                                  \
      break;                                                                   \
    case GgmlType::IQ4_XS:                                                     \
      FN<QIQ4_XS>(__VA_ARGS__);                                                \
      break;                                                                   \
    default:                                                                   \
      refuse_type(t);                                                          \
  }

}  // namespace strix::cuda
