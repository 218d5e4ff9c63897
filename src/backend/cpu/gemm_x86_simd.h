// x86 SIMD GEMM tiles (CpuKernels::gemm) for prefill and batched decode,
// compiled twice like kernels_x86_simd.h: by kernels_avx2.cpp and
// kernels_avx512.cpp. Internal linkage only. A type without a tile here keeps
// the vec_dot loop that kernels.cpp fills in.
//
// Shape: s[c * bs + r] = dot(x_r, y_c) for nr weight rows x nc activation
// rows (see GemmFn in kernels.h).
//
// Quantized types: one weight row at a time against a chunk of 8 activation
// rows. Each weight block is unpacked once and multiplied (exact integer
// multiply-adds, as vec_dot does) with the 8 activation blocks; the 8 int32
// vectors of a block (or super-block) are reduced to one vector whose lane c
// is column c, scaled with one FMA by d_x * (the 8 columns' d_y). What depends
// only on the activations (their scales, sub-block sums laid out across
// columns, offset corrections) is prepared once per chunk of columns and
// pass of blocks, then reused by every weight row. A chunk of a single
// column (decode) goes to the level's vec_dot instead: it has less per-block
// overhead than the reduction.
// F32 / F16: register-blocked R x C tiles of float FMAs, walking k in passes
// so that a tile's rows stay in L1.
// Results equal vec_dot's up to the float summation order; integer parts are
// exact (tests/backend_cpu/gemm_test.cpp, bench/gemm_bench.cpp).
//
// With AVX-512 VNNI the u8 x s8 products are one dpbusd per 32 elements;
// signed weights (Q8_0, IQ4_NL) are made unsigned by an offset whose
// correction -offset * sum(y) is prepared per activation block.
// Helpers live in the nested namespace `gemm` so they never collide with the
// ones of kernels_x86_simd.h, which is compiled into the same files.
#pragma once

#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
#error "gemm_x86_simd.h needs -mavx2 -mfma -mf16c"
#endif

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "backend/cpu/kernel_blocks.h"
#include "backend/cpu/kernels.h"
#include "quant/iq_grids.h"

namespace strix::cpu {
namespace {
namespace gemm {

#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
#define STRIX_GEMM_VNNI 1
#else
#define STRIX_GEMM_VNNI 0
#endif

#if defined(__AVX512F__) && defined(__AVX512VL__)
constexpr bool kWide = true;  // 32 ymm registers
#else
constexpr bool kWide = false;  // 16 ymm registers
#endif

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

inline __m256i ld(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

inline float hsum(__m256 v) {
  __m128 r = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  r = _mm_add_ps(r, _mm_movehl_ps(r, r));
  r = _mm_add_ss(r, _mm_movehdup_ps(r));
  return _mm_cvtss_f32(r);
}

inline __m256 bcast_half(uint16_t h) { return _mm256_set1_ps(_cvtsh_ss(h)); }

// acc + sums of groups of four u8 * s8 products. Without VNNI the sums of
// two adjacent products (maddubs) must fit int16.
inline __m256i dpbusd(__m256i acc, __m256i u, __m256i s) {
#if STRIX_GEMM_VNNI
  return _mm256_dpbusd_epi32(acc, u, s);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
#endif
}

// acc + pairwise sums of i16 products.
inline __m256i dpwssd(__m256i acc, __m256i a, __m256i b) {
#if STRIX_GEMM_VNNI
  return _mm256_dpwssd_epi32(acc, a, b);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
#endif
}

// Word k of `words` (8 x i16, the same in both 128-bit lanes) in every i16 lane.
inline __m256i bcast_word(__m256i words, int k) {
  return _mm256_shuffle_epi8(words, _mm256_set1_epi16(static_cast<int16_t>(((2 * k + 1) << 8) | (2 * k))));
}

// Word lo in the low 128-bit lane, word lo + 1 in the high one.
inline __m256i bcast_word_pair(__m256i words, int lo) {
  const __m128i l = _mm_set1_epi16(static_cast<int16_t>(((2 * lo + 1) << 8) | (2 * lo)));
  const __m128i h = _mm_set1_epi16(static_cast<int16_t>(((2 * lo + 3) << 8) | (2 * lo + 2)));
  return _mm256_shuffle_epi8(words, _mm256_set_m128i(h, l));
}

// 16 bytes of packed nibbles -> 32 bytes: low nibbles first, then high ones.
inline __m256i nibbles(const uint8_t* p) {
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(b, 4), b), _mm256_set1_epi8(0x0F));
}

// Nibbles plus bit j of qh as bit 4: the unsigned 5-bit values [0, 31].
inline __m256i five_bits(const uint8_t qs[16], const uint8_t qh[4]) {
  const __m256i nib = nibbles(qs);
  uint32_t w;
  std::memcpy(&w, qh, 4);
#if defined(__AVX512BW__) && defined(__AVX512VL__)
  return _mm256_mask_add_epi8(nib, w, nib, _mm256_set1_epi8(0x10));
#else
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(w)),
      _mm256_setr_epi64x(0x0000000000000000, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ULL));
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
  return _mm256_or_si256(nib, _mm256_and_si256(set, _mm256_set1_epi8(0x10)));
#endif
}

// ---------------------------------------------------------------- K-quants x Q8_K

// K-quant tiles take one weight row against 8 activation rows. Per
// super-block a pair (row, column) yields an exact int32 vector of partial
// sums; the eight vectors of a row are reduced to one (lane c = column c) and
// scaled with one FMA against the activation scales of the eight columns.
// What depends only on the activations (their scales, and for Q4_K / Q5_K
// the sub-block sums laid out across columns) is prepared once per chunk of
// columns and kPass super-blocks, then reused by every weight row.

