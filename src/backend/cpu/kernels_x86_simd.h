// x86 SIMD kernels written once against 256-bit integer vectors and compiled
// twice: by kernels_avx2.cpp (AVX2+FMA+F16C) and kernels_avx512.cpp (adds
// AVX-512 VNNI/VL/BW, used through the helpers below where it helps).
// Everything here has internal linkage (anonymous namespace) so the two
// compilations never share a symbol compiled for the wrong ISA.
//
// Dot products follow ggml-cpu's x86 structure (one FMA of the block scale per
// block or super-block into a float vector, reduced at the end): the integer
// parts are exact, only the float summation order differs from the scalar
// reference. Quantizers reproduce ggml-cpu's x86 quantize_row_q8_0/q8_1
// bit for bit (round to nearest even of x * (127 / amax)) and its q8_K
// (the reference algorithm: x * (-127 / signed max), nearest even).
#pragma once

#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
#error "kernels_x86_simd.h needs -mavx2 -mfma -mf16c"
#endif

#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "backend/cpu/kernel_blocks.h"
#include "backend/cpu/kernels.h"
#include "core/cpu_features.h"
#include "quant/iq_grids.h"

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

inline float hsum_f32x8(__m256 v) {
  __m128 r = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  r = _mm_add_ps(r, _mm_movehl_ps(r, r));
  r = _mm_add_ss(r, _mm_movehdup_ps(r));
  return _mm_cvtss_f32(r);
}

inline int hsum_i32x8(__m256i v) {
  __m128i r = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  r = _mm_add_epi32(r, _mm_unpackhi_epi64(r, r));
  r = _mm_add_epi32(r, _mm_shuffle_epi32(r, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(r);
}

inline float fp16_scalar(uint16_t h) { return _cvtsh_ss(h); }

// half(a) * half(b) with one conversion of both (a block's two scales).
inline float fp16_product(uint16_t a, uint16_t b) {
  const __m128 v = _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(a | (static_cast<uint32_t>(b) << 16))));
  return _mm_cvtss_f32(_mm_mul_ss(v, _mm_movehdup_ps(v)));
}

// i32x8 sums of groups of four u8 * s8 products. `u` must be <= 128 wherever
// `s` can be -128 (the 16-bit pair sums of maddubs must not saturate).
inline __m256i dot_u8s8(__m256i u, __m256i s) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
#else
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
#endif
}

// acc + pairwise sums of i16 products a * b (one VNNI instruction on AVX-512).
inline __m256i madd_acc(__m256i acc, __m256i a, __m256i b) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  return _mm256_dpwssd_epi32(acc, a, b);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
#endif
}

// acc + i32x8 sums of groups of four u8 * s8 products (same bound on `u` as dot_u8s8).
inline __m256i dot_u8s8_acc(__m256i acc, __m256i u, __m256i s) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  return _mm256_dpbusd_epi32(acc, u, s);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
#endif
}

// i32x8 sums of groups of four s8 * s8 products (|x| moved onto y's sign).
inline __m256i dot_s8s8(__m256i x, __m256i y) { return dot_u8s8(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x)); }

// 16 bytes of packed nibbles -> 32 bytes: low nibbles first, then high ones.
// (The bytes are loaded into both 128-bit lanes, the upper lane shifted by 4.)
inline __m256i unpack_nibbles(const uint8_t* p) {
  const __m256i both = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_and_si256(_mm256_srlv_epi64(both, _mm256_setr_epi64x(0, 0, 4, 4)), _mm256_set1_epi8(0x0F));
}

inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// ---------------------------------------------------------------- legacy x q8_0

// Lane j of the result: the sum of the eight lanes of p[j].
inline __m256i lane_sums8(const __m256i p[8]) {
  const __m256i h01 = _mm256_hadd_epi32(p[0], p[1]);
  const __m256i h23 = _mm256_hadd_epi32(p[2], p[3]);
  const __m256i h45 = _mm256_hadd_epi32(p[4], p[5]);
  const __m256i h67 = _mm256_hadd_epi32(p[6], p[7]);
  const __m256i h0123 = _mm256_hadd_epi32(h01, h23);  // per 128-bit lane: half-sums of p0..p3
  const __m256i h4567 = _mm256_hadd_epi32(h45, h67);
  return _mm256_add_epi32(_mm256_permute2x128_si256(h0123, h4567, 0x20), _mm256_permute2x128_si256(h0123, h4567, 0x31));
}

// Four halves at a stride of `stride` bytes, packed low to high.
inline uint64_t gather_halves4(const uint8_t* p, size_t stride) {
  uint16_t h[4];
  for (int j = 0; j < 4; ++j) std::memcpy(&h[j], p + j * stride, 2);
  return static_cast<uint64_t>(h[0]) | (static_cast<uint64_t>(h[1]) << 16) | (static_cast<uint64_t>(h[2]) << 32) |
         (static_cast<uint64_t>(h[3]) << 48);
}

// The 8 halves of 8 consecutive blocks (the half at the start of each block) as floats.
#if defined(__AVX512BW__) && defined(__AVX512VL__)
// The low 128 bits (GCC 12's _mm512_castsi512_si128 trips -Wmaybe-uninitialized).
inline __m128i low128(__m512i v) {
  return reinterpret_cast<__m128i>(
      __builtin_shufflevector(reinterpret_cast<__v8di>(v), reinterpret_cast<__v8di>(v), 0, 1));
}
#endif

// The 128-bit vector of the halves at the start of 8 consecutive blocks of `b`.
template <typename Block>
inline __m128i block_halves8_bits(const Block* b) {
  const auto* p = reinterpret_cast<const uint8_t*>(b);
#if defined(__AVX512BW__) && defined(__AVX512VL__)
  // Two word permutes of 128 bytes each: blocks 0..3 from the first 128 bytes,
  // blocks 4..7 from the last 128 bytes that still lie within the 8 blocks.
  constexpr int kS = static_cast<int>(sizeof(Block));
  constexpr int kOff = 4 * kS + 128 <= 8 * kS ? 4 * kS : 8 * kS - 128;
  if constexpr (kS % 2 == 0 && 8 * kS >= 128 && 7 * kS / 2 < 64) {  // all eight in the first 128 bytes
    alignas(64) static constexpr uint16_t kIdx[32] = {0,      kS / 2,     kS,     3 * kS / 2,
                                                      2 * kS, 5 * kS / 2, 3 * kS, 7 * kS / 2};
    return low128(
        _mm512_permutex2var_epi16(_mm512_loadu_si512(p), _mm512_load_si512(kIdx), _mm512_loadu_si512(p + 64)));
  } else if constexpr (kS % 2 == 0 && 8 * kS >= 128 && 3 * kS / 2 < 64 && (7 * kS - kOff) / 2 < 64) {
    alignas(64) static constexpr uint16_t kIdx0[32] = {0, kS / 2, kS, 3 * kS / 2};
    alignas(64) static constexpr uint16_t kIdx1[32] = {(4 * kS - kOff) / 2, (5 * kS - kOff) / 2, (6 * kS - kOff) / 2,
                                                       (7 * kS - kOff) / 2};
    auto four = [](const uint8_t* q, const uint16_t* idx) {
      return low128(
          _mm512_permutex2var_epi16(_mm512_loadu_si512(q), _mm512_load_si512(idx), _mm512_loadu_si512(q + 64)));
    };
    return _mm_unpacklo_epi64(four(p, kIdx0), four(p + kOff, kIdx1));
  }
#endif
  return _mm_set_epi64x(static_cast<int64_t>(gather_halves4(p + 4 * sizeof(Block), sizeof(Block))),
                        static_cast<int64_t>(gather_halves4(p, sizeof(Block))));
}

template <typename Block>
inline __m256 block_halves8(const Block* b) {
  return _mm256_cvtph_ps(block_halves8_bits(b));
}
// Blocks whose scale is a leading half `d` (Q8_0, Q4_0, Q5_0, IQ4_NL) against
// Q8_0: sum_b dx_b * dy_b * products_b. Eight blocks at a time: their integer
// products reduced to one lane each, one conversion of the 16 halves, one FMA.
// The rest in pairs: one conversion of the four halves, two FMA chains.
template <typename Block, typename Products>
inline float sum_scaled_blocks(int nb, const Block* x, const BlockQ8_0* y, Products products) {
  __m256 acc0 = _mm256_setzero_ps();
  __m256 acc1 = _mm256_setzero_ps();
  int ib = 0;
  for (; ib + 8 <= nb; ib += 8) {
    __m256i p[8];
    for (int j = 0; j < 8; ++j) p[j] = products(ib + j);
    const __m256 d = _mm256_mul_ps(block_halves8(x + ib), block_halves8(y + ib));
    acc0 = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(lane_sums8(p)), acc0);
  }
  for (; ib + 1 < nb; ib += 2) {
    const uint64_t h = static_cast<uint64_t>(x[ib].d) | (static_cast<uint64_t>(x[ib + 1].d) << 16) |
                       (static_cast<uint64_t>(y[ib].d) << 32) | (static_cast<uint64_t>(y[ib + 1].d) << 48);
    const __m128 v = _mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<int64_t>(h)));
    const __m128 d = _mm_mul_ps(v, _mm_movehl_ps(v, v));  // [dx0 * dy0, dx1 * dy1]
    acc0 = _mm256_fmadd_ps(_mm256_broadcastss_ps(d), _mm256_cvtepi32_ps(products(ib)), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_broadcastss_ps(_mm_movehdup_ps(d)), _mm256_cvtepi32_ps(products(ib + 1)), acc1);
  }
  if (ib < nb) {
    acc0 = _mm256_fmadd_ps(_mm256_set1_ps(fp16_product(x[ib].d, y[ib].d)), _mm256_cvtepi32_ps(products(ib)), acc0);
  }
  return hsum_f32x8(_mm256_add_ps(acc0, acc1));
}

// Q8_0 in ggml-cpu's exact float order (one 8-lane FMA chain, block by
// block, then hsum): libllama runs Q8_0 through this order both in decode
// (vec_dot) and in prefill (tinyBLAS_Q0), so matching it makes Strix's Q8_0
// logits bit-identical. Two rows at a time would change nothing per row.
void simd_dot_q8_0_q8_0(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ8_0*>(vx);
  const auto* y = static_cast<const BlockQ8_0*>(vy);
  __m256 acc = _mm256_setzero_ps();
  const int nb = n / 32;
  for (int ib = 0; ib < nb; ++ib) {
    const __m256 d = _mm256_set1_ps(fp16_scalar(x[ib].d) * fp16_scalar(y[ib].d));
    const __m256 q = _mm256_cvtepi32_ps(dot_s8s8(load256(x[ib].qs), load256(y[ib].qs)));
    acc = _mm256_fmadd_ps(d, q, acc);
  }
  *s = hsum_f32x8(acc);
}

// Q8_0 GEMM tile in the same per-output order as simd_dot_q8_0_q8_0 (and as
// libllama's tinyBLAS_Q0 prefill): each (row, column) keeps its own 8-lane
// FMA chain over the blocks. RM weight rows x RN activation rows per pass.
template <int RM, int RN>
inline void q8_0_tile(int nb, const uint8_t* X, size_t bx, const uint8_t* Y, size_t by, float* s, size_t bs) {
  __m256 acc[RM][RN];
  for (int r = 0; r < RM; ++r) {
    for (int c = 0; c < RN; ++c) acc[r][c] = _mm256_setzero_ps();
  }
  for (int ib = 0; ib < nb; ++ib) {
    __m256i xq[RM];
    float dx[RM];
    for (int r = 0; r < RM; ++r) {
      const BlockQ8_0& xb = reinterpret_cast<const BlockQ8_0*>(X + r * bx)[ib];
      xq[r] = load256(xb.qs);
      dx[r] = fp16_scalar(xb.d);
    }
    for (int c = 0; c < RN; ++c) {
      const BlockQ8_0& yb = reinterpret_cast<const BlockQ8_0*>(Y + c * by)[ib];
      const __m256i yq = load256(yb.qs);
      const float dy = fp16_scalar(yb.d);
      for (int r = 0; r < RM; ++r) {
        acc[r][c] = _mm256_fmadd_ps(_mm256_set1_ps(dx[r] * dy), _mm256_cvtepi32_ps(dot_s8s8(xq[r], yq)), acc[r][c]);
      }
    }
  }
  for (int r = 0; r < RM; ++r) {
    for (int c = 0; c < RN; ++c) s[c * bs + r] = hsum_f32x8(acc[r][c]);
  }
}

