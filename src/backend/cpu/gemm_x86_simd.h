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
// F32 / F16: register-blocked R x C tiles of float FMAs in llamafile
// tinyBLAS's order; Q5_K: vec_dot's order per output (both as libllama sums
// them, bit for bit: tests/backend_cpu/ggml_order_test.cpp).
// Other results equal vec_dot's up to the float summation order; integer
// parts are exact (tests/backend_cpu/gemm_test.cpp, bench/gemm_bench.cpp).
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
using quant::BlockQ4_K;
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

// ---------------------------------------------------------------- F32 / F16 in tinyBLAS order

// libllama's prefill (two or more activation rows) runs F32 weights, and F16
// weights against F16 activations, through llamafile's tinyBLAS whenever k is
// a multiple of its vector width (and m of 4): each output is one FMA chain
// of a KN-lane vector over all of k, then a horizontal sum. KN is 16 in the
// AVX-512 build and 8 in the AVX2 build. Decode (one row) and other k go
// through ggml's vec_dot, here the level's vec_dot. The tiles below keep
// that chain per output, so Strix's logits match bit for bit. (A weight
// matrix whose row count is no multiple of 4 goes to vec_dot in libllama;
// a tile does not see the row count, so that case is the caller's.)
#if defined(__AVX512F__)
constexpr int kTinyK = 16;
#else
constexpr int kTinyK = 8;
#endif

#if defined(__AVX512F__)
// R x C outputs, one 16-lane accumulator each (24 of the 32 registers, as
// tinyBLAS's own 4 x 6 tile); each k step loads (and converts) every weight
// and activation vector once. _mm512_reduce_add_ps's order: the 256-bit
// halves added, then hsum.
template <bool kHalf, int R = 4, int C = 6>
struct TileTiny {
  static constexpr int kRows = R;
  static constexpr int kCols = C;
  using T = std::conditional_t<kHalf, uint16_t, float>;

  static __m512 load16(const T* p) {
    if constexpr (kHalf) {
      // zero-masked form: GCC 12's plain one trips -Wmaybe-uninitialized
      return _mm512_maskz_cvtph_ps(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    } else {
      return _mm512_loadu_ps(p);
    }
  }

  template <int NR, int NC>
  static void tile(int n, const uint8_t* x, size_t bx, const uint8_t* y, size_t by, float* s, size_t bs) {
    const T* xr[NR];
    const T* yc[NC];
    for (int r = 0; r < NR; ++r) xr[r] = reinterpret_cast<const T*>(x + r * bx);
    for (int c = 0; c < NC; ++c) yc[c] = reinterpret_cast<const T*>(y + c * by);
    __m512 acc[NR][NC];
    for (int r = 0; r < NR; ++r) {
      for (int c = 0; c < NC; ++c) acc[r][c] = _mm512_setzero_ps();
    }
    for (int k = 0; k < n; k += 16) {
      __m512 xv[NR];
      for (int r = 0; r < NR; ++r) xv[r] = load16(xr[r] + k);
      for (int c = 0; c < NC; ++c) {
        const __m512 yv = load16(yc[c] + k);
        for (int r = 0; r < NR; ++r) acc[r][c] = _mm512_fmadd_ps(xv[r], yv, acc[r][c]);
      }
    }
    for (int c = 0; c < NC; ++c) {
      for (int r = 0; r < NR; ++r) {
        s[c * bs + r] = hsum(_mm256_add_ps(_mm512_extractf32x8_ps(acc[r][c], 1), _mm512_extractf32x8_ps(acc[r][c], 0)));
      }
    }
  }
};
#else
// R x C outputs, one 8-lane accumulator each (9 of 16 registers); each k
// step loads (and converts) every weight and activation vector once.
template <bool kHalf, int R = 3, int C = 3>
struct TileTiny {
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