// Lane c of the result = sum of the lanes of v[c], c < NC (the other lanes
// are 0; v[c] for c >= NC is not read).
template <int NC>
inline __m256i reduce8(const __m256i v[8]) {
  const __m256i z = _mm256_setzero_si256();
  auto at = [&](int c) { return c < NC ? v[c] : z; };
  const __m256i a01 = _mm256_hadd_epi32(at(0), at(1));
  const __m256i a23 = _mm256_hadd_epi32(at(2), at(3));
  const __m256i b0 = _mm256_hadd_epi32(a01, a23);  // [c0 c1 c2 c3 | c0 c1 c2 c3], partial sums
  if constexpr (NC <= 4) {
    const __m128i r = _mm_add_epi32(_mm256_castsi256_si128(b0), _mm256_extracti128_si256(b0, 1));
    return _mm256_zextsi128_si256(r);
  } else {
    const __m256i a45 = _mm256_hadd_epi32(at(4), at(5));
    const __m256i a67 = _mm256_hadd_epi32(at(6), at(7));
    const __m256i b1 = _mm256_hadd_epi32(a45, a67);  // [c4 .. c7 | c4 .. c7]
    return _mm256_add_epi32(_mm256_permute2x128_si256(b0, b1, 0x20), _mm256_permute2x128_si256(b0, b1, 0x31));
  }
}

constexpr int kKPass = 8;  // super-blocks per pass: 8 activation rows of it (19 KB) stay in L1

struct KPrep {
  alignas(32) float dy[kKPass][8];  // activation scales, 0 for absent columns
  // Q4_K / Q5_K: sums of the 8 sub-blocks of 32, as i16 pairs (2jp, 2jp + 1)
  // in the int32 lane of each column: bsp[i][jp][c]
  alignas(32) int32_t bsp[kKPass][4][8];
};

inline void k_prepare(KPrep& p, const uint8_t* y, size_t by, int nc, int b0, int nb, bool with_bsums) {
  for (int i = 0; i < nb; ++i) {
    for (int c = 0; c < 8; ++c) {
      if (c >= nc) {
        p.dy[i][c] = 0.0f;
        if (with_bsums) {
          for (int jp = 0; jp < 4; ++jp) p.bsp[i][jp][c] = 0;
        }
        continue;
      }
      const BlockQ8_K& b = reinterpret_cast<const BlockQ8_K*>(y + c * by)[b0 + i];
      p.dy[i][c] = b.d;
      if (with_bsums) {
        for (int jp = 0; jp < 4; ++jp) {
          const int16_t lo = static_cast<int16_t>(b.bsums[4 * jp] + b.bsums[4 * jp + 1]);
          const int16_t hi = static_cast<int16_t>(b.bsums[4 * jp + 2] + b.bsums[4 * jp + 3]);
          p.bsp[i][jp][c] = static_cast<int32_t>(static_cast<uint16_t>(lo) |
                                                 (static_cast<uint32_t>(static_cast<uint16_t>(hi)) << 16));
        }
      }
    }
  }
}

// Writes (or adds, for a later pass) lane c of v to s[c * bs], c < NC.
template <int NC>
inline void store_cols(__m256 v, float* s, size_t bs, bool add) {
  alignas(32) float t[8];
  _mm256_store_ps(t, v);
  for (int c = 0; c < NC; ++c) s[c * bs] = add ? s[c * bs] + t[c] : t[c];
}

// Driver of the prepared tiles: for each chunk of 8 columns and pass of
// K::kPass blocks, K::prepare once, then K::tile<NR, NC> for every K::kRows
// weight rows (and the remainder one by one).
template <class K, int NC>
inline void run_prepared(int cc, const typename K::Prep& p, const uint8_t* x, size_t bx, int nr, const uint8_t* y,
                         size_t by, int b0, int nb, float* s, size_t bs) {
  if (cc == NC) {
    constexpr int R = K::kRows;
    int r = 0;
    for (; r + R <= nr; r += R) K::template tile<R, NC>(p, x + r * bx, bx, y, by, b0, nb, s + r, bs, b0 > 0);
    if constexpr (R > 1) {
      for (; r < nr; ++r) K::template tile<1, NC>(p, x + r * bx, bx, y, by, b0, nb, s + r, bs, b0 > 0);
    }
    return;
  }
  if constexpr (NC > 1) run_prepared<K, NC - 1>(cc, p, x, bx, nr, y, by, b0, nb, s, bs);
}

// The level these tiles are compiled for.
#if defined(__AVX512F__) && defined(__AVX512VL__)
constexpr CpuIsa kThisIsa = CpuIsa::kAvx512;
#else
constexpr CpuIsa kThisIsa = CpuIsa::kAvx2;
#endif

// One activation row (decode): the level's vec_dot has less per-block
// overhead than a tile's reduction across columns.
template <GgmlType kType>
inline void one_column_by_vec_dot(int n, const uint8_t* x, size_t bx, int nr, const uint8_t* y, float* s) {
  const VecDotFn dot = cpu_kernels_for(kThisIsa).vec_dot[static_cast<uint32_t>(kType)];
  for (int r = 0; r < nr; ++r) dot(n, s + r, x + r * bx, y);
}