#if defined(__AVX512BW__) && defined(__AVX512VNNI__) && defined(__AVX512DQ__)
#define STRIX_Q8_0_ZMM 1
// The same per-output order on 512-bit vectors: lanes 0-7 hold one column's
// 8-lane chain and lanes 8-15 the next column's, so one dpbusd, one conversion,
// one scale product and one FMA serve two outputs. dpbusd multiplies unsigned
// by signed bytes: the activations go in as y + 128 and the weight block's
// 128 * (its four-quant sums) is subtracted first (it starts the accumulation),
// so the int32 lane sums are exactly x . y. Bit-equal to q8_0_tile.
//
// With kPrep the rows' per-block terms (the negated sums, the scale as float)
// come from `neg` / `dx` (prepared once for all the column pairs); without
// it they are made per block.
// 256 -> 512-bit joins and splits as vector shuffles (GCC 12's cast, insert,
// broadcast and conversion intrinsics trip -Wmaybe-uninitialized).
inline __m512i join256(__m256i lo, __m256i hi) {
  return reinterpret_cast<__m512i>(
      __builtin_shufflevector(reinterpret_cast<__v4di>(lo), reinterpret_cast<__v4di>(hi), 0, 1, 2, 3, 4, 5, 6, 7));
}
inline __m512 join256(__m256 lo, __m256 hi) {
  return reinterpret_cast<__m512>(__builtin_shufflevector(reinterpret_cast<__v8sf>(lo), reinterpret_cast<__v8sf>(hi), 0,
                                                          1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
}
inline __m512i bcast256(const void* p) {
  const __v4di v = reinterpret_cast<__v4di>(load256(p));
  return reinterpret_cast<__m512i>(__builtin_shufflevector(v, v, 0, 1, 2, 3, 0, 1, 2, 3));
}
inline __m256 half512(__m512 v, int h) {
  const __v16sf f = reinterpret_cast<__v16sf>(v);
  return reinterpret_cast<__m256>(h == 0 ? __builtin_shufflevector(f, f, 0, 1, 2, 3, 4, 5, 6, 7)
                                         : __builtin_shufflevector(f, f, 8, 9, 10, 11, 12, 13, 14, 15));
}
inline __m512 i32_to_f32(__m512i v) {
  return reinterpret_cast<__m512>(__builtin_convertvector(reinterpret_cast<__v16si>(v), __v16sf));
}

template <int RM, int CP, bool kPrep>
inline void q8_0_tile_z(int nb, const uint8_t* X, size_t bx, const int32_t* neg, const float* dx, const uint8_t* Y,
                        size_t by, float* s, size_t bs, const uint8_t* pf = nullptr, int pf_lines = 0) {
  __m512 acc[RM][CP];
  for (int r = 0; r < RM; ++r) {
    for (int c = 0; c < CP; ++c) acc[r][c] = _mm512_setzero_ps();
  }
  const __m512i k128 = _mm512_set1_epi8(static_cast<char>(0x80));
  for (int ib = 0; ib < nb; ++ib) {
    for (int k = 0; k < pf_lines; ++k)
      _mm_prefetch(reinterpret_cast<const char*>(pf + 64 * (ib * pf_lines + k)), _MM_HINT_T0);
    __m512i yq[CP];
    __m512 dy[CP];
    for (int c = 0; c < CP; ++c) {
      const BlockQ8_0& y0 = reinterpret_cast<const BlockQ8_0*>(Y + 2 * c * by)[ib];
      const BlockQ8_0& y1 = reinterpret_cast<const BlockQ8_0*>(Y + (2 * c + 1) * by)[ib];
      yq[c] = _mm512_xor_si512(join256(load256(y0.qs), load256(y1.qs)), k128);
      dy[c] = join256(_mm256_set1_ps(fp16_scalar(y0.d)), _mm256_set1_ps(fp16_scalar(y1.d)));
    }
    for (int r = 0; r < RM; ++r) {
      const BlockQ8_0& xb = reinterpret_cast<const BlockQ8_0*>(X + r * bx)[ib];
      const __m512i w = bcast256(xb.qs);
      __m512i nw;
      __m512 d;
      if constexpr (kPrep) {
        nw = bcast256(neg + 8 * (r * nb + ib));
        d = _mm512_set1_ps(dx[r * nb + ib]);
      } else {
        nw = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), k128, w));
        d = _mm512_set1_ps(fp16_scalar(xb.d));
      }
      for (int c = 0; c < CP; ++c) {
        const __m512 q = i32_to_f32(_mm512_dpbusd_epi32(nw, yq[c], w));
        acc[r][c] = _mm512_fmadd_ps(_mm512_mul_ps(d, dy[c]), q, acc[r][c]);
      }
    }
  }
  for (int r = 0; r < RM; ++r) {
    for (int c = 0; c < CP; ++c) {
      s[2 * c * bs + r] = hsum_f32x8(half512(acc[r][c], 0));
      s[(2 * c + 1) * bs + r] = hsum_f32x8(half512(acc[r][c], 1));
    }
  }
}

// RM rows x nc columns: column pairs by the 512-bit tile (4 columns a pass),
// an odd last column by the 256-bit one.
template <int RM, bool kPrep>
inline void q8_0_cols_z(int nb, const uint8_t* X, size_t bx, const uint8_t* Y, size_t by, int nc, float* s, size_t bs) {
  // Per thread, grown to the largest row block seen (then never again).
  thread_local std::vector<int32_t> neg_buf;
  thread_local std::vector<float> dx_buf;
  if constexpr (kPrep) {
    if (neg_buf.size() < static_cast<size_t>(8 * RM * nb)) {
      neg_buf.resize(static_cast<size_t>(8 * RM * nb));
      dx_buf.resize(static_cast<size_t>(RM * nb));
    }
    const __m256i k128 = _mm256_set1_epi8(static_cast<char>(0x80));
    for (int r = 0; r < RM; ++r) {
      const auto* xr = reinterpret_cast<const BlockQ8_0*>(X + r * bx);
      for (int ib = 0; ib < nb; ++ib) {
        const __m256i sums = _mm256_dpbusd_epi32(_mm256_setzero_si256(), k128, load256(xr[ib].qs));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(neg_buf.data() + 8 * (r * nb + ib)),
                            _mm256_sub_epi32(_mm256_setzero_si256(), sums));
        dx_buf[r * nb + ib] = fp16_scalar(xr[ib].d);
      }
    }
  }
  // The first pass brings the next RM rows (the caller's next row block) into
  // L2 while it computes, so the next preparation does not wait on DRAM.
  const int pf_lines = kPrep ? static_cast<int>((RM * bx + 64 * nb - 1) / (64 * nb)) : 0;
  int c = 0;
  for (; c + 4 <= nc; c += 4) {
    q8_0_tile_z<RM, 2, kPrep>(nb, X, bx, neg_buf.data(), dx_buf.data(), Y + c * by, by, s + c * bs, bs, X + RM * bx,
                              c == 0 ? pf_lines : 0);
  }
  for (; c + 2 <= nc; c += 2) {
    q8_0_tile_z<RM, 1, kPrep>(nb, X, bx, neg_buf.data(), dx_buf.data(), Y + c * by, by, s + c * bs, bs);
  }
  if (c < nc) q8_0_tile<RM, 1>(nb, X, bx, Y + c * by, by, s + c * bs, bs);
}

// nr rows in blocks of RM (the rest a row at a time).
template <int RM, bool kPrep>
inline void q8_0_rows_z(int nb, const uint8_t* X, size_t bx, int nr, const uint8_t* Y, size_t by, int nc, float* s,
                        size_t bs) {
  int r = 0;
  for (; r + RM <= nr; r += RM) q8_0_cols_z<RM, kPrep>(nb, X + r * bx, bx, Y, by, nc, s + r, bs);
  for (; r < nr; ++r) q8_0_cols_z<1, false>(nb, X + r * bx, bx, Y, by, nc, s + r, bs);
}
#endif

template <int RM>
inline void q8_0_cols(int nb, const uint8_t* X, size_t bx, const uint8_t* Y, size_t by, int nc, float* s, size_t bs) {
  int c = 0;
  for (; c + 2 <= nc; c += 2) q8_0_tile<RM, 2>(nb, X, bx, Y + c * by, by, s + c * bs, bs);
  if (c < nc) q8_0_tile<RM, 1>(nb, X, bx, Y + c * by, by, s + c * bs, bs);
}

void simd_gemm_q8_0(int n, const void* vx, size_t bx, int nr, const void* vy, size_t by, int nc, float* s, size_t bs) {
  const auto* X = static_cast<const uint8_t*>(vx);
  const auto* Y = static_cast<const uint8_t*>(vy);
  const int nb = n / 32;
  if (nc == 1) {  // decode: row by row (same order; measured faster for one column)
    for (int r = 0; r < nr; ++r) simd_dot_q8_0_q8_0(n, s + r, X + r * bx, Y);
    return;
  }
#if defined(STRIX_Q8_0_ZMM)
  // Two columns per 512-bit vector. Thread CPU time, Q8_0 rows of 1024 from
  // DRAM (GMAC/s, this tile vs the 256-bit one): 43 vs 22 at 2 columns (a row
  // at a time), 53 vs 36 at 8 (4 rows), 68 vs 30 at 16 (16 rows), 90 vs 36 at
  // 64 (8 rows).
  if (nc <= 4) {
    q8_0_rows_z<1, false>(nb, X, bx, nr, Y, by, nc, s, bs);
  } else if (nc <= 8) {
    q8_0_rows_z<4, true>(nb, X, bx, nr, Y, by, nc, s, bs);
  } else if (nc <= 16) {
    q8_0_rows_z<16, true>(nb, X, bx, nr, Y, by, nc, s, bs);
  } else {
    q8_0_rows_z<8, true>(nb, X, bx, nr, Y, by, nc, s, bs);
  }
#else
  if (nc <= 12) {
    // A few columns (batched decode): one weight row at a time. Weights come from
    // DRAM here, and one sequential stream keeps the prefetchers ahead where four
    // strided rows do not: 47 vs 15 GMAC/s at 4 columns, 39 vs 33 at 12, equal at 16
    // (thread CPU time, 64 MB of Q8_0 rows). Same per-output order as every tile.
    for (int r = 0; r < nr; ++r) q8_0_cols<1>(nb, X + r * bx, bx, Y, by, nc, s + r, bs);
    return;
  }
  int r = 0;
  for (; r + 4 <= nr; r += 4) q8_0_cols<4>(nb, X + r * bx, bx, Y, by, nc, s + r, bs);
  switch (nr - r) {
    case 3:
      q8_0_cols<3>(nb, X + r * bx, bx, Y, by, nc, s + r, bs);
      break;
    case 2:
      q8_0_cols<2>(nb, X + r * bx, bx, Y, by, nc, s + r, bs);
      break;
    case 1:
      q8_0_cols<1>(nb, X + r * bx, bx, Y, by, nc, s + r, bs);
      break;
    default:
      break;
  }
#endif
}