  template <int NR, int NC>
  static void tile(int n, const uint8_t* x, size_t bx, const uint8_t* y, size_t by, float* s, size_t bs) {
    const T* xr[NR];
    const T* yc[NC];
    for (int r = 0; r < NR; ++r) xr[r] = reinterpret_cast<const T*>(x + r * bx);
    for (int c = 0; c < NC; ++c) yc[c] = reinterpret_cast<const T*>(y + c * by);
    __m256 acc[NR][NC];
    for (int r = 0; r < NR; ++r) {
      for (int c = 0; c < NC; ++c) acc[r][c] = _mm256_setzero_ps();
    }
    for (int k = 0; k < n; k += 8) {
      __m256 xv[NR];
      for (int r = 0; r < NR; ++r) xv[r] = load8(xr[r] + k);
      for (int c = 0; c < NC; ++c) {
        const __m256 yv = load8(yc[c] + k);
        for (int r = 0; r < NR; ++r) acc[r][c] = _mm256_fmadd_ps(xv[r], yv, acc[r][c]);
      }
    }
    for (int c = 0; c < NC; ++c) {
      for (int r = 0; r < NR; ++r) s[c * bs + r] = hsum(acc[r][c]);
    }
  }
};
#endif

template <class K, int NC>
inline void tiny_rows(int n, const uint8_t* x, size_t bx, int nr, const uint8_t* y, size_t by, float* s, size_t bs) {
  constexpr int R = K::kRows;
  int r = 0;
  for (; r + R <= nr; r += R) K::template tile<R, NC>(n, x + r * bx, bx, y, by, s + r, bs);
  for (; r < nr; ++r) K::template tile<1, NC>(n, x + r * bx, bx, y, by, s + r, bs);
}

template <class K, int NC>
inline void tiny_cols(int cc, int n, const uint8_t* x, size_t bx, int nr, const uint8_t* y, size_t by, float* s,
                      size_t bs) {
  if (cc == NC) {
    tiny_rows<K, NC>(n, x, bx, nr, y, by, s, bs);
    return;
  }
  if constexpr (NC > 1) tiny_cols<K, NC - 1>(cc, n, x, bx, nr, y, by, s, bs);
}

template <bool kHalf, GgmlType kType>
void gemm_tiny(int n, const void* vx, size_t bx, int nr, const void* vy, size_t by, int nc, float* s, size_t bs) {
  const auto* x = static_cast<const uint8_t*>(vx);
  const auto* y = static_cast<const uint8_t*>(vy);
  if (nc == 1 || n % kTinyK != 0) {  // where ggml calls vec_dot
    for (int c = 0; c < nc; ++c) one_column_by_vec_dot<kType>(n, x, bx, nr, y + c * by, s + c * bs);
    return;
  }
  using K = TileTiny<kHalf>;
  for (int c0 = 0; c0 < nc; c0 += K::kCols) {
    const int cc = std::min(K::kCols, nc - c0);
    tiny_cols<K, K::kCols>(cc, n, x, bx, nr, y + c0 * by, by, s + c0 * bs, bs);
  }
}

// ---------------------------------------------------------------- Q5_K in vec_dot's order

// libllama computes every Q5_K output with ggml's x86 vec_dot (no tinyBLAS
// or repacking for Q5_K), in prefill too. This tile keeps that float order
// per output: an 8-lane accumulator per (row, column) taking one FMA of
// d * dy per super-block (lane k: the scaled 4-byte groups k of the 8
// sub-blocks, exact integers, as in vec_dot), a float per output for the
// mins term (exact int32 per super-block, one FMA), and hsum(acc) + mins at
// the end. Each weight super-block is unpacked once for up to kCols
// columns. The activations (scales, sub-block sums, quants in the layout
// below) are prepared per pass of kKPass super-blocks; each row's
// accumulators are carried across passes in a Q5KState, so the FMA chains
// run over all of k unchanged.
struct Q5KState {
  alignas(32) float acc[8][8];  // [column][lane]
  alignas(32) float accm[8];    // [column]
};

// Sub-blocks 2j and 2j + 1 (the low and high nibbles of the j-th 32 bytes of
// qs) are multiplied together: their 16-bit words are interleaved, so one
// maddubs pair covers bytes 4L, 4L + 1 of both and another 4L + 2, 4L + 3;
// summed in int16 (|sum| <= 4 * 31 * 128) they give lane L's products of
// both sub-blocks, and one multiply-add with the scale pair (s_2j, s_2j+1)
// adds exactly vec_dot's integers to lane L. The activations are laid out
// the same way once per pass (Q5KPrep::yp), shared by every weight row.
inline void interleave_words(__m256i lo, __m256i hi, __m256i& v1, __m256i& v2) {
  v1 = _mm256_blend_epi16(lo, _mm256_slli_epi32(hi, 16), 0xAA);  // dword L: lo word 2L, hi word 2L
  v2 = _mm256_blend_epi16(_mm256_srli_epi32(lo, 16), hi, 0xAA);  // dword L: lo word 2L + 1, hi word 2L + 1
}

// Scales (i16, both lanes) and mins (i16 x 8) of a Q5_K block, built in
// registers (as ggml does): a stack copy read back as one vector misses
// store forwarding, and its 4K aliasing with the weight loads stalled the
// tile in some address layouts.
inline void q5k_scales_mins(const uint8_t packed[12], __m256i& scales, __m128i& mins) {
  uint32_t a, b, c;
  std::memcpy(&a, packed, 4);
  std::memcpy(&b, packed + 4, 4);
  std::memcpy(&c, packed + 8, 4);
  const __m128i w = _mm_set_epi32(
      static_cast<int>(((c >> 4) & 0x0f0f0f0fu) | (((b >> 6) & 0x03030303u) << 4)), static_cast<int>(b & 0x3f3f3f3fu),
      static_cast<int>((c & 0x0f0f0f0fu) | (((a >> 6) & 0x03030303u) << 4)), static_cast<int>(a & 0x3f3f3f3fu));
  const __m256i w16 = _mm256_cvtepu8_epi16(w);
  scales = _mm256_permute2x128_si256(w16, w16, 0x00);
  mins = _mm256_extracti128_si256(w16, 1);
}

struct Q5KPrep {
  KPrep k;                                      // activation scales, sub-block sums
  alignas(32) uint8_t yp[kKPass][8][4][2][32];  // [block][column][j]: interleaved sub-blocks 2j, 2j + 1
};

inline void q5k_prepare(Q5KPrep& p, const uint8_t* y, size_t by, int nc, int b0, int nb) {
  k_prepare(p.k, y, by, nc, b0, nb, true);
  for (int i = 0; i < nb; ++i) {
    for (int c = 0; c < nc; ++c) {
      const BlockQ8_K& b = reinterpret_cast<const BlockQ8_K*>(y + c * by)[b0 + i];
      for (int j = 0; j < 4; ++j) {
        __m256i v1, v2;
        interleave_words(ld(b.qs + 64 * j), ld(b.qs + 64 * j + 32), v1, v2);
        _mm256_store_si256(reinterpret_cast<__m256i*>(p.yp[i][c][j][0]), v1);
        _mm256_store_si256(reinterpret_cast<__m256i*>(p.yp[i][c][j][1]), v2);
      }
    }
  }
}

template <int NC>
inline void q5k_pass(const Q5KPrep& p, const uint8_t* x, int b0, int nb, Q5KState& st) {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i one = _mm256_set1_epi8(1);
  __m256 acc[NC];
  __m256 accm;
  if (b0 == 0) {  // the first pass starts the chains
    for (int c = 0; c < NC; ++c) acc[c] = _mm256_setzero_ps();
    accm = _mm256_setzero_ps();
  } else {
    for (int c = 0; c < NC; ++c) acc[c] = _mm256_load_ps(st.acc[c]);
    accm = _mm256_load_ps(st.accm);
  }
  for (int i = 0; i < nb; ++i) {
    const BlockQ5_K& xb = reinterpret_cast<const BlockQ5_K*>(x)[b0 + i];
    __m256i sc;
    __m128i mn;
    q5k_scales_mins(xb.scales, sc, mn);
    const __m256i qh = ld(xb.qh);
    __m256i sumi[NC];
    for (int c = 0; c < NC; ++c) sumi[c] = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {  // 64 elements: low nibbles (sub-block 2j), high (2j + 1)
      const __m256i bits = ld(xb.qs + 32 * j);
      const __m256i lo = _mm256_or_si256(_mm256_and_si256(bits, m4),
                                         _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * j), one), 4));
      const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(bits, 4), m4),
                                         _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * j + 1), one), 4));
      __m256i v1, v2;
      interleave_words(lo, hi, v1, v2);
      const __m256i scale_pair = _mm256_permutevar8x32_epi32(sc, _mm256_set1_epi32(j));  // (s_2j, s_2j+1)
      for (int c = 0; c < NC; ++c) {
        const __m256i* yp = reinterpret_cast<const __m256i*>(p.yp[i][c][j]);
        const __m256i pr = _mm256_add_epi16(_mm256_maddubs_epi16(v1, _mm256_load_si256(yp)),
                                            _mm256_maddubs_epi16(v2, _mm256_load_si256(yp + 1)));
        sumi[c] = dpwssd(sumi[c], pr, scale_pair);
      }
    }
    // vec_dot's d = dy * d_x and dmin = -dy * dmin_x, column by column
    const __m256 dy = _mm256_load_ps(p.k.dy[i]);
    const __m256 d = _mm256_mul_ps(bcast_half(xb.d), dy);
    for (int c = 0; c < NC; ++c) {
      acc[c] = _mm256_fmadd_ps(_mm256_permutevar8x32_ps(d, _mm256_set1_epi32(c)), _mm256_cvtepi32_ps(sumi[c]), acc[c]);
    }
    // M over the columns (exact): sum_jp madd(bsum pairs jp, (min 2jp, min 2jp + 1))
    const __m256i mn32 = _mm256_broadcastsi128_si256(mn);
    __m256i m = _mm256_setzero_si256();
    for (int jp = 0; jp < 4; ++jp) {
      m = dpwssd(m, ld(p.k.bsp[i][jp]), _mm256_permutevar8x32_epi32(mn32, _mm256_set1_epi32(jp)));
    }
    const __m256 dmin = _mm256_mul_ps(_mm256_set1_ps(-_cvtsh_ss(xb.dmin)), dy);
    accm = _mm256_fmadd_ps(dmin, _mm256_cvtepi32_ps(m), accm);
  }
  for (int c = 0; c < NC; ++c) _mm256_store_ps(st.acc[c], acc[c]);
  _mm256_store_ps(st.accm, accm);
}