template <class K, GgmlType kType>
void gemm_prepared(int n, const void* vx, size_t bx, int nr, const void* vy, size_t by, int nc, float* s, size_t bs) {
  const auto* x = static_cast<const uint8_t*>(vx);
  const auto* y = static_cast<const uint8_t*>(vy);
  const int nb_all = n / K::kBlock;
  typename K::Prep prep;
  for (int c0 = 0; c0 < nc; c0 += 8) {
    const int cc = std::min(8, nc - c0);
    if (cc == 1) {
      one_column_by_vec_dot<kType>(n, x, bx, nr, y + c0 * by, s + c0 * bs);
      continue;
    }
    for (int b0 = 0; b0 < nb_all; b0 += K::kPass) {
      const int nb = std::min(K::kPass, nb_all - b0);
      K::prepare(prep, y + c0 * by, by, cc, b0, nb);
      run_prepared<K, 8>(cc, prep, x, bx, nr, y + c0 * by, by, b0, nb, s + c0 * bs, bs);
    }
  }
}

// Scales (i16, both lanes) and mins (i16 x 8) of a Q4_K / Q5_K block.
inline void scales_mins(const uint8_t packed[12], __m256i& scales, __m128i& mins) {
  alignas(16) uint8_t sm[16];
  unpack_k_scales(packed, sm);
  const __m256i w = _mm256_cvtepu8_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(sm)));
  scales = _mm256_permute2x128_si256(w, w, 0x00);
  mins = _mm256_extracti128_si256(w, 1);
}

// Q4_K and Q5_K share everything but the unpacking of 64 elements: `Q5`
// adds the fifth bits. Per super-block and column: S = sum_j scale_j *
// (q . y)_j and M = sum_j min_j * bsum_j, exact in int32; the result is
// sum_i dy_i * (d_i * S_i - dmin_i * M_i).
template <bool Q5>
struct TileQ45K {
  static constexpr int kBlock = 256;
  static constexpr int kPass = kKPass;
  using Prep = KPrep;
  static void prepare(Prep& p, const uint8_t* y, size_t by, int nc, int b0, int nb) {
    k_prepare(p, y, by, nc, b0, nb, true);
  }
  using Block = std::conditional_t<Q5, BlockQ5_K, BlockQ4_K>;

  static constexpr int kRows = 1;

  template <int NR, int NC>
  static void tile(const KPrep& p, const uint8_t* x, size_t /*bx*/, const uint8_t* y, size_t by, int b0, int nb,
                   float* s, size_t bs, bool add) {
    static_assert(NR == 1);
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < nb; ++i) {
      const Block& xb = reinterpret_cast<const Block*>(x)[b0 + i];
      const BlockQ8_K* yb[NC];
      for (int c = 0; c < NC; ++c) yb[c] = reinterpret_cast<const BlockQ8_K*>(y + c * by) + b0 + i;
      __m256i sc;
      __m128i mn;
      scales_mins(xb.scales, sc, mn);
      __m256i qh;
      if constexpr (Q5) qh = ld(xb.qh);
      __m256i sumi[8];
      for (int c = 0; c < 8; ++c) sumi[c] = _mm256_setzero_si256();
      for (int j = 0; j < 4; ++j) {  // 64 elements: low nibbles (scale 2j), high (2j + 1)
        const __m256i bits = ld(xb.qs + 32 * j);
        __m256i lo = _mm256_and_si256(bits, m4);
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
        if constexpr (Q5) {
          const __m256i one = _mm256_set1_epi8(1);
          lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * j), one), 4));
          hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * j + 1), one), 4));
        }
        const __m256i sl = bcast_word(sc, 2 * j);
        const __m256i sh = bcast_word(sc, 2 * j + 1);
        for (int c = 0; c < NC; ++c) {
          // |pair| <= 2 * 31 * 128: within int16
          sumi[c] = dpwssd(sumi[c], _mm256_maddubs_epi16(lo, ld(yb[c]->qs + 64 * j)), sl);
          sumi[c] = dpwssd(sumi[c], _mm256_maddubs_epi16(hi, ld(yb[c]->qs + 64 * j + 32)), sh);
        }
      }
      // M over the 8 columns: sum_jp madd(bsum pairs jp, (min 2jp, min 2jp + 1))
      const __m256i mn32 = _mm256_broadcastsi128_si256(mn);
      __m256i m = _mm256_setzero_si256();
      for (int jp = 0; jp < 4; ++jp) {
        const __m256i mp = _mm256_permutevar8x32_epi32(mn32, _mm256_set1_epi32(jp));
        m = dpwssd(m, ld(p.bsp[i][jp]), mp);
      }
      const __m256 dy = _mm256_load_ps(p.dy[i]);
      const __m256 t = _mm256_fmsub_ps(bcast_half(xb.d), _mm256_cvtepi32_ps(reduce8<NC>(sumi)),
                                       _mm256_mul_ps(bcast_half(xb.dmin), _mm256_cvtepi32_ps(m)));
      acc = _mm256_fmadd_ps(dy, t, acc);
    }
    store_cols<NC>(acc, s, bs, add);
  }
};

// ---------------------------------------------------------------- Q5_K, AVX-512: activations across lanes

#if STRIX_GEMM_VNNI
// A second layout, used where it measured faster (Q5_K on the AVX-512
// level; for Q4_K both layouts run at the same speed): the prepared
// activations are transposed so that one vector holds the same 4 elements of
// all 8 columns (lane c = column c), and each 4-byte group of a weight row is
// broadcast to all lanes. A sub-block of 32 elements is 8 maddubs per weight
// row for all 8 columns, summed in int16, then one multiply-add with the
// sub-block scale; no reduction across lanes follows (the lanes already are
// the columns), and the weight unpacking (Q5_K's fifth bits) is not repeated
// per column. Each transposed activation vector is loaded once for kRows rows.