void simd_dot_q4_0_q8_0(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ4_0*>(vx);
  const auto* y = static_cast<const BlockQ8_0*>(vy);
  const __m256i eight = _mm256_set1_epi8(8);
  // (nibble - 8) . q8 = nibble . q8 - 8 * sum(q8): unsigned x signed, no sign tricks
  *s = sum_scaled_blocks(n / 32, x, y, [&](int ib) {
    const __m256i q8 = load256(y[ib].qs);
    const __m256i nib = unpack_nibbles(x[ib].qs);
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_sub_epi32(dot_u8s8(nib, q8), dot_u8s8(eight, q8));
#else
    const __m256i p16 = _mm256_sub_epi16(_mm256_maddubs_epi16(nib, q8), _mm256_maddubs_epi16(eight, q8));
    return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
#endif
  });
}

// 32 bits -> 32 bytes: byte j is 0xFF when bit j is set, else 0.
inline __m256i bytes_from_bits(const uint8_t bits[4]) {
  // byte j takes source byte j / 8, then tests its bit j % 8
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_broadcastd_epi32(_mm_loadu_si32(bits)),
      _mm256_setr_epi64x(0x0000000000000000, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ULL));
  return _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
}

// The 32 five-bit values of a Q5 block: nibbles plus bit j of qh as bit 4.
// unsigned: [0, 31] (Q5_0 takes 16 off later).
inline __m256i q5_unsigned(const uint8_t qs[16], const uint8_t qh[4]) {
  const __m256i nib = unpack_nibbles(qs);
#if defined(__AVX512BW__) && defined(__AVX512VL__)
  uint32_t k;
  std::memcpy(&k, qh, 4);
  return _mm256_mask_add_epi8(nib, k, nib, _mm256_set1_epi8(0x10));  // bit set: nibble + 16
#else
  return _mm256_or_si256(nib, _mm256_and_si256(bytes_from_bits(qh), _mm256_set1_epi8(0x10)));
#endif
}

// 16-entry signed byte table (in both lanes) indexed by the 32 nibbles of a block.
inline __m256i lookup_nibbles(__m256i table, const uint8_t* qs) {
  return _mm256_shuffle_epi8(table, unpack_nibbles(qs));
}

inline __m256i table16(const int8_t values[16]) {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(values)));
}

// Q5_0, Q4_1 and Q5_1 in ggml-cpu's exact float order. libllama's vec_dot
// (decode; and every output of Q4_1 / Q5_1, which tinyBLAS does not take)
// keeps one 8-lane FMA chain of (dx * dy) * (q . y) over the blocks, then
// hsum; Q4_1 / Q5_1 add a scalar sum of mx * sy, one contracted FMA per block,
// after the hsum. tinyBLAS_Q0 (Q5_0 prefill, two or more activation rows)
// keeps the same chain per output. Matching it makes the logits bit-identical.
struct ChainQ5_0 {
  using Block = BlockQ5_0;
  using YBlock = BlockQ8_0;
  static constexpr bool kMin = false;
  static constexpr int kOffset = 16;  // quants are u - 16, u in [0, 31]
  static __m256i quants(const Block& b) { return q5_unsigned(b.qs, b.qh); }
};

template <bool Q5>
struct ChainQ45_1 {
  using Block = std::conditional_t<Q5, BlockQ5_1, BlockQ4_1>;
  using YBlock = BlockQ8_1;
  static constexpr bool kMin = true;
  static constexpr int kOffset = 0;
  static __m256i quants(const Block& b) {
    if constexpr (Q5) {
      return q5_unsigned(b.qs, b.qh);
    } else {
      return unpack_nibbles(b.qs);
    }
  }
};

// RM weight rows x RN activation rows, each output its own chain. The int
// lanes are ggml's (sums of four adjacent products); an offset is taken off
// per column as -kOffset * (sums of four y), exact, so the unsigned quants
// need no sign tricks per output.
template <class C, int RM, int RN>
inline void chain_tile(int nb, const uint8_t* X, size_t bx, const uint8_t* Y, size_t by, float* s, size_t bs) {
  using Block = typename C::Block;
  using YBlock = typename C::YBlock;
  static_assert(RM <= 4);
  __m256 acc[RM][RN];
  __m128 mins[RN];  // lane r: row r's min-term chain (scalar arithmetic per lane)
  for (int c = 0; c < RN; ++c) {
    for (int r = 0; r < RM; ++r) acc[r][c] = _mm256_setzero_ps();
    mins[c] = _mm_setzero_ps();
  }
  for (int ib = 0; ib < nb; ++ib) {
    __m256i xq[RM];
    float dx[RM];
    uint64_t mh = 0;  // the rows' min halves, converted together (no store-forwarding stall)
    for (int r = 0; r < RM; ++r) {
      const Block& xb = reinterpret_cast<const Block*>(X + r * bx)[ib];
      xq[r] = C::quants(xb);
      dx[r] = fp16_scalar(xb.d);
      if constexpr (C::kMin) mh |= static_cast<uint64_t>(xb.m) << (16 * r);
    }
    for (int c = 0; c < RN; ++c) {
      const YBlock& yb = reinterpret_cast<const YBlock*>(Y + c * by)[ib];
      const __m256i yq = load256(yb.qs);
      const float dy = fp16_scalar(yb.d);
      __m256i base = _mm256_setzero_si256();
      if constexpr (C::kOffset != 0) {
        base = _mm256_sub_epi32(base, dot_u8s8(_mm256_set1_epi8(static_cast<char>(C::kOffset)), yq));
      }
      for (int r = 0; r < RM; ++r) {
        const __m256i p = dot_u8s8_acc(base, xq[r], yq);
        acc[r][c] = _mm256_fmadd_ps(_mm256_set1_ps(dx[r] * dy), _mm256_cvtepi32_ps(p), acc[r][c]);
      }
      if constexpr (C::kMin) {
        const __m128 mx = _mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<int64_t>(mh)));
        mins[c] = _mm_fmadd_ps(mx, _mm_set1_ps(fp16_scalar(yb.s)), mins[c]);
      }
    }
  }
  for (int c = 0; c < RN; ++c) {
    alignas(16) float m[4];
    _mm_store_ps(m, mins[c]);
    for (int r = 0; r < RM; ++r) s[c * bs + r] = hsum_f32x8(acc[r][c]) + m[r];
  }
}

template <class C>
void simd_dot_chain(int n, float* s, const void* vx, const void* vy) {
  chain_tile<C, 1, 1>(n / 32, static_cast<const uint8_t*>(vx), 0, static_cast<const uint8_t*>(vy), 0, s, 0);
}

template <class C, int RM>
inline void chain_cols(int nb, const uint8_t* X, size_t bx, const uint8_t* Y, size_t by, int nc, float* s, size_t bs) {
  // four columns where the registers allow (AVX-512: 32 vector registers)
#if defined(__AVX512F__)
  constexpr int kCols = 4;
#else
  constexpr int kCols = 2;
#endif
  int c = 0;
  for (; c + kCols <= nc; c += kCols) chain_tile<C, RM, kCols>(nb, X, bx, Y + c * by, by, s + c * bs, bs);
  for (; c + 2 <= nc; c += 2) chain_tile<C, RM, 2>(nb, X, bx, Y + c * by, by, s + c * bs, bs);
  if (c < nc) chain_tile<C, RM, 1>(nb, X, bx, Y + c * by, by, s + c * bs, bs);
}

template <class C>
void simd_gemm_chain(int n, const void* vx, size_t bx, int nr, const void* vy, size_t by, int nc, float* s, size_t bs) {
  const auto* X = static_cast<const uint8_t*>(vx);
  const auto* Y = static_cast<const uint8_t*>(vy);
  const int nb = n / 32;
  if (nc == 1) {  // decode: row by row (the same order)
    for (int r = 0; r < nr; ++r) chain_tile<C, 1, 1>(nb, X + r * bx, bx, Y, by, s + r, bs);
    return;
  }
  int r = 0;
  for (; r + 4 <= nr; r += 4) chain_cols<C, 4>(nb, X + r * bx, bx, Y, by, nc, s + r, bs);
  switch (nr - r) {
    case 3:
      chain_cols<C, 3>(nb, X + r * bx, bx, Y, by, nc, s + r, bs);
      break;
    case 2:
      chain_cols<C, 2>(nb, X + r * bx, bx, Y, by, nc, s + r, bs);
      break;
    case 1:
      chain_cols<C, 1>(nb, X + r * bx, bx, Y, by, nc, s + r, bs);
      break;
    default:
      break;
  }
}

void simd_dot_iq4_nl_q8_0(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockIq4Nl*>(vx);
  const auto* y = static_cast<const BlockQ8_0*>(vy);
  const __m256i table = table16(quant::kvalues_iq4nl);
  *s = sum_scaled_blocks(n / 32, x, y, [&](int ib) {
    const __m256i p = dot_s8s8(lookup_nibbles(table, x[ib].qs), load256(y[ib].qs));
    return p;
  });
}

void simd_dot_mxfp4_q8_0(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockMxfp4*>(vx);
  const auto* y = static_cast<const BlockQ8_0*>(vy);
  const __m256i table = table16(kMxfp4Doubled);
  auto step = [&](int ib, __m256 acc) {
    const __m256 d = _mm256_set1_ps(fp16_scalar(y[ib].d) * e8m0_half(x[ib].e));
    const __m256i p = dot_s8s8(lookup_nibbles(table, x[ib].qs), load256(y[ib].qs));
    return _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(p), acc);
  };
  // ggml-cpu's order: two chains over pairs of blocks, hsum of their sum,
  // then an odd last block as a scalar fma after the hsum.
  const int nb = n / 32;
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int ib = 0;
  for (; ib + 1 < nb; ib += 2) {
    acc0 = step(ib, acc0);
    acc1 = step(ib + 1, acc1);
  }
  float sum = hsum_f32x8(_mm256_add_ps(acc0, acc1));
  if (ib < nb) {
    const float d = fp16_scalar(y[ib].d) * e8m0_half(x[ib].e);
    const int p = hsum_i32x8(dot_s8s8(lookup_nibbles(table, x[ib].qs), load256(y[ib].qs)));
    sum = std::fma(d, static_cast<float>(p), sum);
  }
  *s = sum;
}

void simd_dot_iq4_xs_q8_K(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockIq4Xs*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  const __m256i table = table16(quant::kvalues_iq4nl);
  __m256 acc = _mm256_setzero_ps();
  for (int i = 0; i < n / 256; ++i) {
    __m256i sumi = _mm256_setzero_si256();
    for (int sb = 0; sb < 8; ++sb) {
      const int ls = ((x[i].scales_l[sb / 2] >> (4 * (sb & 1))) & 0xF) | (((x[i].scales_h >> (2 * sb)) & 3) << 4);
      const __m256i p = dot_s8s8(lookup_nibbles(table, x[i].qs + 16 * sb), load256(y[i].qs + 32 * sb));
      sumi = _mm256_add_epi32(sumi, _mm256_mullo_epi32(p, _mm256_set1_epi32(ls - 32)));
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(fp16_scalar(x[i].d) * y[i].d), _mm256_cvtepi32_ps(sumi), acc);
  }
  *s = hsum_f32x8(acc);
}

// ---------------------------------------------------------------- K-quants x q8_K

// Word k of `words` (8 x i16, the same in both 128-bit lanes) in every i16 lane.
inline __m256i broadcast_word(__m256i words, int k) {
  return _mm256_shuffle_epi8(words, _mm256_set1_epi16(static_cast<int16_t>(((2 * k + 1) << 8) | (2 * k))));
}