template <int NC>
inline void q5k_pass_cols(int cc, const Q5KPrep& p, const uint8_t* x, int b0, int nb, Q5KState& st) {
  if (cc == NC) {
    q5k_pass<NC>(p, x, b0, nb, st);
    return;
  }
  if constexpr (NC > 2) q5k_pass_cols<NC - 1>(cc, p, x, b0, nb, st);
}

inline void gemm_q5_K(int n, const void* vx, size_t bx, int nr, const void* vy, size_t by, int nc, float* s,
                      size_t bs) {
  constexpr int kCols = kWide ? 8 : 4;  // registers: 2 * kCols accumulators + the unpacked weights
  constexpr int kRowGroup = 16;         // rows whose states are carried across the passes
  const auto* x = static_cast<const uint8_t*>(vx);
  const auto* y = static_cast<const uint8_t*>(vy);
  const int nb_all = n / 256;
  Q5KPrep prep;
  Q5KState st[kRowGroup];
  for (int c0 = 0; c0 < nc; c0 += kCols) {
    const int cc = std::min(kCols, nc - c0);
    const uint8_t* yc = y + c0 * by;
    if (cc == 1) {  // the same order; vec_dot has less overhead for one column
      one_column_by_vec_dot<GgmlType::Q5_K>(n, x, bx, nr, yc, s + c0 * bs);
      continue;
    }
    for (int r0 = 0; r0 < nr; r0 += kRowGroup) {
      const int rn = std::min(kRowGroup, nr - r0);
      for (int b0 = 0; b0 < nb_all; b0 += kKPass) {
        const int nb = std::min(kKPass, nb_all - b0);
        q5k_prepare(prep, yc, by, cc, b0, nb);
        for (int r = 0; r < rn; ++r) q5k_pass_cols<kCols>(cc, prep, x + (r0 + r) * bx, b0, nb, st[r]);
      }
      for (int r = 0; r < rn; ++r) {
        for (int c = 0; c < cc; ++c) s[(c0 + c) * bs + r0 + r] = hsum(_mm256_load_ps(st[r].acc[c])) + st[r].accm[c];
      }
    }
  }
}