// 8 x 8 int32 transpose: out[k] lane c = in[c] lane k.
inline void transpose8(const __m256i in[8], __m256i out[8]) {
  __m256i t[8], u[8];
  for (int h = 0; h < 2; ++h) {
    const __m256i* r = in + 4 * h;
    t[4 * h + 0] = _mm256_unpacklo_epi32(r[0], r[1]);  // [0.0 1.0 0.1 1.1 | 0.4 1.4 0.5 1.5]
    t[4 * h + 1] = _mm256_unpackhi_epi32(r[0], r[1]);  // [0.2 1.2 0.3 1.3 | 0.6 1.6 0.7 1.7]
    t[4 * h + 2] = _mm256_unpacklo_epi32(r[2], r[3]);
    t[4 * h + 3] = _mm256_unpackhi_epi32(r[2], r[3]);
    u[4 * h + 0] = _mm256_unpacklo_epi64(t[4 * h + 0], t[4 * h + 2]);  // groups 0 | 4 of columns 4h..4h+3
    u[4 * h + 1] = _mm256_unpackhi_epi64(t[4 * h + 0], t[4 * h + 2]);  // 1 | 5
    u[4 * h + 2] = _mm256_unpacklo_epi64(t[4 * h + 1], t[4 * h + 3]);  // 2 | 6
    u[4 * h + 3] = _mm256_unpackhi_epi64(t[4 * h + 1], t[4 * h + 3]);  // 3 | 7
  }
  for (int k = 0; k < 4; ++k) {
    out[k] = _mm256_permute2x128_si256(u[k], u[4 + k], 0x20);
    out[k + 4] = _mm256_permute2x128_si256(u[k], u[4 + k], 0x31);
  }
}

inline __m256i bcast32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

struct KtPrep {
  alignas(32) float dy[kKPass][8];
  alignas(32) int32_t bsp[kKPass][4][8];  // as KPrep::bsp
  // y[i][g][k]: lane c = bytes 4k..4k+3 of the g-th 32 activation quants of column c
  alignas(32) int32_t y[kKPass][8][8][8];
};

inline void kt_prepare(KtPrep& p, const uint8_t* y, size_t by, int nc, int b0, int nb, bool with_bsums) {
  for (int i = 0; i < nb; ++i) {
    for (int c = 0; c < 8; ++c) {
      p.dy[i][c] = 0.0f;
      for (int jp = 0; jp < 4; ++jp) p.bsp[i][jp][c] = 0;
      if (c >= nc) continue;
      const BlockQ8_K& b = reinterpret_cast<const BlockQ8_K*>(y + c * by)[b0 + i];
      p.dy[i][c] = b.d;
      if (with_bsums) {
        for (int jp = 0; jp < 4; ++jp) {
          const int16_t lo = static_cast<int16_t>(b.bsums[4 * jp] + b.bsums[4 * jp + 1]);
          const int16_t hi = static_cast<int16_t>(b.bsums[4 * jp + 2] + b.bsums[4 * jp + 3]);
          p.bsp[i][jp][c] = static_cast<int32_t>(static_cast<uint16_t>(lo) |
                                                 (static_cast<uint32_t>(static_cast<uint16_t>(hi)) << 16));
        }
      }
    }
    for (int g = 0; g < 8; ++g) {
      __m256i in[8], out[8];
      for (int c = 0; c < 8; ++c) {
        in[c] =
            c < nc ? ld(reinterpret_cast<const BlockQ8_K*>(y + c * by)[b0 + i].qs + 32 * g) : _mm256_setzero_si256();
      }
      transpose8(in, out);
      for (int k = 0; k < 8; ++k) _mm256_store_si256(reinterpret_cast<__m256i*>(p.y[i][g][k]), out[k]);
    }
  }
}

// Q4_K / Q5_K: per super-block, row and column S = sum_j scale_j * (q . y)_j
// and M = sum_j min_j * bsum_j, as in TileQ45K.
template <bool Q5>
struct TileQ45KT {
  static constexpr int kBlock = 256;
  static constexpr int kPass = kKPass;
  static constexpr int kRows = 4;
  using Prep = KtPrep;
  using Block = std::conditional_t<Q5, BlockQ5_K, BlockQ4_K>;
  static void prepare(Prep& p, const uint8_t* y, size_t by, int nc, int b0, int nb) {
    kt_prepare(p, y, by, nc, b0, nb, true);
  }