// Word lo in the low 128-bit lane, word lo + 1 in the high lane (Q6_K: one
// scale per 16 elements, i.e. per half of a 32-byte maddubs result).
inline __m256i broadcast_word_pair(__m256i words, int lo) {
  const __m128i l = _mm_set1_epi16(static_cast<int16_t>(((2 * lo + 1) << 8) | (2 * lo)));
  const __m128i h = _mm_set1_epi16(static_cast<int16_t>(((2 * lo + 3) << 8) | (2 * lo + 2)));
  return _mm256_shuffle_epi8(words, _mm256_set_m128i(h, l));
}

// i32x4 whose lanes sum to sum_j bsums[j] * mins[j / 2] (16 bsums, 8 mins).
inline __m128i k_min_products(const int16_t bsums[16], __m128i mins) {
  const __m256i b = load256(bsums);
  // pairwise add the bsums of the same 32-element sub-block: 8 int16
  const __m128i pair = _mm_hadd_epi16(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
  return _mm_madd_epi16(pair, mins);
}

// Scales (i16, both lanes) and mins (i16 x 8) of a Q4_K / Q5_K block.
inline void k_scales_mins(const uint8_t packed[12], __m256i& scales, __m128i& mins) {
  alignas(16) uint8_t sm[16];
  unpack_k_scales(packed, sm);
  const __m256i w = _mm256_cvtepu8_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(sm)));
  scales = _mm256_permute2x128_si256(w, w, 0x00);
  mins = _mm256_extracti128_si256(w, 1);
}

void simd_dot_q4_K_q8_K(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ4_K*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  __m256 acc = _mm256_setzero_ps();
  __m128 acc_m = _mm_setzero_ps();
  for (int i = 0; i < n / 256; ++i) {
    __m256i scales;
    __m128i mins;
    k_scales_mins(x[i].scales, scales, mins);
    const float d = fp16_scalar(x[i].d) * y[i].d;
    const float dmin = -fp16_scalar(x[i].dmin) * y[i].d;
    const __m128i mp = k_min_products(y[i].bsums, mins);
    acc_m = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(mp), acc_m);
    // two accumulators: independent chains for the (VNNI) multiply-adds
    __m256i sumi = _mm256_setzero_si256();
    __m256i sumi2 = _mm256_setzero_si256();
    const uint8_t* q4 = x[i].qs;
    const int8_t* q8 = y[i].qs;
    for (int j = 0; j < 4; ++j) {  // 64 elements: low nibbles (scale 2j), high (2j+1)
      const __m256i bits = load256(q4 + 32 * j);
      const __m256i lo = _mm256_and_si256(bits, _mm256_set1_epi8(0x0F));
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), _mm256_set1_epi8(0x0F));
      const __m256i pl = _mm256_maddubs_epi16(lo, load256(q8 + 64 * j));
      const __m256i ph = _mm256_maddubs_epi16(hi, load256(q8 + 64 * j + 32));
      sumi = madd_acc(sumi, pl, broadcast_word(scales, 2 * j));
      sumi2 = madd_acc(sumi2, ph, broadcast_word(scales, 2 * j + 1));
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_add_epi32(sumi, sumi2)), acc);
  }
  __m128 m = _mm_add_ps(acc_m, _mm_movehl_ps(acc_m, acc_m));
  m = _mm_add_ss(m, _mm_movehdup_ps(m));
  *s = hsum_f32x8(acc) + _mm_cvtss_f32(m);
}

// Q5_K in ggml-cpu's exact float order (libllama runs Q5_K through its x86
// vec_dot in decode and prefill alike): per super-block one 8-lane FMA of
// d * dy with the int32 lanes (lane k: the 4-byte groups k of all sub-blocks,
// scaled), and the mins term summed exactly in int32, then one scalar FMA
// into its own float; at the end hsum(acc) + that float.
void simd_dot_q5_K_q8_K(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ5_K*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  __m256 acc = _mm256_setzero_ps();
  __m128 acc_m = _mm_setzero_ps();  // lane 0 only
  const __m256i mask4 = _mm256_set1_epi8(0x0F);
  const __m256i one = _mm256_set1_epi8(1);
  for (int i = 0; i < n / 256; ++i) {
    __m256i scales;
    __m128i mins;
    k_scales_mins(x[i].scales, scales, mins);
    const float d = fp16_scalar(x[i].d) * y[i].d;
    const float dmin = -fp16_scalar(x[i].dmin) * y[i].d;
    __m128i mp = k_min_products(y[i].bsums, mins);
    mp = _mm_add_epi32(mp, _mm_unpackhi_epi64(mp, mp));
    mp = _mm_add_epi32(mp, _mm_shuffle_epi32(mp, _MM_SHUFFLE(2, 3, 0, 1)));
    acc_m = _mm_fmadd_ss(_mm_set_ss(dmin), _mm_cvtepi32_ps(mp), acc_m);
    const __m256i hbits = load256(x[i].qh);  // bit sb of byte l: fifth bit of element 32*sb + l
    __m256i sumi = _mm256_setzero_si256();
    __m256i sumi2 = _mm256_setzero_si256();
    for (int j = 0; j < 4; ++j) {
      const __m256i bits = load256(x[i].qs + 32 * j);
      const __m256i hl = _mm256_and_si256(_mm256_srli_epi16(hbits, 2 * j), one);
      const __m256i hh = _mm256_and_si256(_mm256_srli_epi16(hbits, 2 * j + 1), one);
      const __m256i lo = _mm256_or_si256(_mm256_and_si256(bits, mask4), _mm256_slli_epi16(hl, 4));
      const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(bits, 4), mask4), _mm256_slli_epi16(hh, 4));
      const __m256i pl = _mm256_maddubs_epi16(lo, load256(y[i].qs + 64 * j));  // |pair| <= 31*127*2
      const __m256i ph = _mm256_maddubs_epi16(hi, load256(y[i].qs + 64 * j + 32));
      sumi = madd_acc(sumi, pl, broadcast_word(scales, 2 * j));
      sumi2 = madd_acc(sumi2, ph, broadcast_word(scales, 2 * j + 1));
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_add_epi32(sumi, sumi2)), acc);
  }
  *s = hsum_f32x8(acc) + _mm_cvtss_f32(acc_m);
}

// Q6_K in ggml-cpu's vec_dot order for up to kCols activation rows (y, by
// bytes apart) of one weight row: per super-block the 6-bit quants (minus 32,
// via the bsums) against q8 in int32 lanes, exact, then acc = fma(d, lanes,
// acc) and a final hsum per column; each super-block is unpacked once for
// all kCols columns.
template <int kCols>
inline void q6k_row_cols(int nb, const BlockQ6_K* x, const uint8_t* y, size_t by, int cc, float* out, size_t bs,
                         const BlockQ6_K* prefetch = nullptr) {
  const __m256i mask4 = _mm256_set1_epi8(0x0F);
  const __m256i mask2 = _mm256_set1_epi8(0x03);
  __m256 acc[kCols];
  for (int c = 0; c < kCols; ++c) acc[c] = _mm256_setzero_ps();
  for (int i = 0; i < nb; ++i) {
    if (prefetch) {  // a row the caller reads next, a block at a time (prefetches never fault)
      const char* p = reinterpret_cast<const char*>(prefetch + i);
      for (int l = 0; l < static_cast<int>(sizeof(BlockQ6_K)); l += 64) _mm_prefetch(p + l, _MM_HINT_T0);
    }
    __m256i q[8], sc[8];
    for (int h = 0; h < 2; ++h) {
      const __m256i sc8 = _mm256_broadcastsi128_si256(
          _mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x[i].scales + 8 * h))));
      const uint8_t* ql = x[i].ql + 64 * h;
      const __m256i qh = load256(x[i].qh + 32 * h);
      const __m256i l0 = load256(ql);
      const __m256i l1 = load256(ql + 32);
      const __m256i low[4] = {_mm256_and_si256(l0, mask4), _mm256_and_si256(l1, mask4),
                              _mm256_and_si256(_mm256_srli_epi16(l0, 4), mask4),
                              _mm256_and_si256(_mm256_srli_epi16(l1, 4), mask4)};
      for (int g = 0; g < 4; ++g) {
        const __m256i hi2 = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * g), mask2);
        q[4 * h + g] = _mm256_or_si256(low[g], _mm256_slli_epi16(hi2, 4));
        sc[4 * h + g] = broadcast_word_pair(sc8, 2 * g);
      }
    }
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].scales)));
    const float dx = fp16_scalar(x[i].d);
    for (int c = 0; c < kCols; ++c) {
      if (c >= cc) break;
      const BlockQ8_K& yb = reinterpret_cast<const BlockQ8_K*>(y + c * by)[i];
      __m256i sumi0 = _mm256_setzero_si256(), sumi1 = _mm256_setzero_si256();
      for (int k = 0; k < 8; k += 2) {
        sumi0 = madd_acc(sumi0, _mm256_maddubs_epi16(q[k], load256(yb.qs + 32 * k)), sc[k]);
        sumi1 = madd_acc(sumi1, _mm256_maddubs_epi16(q[k + 1], load256(yb.qs + 32 * k + 32)), sc[k + 1]);
      }
      const __m256i offset = _mm256_slli_epi32(_mm256_madd_epi16(load256(yb.bsums), sc16), 5);
      const __m256i total = _mm256_sub_epi32(_mm256_add_epi32(sumi0, sumi1), offset);
      acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(dx * yb.d), _mm256_cvtepi32_ps(total), acc[c]);
    }
  }
  for (int c = 0; c < cc; ++c) out[c * bs] = hsum_f32x8(acc[c]);
}

void simd_dot_q6_K_q8_K(int n, float* s, const void* vx, const void* vy) {
  q6k_row_cols<1>(n / 256, static_cast<const BlockQ6_K*>(vx), static_cast<const uint8_t*>(vy), 0, 1, s, 0);
}

void simd_gemm_q6_K(int n, const void* vx, size_t bx, int nr, const void* vy, size_t by, int nc, float* s, size_t bs) {
  constexpr int kCols = 4;
  const auto* x = static_cast<const uint8_t*>(vx);
  const auto* y = static_cast<const uint8_t*>(vy);
  for (int c0 = 0; c0 < nc; c0 += kCols) {
    const int cc = std::min(kCols, nc - c0);
    for (int r = 0; r < nr; ++r) {
      const auto* xr = reinterpret_cast<const BlockQ6_K*>(x + r * bx);
      // the first columns stream the rows in: meanwhile the rows nr further on
      // (most likely the caller's next block of rows) come into the cache
      const auto* pf = c0 == 0 ? reinterpret_cast<const BlockQ6_K*>(x + (r + nr) * bx) : nullptr;
      if (cc == 1) {
        q6k_row_cols<1>(n / 256, xr, y + c0 * by, by, 1, s + c0 * bs + r, bs, pf);
      } else {
        q6k_row_cols<kCols>(n / 256, xr, y + c0 * by, by, cc, s + c0 * bs + r, bs, pf);
      }
    }
  }
}

// ---------------------------------------------------------------- F16 x F16

#if !defined(__AVX512F__)  // the AVX-512 level has ggml's 16-lane order below
// The AVX2 libggml-cpu (haswell build) sums F32 / F16 dot products in four
// 8-lane accumulators over steps of 32, reduced as (a0 + a2) + (a1 + a3),
// then GGML_F32x8_REDUCE: the 128-bit halves added, then two hadds.
inline float hsum_f32x8_hadd(__m256 v) {
  __m128 r = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  r = _mm_hadd_ps(r, r);
  return _mm_cvtss_f32(_mm_hadd_ps(r, r));
}