inline void set_gemm(CpuKernels& k, GgmlType w, GemmFn fn) { k.gemm[static_cast<uint32_t>(w)] = fn; }

}  // namespace gemm

// The tiles this header provides; the caller's table keeps the rest.
inline void fill_x86_gemm(CpuKernels& k) {
  using namespace gemm;
  set_gemm(k, GgmlType::Q4_K, gemm_prepared<TileQ45K<false>, GgmlType::Q4_K>);
  set_gemm(k, GgmlType::Q5_K, gemm_q5_K);  // vec_dot's order
  k.gemm_is_vec_dot[static_cast<uint32_t>(GgmlType::Q5_K)] = true;
  // Q6_K has no tile here: libllama sums it in vec_dot's order in decode and
  // prefill, which the vec_dot loop reproduces bit for bit. Q8_0's tile, in
  // ggml's per-output order, is simd_gemm_q8_0 in kernels_x86_simd.h, and so are
  // Q5_0's (tinyBLAS_Q0) and Q4_1 / Q5_1's (vec_dot): simd_gemm_chain.
  set_gemm(k, GgmlType::IQ4_XS, gemm_prepared<TileIq4Xs, GgmlType::IQ4_XS>);
  set_gemm(k, GgmlType::Q4_0, gemm_prepared<TileLegacy<WQ4_0>, GgmlType::Q4_0>);
  set_gemm(k, GgmlType::IQ4_NL, gemm_prepared<TileLegacy<WIq4Nl>, GgmlType::IQ4_NL>);
  set_gemm(k, GgmlType::MXFP4, gemm_prepared<TileLegacy<WMxfp4>, GgmlType::MXFP4>);
  set_gemm(k, GgmlType::F32, gemm_tiny<false, GgmlType::F32>);
  set_gemm(k, GgmlType::F16, gemm_tiny<true, GgmlType::F16>);
}

#undef STRIX_GEMM_VNNI

}  // namespace
}  // namespace strix::cpu