  template <int NR, int NC>
  static void tile(const Prep& p, const uint8_t* x, size_t bx, const uint8_t* /*y*/, size_t /*by*/, int b0, int nb,
                   float* s, size_t bs, bool add) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256 acc[NR];
    for (int r = 0; r < NR; ++r) acc[r] = _mm256_setzero_ps();
    alignas(32) uint8_t w[NR][256];  // unsigned quants, sub-block g at 32 * g
    alignas(16) uint8_t sm[NR][16];  // scales, then mins
    for (int i = 0; i < nb; ++i) {
      const Block* xb[NR];
      for (int r = 0; r < NR; ++r) {
        xb[r] = reinterpret_cast<const Block*>(x + r * bx) + b0 + i;
        unpack_k_scales(xb[r]->scales, sm[r]);
        __m256i qh;
        if constexpr (Q5) qh = ld(xb[r]->qh);
        for (int j = 0; j < 4; ++j) {
          const __m256i bits = ld(xb[r]->qs + 32 * j);
          __m256i lo = _mm256_and_si256(bits, m4);
          __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
          if constexpr (Q5) {
            const __m256i one = _mm256_set1_epi8(1);
            lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * j), one), 4));
            hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * j + 1), one), 4));
          }
          _mm256_store_si256(reinterpret_cast<__m256i*>(w[r] + 64 * j), lo);
          _mm256_store_si256(reinterpret_cast<__m256i*>(w[r] + 64 * j + 32), hi);
        }
      }
      __m256i sum[NR];
      for (int r = 0; r < NR; ++r) sum[r] = _mm256_setzero_si256();
      for (int g = 0; g < 8; ++g) {
        const __m256i* yg = reinterpret_cast<const __m256i*>(p.y[i][g]);
        for (int r = 0; r < NR; ++r) {
          // maddubs pairs are <= 2 * 31 * 128 = 7936: four of them add up
          // within int16; the madd with the sub-block scale widens to int32.
          const __m256i scale = _mm256_set1_epi16(sm[r][g]);
          __m256i h[2];
          for (int half = 0; half < 2; ++half) {
            h[half] = _mm256_maddubs_epi16(bcast32(w[r] + 32 * g + 16 * half), _mm256_load_si256(yg + 4 * half));
            for (int k = 1; k < 4; ++k) {
              const int kk = 4 * half + k;
              h[half] = _mm256_add_epi16(
                  h[half], _mm256_maddubs_epi16(bcast32(w[r] + 32 * g + 4 * kk), _mm256_load_si256(yg + kk)));
            }
          }
          sum[r] = dpwssd(dpwssd(sum[r], h[0], scale), h[1], scale);
        }
      }
      const __m256 dy = _mm256_load_ps(p.dy[i]);
      for (int r = 0; r < NR; ++r) {
        // M over the 8 columns: sum_jp madd(bsum pairs jp, (min 2jp, min 2jp + 1))
        __m256i m = _mm256_setzero_si256();
        for (int jp = 0; jp < 4; ++jp) {
          const int32_t mp = sm[r][8 + 2 * jp] | (sm[r][9 + 2 * jp] << 16);
          m = _mm256_dpwssd_epi32(m, ld(p.bsp[i][jp]), _mm256_set1_epi32(mp));
        }
        const __m256 t = _mm256_fmsub_ps(bcast_half(xb[r]->d), _mm256_cvtepi32_ps(sum[r]),
                                         _mm256_mul_ps(bcast_half(xb[r]->dmin), _mm256_cvtepi32_ps(m)));
        acc[r] = _mm256_fmadd_ps(dy, t, acc[r]);
      }
    }
    for (int r = 0; r < NR; ++r) store_cols<NC>(acc[r], s + r, bs, add);
  }
};
#endif  // STRIX_GEMM_VNNI

// ---------------------------------------------------------------- legacy x Q8_0

// A 32-element weight block against a Q8_0 block: sum_b dx_b * dy_b * (w . y)_b.
// Each format W (an object, built once per tile: it may hold a lookup table)
// gives its weights either as
//   unsigned_q(b): u = w + W::kOffset in [0, 255], or
//   signed_q(b):   w itself (int8),
// plus its scale. With VNNI the tile uses u: dpbusd(-kOffset * sum(y), u, y),
// the correction computed once per activation block. Without VNNI, u is used
// when kSmall (u * 128 pairs fit int16 in maddubs), else |w| and sign(y, w).
struct WQ4_0 {
  static constexpr bool kMin = false;
  using Block = BlockQ4_0;
  static constexpr int kOffset = 8;
  static constexpr bool kSmall = true;
  __m256 scale(const Block& b) const { return bcast_half(b.d); }
  __m256i unsigned_q(const Block& b) const { return nibbles(b.qs); }
  __m256i signed_q(const Block& b) const { return _mm256_sub_epi8(nibbles(b.qs), _mm256_set1_epi8(8)); }
};

struct WQ5_0 {
  static constexpr bool kMin = false;
  using Block = BlockQ5_0;
  static constexpr int kOffset = 16;
  static constexpr bool kSmall = true;
  __m256 scale(const Block& b) const { return bcast_half(b.d); }
  __m256i unsigned_q(const Block& b) const { return five_bits(b.qs, b.qh); }
  __m256i signed_q(const Block& b) const { return _mm256_sub_epi8(five_bits(b.qs, b.qh), _mm256_set1_epi8(16)); }
};

// A 16-entry byte table (values + add) in both lanes.
inline __m256i table16(const int8_t values[16], int add) {
  alignas(16) int8_t t[16];
  for (int i = 0; i < 16; ++i) t[i] = static_cast<int8_t>(values[i] + add);
  return _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(t)));
}

// Formats whose 4-bit codes index a table of signed levels.
template <int kAdd, bool kIsSmall>
struct WTable {
  static constexpr bool kMin = false;
  static constexpr int kOffset = kAdd;
  static constexpr bool kSmall = kIsSmall;
  __m256i u_table, s_table;
  explicit WTable(const int8_t values[16]) : u_table(table16(values, kAdd)), s_table(table16(values, 0)) {}
  __m256i unsigned_q(const uint8_t* qs) const { return _mm256_shuffle_epi8(u_table, nibbles(qs)); }
  __m256i signed_q(const uint8_t* qs) const { return _mm256_shuffle_epi8(s_table, nibbles(qs)); }
};

struct WIq4Nl : WTable<128, false> {  // levels in [-127, 113]
  using Block = BlockIq4Nl;
  WIq4Nl() : WTable(quant::kvalues_iq4nl) {}
  __m256 scale(const Block& b) const { return bcast_half(b.d); }
  __m256i unsigned_q(const Block& b) const { return WTable::unsigned_q(b.qs); }
  __m256i signed_q(const Block& b) const { return WTable::signed_q(b.qs); }
};