template <bool kHalf>
inline float haswell_dot_head(int np, const void* x, const void* y) {
  auto load = [](const void* p, int i) {
    if constexpr (kHalf) {
      return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(p) + i)));
    } else {
      return _mm256_loadu_ps(static_cast<const float*>(p) + i);
    }
  };
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int i = 0; i < np; i += 32) {
    for (int j = 0; j < 4; ++j) acc[j] = _mm256_fmadd_ps(load(x, i + 8 * j), load(y, i + 8 * j), acc[j]);
  }
  return hsum_f32x8_hadd(_mm256_add_ps(_mm256_add_ps(acc[0], acc[2]), _mm256_add_ps(acc[1], acc[3])));
}

// ggml_vec_dot_f16: the tail after the last 32 adds float products in double.
// 256-bit vectors: on the AMD EPYC host 512-bit F16 conversion measured ~40%
// slower.
void simd_dot_f16_f16(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const uint16_t*>(vx);
  const auto* y = static_cast<const uint16_t*>(vy);
  const int np = n & ~31;
  double sum = haswell_dot_head<true>(np, x, y);
  for (int i = np; i < n; ++i) sum += static_cast<double>(fp16_scalar(x[i]) * fp16_scalar(y[i]));
  *s = static_cast<float>(sum);
}
#endif

// ---------------------------------------------------------------- F32, BF16

#if !defined(__AVX512F__)
// ggml_vec_dot_f32 of the haswell build: the tail after the last 32 is
// `sum += x[i] * y[i]` in element order, which GCC vectorised 8 and then 4
// at a time (products rounded, then added one by one) and fused for the
// last < 4.
void simd_dot_f32_f32(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const float*>(vx);
  const auto* y = static_cast<const float*>(vy);
  const int np = n & ~31;
  float sum = haswell_dot_head<false>(np, x, y);
  int i = np;
  alignas(32) float p[8];
  for (; n - i >= 8; i += 8) {
    _mm256_store_ps(p, _mm256_mul_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    for (int j = 0; j < 8; ++j) sum += p[j];
  }
  if (n - i >= 4) {
    _mm_store_ps(p, _mm_mul_ps(_mm_loadu_ps(x + i), _mm_loadu_ps(y + i)));
    for (int j = 0; j < 4; ++j) sum += p[j];
    i += 4;
  }
  for (; i < n; ++i) sum = _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(x[i]), _mm_set_ss(y[i]), _mm_set_ss(sum)));
  *s = sum;
}
#endif

#if defined(__AVX512F__)
// The zen4-class libggml-cpu (AVX-512) sums F32 and F16 dot products in
// 16-lane vectors: four accumulators over steps of 64 elements, reduced as
// (a0 + a2) + (a1 + a3), then _mm512_reduce_add_ps as GCC expands it. Each
// 16-lane vector is kept here as two 8-lane halves (the same arithmetic per
// lane; 256-bit F16 conversion measured faster on this host), and that
// reduction is hsum_f32x8(lo + hi): 256-bit halves, 128-bit halves, pairs.
// Matching it makes Strix's decode (libllama's vec_dot) bit-identical.
template <bool kHalf>
inline __m256 load8_as_f32(const void* p, int i) {
  if constexpr (kHalf) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(p) + i)));
  } else {
    return _mm256_loadu_ps(static_cast<const float*>(p) + i);
  }
}

template <bool kHalf>
inline float zen4_dot_head(int np, const void* x, const void* y) {
  __m256 lo[4], hi[4];
  for (int j = 0; j < 4; ++j) lo[j] = hi[j] = _mm256_setzero_ps();
  for (int i = 0; i < np; i += 64) {
    for (int j = 0; j < 4; ++j) {
      lo[j] = _mm256_fmadd_ps(load8_as_f32<kHalf>(x, i + 16 * j), load8_as_f32<kHalf>(y, i + 16 * j), lo[j]);
      hi[j] = _mm256_fmadd_ps(load8_as_f32<kHalf>(x, i + 16 * j + 8), load8_as_f32<kHalf>(y, i + 16 * j + 8), hi[j]);
    }
  }
  const __m256 l = _mm256_add_ps(_mm256_add_ps(lo[0], lo[2]), _mm256_add_ps(lo[1], lo[3]));
  const __m256 h = _mm256_add_ps(_mm256_add_ps(hi[0], hi[2]), _mm256_add_ps(hi[1], hi[3]));
  return hsum_f32x8(_mm256_add_ps(l, h));
}

// ggml_vec_dot_f32: the tail after the last 64 is `sum += x[i] * y[i]` in
// element order, which GCC vectorised 16 and then 8 at a time (products
// rounded, then added one by one) and fused for the last < 8.
void simd_dot_f32_f32_zen4(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const float*>(vx);
  const auto* y = static_cast<const float*>(vy);
  const int np = n & ~63;
  float sum = zen4_dot_head<false>(np, x, y);
  int i = np;
  alignas(32) float p[16];
  for (; n - i >= 16; i += 16) {
    _mm256_store_ps(p, _mm256_mul_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    _mm256_store_ps(p + 8, _mm256_mul_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8)));
    for (int j = 0; j < 16; ++j) sum += p[j];
  }
  if (n - i >= 8) {
    _mm256_store_ps(p, _mm256_mul_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    for (int j = 0; j < 8; ++j) sum += p[j];
    i += 8;
  }
  for (; i < n; ++i) sum = _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(x[i]), _mm_set_ss(y[i]), _mm_set_ss(sum)));
  *s = sum;
}

// ggml_vec_dot_f16: the tail after the last 64 adds float products in double.
void simd_dot_f16_f16_zen4(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const uint16_t*>(vx);
  const auto* y = static_cast<const uint16_t*>(vy);
  const int np = n & ~63;
  double sum = zen4_dot_head<true>(np, x, y);
  for (int i = np; i < n; ++i) sum += static_cast<double>(fp16_scalar(x[i]) * fp16_scalar(y[i]));
  *s = static_cast<float>(sum);
}
#endif

// BF16 x BF16: the products are exact in float (8-bit significands), so only
// the summation order differs from ggml. 16 elements per 256-bit load: the
// even elements shifted up, the odd ones masked in place.
void simd_dot_bf16_bf16(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const uint16_t*>(vx);
  const auto* y = static_cast<const uint16_t*>(vy);
  const __m256i hi_mask = _mm256_set1_epi32(static_cast<int>(0xFFFF0000u));
  auto even = [](__m256i v) { return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)); };
  auto odd = [&](__m256i v) { return _mm256_castsi256_ps(_mm256_and_si256(v, hi_mask)); };
  const int np = n & ~31;
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int i = 0; i < np; i += 32) {
    const __m256i x0 = load256(x + i), y0 = load256(y + i);
    const __m256i x1 = load256(x + i + 16), y1 = load256(y + i + 16);
    acc[0] = _mm256_fmadd_ps(even(x0), even(y0), acc[0]);
    acc[1] = _mm256_fmadd_ps(odd(x0), odd(y0), acc[1]);
    acc[2] = _mm256_fmadd_ps(even(x1), even(y1), acc[2]);
    acc[3] = _mm256_fmadd_ps(odd(x1), odd(y1), acc[3]);
  }
  double sum = hsum_f32x8(_mm256_add_ps(_mm256_add_ps(acc[0], acc[2]), _mm256_add_ps(acc[1], acc[3])));
  for (int i = np; i < n; ++i) sum += static_cast<double>(bf16_to_fp32(x[i]) * bf16_to_fp32(y[i]));
  *s = static_cast<float>(sum);
}

#if defined(__AVX512BF16__) && defined(__AVX512VL__)
// BF16 x BF16 with AVX512-BF16's pair dot products (what ggml's zen4 build
// uses): inputs and results denormal-flushed like it. Only chosen at run time
// when the CPU has AVX512-BF16 (the avx512 level does not require it).
void simd_dot_bf16_bf16_dp(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const uint16_t*>(vx);
  const auto* y = static_cast<const uint16_t*>(vy);
  const int np = n & ~63;
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int i = 0; i < np; i += 64) {
    for (int j = 0; j < 4; ++j) {
      acc[j] = _mm256_dpbf16_ps(acc[j], (__m256bh)load256(x + i + 16 * j), (__m256bh)load256(y + i + 16 * j));
    }
  }
  double sum = hsum_f32x8(_mm256_add_ps(_mm256_add_ps(acc[0], acc[2]), _mm256_add_ps(acc[1], acc[3])));
  for (int i = np; i < n; ++i) sum += static_cast<double>(bf16_to_fp32(x[i]) * bf16_to_fp32(y[i]));
  *s = static_cast<float>(sum);
}
#endif

// fp32 -> bf16, round to nearest even, NaN made quiet (quant::fp32_to_bf16).
void simd_quantize_bf16(const float* x, void* vy, int64_t k) {
  auto* y = static_cast<uint16_t*>(vy);
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  const __m256i inf = _mm256_set1_epi32(0x7f800000);
  const __m256i bias = _mm256_set1_epi32(0x7fff);
  const __m256i one = _mm256_set1_epi32(1);
  auto convert8 = [&](const float* p) {
    const __m256i u = _mm256_castps_si256(_mm256_loadu_ps(p));
    const __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs_mask), inf);
    const __m256i rounded = _mm256_srli_epi32(
        _mm256_add_epi32(u, _mm256_add_epi32(bias, _mm256_and_si256(_mm256_srli_epi32(u, 16), one))), 16);
    const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(64));
    return _mm256_blendv_epi8(rounded, quiet, is_nan);
  };
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    const __m256i packed = _mm256_packus_epi32(convert8(x + i), convert8(x + i + 8));  // lanes interleaved
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), _mm256_permute4x64_epi64(packed, 0xD8));
  }
  for (; i < k; ++i) y[i] = fp32_to_bf16(x[i]);
}

// ---------------------------------------------------------------- Q2_K, Q3_K

void simd_dot_q2_K_q8_K(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ2_K*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  const __m256i mask2 = _mm256_set1_epi8(3);
  // ggml-cpu's order: one chain, per super-block the min term's FMA first,
  // then the scales' (int lanes: four adjacent elements of each 32).
  __m256 acc = _mm256_setzero_ps();
  for (int i = 0; i < n / 256; ++i) {
    const float d = y[i].d * fp16_scalar(x[i].d);
    const float dmin = -y[i].d * fp16_scalar(x[i].dmin);
    const __m128i sc_bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].scales));
    const __m256i mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc_bytes, 4), _mm_set1_epi8(0x0F)));
    acc = _mm256_fmadd_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(_mm256_madd_epi16(load256(y[i].bsums), mins)), acc);
    const __m128i scales = _mm_and_si128(sc_bytes, _mm_set1_epi8(0x0F));
    __m256i sumi[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
    for (int c = 0; c < 2; ++c) {  // 128 elements: 32 bytes, four 2-bit planes
      const __m256i sc8 =
          _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16((c ? _mm_unpackhi_epi64(scales, scales) : scales)));
      const __m256i bits = load256(x[i].qs + 32 * c);
      for (int j = 0; j < 4; ++j) {
        const __m256i q = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * j), mask2);
        const __m256i p = _mm256_maddubs_epi16(q, load256(y[i].qs + 128 * c + 32 * j));
        sumi[j & 1] = madd_acc(sumi[j & 1], p, broadcast_word_pair(sc8, 2 * j));
      }
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_add_epi32(sumi[0], sumi[1])), acc);
  }
  *s = hsum_f32x8(acc);
}