struct WMxfp4 : WTable<12, true> {  // doubled E2M1 levels in [-12, 12]
  using Block = BlockMxfp4;
  WMxfp4() : WTable(kMxfp4Doubled) {}
  __m256 scale(const Block& b) const { return _mm256_set1_ps(e8m0_half(b.e)); }
  __m256i unsigned_q(const Block& b) const { return WTable::unsigned_q(b.qs); }
  __m256i signed_q(const Block& b) const { return WTable::signed_q(b.qs); }
};

// The legacy tiles take one weight row against 8 activation rows,
// like the K-quant ones: per block the eight exact int32 vectors of a row are
// reduced to one (lane c = column c) and scaled with one FMA. Prepared per
// chunk of columns and kLPass blocks: the activation scales, Q8_1's d * sum,
// and the offset correction -kOffset * sum(y) of the unsigned path.
constexpr int kLPass = 32;  // blocks per pass: 8 activation rows (9 KB) and their corrections (8 KB) stay in L1

struct LPrep {
  alignas(32) float dy[kLPass][8];
  alignas(32) float sy[kLPass][8];         // Q8_1: d * sum(q); 0 for absent columns
  alignas(32) int32_t base[kLPass][8][8];  // [block][column]: -kOffset * sums of four y
};

template <class W>
struct TileLegacy {
  static constexpr int kBlock = 32;
  static constexpr int kPass = kLPass;
  using Prep = LPrep;
  using Block = typename W::Block;
  using YBlock = std::conditional_t<W::kMin, BlockQ8_1, BlockQ8_0>;
  static constexpr bool kUnsigned = STRIX_GEMM_VNNI || W::kSmall;
  static constexpr bool kBase = kUnsigned && W::kOffset != 0;

  static void prepare(Prep& p, const uint8_t* y, size_t by, int nc, int b0, int nb) {
    for (int i = 0; i < nb; ++i) {
      for (int c = 0; c < 8; ++c) {
        if (c >= nc) {
          p.dy[i][c] = 0.0f;
          p.sy[i][c] = 0.0f;
          continue;
        }
        const YBlock& b = reinterpret_cast<const YBlock*>(y + c * by)[b0 + i];
        p.dy[i][c] = _cvtsh_ss(b.d);
        if constexpr (W::kMin) p.sy[i][c] = _cvtsh_ss(b.s);
        if constexpr (kBase) {
          const __m256i sums =
              dpbusd(_mm256_setzero_si256(), _mm256_set1_epi8(static_cast<char>(W::kOffset)), ld(b.qs));
          _mm256_store_si256(reinterpret_cast<__m256i*>(p.base[i][c]), _mm256_sub_epi32(_mm256_setzero_si256(), sums));
        }
      }
    }
  }

  static constexpr int kRows = 1;

  template <int NR, int NC>
  static void tile(const Prep& p, const uint8_t* x, size_t /*bx*/, const uint8_t* y, size_t by, int b0, int nb,
                   float* s, size_t bs, bool add) {
    static_assert(NR == 1);
    const W w;
    const Block* xb = reinterpret_cast<const Block*>(x) + b0;
    const YBlock* yc[NC];
    for (int c = 0; c < NC; ++c) yc[c] = reinterpret_cast<const YBlock*>(y + c * by) + b0;
    __m256 acc = _mm256_setzero_ps();
    __m256 accm = _mm256_setzero_ps();
    __m256 cacc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int i = 0; i < nb; ++i) {
      const __m256i wq = kUnsigned ? w.unsigned_q(xb[i]) : w.signed_q(xb[i]);
      __m256i aw = wq;
      if constexpr (!kUnsigned) aw = _mm256_sign_epi8(wq, wq);
      __m256i prod[8];
      for (int c = 0; c < 8; ++c) prod[c] = _mm256_setzero_si256();
      for (int c = 0; c < NC; ++c) {
        const __m256i yv = ld(yc[c][i].qs);
        if constexpr (kBase) {
          prod[c] = dpbusd(_mm256_load_si256(reinterpret_cast<const __m256i*>(p.base[i][c])), wq, yv);
        } else if constexpr (kUnsigned) {
          prod[c] = dpbusd(prod[c], wq, yv);
        } else {
          prod[c] = dpbusd(prod[c], aw, _mm256_sign_epi8(yv, wq));
        }
      }
      if constexpr (NC <= 2) {
        // few columns: a reduction per block would cost more than it saves
        const __m256 dx = w.scale(xb[i]);
        for (int c = 0; c < NC; ++c) {
          const __m256 d = _mm256_mul_ps(dx, _mm256_broadcast_ss(&p.dy[i][c]));
          cacc[c] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(prod[c]), cacc[c]);
        }
      } else {
        const __m256 d = _mm256_mul_ps(w.scale(xb[i]), _mm256_load_ps(p.dy[i]));
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(reduce8<NC>(prod)), acc);
      }
      if constexpr (W::kMin) accm = _mm256_fmadd_ps(w.min(xb[i]), _mm256_load_ps(p.sy[i]), accm);
    }
    if constexpr (NC <= 2) {
      alignas(32) float t[8];
      _mm256_store_ps(t, acc);
      for (int c = 0; c < NC; ++c) t[c] = hsum(cacc[c]);
      acc = _mm256_load_ps(t);
    }
    if constexpr (W::kMin) acc = _mm256_add_ps(acc, accm);
    store_cols<NC>(acc, s, bs, add);
  }
};

// Q4_1 / Q5_1 against Q8_1: sum_b dx * dy * (q . y) + mx * sy, q in [0, 31].
template <bool Q5>
struct WQ45_1 {
  using Block = std::conditional_t<Q5, BlockQ5_1, BlockQ4_1>;
  static constexpr int kOffset = 0;
  static constexpr bool kSmall = true;
  static constexpr bool kMin = true;
  __m256 scale(const Block& b) const { return bcast_half(b.d); }
  __m256 min(const Block& b) const { return bcast_half(b.m); }
  __m256i unsigned_q(const Block& b) const {
    if constexpr (Q5) {
      return five_bits(b.qs, b.qh);
    } else {
      return nibbles(b.qs);
    }
  }
  __m256i signed_q(const Block& b) const { return unsigned_q(b); }
};

// ---------------------------------------------------------------- IQ4_XS x Q8_K

// Per super-block: sum_j (ls_j - 32) * (w . y)_j, w in [-127, 113] from the
// IQ4_NL table (|w| and sign(y, w) keep maddubs within int16), times d * dy.
struct TileIq4Xs {
  static constexpr int kBlock = 256;
  static constexpr int kPass = kKPass;
  using Prep = KPrep;
  static void prepare(Prep& p, const uint8_t* y, size_t by, int nc, int b0, int nb) {
    k_prepare(p, y, by, nc, b0, nb, false);
  }

  static constexpr int kRows = 1;

  template <int NR, int NC>
  static void tile(const KPrep& p, const uint8_t* x, size_t /*bx*/, const uint8_t* y, size_t by, int b0, int nb,
                   float* s, size_t bs, bool add) {
    static_assert(NR == 1);
    const __m256i table =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(quant::kvalues_iq4nl)));
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < nb; ++i) {
      const BlockIq4Xs& xb = reinterpret_cast<const BlockIq4Xs*>(x)[b0 + i];
      const BlockQ8_K* yb[NC];
      for (int c = 0; c < NC; ++c) yb[c] = reinterpret_cast<const BlockQ8_K*>(y + c * by) + b0 + i;
      alignas(16) int16_t ls[8];  // ls - 32
      for (int sb = 0; sb < 8; ++sb) {
        ls[sb] = static_cast<int16_t>(
            (((xb.scales_l[sb / 2] >> (4 * (sb & 1))) & 0xF) | (((xb.scales_h >> (2 * sb)) & 3) << 4)) - 32);
      }
      const __m256i sc = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(ls)));
      __m256i sumi[8];
      for (int c = 0; c < 8; ++c) sumi[c] = _mm256_setzero_si256();
      for (int sb = 0; sb < 8; ++sb) {
        const __m256i w = _mm256_shuffle_epi8(table, nibbles(xb.qs + 16 * sb));
        const __m256i aw = _mm256_sign_epi8(w, w);
        const __m256i scw = bcast_word(sc, sb);
        for (int c = 0; c < NC; ++c) {
          const __m256i prod = _mm256_maddubs_epi16(aw, _mm256_sign_epi8(ld(yb[c]->qs + 32 * sb), w));
          sumi[c] = dpwssd(sumi[c], prod, scw);
        }
      }
      const __m256 d = _mm256_mul_ps(bcast_half(xb.d), _mm256_load_ps(p.dy[i]));
      acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(reduce8<NC>(sumi)), acc);
    }
    store_cols<NC>(acc, s, bs, add);
  }
};

// ---------------------------------------------------------------- F32 / F16

// Register-blocked dot products: NR x NC accumulators of 8 floats, each
// weight and activation vector loaded (and converted) once per tile; a tail
// of n % 8 elements is added in scalar float.
template <bool kHalf, int R = kWide ? 4 : (kHalf ? 2 : 3), int C = 4>
struct TileFloat {
  static constexpr int kRows = R;
  static constexpr int kCols = C;
  using T = std::conditional_t<kHalf, uint16_t, float>;

  static __m256 load8(const T* p) {
    if constexpr (kHalf) {
      return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    } else {
      return _mm256_loadu_ps(p);
    }
  }
  static float one(T v) {
    if constexpr (kHalf) {
      return _cvtsh_ss(v);
    } else {
      return v;
    }
  }

  template <int NR, int NC>
  static void tile(int n, const uint8_t* x, size_t bx, const uint8_t* y, size_t by, float* s, size_t bs, bool add) {
    const T* xr[NR];
    const T* yc[NC];
    for (int r = 0; r < NR; ++r) xr[r] = reinterpret_cast<const T*>(x + r * bx);
    for (int c = 0; c < NC; ++c) yc[c] = reinterpret_cast<const T*>(y + c * by);
    __m256 acc[NR][NC];
    for (int r = 0; r < NR; ++r) {
      for (int c = 0; c < NC; ++c) acc[r][c] = _mm256_setzero_ps();
    }
    const int n8 = n & ~7;
    for (int k = 0; k < n8; k += 8) {
      __m256 xv[NR];
      for (int r = 0; r < NR; ++r) xv[r] = load8(xr[r] + k);
      for (int c = 0; c < NC; ++c) {
        const __m256 yv = load8(yc[c] + k);
        for (int r = 0; r < NR; ++r) acc[r][c] = _mm256_fmadd_ps(xv[r], yv, acc[r][c]);
      }
    }
    for (int c = 0; c < NC; ++c) {
      for (int r = 0; r < NR; ++r) {
        float tail = 0;
        for (int k = n8; k < n; ++k) tail += one(xr[r][k]) * one(yc[c][k]);
        const float v = hsum(acc[r][c]) + tail;
        s[c * bs + r] = add ? s[c * bs + r] + v : v;
      }
    }
  }
};