// Q3_K's 16 six-bit scales minus 32, as int8 (unpack_q3_k_scales, in registers:
// a round trip through memory costs a store-forwarding stall per block).
inline __m128i q3_k_scales(const uint8_t packed[12]) {
  const __m128i lo = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(packed));  // low nibbles of 0..7, 8..15
  uint32_t c;
  std::memcpy(&c, packed + 8, 4);
  const __m128i m4 = _mm_set1_epi8(0x0F);
  const __m128i low = _mm_unpacklo_epi64(_mm_and_si128(lo, m4), _mm_and_si128(_mm_srli_epi16(lo, 4), m4));
  // scale j: top bits (c byte j % 4) >> (2 * (j / 4)); dword k of the vector holds c >> 2k
  const __m128i hi =
      _mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32(static_cast<int>(c)), _mm_setr_epi32(0, 2, 4, 6)), _mm_set1_epi8(3));
  return _mm_sub_epi8(_mm_or_si128(low, _mm_slli_epi16(hi, 4)), _mm_set1_epi8(32));
}

void simd_dot_q3_K_q8_K(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ3_K*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  const __m256i mask2 = _mm256_set1_epi8(3);
  const __m256i four = _mm256_set1_epi8(4);
  __m256 acc = _mm256_setzero_ps();
  for (int i = 0; i < n / 256; ++i) {
    const float d = fp16_scalar(x[i].d) * y[i].d;
    const __m128i sc_bytes = q3_k_scales(x[i].scales);
    // values are u - 4 with u in [0, 7]: (u . q8) - (4 . q8) per pair of
    // elements, so that each int lane holds ggml-cpu's four elements of each
    // 32 (its float chain is per lane: a bsums correction would regroup them)
    const __m256i hm = load256(x[i].hmask);
    __m256i sumi[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
    for (int c = 0; c < 2; ++c) {
      const __m256i sc8 =
          _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(c ? _mm_unpackhi_epi64(sc_bytes, sc_bytes) : sc_bytes));
      const __m256i bits = load256(x[i].qs + 32 * c);
      for (int j = 0; j < 4; ++j) {
        const int g = 4 * c + j;
        // bit g of hm moved to bit 2: (hm << (2 - g)) or (hm >> (g - 2)), masked
        const __m256i hb = g <= 2 ? _mm256_slli_epi16(hm, 2 - g) : _mm256_srli_epi16(hm, g - 2);
        const __m256i q =
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(bits, 2 * j), mask2), _mm256_and_si256(hb, four));
        const __m256i y8 = load256(y[i].qs + 32 * g);
        const __m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(q, y8), _mm256_maddubs_epi16(four, y8));
        sumi[j & 1] = madd_acc(sumi[j & 1], p, broadcast_word_pair(sc8, 2 * j));
      }
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_add_epi32(sumi[0], sumi[1])), acc);
  }
  *s = hsum_f32x8(acc);
}

// ---------------------------------------------------------------- IQ2 / IQ3 / IQ1

// Four 8-byte grid rows (or sign masks) into one vector, row 0 lowest.
inline __m256i rows4(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  return _mm256_setr_epi64x(static_cast<int64_t>(a), static_cast<int64_t>(b), static_cast<int64_t>(c),
                            static_cast<int64_t>(d));
}

// q8 with the elements whose mask byte is 0xFF negated.
inline __m256i apply_signs(__m256i q8, __m256i neg_mask) {
  return _mm256_sign_epi8(q8, _mm256_or_si256(neg_mask, _mm256_set1_epi8(1)));
}

// One 16-bit value in the low 128-bit lane, another in the high one.
inline __m256i lane_words(int lo, int hi) {
  return _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(hi)), _mm_set1_epi16(static_cast<int16_t>(lo)));
}

void simd_dot_iq2_xxs_q8_K(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockIq2Xxs*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  const uint64_t* grid = quant::iq2xxs_grid;
  const uint64_t* sm = kIq2SignMasks.v;
  __m256 acc = _mm256_setzero_ps();
  for (int i = 0; i < n / 256; ++i) {
    const float d = fp16_scalar(x[i].d) * y[i].d;
    // two sub-blocks per step, one accumulator each (kept in registers)
    auto step = [&](int ib, __m256i acc_i) {
      uint32_t aux[2];
      std::memcpy(aux, x[i].qs + 4 * ib, 8);
      const uint32_t g = aux[0], sg = aux[1];
      const __m256i q = rows4(grid[g & 0xFF], grid[(g >> 8) & 0xFF], grid[(g >> 16) & 0xFF], grid[g >> 24]);
      const __m256i neg = rows4(sm[sg & 127], sm[(sg >> 7) & 127], sm[(sg >> 14) & 127], sm[(sg >> 21) & 127]);
      const __m256i p = _mm256_maddubs_epi16(q, apply_signs(load256(y[i].qs + 32 * ib), neg));
      return madd_acc(acc_i, p, _mm256_set1_epi16(static_cast<int16_t>(2 * (sg >> 28) + 1)));
    };
    __m256i sumi[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
#pragma GCC unroll 4
    for (int ib = 0; ib < 8; ib += 2) {
      sumi[0] = step(ib, sumi[0]);
      sumi[1] = step(ib + 1, sumi[1]);
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_add_epi32(sumi[0], sumi[1])), acc);
  }
  *s = 0.125f * hsum_f32x8(acc);
}

// IQ2_XS / IQ2_S: the 16 four-bit scales of a block as 2 * s + 1, i16, in the
// order (low nibble, high nibble) per byte; half c (sub-blocks 4c..4c+3) in both lanes.
inline void iq2_scale_words(const uint8_t scales[8], __m256i out[2]) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(scales));
  const __m128i m4 = _mm_set1_epi8(0x0F);
  const __m128i nib = _mm_unpacklo_epi8(_mm_and_si128(b, m4), _mm_and_si128(_mm_srli_epi16(b, 4), m4));
  const __m128i odd = _mm_add_epi8(_mm_add_epi8(nib, nib), _mm_set1_epi8(1));
  out[0] = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(odd));
  out[1] = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(_mm_unpackhi_epi64(odd, odd)));
}

void simd_dot_iq2_xs_q8_K(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockIq2Xs*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  const uint64_t* grid = quant::iq2xs_grid;
  const uint64_t* sm = kIq2SignMasks.v;
  __m256 acc = _mm256_setzero_ps();
  for (int i = 0; i < n / 256; ++i) {
    const float d = fp16_scalar(x[i].d) * y[i].d;
    __m256i ls8[2];
    iq2_scale_words(x[i].scales, ls8);
    // two sub-blocks per step, one accumulator each (kept in registers)
    auto step = [&](int ib, __m256i acc_i) {
      const uint16_t* q2 = x[i].qs + 4 * ib;
      const __m256i q = rows4(grid[q2[0] & 511], grid[q2[1] & 511], grid[q2[2] & 511], grid[q2[3] & 511]);
      const __m256i neg = rows4(sm[q2[0] >> 9], sm[q2[1] >> 9], sm[q2[2] >> 9], sm[q2[3] >> 9]);
      const __m256i p = _mm256_maddubs_epi16(q, apply_signs(load256(y[i].qs + 32 * ib), neg));
      return madd_acc(acc_i, p, broadcast_word_pair(ls8[ib / 4], 2 * (ib % 4)));
    };
    __m256i sumi[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
#pragma GCC unroll 4
    for (int ib = 0; ib < 8; ib += 2) {
      sumi[0] = step(ib, sumi[0]);
      sumi[1] = step(ib + 1, sumi[1]);
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_add_epi32(sumi[0], sumi[1])), acc);
  }
  *s = 0.125f * hsum_f32x8(acc);
}

void simd_dot_iq2_s_q8_K(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockIq2S*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  const uint64_t* grid = quant::iq2s_grid;
  __m256 acc = _mm256_setzero_ps();
  for (int i = 0; i < n / 256; ++i) {
    const float d = fp16_scalar(x[i].d) * y[i].d;
    __m256i ls8[2];
    iq2_scale_words(x[i].scales, ls8);
    // two sub-blocks per step, one accumulator each (kept in registers)
    auto step = [&](int ib, __m256i acc_i) {
      const uint8_t* qs = x[i].qs + 4 * ib;
      const int qh = x[i].qh[ib];
      const __m256i q = rows4(grid[qs[0] | ((qh << 8) & 0x300)], grid[qs[1] | ((qh << 6) & 0x300)],
                              grid[qs[2] | ((qh << 4) & 0x300)], grid[qs[3] | ((qh << 2) & 0x300)]);
      const __m256i neg = bytes_from_bits(x[i].qs + 32 + 4 * ib);
      const __m256i p = _mm256_maddubs_epi16(q, apply_signs(load256(y[i].qs + 32 * ib), neg));
      return madd_acc(acc_i, p, broadcast_word_pair(ls8[ib / 4], 2 * (ib % 4)));
    };
    __m256i sumi[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
#pragma GCC unroll 4
    for (int ib = 0; ib < 8; ib += 2) {
      sumi[0] = step(ib, sumi[0]);
      sumi[1] = step(ib + 1, sumi[1]);
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_add_epi32(sumi[0], sumi[1])), acc);
  }
  *s = 0.125f * hsum_f32x8(acc);
}

void simd_dot_iq3_xxs_q8_K(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockIq3Xxs*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  const uint32_t* grid = quant::iq3xxs_grid;
  const uint64_t* sm = kIq2SignMasks.v;
  __m256 acc = _mm256_setzero_ps();
  for (int i = 0; i < n / 256; ++i) {
    const float d = fp16_scalar(x[i].d) * y[i].d;
    // two sub-blocks per step, one accumulator each (kept in registers)
    auto step = [&](int ib, __m256i acc_i) {
      const uint8_t* q3 = x[i].qs + 8 * ib;
      uint32_t sg;
      std::memcpy(&sg, x[i].qs + 64 + 4 * ib, 4);
      const __m256i q =
          _mm256_setr_epi32(static_cast<int>(grid[q3[0]]), static_cast<int>(grid[q3[1]]), static_cast<int>(grid[q3[2]]),
                            static_cast<int>(grid[q3[3]]), static_cast<int>(grid[q3[4]]), static_cast<int>(grid[q3[5]]),
                            static_cast<int>(grid[q3[6]]), static_cast<int>(grid[q3[7]]));
      const __m256i neg = rows4(sm[sg & 127], sm[(sg >> 7) & 127], sm[(sg >> 14) & 127], sm[(sg >> 21) & 127]);
      const __m256i p = _mm256_maddubs_epi16(q, apply_signs(load256(y[i].qs + 32 * ib), neg));
      return madd_acc(acc_i, p, _mm256_set1_epi16(static_cast<int16_t>(2 * (sg >> 28) + 1)));
    };
    __m256i sumi[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
#pragma GCC unroll 4
    for (int ib = 0; ib < 8; ib += 2) {
      sumi[0] = step(ib, sumi[0]);
      sumi[1] = step(ib + 1, sumi[1]);
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_add_epi32(sumi[0], sumi[1])), acc);
  }
  *s = 0.25f * hsum_f32x8(acc);
}

void simd_dot_iq3_s_q8_K(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockIq3S*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  const uint32_t* grid = quant::iq3s_grid;
  __m256 acc = _mm256_setzero_ps();
  for (int i = 0; i < n / 256; ++i) {
    const float d = fp16_scalar(x[i].d) * y[i].d;
    // two sub-blocks per step, one accumulator each (kept in registers)
    auto step = [&](int ib, __m256i acc_i) {
      const uint8_t* qs = x[i].qs + 8 * ib;
      const int qh = x[i].qh[ib];
      auto idx = [&](int j) { return static_cast<int>(grid[qs[j] | ((qh << (8 - j)) & 256)]); };
      const __m256i q = _mm256_setr_epi32(idx(0), idx(1), idx(2), idx(3), idx(4), idx(5), idx(6), idx(7));
      const __m256i neg = bytes_from_bits(x[i].signs + 4 * ib);
      const __m256i p = _mm256_maddubs_epi16(q, apply_signs(load256(y[i].qs + 32 * ib), neg));
      const int ls = 2 * ((x[i].scales[ib / 2] >> (4 * (ib % 2))) & 0xF) + 1;
      return madd_acc(acc_i, p, _mm256_set1_epi16(static_cast<int16_t>(ls)));
    };
    __m256i sumi[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
#pragma GCC unroll 4
    for (int ib = 0; ib < 8; ib += 2) {
      sumi[0] = step(ib, sumi[0]);
      sumi[1] = step(ib + 1, sumi[1]);
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_add_epi32(sumi[0], sumi[1])), acc);
  }
  *s = hsum_f32x8(acc);
}

void simd_dot_iq1_s_q8_K(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockIq1S*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  const uint64_t* grid = quant::iq1s_grid;
  const __m256i ones = _mm256_set1_epi8(1);
  __m256 acc = _mm256_setzero_ps();
  float acc_delta = 0;
  for (int i = 0; i < n / 256; ++i) {
    const float d = fp16_scalar(x[i].d) * y[i].d;
    int sumi1 = 0;
    // two sub-blocks per step, one accumulator each (kept in registers)
    auto step = [&](int ib, __m256i acc_i) {
      const uint8_t* qs = x[i].qs + 4 * ib;
      const int qh = x[i].qh[ib];
      const __m256i g = rows4(grid[qs[0] | ((qh << 8) & 0x700)], grid[qs[1] | ((qh << 5) & 0x700)],
                              grid[qs[2] | ((qh << 2) & 0x700)], grid[qs[3] | ((qh >> 1) & 0x700)]);
      // grid values are -1, 0, +1: sign() multiplies by them
      const __m256i p = _mm256_maddubs_epi16(ones, _mm256_sign_epi8(load256(y[i].qs + 32 * ib), g));
      const int ls = 2 * ((qh >> 12) & 7) + 1;
      const __m256i r = madd_acc(acc_i, p, _mm256_set1_epi16(static_cast<int16_t>(ls)));
      const int delta = qh & 0x8000 ? -1 : 1;
      sumi1 += ls * delta * (y[i].bsums[2 * ib] + y[i].bsums[2 * ib + 1]);
      return r;
    };
    __m256i sumi[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
#pragma GCC unroll 4
    for (int ib = 0; ib < 8; ib += 2) {
      sumi[0] = step(ib, sumi[0]);
      sumi[1] = step(ib + 1, sumi[1]);
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_add_epi32(sumi[0], sumi[1])), acc);
    acc_delta += d * static_cast<float>(sumi1);
  }
  *s = hsum_f32x8(acc) + 0.125f * acc_delta;
}

void simd_dot_iq1_m_q8_K(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockIq1M*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  const uint64_t* grid = quant::iq1s_grid;
  const __m256i ones = _mm256_set1_epi8(1);
  __m256 acc = _mm256_setzero_ps();
  for (int i = 0; i < n / 256; ++i) {
    uint16_t sc[4];
    std::memcpy(sc, x[i].scales, 8);
    const uint16_t scale =
        static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000));
    const float d = fp16_scalar(scale) * y[i].d;
    // the 16 three-bit scales as 2 * s + 1, i16: half c (sub-blocks 4c..4c+3) takes scale
    // words 2c, 2c + 1, fields at bits 0, 3, 6, 9 (ls1, ls2 of an even sub-block, then the odd one)
    const __m128i words = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(x[i].scales));
    __m256i ls8[2];
    for (int c = 0; c < 2; ++c) {
      const __m128i rep = _mm_shuffle_epi8(words, c ? _mm_setr_epi8(4, 5, 4, 5, 4, 5, 4, 5, 6, 7, 6, 7, 6, 7, 6, 7)
                                                    : _mm_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3));
      // field at bit k: (w << (9 - k)) >> 9, masked to 3 bits
      const __m128i f = _mm_and_si128(
          _mm_srli_epi16(_mm_mullo_epi16(rep, _mm_setr_epi16(512, 64, 8, 1, 512, 64, 8, 1)), 9), _mm_set1_epi16(7));
      ls8[c] = _mm256_broadcastsi128_si256(_mm_add_epi16(_mm_add_epi16(f, f), _mm_set1_epi16(1)));
    }
    __m256i sum1 = _mm256_setzero_si256();
    __m256i sum2 = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int ib = 0; ib < 8; ++ib) {
      const uint8_t* qs = x[i].qs + 4 * ib;
      const int h0 = x[i].qh[2 * ib], h1 = x[i].qh[2 * ib + 1];
      const __m256i g = rows4(grid[qs[0] | ((h0 << 8) & 0x700)], grid[qs[1] | ((h0 << 4) & 0x700)],
                              grid[qs[2] | ((h1 << 8) & 0x700)], grid[qs[3] | ((h1 << 4) & 0x700)]);
      const int di = ((h0 >> 3) & 1) | ((h0 >> 6) & 2) | ((h1 >> 1) & 4) | ((h1 >> 4) & 8);
      const __m256i delta = load256(kIq1mDeltas.v[di]);  // -1 / +1 bytes
      const __m256i q8 = load256(y[i].qs + 32 * ib);
      const __m256i p1 = _mm256_maddubs_epi16(ones, _mm256_sign_epi8(q8, g));
      const __m256i p2 = _mm256_maddubs_epi16(ones, _mm256_sign_epi8(q8, delta));
      const __m256i ls = broadcast_word_pair(ls8[ib / 4], 2 * (ib % 4));  // ls1 low lane, ls2 high
      sum1 = madd_acc(sum1, p1, ls);
      sum2 = madd_acc(sum2, p2, ls);
    }
    const __m256 f = _mm256_fmadd_ps(_mm256_set1_ps(0.125f), _mm256_cvtepi32_ps(sum2), _mm256_cvtepi32_ps(sum1));
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), f, acc);
  }
  *s = hsum_f32x8(acc);
}

// ---------------------------------------------------------------- ternary, FP4, low-bit

// i32x8 lanes summing to -sum(q8) of a Q8_K block (from its 16 bsums).
inline __m256i neg_q8_sum(const BlockQ8_K& b) { return _mm256_madd_epi16(load256(b.bsums), _mm256_set1_epi16(-1)); }

void simd_dot_tq2_0_q8_K(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockTq2_0*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  const __m256i mask2 = _mm256_set1_epi8(3);
  __m256 acc = _mm256_setzero_ps();
  for (int i = 0; i < n / 256; ++i) {
    __m256i sumi = neg_q8_sum(y[i]);  // codes are value + 1
    for (int c = 0; c < 2; ++c) {
      const __m256i bits = load256(x[i].qs + 32 * c);
      for (int l = 0; l < 4; ++l) {
        const __m256i q = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * l), mask2);
        sumi = dot_u8s8_acc(sumi, q, load256(y[i].qs + 128 * c + 32 * l));
      }
    }
    const float d = y[i].d * fp16_scalar(x[i].d);
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
  }
  *s = hsum_f32x8(acc);
}

// The top trit of each byte of (bytes * mult) mod 256, i.e. ((b * mult mod 256) * 3) >> 8,
// with `mult` one 16-bit value per byte pair.
inline __m256i tq1_trits(__m256i bytes, __m256i mult) {
  const __m256i lo_mask = _mm256_set1_epi16(0x00FF);
  const __m256i prod_lo = _mm256_mullo_epi16(bytes, mult);                                // low byte right
  const __m256i prod_hi = _mm256_mullo_epi16(_mm256_andnot_si256(lo_mask, bytes), mult);  // high byte right
  const __m256i three = _mm256_set1_epi16(3);
  const __m256i t_lo = _mm256_mulhi_epu16(_mm256_slli_epi16(prod_lo, 8), three);  // in the low byte
  const __m256i t_hi = _mm256_mulhi_epu16(_mm256_andnot_si256(lo_mask, prod_hi), three);
  return _mm256_or_si256(t_lo, _mm256_slli_epi16(t_hi, 8));
}

void simd_dot_tq1_0_q8_K(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockTq1_0*>(vx);
  const auto* y = static_cast<const BlockQ8_K*>(vy);
  __m256 acc = _mm256_setzero_ps();
  for (int i = 0; i < n / 256; ++i) {
    const int8_t* q8 = y[i].qs;
    __m256i sumi = neg_q8_sum(y[i]);  // trits are value + 1
    const __m256i a = load256(x[i].qs);
    const int pow3[5] = {1, 3, 9, 27, 81};
    for (int l = 0; l < 5; ++l) {
      const __m256i t = tq1_trits(a, _mm256_set1_epi16(static_cast<int16_t>(pow3[l])));
      sumi = dot_u8s8_acc(sumi, t, load256(q8 + 32 * l));
    }
    // bytes 32..47 (16 elements per trit) two trits per vector; the last pairs
    // trit 4 with the four trits of qh (4 elements each)
    const __m256i b = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].qs + 32)));
    uint32_t qh;
    std::memcpy(&qh, x[i].qh, 4);
    const __m256i last = _mm256_set_m128i(_mm_set1_epi32(static_cast<int>(qh)), _mm256_castsi256_si128(b));
    const __m256i v[3] = {b, b, last};
    const __m256i mult[3] = {lane_words(1, 3), lane_words(9, 27),
                             _mm256_set_m128i(_mm_setr_epi16(1, 1, 3, 3, 9, 9, 27, 27), _mm_set1_epi16(81))};
    for (int k = 0; k < 3; ++k) {
      sumi = dot_u8s8_acc(sumi, tq1_trits(v[k], mult[k]), load256(q8 + 160 + 32 * k));
    }
    const float d = fp16_scalar(x[i].d) * y[i].d;
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
  }
  *s = hsum_f32x8(acc);
}

void simd_dot_nvfp4_q8_0(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockNvfp4*>(vx);
  const auto* y = static_cast<const BlockQ8_0*>(vy);
  const __m256i table = table16(kMxfp4Doubled);
  const __m128i m4 = _mm_set1_epi8(0x0F);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  for (int ib = 0; ib < n / 64; ++ib) {
    for (int h = 0; h < 2; ++h) {  // one q8_0 block: sub-blocks 2h, 2h + 1
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[ib].qs + 16 * h));
      const __m128i lo = _mm_and_si128(b, m4);
      const __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), m4);
      const __m256i idx = _mm256_set_m128i(_mm_unpackhi_epi64(lo, hi), _mm_unpacklo_epi64(lo, hi));
      const BlockQ8_0& yb = y[2 * ib + h];
      const __m256i p = dot_s8s8(_mm256_shuffle_epi8(table, idx), load256(yb.qs));
      const float dy = fp16_scalar(yb.d);
      const __m256 d = _mm256_mul_ps(_mm256_set1_ps(dy), _mm256_set_m128(_mm_set1_ps(kUe4m3Half.v[x[ib].d[2 * h + 1]]),
                                                                         _mm_set1_ps(kUe4m3Half.v[x[ib].d[2 * h]])));
      if (h == 0) {
        acc0 = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(p), acc0);
      } else {
        acc1 = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(p), acc1);
      }
    }
  }
  *s = hsum_f32x8(_mm256_add_ps(acc0, acc1));
}