// The float tiles walk k in passes of kFloatPass elements, so a row tile and
// a column chunk stay in L1 while every weight row of the call goes by.
constexpr int kFloatPass = 1024;

template <class K, int NC>
inline void float_rows(int kn, const uint8_t* x, size_t bx, int nr, const uint8_t* y, size_t by, float* s, size_t bs,
                       bool add) {
  constexpr int R = K::kRows;
  int r = 0;
  for (; r + R <= nr; r += R) K::template tile<R, NC>(kn, x + r * bx, bx, y, by, s + r, bs, add);
  for (; r < nr; ++r) K::template tile<1, NC>(kn, x + r * bx, bx, y, by, s + r, bs, add);
}

template <class K, int NC>
inline void float_cols(int cc, int kn, const uint8_t* x, size_t bx, int nr, const uint8_t* y, size_t by, float* s,
                       size_t bs, bool add) {
  if (cc == NC) {
    float_rows<K, NC>(kn, x, bx, nr, y, by, s, bs, add);
    return;
  }
  if constexpr (NC > 1) float_cols<K, NC - 1>(cc, kn, x, bx, nr, y, by, s, bs, add);
}

template <class K, GgmlType kType>
void gemm_float(int n, const void* vx, size_t bx, int nr, const void* vy, size_t by, int nc, float* s, size_t bs) {
  const auto* x = static_cast<const uint8_t*>(vx);
  const auto* y = static_cast<const uint8_t*>(vy);
  constexpr size_t kElem = sizeof(typename K::T);
  for (int c0 = 0; c0 < nc; c0 += K::kCols) {
    const int cc = std::min(K::kCols, nc - c0);
    if (cc == 1) {
      one_column_by_vec_dot<kType>(n, x, bx, nr, y + c0 * by, s + c0 * bs);
      continue;
    }
    for (int k0 = 0; k0 < n; k0 += kFloatPass) {
      const int kn = std::min(kFloatPass, n - k0);
      float_cols<K, K::kCols>(cc, kn, x + k0 * kElem, bx, nr, y + c0 * by + k0 * kElem, by, s + c0 * bs, bs, k0 > 0);
    }
  }
}

#if STRIX_GEMM_VNNI
// Q5_K on AVX-512: the transposed tile (measured ~15-20% faster) for whole
// chunks of 8 columns; the rest, where it would compute padding, per column.
inline void gemm_q5_K(int n, const void* x, size_t bx, int nr, const void* vy, size_t by, int nc, float* s, size_t bs) {
  const auto* y = static_cast<const uint8_t*>(vy);
  const int full = nc / 8 * 8;
  if (full > 0) gemm_prepared<TileQ45KT<true>, GgmlType::Q5_K>(n, x, bx, nr, y, by, full, s, bs);
  if (nc > full) {
    gemm_prepared<TileQ45K<true>, GgmlType::Q5_K>(n, x, bx, nr, y + full * by, by, nc - full, s + full * bs, bs);
  }
}
#endif

inline void set_gemm(CpuKernels& k, GgmlType w, GemmFn fn) { k.gemm[static_cast<uint32_t>(w)] = fn; }

}  // namespace gemm

// The tiles this header provides; the caller's table keeps the rest.
inline void fill_x86_gemm(CpuKernels& k) {
  using namespace gemm;
  set_gemm(k, GgmlType::Q4_K, gemm_prepared<TileQ45K<false>, GgmlType::Q4_K>);
#if STRIX_GEMM_VNNI
  set_gemm(k, GgmlType::Q5_K, gemm_q5_K);
#else
  set_gemm(k, GgmlType::Q5_K, gemm_prepared<TileQ45K<true>, GgmlType::Q5_K>);
#endif
  // Q6_K has no tile here: libllama sums it in vec_dot's order in decode and
  // prefill, which the vec_dot loop reproduces bit for bit. Q8_0's tile, in
  // ggml's per-output order, is simd_gemm_q8_0 in kernels_x86_simd.h.
  set_gemm(k, GgmlType::IQ4_XS, gemm_prepared<TileIq4Xs, GgmlType::IQ4_XS>);
  set_gemm(k, GgmlType::Q4_0, gemm_prepared<TileLegacy<WQ4_0>, GgmlType::Q4_0>);
  set_gemm(k, GgmlType::Q5_0, gemm_prepared<TileLegacy<WQ5_0>, GgmlType::Q5_0>);
  set_gemm(k, GgmlType::IQ4_NL, gemm_prepared<TileLegacy<WIq4Nl>, GgmlType::IQ4_NL>);
  set_gemm(k, GgmlType::MXFP4, gemm_prepared<TileLegacy<WMxfp4>, GgmlType::MXFP4>);
  set_gemm(k, GgmlType::Q4_1, gemm_prepared<TileLegacy<WQ45_1<false>>, GgmlType::Q4_1>);
  set_gemm(k, GgmlType::Q5_1, gemm_prepared<TileLegacy<WQ45_1<true>>, GgmlType::Q5_1>);
  set_gemm(k, GgmlType::F32, gemm_float<TileFloat<false>, GgmlType::F32>);
  set_gemm(k, GgmlType::F16, gemm_float<TileFloat<true>, GgmlType::F16>);
}

#undef STRIX_GEMM_VNNI

}  // namespace
}  // namespace strix::cpu