void simd_dot_q1_0_q8_0(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ1_0*>(vx);
  const auto* y = static_cast<const BlockQ8_0*>(vy);
  const __m256i ones = _mm256_set1_epi8(1);
  // q1_0 block i, q8_0 block k of it: bit set -> +q8, clear -> -q8. sign() by (mask | 1)
  // gives the opposite (set: -q8), so the sums are negated and the scales carry the sign.
  auto products = [&](int i, int k) {
    const __m256i flipped =
        _mm256_sign_epi8(load256(y[4 * i + k].qs), _mm256_or_si256(bytes_from_bits(x[i].qs + 4 * k), ones));
    return dot_u8s8(ones, flipped);
  };
  __m256 acc = _mm256_setzero_ps();
  const int nb = n / 128;
  int i = 0;
  for (; i + 2 <= nb; i += 2) {  // 8 q8_0 blocks: their products reduced to one lane each
    __m256i p[8];
    for (int k = 0; k < 8; ++k) p[k] = products(i + k / 4, k % 4);
    const __m256 dx = _mm256_set_m128(_mm_set1_ps(-fp16_scalar(x[i + 1].d)), _mm_set1_ps(-fp16_scalar(x[i].d)));
    const __m256 d = _mm256_mul_ps(dx, block_halves8(y + 4 * i));
    acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(lane_sums8(p)), acc);
  }
  float sum = hsum_f32x8(acc);
  for (; i < nb; ++i) {
    const float d0 = -fp16_scalar(x[i].d);
    for (int k = 0; k < 4; ++k)
      sum += d0 * fp16_scalar(y[4 * i + k].d) * static_cast<float>(hsum_i32x8(products(i, k)));
  }
  *s = sum;
}

void simd_dot_q2_0_q8_0(int n, float* s, const void* vx, const void* vy) {
  const auto* x = static_cast<const BlockQ2_0*>(vx);
  const auto* y = static_cast<const BlockQ8_0*>(vy);
  const __m256i mask2 = _mm256_set1_epi8(3);
  const __m256i one = _mm256_set1_epi8(1);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  for (int i = 0; i < n / 64; ++i) {
    const float d0 = fp16_scalar(x[i].d);
    for (int k = 0; k < 2; ++k) {
      // byte b -> the four bytes of 32-bit lane b hold its four codes
      const __m256i w = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x[i].qs + 8 * k)));
      const __m256i spread = _mm256_or_si256(_mm256_or_si256(w, _mm256_slli_epi32(w, 6)),
                                             _mm256_or_si256(_mm256_slli_epi32(w, 12), _mm256_slli_epi32(w, 18)));
      const __m256i q = _mm256_sub_epi8(_mm256_and_si256(spread, mask2), one);  // [-1, 2]
      const BlockQ8_0& yb = y[2 * i + k];
      const __m256i p = dot_s8s8(q, load256(yb.qs));
      const __m256 d = _mm256_set1_ps(d0 * fp16_scalar(yb.d));
      if (k) {
        acc1 = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(p), acc1);
      } else {
        acc0 = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(p), acc0);
      }
    }
  }
  *s = hsum_f32x8(_mm256_add_ps(acc0, acc1));
}

// ---------------------------------------------------------------- activation quantizers

inline float hmax_f32x8(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

// One block of 32 floats -> 32 int8 = round_even(x * id); returns sum of the int8s.
inline int q8_block(const float* x, float id, int8_t* out) {
  const __m256 mul = _mm256_set1_ps(id);
  __m256i q[4];
  for (int k = 0; k < 4; ++k) {
    const __m256 v =
        _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * k), mul), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    q[k] = _mm256_cvtps_epi32(v);
  }
  const int sum = hsum_i32x8(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
  // packs interleave 128-bit lanes; the permute puts the 32 bytes back in order
  const __m256i w01 = _mm256_packs_epi32(q[0], q[1]);
  const __m256i w23 = _mm256_packs_epi32(q[2], q[3]);
  const __m256i b = _mm256_packs_epi16(w01, w23);
  const __m256i ordered = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), ordered);
  return sum;
}

inline float amax_block32(const float* x) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 m = _mm256_andnot_ps(sign, _mm256_loadu_ps(x));
  for (int k = 1; k < 4; ++k) m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * k)));
  return hmax_f32x8(m);
}

void simd_quantize_q8_0(const float* x, void* vy, int64_t k) {
  auto* y = static_cast<BlockQ8_0*>(vy);
  for (int64_t i = 0; i < k / 32; ++i, x += 32) {
    const float amax = amax_block32(x);
    const float d = amax / 127.f;
    y[i].d = _cvtss_sh(d, 0);
    // ggml-cpu's x86 path: 127 / amax, not 1 / d (the reference's choice)
    q8_block(x, amax != 0.0f ? 127.f / amax : 0.0f, y[i].qs);
  }
}

void simd_quantize_q8_1(const float* x, void* vy, int64_t k) {
  auto* y = static_cast<BlockQ8_1*>(vy);
  for (int64_t i = 0; i < k / 32; ++i, x += 32) {
    const float amax = amax_block32(x);
    const float d = amax / 127.f;
    y[i].d = _cvtss_sh(d, 0);
    const int sum = q8_block(x, amax != 0.0f ? 127.f / amax : 0.0f, y[i].qs);
    y[i].s = _cvtss_sh(d * static_cast<float>(sum), 0);
  }
}

// Q8_K: scale from the signed value of largest magnitude (first one on ties),
// iscale = -127 / max, q = min(127, round_even(iscale * x)), d = 1 / iscale.
void simd_quantize_q8_K(const float* x, void* vy, int64_t k) {
  auto* y = static_cast<BlockQ8_K*>(vy);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int64_t i = 0; i < k / 256; ++i, x += 256) {
    __m256 m = _mm256_setzero_ps();
    // operand order: maxps returns its second operand on NaN, so a NaN input is
    // skipped like the reference's `ax > amax` test skips it
    for (int j = 0; j < 256; j += 8) m = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + j)), m);
    const float amax = hmax_f32x8(m);
    if (amax == 0.0f) {
      std::memset(&y[i], 0, sizeof(BlockQ8_K));
      continue;
    }
    float max = 0;
    for (int j = 0; j < 256; ++j) {
      if (std::fabs(x[j]) == amax) {
        max = x[j];
        break;
      }
    }
    const float iscale = -127.f / max;
    const __m256 mul = _mm256_set1_ps(iscale);
    for (int b = 0; b < 8; ++b) {
      __m256i q[4];
      for (int kk = 0; kk < 4; ++kk) {
        q[kk] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 32 * b + 8 * kk), mul));  // MXCSR: nearest even
      }
      const __m256i w01 = _mm256_packs_epi32(q[0], q[1]);
      const __m256i w23 = _mm256_packs_epi32(q[2], q[3]);
      const __m256i bytes =
          _mm256_permutevar8x32_epi32(_mm256_packs_epi16(w01, w23), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[i].qs + 32 * b), bytes);
    }
    for (int g = 0; g < 16; ++g) {  // sums of 16 quants
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(y[i].qs + 16 * g));
      const __m256i w = _mm256_cvtepi8_epi16(b);
      const __m256i s32 = _mm256_madd_epi16(w, _mm256_set1_epi16(1));
      y[i].bsums[g] = static_cast<int16_t>(hsum_i32x8(s32));
    }
    y[i].d = 1.0f / iscale;
  }
}

void simd_quantize_f16(const float* x, void* vy, int64_t k) {
  auto* y = static_cast<uint16_t*>(vy);
  int64_t i = 0;
  for (; i + 8 <= k; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), 0));
  }
  for (; i < k; ++i) y[i] = _cvtss_sh(x[i], 0);
}

inline void set_dot(CpuKernels& k, GgmlType w, VecDotFn fn) { k.vec_dot[static_cast<uint32_t>(w)] = fn; }
inline void set_quant(CpuKernels& k, GgmlType a, QuantizeActFn fn) { k.quantize_act[static_cast<uint32_t>(a)] = fn; }

// The kernels this header provides; the caller's table keeps the rest.
inline void fill_x86_simd(CpuKernels& k) {
  set_dot(k, GgmlType::Q8_0, simd_dot_q8_0_q8_0);
  k.gemm[static_cast<uint32_t>(GgmlType::Q8_0)] = simd_gemm_q8_0;
  set_dot(k, GgmlType::Q4_0, simd_dot_q4_0_q8_0);
  set_dot(k, GgmlType::Q4_1, simd_dot_chain<ChainQ45_1<false>>);
  set_dot(k, GgmlType::Q5_0, simd_dot_chain<ChainQ5_0>);
  set_dot(k, GgmlType::Q5_1, simd_dot_chain<ChainQ45_1<true>>);
  k.gemm[static_cast<uint32_t>(GgmlType::Q4_1)] = simd_gemm_chain<ChainQ45_1<false>>;
  k.gemm[static_cast<uint32_t>(GgmlType::Q5_0)] = simd_gemm_chain<ChainQ5_0>;
  k.gemm[static_cast<uint32_t>(GgmlType::Q5_1)] = simd_gemm_chain<ChainQ45_1<true>>;
  set_dot(k, GgmlType::IQ4_NL, simd_dot_iq4_nl_q8_0);
  set_dot(k, GgmlType::MXFP4, simd_dot_mxfp4_q8_0);
  set_dot(k, GgmlType::IQ4_XS, simd_dot_iq4_xs_q8_K);
  set_dot(k, GgmlType::Q4_K, simd_dot_q4_K_q8_K);
  set_dot(k, GgmlType::Q5_K, simd_dot_q5_K_q8_K);
  set_dot(k, GgmlType::Q6_K, simd_dot_q6_K_q8_K);
  k.gemm[static_cast<uint32_t>(GgmlType::Q6_K)] = simd_gemm_q6_K;
  k.gemm_is_vec_dot[static_cast<uint32_t>(GgmlType::Q6_K)] = true;
#if defined(__AVX512F__)
  set_dot(k, GgmlType::F16, simd_dot_f16_f16_zen4);
  set_dot(k, GgmlType::F32, simd_dot_f32_f32_zen4);
#else
  set_dot(k, GgmlType::F16, simd_dot_f16_f16);
  set_dot(k, GgmlType::F32, simd_dot_f32_f32);
#endif
  set_dot(k, GgmlType::BF16, simd_dot_bf16_bf16);
#if defined(__AVX512BF16__) && defined(__AVX512VL__)
  if (cpu_features().avx512bf16) set_dot(k, GgmlType::BF16, simd_dot_bf16_bf16_dp);
#endif
  set_dot(k, GgmlType::Q2_K, simd_dot_q2_K_q8_K);
  set_dot(k, GgmlType::Q3_K, simd_dot_q3_K_q8_K);
  set_dot(k, GgmlType::IQ2_XXS, simd_dot_iq2_xxs_q8_K);
  set_dot(k, GgmlType::IQ2_XS, simd_dot_iq2_xs_q8_K);
  set_dot(k, GgmlType::IQ2_S, simd_dot_iq2_s_q8_K);
  set_dot(k, GgmlType::IQ3_XXS, simd_dot_iq3_xxs_q8_K);
  set_dot(k, GgmlType::IQ3_S, simd_dot_iq3_s_q8_K);
  set_dot(k, GgmlType::IQ1_S, simd_dot_iq1_s_q8_K);
  set_dot(k, GgmlType::IQ1_M, simd_dot_iq1_m_q8_K);
  set_dot(k, GgmlType::TQ1_0, simd_dot_tq1_0_q8_K);
  set_dot(k, GgmlType::TQ2_0, simd_dot_tq2_0_q8_K);
  set_dot(k, GgmlType::NVFP4, simd_dot_nvfp4_q8_0);
  set_dot(k, GgmlType::Q1_0, simd_dot_q1_0_q8_0);
  set_dot(k, GgmlType::Q2_0, simd_dot_q2_0_q8_0);
  set_quant(k, GgmlType::Q8_0, simd_quantize_q8_0);
  set_quant(k, GgmlType::Q8_1, simd_quantize_q8_1);
  set_quant(k, GgmlType::Q8_K, simd_quantize_q8_K);
  set_quant(k, GgmlType::F16, simd_quantize_f16);
  set_quant(k, GgmlType::BF16, simd_quantize_bf16);
}

}  // namespace
}  // namespace strix::cpu
