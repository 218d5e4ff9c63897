// x86 GEMM tiles (CpuKernels::gemm) for the types libllama's CPU backend
// repacks (backend/cpu/repack.h): Q4_0 and IQ4_NL against Q8_0, Q4_K (and,
// at the AVX-512 level, Q2_K) against Q8_K, in the float order of its x86 gemm / gemv kernels, so that Strix's
// logits equal libllama's bit for bit in prefill and decode. Compiled twice
// like gemm_x86_simd.h (kernels_avx2.cpp, kernels_avx512.cpp);
// fill_x86_repack() replaces those types' gemm entries.
//
// libllama's order per output (weight row r, activation row c), with exact
// int32 block sums, dw / dmin the weight block's f16 scales and da the
// activation block's scale, accumulators starting at 0:
//   Q4_0, IQ4_NL, gemv and gemm alike: per block of 32, in order,
//     acc = fma(float(q . y), dw * da, acc).
//   Q4_K gemv (one activation row): per super-block, with S the sum over its
//     8 sub-blocks of scale_j * (q . y)_j and M that of min_j * sum(y)_j,
//     acc = fma(float(S), dw * da, acc), accm = fma(float(M), dmin * da, accm);
//     the result is acc - accm.
//   Q4_K gemm (groups of 4 activation rows): the same with one fma pair per
//     two sub-blocks (64 elements), four per super-block.
// A 2-D product of n activation rows takes gemm for rows [0, n - n % 4) and
// gemv for the rest. matmul_rows hands a GemmFn blocks of 64 columns from
// column 0, so a call's first nc - nc % 4 columns are gemm columns and its
// last nc % 4 (non-zero only in the product's last block) are gemv columns.
// The 4-row activation quantizers (quantize_mat_q8_0_4x8 / q8_K_4x8) give the
// row quantizers' values; for Q8_K up to the sign of a super-block whose
// largest |x| occurs with both signs, which flips d and every q (and so no
// product), so Strix keeps its row quantizers.
//
// Strix computes from the blocks in place (no repacked copy kept): Q4_0 /
// IQ4_NL gemv columns in tiles of 8 weight rows x 1 activation row (lanes =
// rows, one horizontal reduction per block), Q4_K gemv one row at a time; Q4_0 / IQ4_NL gemm columns in tiles of one
// weight row x 4..8 activation rows (lanes = columns, reduced per block);
// Q4_K gemm columns against 8 weight rows (16 at the AVX-512 level, 512-bit
// lanes: 1.5-1.8x the 8-row tile at 16-64 columns, which is batched decode in
// the server) transposed per pass into libllama's own arrangement (lanes =
// rows, no reduction), which measured faster than the column tiles' four
// reductions per super-block. The weights of the next pass or the next call's
// rows are prefetched while the columns compute.
#pragma once

#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
#error "gemm_repack_x86.h needs -mavx2 -mfma -mf16c"
#endif

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "backend/cpu/kernel_blocks.h"
#include "backend/cpu/kernels.h"
#include "quant/iq_grids.h"

namespace strix::cpu {
namespace {
namespace repack {

using quant::BlockQ4_0;
using quant::BlockQ4_K;
using quant::BlockQ8_0;
using quant::BlockQ8_K;

inline __m256i load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// acc + sums of four u8 x s8 products per int32 lane (u <= 127 here, so the
// maddubs pairs stay within int16: exact either way).
inline __m256i dot_u8s8(__m256i acc, __m256i u, __m256i s) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  return _mm256_dpbusd_epi32(acc, u, s);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
#endif
}

// acc + sums of two int16 x int16 products per int32 lane.
inline __m256i dot_i16(__m256i acc, __m256i a, __m256i b) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  return _mm256_dpwssd_epi32(acc, a, b);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
#endif
}

// Lane i = sum of the 8 lanes of v[i] for i < N, 0 for the others.
template <int N>
inline __m256i reduce8(const __m256i v[8]) {
  const __m256i z = _mm256_setzero_si256();
  auto at = [&](int i) { return i < N ? v[i] : z; };
  const __m256i q0 = _mm256_hadd_epi32(_mm256_hadd_epi32(at(0), at(1)), _mm256_hadd_epi32(at(2), at(3)));
  if constexpr (N <= 4) {
    return _mm256_add_epi32(_mm256_permute2x128_si256(q0, z, 0x20), _mm256_permute2x128_si256(q0, z, 0x31));
  } else {
    const __m256i q1 = _mm256_hadd_epi32(_mm256_hadd_epi32(at(4), at(5)), _mm256_hadd_epi32(at(6), at(7)));
    return _mm256_add_epi32(_mm256_permute2x128_si256(q0, q1, 0x20), _mm256_permute2x128_si256(q0, q1, 0x31));
  }
}

// Eight f16 scales -> floats. Built from the values (8 narrow stores read back
// as one vector would stall on store forwarding, once per block).
inline __m256 halves(const uint16_t h[8]) {
  return _mm256_cvtph_ps(_mm_set_epi16(
      static_cast<int16_t>(h[7]), static_cast<int16_t>(h[6]), static_cast<int16_t>(h[5]), static_cast<int16_t>(h[4]),
      static_cast<int16_t>(h[3]), static_cast<int16_t>(h[2]), static_cast<int16_t>(h[1]), static_cast<int16_t>(h[0])));
}

// ---------------------------------------------------------------- Q4_0, IQ4_NL

// The 4-bit codes of a block, element j in byte j.
inline __m256i codes(const uint8_t qs[16]) {
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i m = _mm_set1_epi8(0x0f);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m), _mm_and_si128(q, m));
}

// A block's 32 levels, element j in byte j: signed (operator()) and offset
// by kOffset into [0, 255] (biased(); the dot then subtracts kOffset * sum(y)).
struct LevelsQ4_0 {
  using Block = BlockQ4_0;
  static constexpr int kOffset = 8;
  __m256i biased(const Block& b) const { return codes(b.qs); }
  __m256i operator()(const Block& b) const { return _mm256_sub_epi8(codes(b.qs), _mm256_set1_epi8(8)); }
};

struct LevelsIq4Nl {
  using Block = BlockIq4Nl;
  static constexpr int kOffset = 128;
  __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(quant::kvalues_iq4nl)));
  __m256i biased_table = _mm256_add_epi8(table, _mm256_set1_epi8(static_cast<char>(0x80)));
  __m256i biased(const Block& b) const { return _mm256_shuffle_epi8(biased_table, codes(b.qs)); }
  __m256i operator()(const Block& b) const { return _mm256_shuffle_epi8(table, codes(b.qs)); }
};

// Exact int32 partial sums of w . y (|w| <= 127, y in [-127, 127]).
inline __m256i dot_levels(__m256i w, __m256i y) {
  return dot_u8s8(_mm256_setzero_si256(), _mm256_sign_epi8(w, w), _mm256_sign_epi8(y, w));
}

constexpr int kLegacyPass = 64;  // blocks per pass: 8 activation rows of it (17 KB) stay in L1

struct LegacyPrep {
  alignas(32) float dy[kLegacyPass][8];  // activation scales, 0 for absent columns
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  // [block][column]: -kOffset * the sums of four y (per lane), the start of
  // one dpbusd of the biased levels
  alignas(32) int32_t base[kLegacyPass][8][8];
#endif
};

// One weight row x NC activation rows over blocks [b0, b0 + nb): continues
// the per-column accumulators acc (8 floats).
template <class L, int NC>
inline void legacy_row(const L& levels, const typename L::Block* x, const uint8_t* y, size_t by, int b0, int nb,
                       const LegacyPrep& p, float* acc_io) {
  const BlockQ8_0* yc[NC];
  for (int c = 0; c < NC; ++c) yc[c] = reinterpret_cast<const BlockQ8_0*>(y + c * by) + b0;
  __m256 acc = _mm256_load_ps(acc_io);
  for (int i = 0; i < nb; ++i) {
    const typename L::Block& xb = x[b0 + i];
    __m256i v[8];
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    const __m256i wb = levels.biased(xb);
    for (int c = 0; c < NC; ++c) {
      v[c] =
          _mm256_dpbusd_epi32(_mm256_load_si256(reinterpret_cast<const __m256i*>(p.base[i][c])), wb, load(yc[c][i].qs));
    }
#else
    const __m256i w = levels(xb);
    const __m256i aw = _mm256_sign_epi8(w, w);
    for (int c = 0; c < NC; ++c) v[c] = dot_u8s8(_mm256_setzero_si256(), aw, _mm256_sign_epi8(load(yc[c][i].qs), w));
#endif
    const __m256 d = _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(xb.d)), _mm256_load_ps(p.dy[i]));
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(reduce8<NC>(v)), d, acc);
  }
  _mm256_store_ps(acc_io, acc);
}

// R weight rows (bx bytes apart) x one activation row: s[r] for r < R.
template <class L, int R>
inline void legacy_rows(const L& levels, const uint8_t* x, size_t bx, const BlockQ8_0* y, int nb, float* s) {
  using Block = typename L::Block;
  __m256 acc = _mm256_setzero_ps();
  uint16_t dh[8] = {};
  for (int b = 0; b < nb; ++b) {
    const __m256i yv = load(y[b].qs);
    const __m256 da = _mm256_set1_ps(_cvtsh_ss(y[b].d));
    __m256i v[8];
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    // u8 x s8 in one dpbusd: biased levels, started from -kOffset * (sums of y)
    const __m256i base = _mm256_sub_epi32(
        _mm256_setzero_si256(),
        _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(static_cast<char>(L::kOffset)), yv));
    for (int r = 0; r < R; ++r) {
      const Block& xb = reinterpret_cast<const Block*>(x + r * bx)[b];
      dh[r] = xb.d;
      v[r] = _mm256_dpbusd_epi32(base, levels.biased(xb), yv);
    }
#else
    for (int r = 0; r < R; ++r) {
      const Block& xb = reinterpret_cast<const Block*>(x + r * bx)[b];
      dh[r] = xb.d;
      v[r] = dot_levels(levels(xb), yv);
    }
#endif
    const __m256 d = _mm256_mul_ps(halves(dh), da);
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(reduce8<R>(v)), d, acc);
  }
  alignas(32) float t[8];
  _mm256_store_ps(t, acc);
  for (int r = 0; r < R; ++r) s[r] = t[r];
}

// Any nr weight rows x one activation row, 8 rows at a time.
template <class L>
inline void legacy_gemv(const L& levels, int nb, const uint8_t* x, size_t bx, int nr, const uint8_t* y, float* s) {
  const auto* yb = reinterpret_cast<const BlockQ8_0*>(y);
  int r = 0;
  for (; r + 8 <= nr; r += 8) legacy_rows<L, 8>(levels, x + r * bx, bx, yb, nb, s + r);
  switch (nr - r) {
    case 7:
      legacy_rows<L, 7>(levels, x + r * bx, bx, yb, nb, s + r);
      break;
    case 6:
      legacy_rows<L, 6>(levels, x + r * bx, bx, yb, nb, s + r);
      break;
    case 5:
      legacy_rows<L, 5>(levels, x + r * bx, bx, yb, nb, s + r);
      break;
    case 4:
      legacy_rows<L, 4>(levels, x + r * bx, bx, yb, nb, s + r);
      break;
    case 3:
      legacy_rows<L, 3>(levels, x + r * bx, bx, yb, nb, s + r);
      break;
    case 2:
      legacy_rows<L, 2>(levels, x + r * bx, bx, yb, nb, s + r);
      break;
    case 1:
      legacy_rows<L, 1>(levels, x + r * bx, bx, yb, nb, s + r);
      break;
    default:
      break;
  }
}

// nr weight rows x NC (4..8) activation rows, in passes of kLegacyPass blocks.
template <class L, int NC>
inline void legacy_cols(const L& levels, int nb_all, const uint8_t* x, size_t bx, int nr, const uint8_t* y, size_t by,
                        float* s, size_t bs) {
  LegacyPrep p;
  constexpr int kRows = 16;
  alignas(32) float acc[kRows][8];
  for (int r0 = 0; r0 < nr; r0 += kRows) {
    const int rr = std::min(kRows, nr - r0);
    for (int r = 0; r < rr; ++r) _mm256_store_ps(acc[r], _mm256_setzero_ps());
    for (int b0 = 0; b0 < nb_all; b0 += kLegacyPass) {
      const int nb = std::min(kLegacyPass, nb_all - b0);
      for (int i = 0; i < nb; ++i) {
        for (int c = 0; c < 8; ++c) {
          p.dy[i][c] = c < NC ? _cvtsh_ss(reinterpret_cast<const BlockQ8_0*>(y + c * by)[b0 + i].d) : 0.0f;
        }
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
        for (int c = 0; c < NC; ++c) {
          const __m256i yv = load(reinterpret_cast<const BlockQ8_0*>(y + c * by)[b0 + i].qs);
          const __m256i sums =
              _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(static_cast<char>(L::kOffset)), yv);
          _mm256_store_si256(reinterpret_cast<__m256i*>(p.base[i][c]), _mm256_sub_epi32(_mm256_setzero_si256(), sums));
        }
#endif
      }
      for (int r = 0; r < rr; ++r) {
        const auto* xr = reinterpret_cast<const typename L::Block*>(x + (r0 + r) * bx);
        legacy_row<L, NC>(levels, xr, y, by, b0, nb, p, acc[r]);
      }
    }
    for (int c = 0; c < NC; ++c) {
      for (int r = 0; r < rr; ++r) s[c * bs + r0 + r] = acc[r][c];
    }
  }
}

// Q4_0 / IQ4_NL: the same order for every column, so chunks of 4..8 columns
// take the column tiles and the rest (fewer than 4) the row tiles.
template <class L>
void gemm_legacy(int n, const void* vx, size_t bx, int nr, const void* vy, size_t by, int nc, float* s, size_t bs) {
  const L levels;
  const auto* x = static_cast<const uint8_t*>(vx);
  const auto* y = static_cast<const uint8_t*>(vy);
  const int nb = n / 32;
  int c0 = 0;
  for (; c0 < nc; c0 += 8) {
    const int cc = std::min(8, nc - c0);
    const uint8_t* yc = y + c0 * by;
    float* sc = s + c0 * bs;
    switch (cc) {
      case 8:
        legacy_cols<L, 8>(levels, nb, x, bx, nr, yc, by, sc, bs);
        break;
      case 7:
        legacy_cols<L, 7>(levels, nb, x, bx, nr, yc, by, sc, bs);
        break;
      case 6:
        legacy_cols<L, 6>(levels, nb, x, bx, nr, yc, by, sc, bs);
        break;
      case 5:
        legacy_cols<L, 5>(levels, nb, x, bx, nr, yc, by, sc, bs);
        break;
      case 4:
        legacy_cols<L, 4>(levels, nb, x, bx, nr, yc, by, sc, bs);
        break;
      default:
        for (int c = 0; c < cc; ++c) legacy_gemv(levels, nb, x, bx, nr, yc + c * by, sc + c * bs);
        break;
    }
  }
}

// ------------------------------------------------------------------------ Q4_K

constexpr int kKPass = 8;  // super-blocks per pass: the transposed quants of 8 rows (16 KB) stay in L1

// The 4-bit quants of sub-blocks 2k (lo) and 2k + 1 (hi), one per byte.
inline void k_quants(const BlockQ4_K& b, int k, __m256i& lo, __m256i& hi) {
  const __m256i q = load(b.qs + 32 * k);
  const __m256i m = _mm256_set1_epi8(0x0f);
  lo = _mm256_and_si256(q, m);
  hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m);
}

// The 8 scales (bytes 0..7) and 8 mins (bytes 8..15) of a Q4_K block, in
// both 128-bit lanes (unpack_k_scales in registers).
inline __m256i k_scales_mins(const uint8_t packed[12]) {
  uint32_t a, b, c;
  std::memcpy(&a, packed, 4);
  std::memcpy(&b, packed + 4, 4);
  std::memcpy(&c, packed + 8, 4);
  const __m128i v = _mm_set_epi32(
      static_cast<int>(((c >> 4) & 0x0f0f0f0fu) | (((b >> 6) & 0x03030303u) << 4)), static_cast<int>(b & 0x3f3f3f3fu),
      static_cast<int>((c & 0x0f0f0f0fu) | (((a >> 6) & 0x03030303u) << 4)), static_cast<int>(a & 0x3f3f3f3fu));
  return _mm256_broadcastsi128_si256(v);
}

// Byte j of sm (j < 8) as an int16 in every 16-bit lane.
template <int J>
inline __m256i k_scale(__m256i sm) {
  return _mm256_shuffle_epi8(sm, _mm256_set1_epi16(static_cast<int16_t>(0x8000 | J)));
}

// One weight row in libllama's Q4_K gemv order: per super-block the integer
// sums S and M reduced to scalars (exact), then acc = fma(float(S), dw * da,
// acc) and accm = fma(float(M), dmin * da, accm); the result is acc - accm.
// Rows are done one after another (measured 1.8x faster in decode here than
// 8 interleaved rows with lanes = rows).
inline float q4k_row(const BlockQ4_K* xr, const BlockQ8_K* y, int nb) {
  float acc = 0.0f, accm = 0.0f;
  for (int b = 0; b < nb; ++b) {
    const BlockQ8_K& a = y[b];
    const BlockQ4_K& xb = xr[b];
    const __m256i bs16 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.bsums));
    const __m128i bsum = _mm_hadd_epi16(_mm256_castsi256_si128(bs16), _mm256_extracti128_si256(bs16, 1));
    const __m256i sm = k_scales_mins(xb.scales);
    __m256i lo, hi;
    k_quants(xb, 0, lo, hi);
    __m256i v0 = dot_i16(_mm256_setzero_si256(), _mm256_maddubs_epi16(lo, load(a.qs)), k_scale<0>(sm));
    __m256i v1 = dot_i16(_mm256_setzero_si256(), _mm256_maddubs_epi16(hi, load(a.qs + 32)), k_scale<1>(sm));
    k_quants(xb, 1, lo, hi);
    v0 = dot_i16(v0, _mm256_maddubs_epi16(lo, load(a.qs + 64)), k_scale<2>(sm));
    v1 = dot_i16(v1, _mm256_maddubs_epi16(hi, load(a.qs + 96)), k_scale<3>(sm));
    k_quants(xb, 2, lo, hi);
    v0 = dot_i16(v0, _mm256_maddubs_epi16(lo, load(a.qs + 128)), k_scale<4>(sm));
    v1 = dot_i16(v1, _mm256_maddubs_epi16(hi, load(a.qs + 160)), k_scale<5>(sm));
    k_quants(xb, 3, lo, hi);
    v0 = dot_i16(v0, _mm256_maddubs_epi16(lo, load(a.qs + 192)), k_scale<6>(sm));
    v1 = dot_i16(v1, _mm256_maddubs_epi16(hi, load(a.qs + 224)), k_scale<7>(sm));
    const __m256i v = _mm256_add_epi32(v0, v1);
    const __m128i mins = _mm_cvtepu8_epi16(_mm_srli_si128(_mm256_castsi256_si128(sm), 8));
    __m128i m = _mm_madd_epi16(mins, bsum);
    __m128i t = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, _MM_SHUFFLE(1, 0, 3, 2)));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, _MM_SHUFFLE(2, 3, 0, 1)));
    m = _mm_add_epi32(m, _mm_shuffle_epi32(m, _MM_SHUFFLE(1, 0, 3, 2)));
    m = _mm_add_epi32(m, _mm_shuffle_epi32(m, _MM_SHUFFLE(2, 3, 0, 1)));
    const float dw = _cvtsh_ss(xb.d) * a.d;
    const float dm = _cvtsh_ss(xb.dmin) * a.d;
    acc = std::fma(static_cast<float>(_mm_cvtsi128_si32(t)), dw, acc);
    accm = std::fma(static_cast<float>(_mm_cvtsi128_si32(m)), dm, accm);
  }
  return acc - accm;
}

inline void q4k_gemv(int nb, const uint8_t* x, size_t bx, int nr, const uint8_t* y, float* s) {
  const auto* yb = reinterpret_cast<const BlockQ8_K*>(y);
  for (int r = 0; r < nr; ++r) s[r] = q4k_row(reinterpret_cast<const BlockQ4_K*>(x + r * bx), yb, nb);
}

// Gemm order with lanes = 8 weight rows, libllama's own arrangement, for
// calls with many gemm columns: per group of 8 weight rows and pass of kKPass
// super-blocks, the quants are transposed once into vectors of 4 consecutive
// elements of the 8 rows (what libllama's repacked layout holds); each column
// then takes one u8 x s8 dot per 4 elements against a broadcast of its own 4
// activations, and needs no horizontal reduction.
struct KRows {
  alignas(32) uint8_t q[kKPass][8][8][32];  // [super-block][sub-block][step e][4 * r + t]: q(r, 32 j + 4 e + t)
  alignas(32) int32_t sc[kKPass][8][8];     // [super-block][sub-block][row]: scale
  alignas(32) int32_t mn[kKPass][4][8];     // [super-block][pair k][row]: mins 2k, 2k + 1 as an int16 pair
  alignas(32) float d[kKPass][8];           // [super-block][row]
  alignas(32) float dmin[kKPass][8];
};

// v[r] = 8 words of row r -> v[e] = word e of rows 0..7.
inline void transpose8(__m256i v[8]) {
  const __m256i t0 = _mm256_unpacklo_epi32(v[0], v[1]), t1 = _mm256_unpackhi_epi32(v[0], v[1]);
  const __m256i t2 = _mm256_unpacklo_epi32(v[2], v[3]), t3 = _mm256_unpackhi_epi32(v[2], v[3]);
  const __m256i t4 = _mm256_unpacklo_epi32(v[4], v[5]), t5 = _mm256_unpackhi_epi32(v[4], v[5]);
  const __m256i t6 = _mm256_unpacklo_epi32(v[6], v[7]), t7 = _mm256_unpackhi_epi32(v[6], v[7]);
  const __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
  const __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
  const __m256i u4 = _mm256_unpacklo_epi64(t4, t6), u5 = _mm256_unpackhi_epi64(t4, t6);
  const __m256i u6 = _mm256_unpacklo_epi64(t5, t7), u7 = _mm256_unpackhi_epi64(t5, t7);
  v[0] = _mm256_permute2x128_si256(u0, u4, 0x20);
  v[1] = _mm256_permute2x128_si256(u1, u5, 0x20);
  v[2] = _mm256_permute2x128_si256(u2, u6, 0x20);
  v[3] = _mm256_permute2x128_si256(u3, u7, 0x20);
  v[4] = _mm256_permute2x128_si256(u0, u4, 0x31);
  v[5] = _mm256_permute2x128_si256(u1, u5, 0x31);
  v[6] = _mm256_permute2x128_si256(u2, u6, 0x31);
  v[7] = _mm256_permute2x128_si256(u3, u7, 0x31);
}

// Rows [0, rr) of a group (bx bytes apart), super-blocks [b0, b0 + nb); rows
// past rr are zero.
inline void k_rows_prepare(KRows& k, const uint8_t* x, size_t bx, int rr, int b0, int nb) {
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  for (int i = 0; i < nb; ++i) {
    const BlockQ4_K* xb[8];
    for (int r = 0; r < 8; ++r) {
      if (r >= rr) {
        for (int j = 0; j < 8; ++j) k.sc[i][j][r] = 0;
        for (int p = 0; p < 4; ++p) k.mn[i][p][r] = 0;
        k.d[i][r] = k.dmin[i][r] = 0.0f;
        xb[r] = nullptr;
        continue;
      }
      xb[r] = reinterpret_cast<const BlockQ4_K*>(x + r * bx) + b0 + i;
      uint8_t sm[16];
      unpack_k_scales(xb[r]->scales, sm);
      for (int j = 0; j < 8; ++j) k.sc[i][j][r] = sm[j];
      for (int p = 0; p < 4; ++p) k.mn[i][p][r] = static_cast<int32_t>(sm[8 + 2 * p] | (sm[9 + 2 * p] << 16));
      k.d[i][r] = _cvtsh_ss(xb[r]->d);
      k.dmin[i][r] = _cvtsh_ss(xb[r]->dmin);
    }
    for (int p = 0; p < 4; ++p) {
      __m256i lo[8], hi[8];
      for (int r = 0; r < 8; ++r) {
        const __m256i q = xb[r] ? load(xb[r]->qs + 32 * p) : _mm256_setzero_si256();
        lo[r] = _mm256_and_si256(q, m4);
        hi[r] = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
      }
      transpose8(lo);
      transpose8(hi);
      for (int e = 0; e < 8; ++e) {
        _mm256_store_si256(reinterpret_cast<__m256i*>(k.q[i][2 * p][e]), lo[e]);
        _mm256_store_si256(reinterpret_cast<__m256i*>(k.q[i][2 * p + 1][e]), hi[e]);
      }
    }
  }
}

inline __m256i bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// scale_j * (q . y)_j of sub-block j for the 8 rows (lanes), exact.
inline __m256i k_rows_sub(const KRows& k, int i, int j, const int8_t* y32) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  __m256i acc = _mm256_setzero_si256();
  for (int e = 0; e < 8; ++e) {
    acc = _mm256_dpbusd_epi32(acc, _mm256_load_si256(reinterpret_cast<const __m256i*>(k.q[i][j][e])),
                              bcast4(y32 + 4 * e));
  }
  return _mm256_mullo_epi32(acc, _mm256_load_si256(reinterpret_cast<const __m256i*>(k.sc[i][j])));
#else
  // 16 products of 15 * 127 per int16 lane stay within int16
  __m256i acc = _mm256_setzero_si256();
  for (int e = 0; e < 8; ++e) {
    acc = _mm256_add_epi16(acc, _mm256_maddubs_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(k.q[i][j][e])),
                                                     bcast4(y32 + 4 * e)));
  }
  const __m256i sc = _mm256_load_si256(reinterpret_cast<const __m256i*>(k.sc[i][j]));
  return _mm256_madd_epi16(acc, _mm256_or_si256(sc, _mm256_slli_epi32(sc, 16)));
#endif
}

// One column against the prepared group: continues acc / accm (lanes = rows).
// Gemm order (libllama's 4-column gemm): one fma per pair of sub-blocks.
// Gemv order: the whole super-block's integer sums S and M of each row first
// (exact), then acc = fma(float(S), d * da, acc) and accm = fma(float(M),
// dmin * da, accm), as q4k_row does for one row.
template <bool kGemvOrder>
inline void k_rows_column(const KRows& k, const BlockQ8_K* a, int nb, float* acc_io, float* accm_io) {
  __m256 acc = _mm256_load_ps(acc_io);
  __m256 accm = _mm256_load_ps(accm_io);
  for (int i = 0; i < nb; ++i) {
    const __m256 da = _mm256_set1_ps(a[i].d);
    const __m256 d = _mm256_mul_ps(_mm256_load_ps(k.d[i]), da);
    const __m256 dm = _mm256_mul_ps(_mm256_load_ps(k.dmin[i]), da);
    const __m256i bs16 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[i].bsums));
    const __m128i bsum = _mm_hadd_epi16(_mm256_castsi256_si128(bs16), _mm256_extracti128_si256(bs16, 1));
    const int8_t* yq = a[i].qs;
    __m256i isum_all = _mm256_setzero_si256(), msum_all = _mm256_setzero_si256();
    for (int p = 0; p < 4; ++p) {
      const __m256i isum =
          _mm256_add_epi32(k_rows_sub(k, i, 2 * p, yq + 64 * p), k_rows_sub(k, i, 2 * p + 1, yq + 64 * p + 32));
      // sums of sub-blocks 2p and 2p + 1 = int32 word p of bsum, in every lane
      const __m256i pair = _mm256_permutevar8x32_epi32(_mm256_castsi128_si256(bsum), _mm256_set1_epi32(p));
      const __m256i m = _mm256_madd_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(k.mn[i][p])), pair);
      if constexpr (kGemvOrder) {
        isum_all = _mm256_add_epi32(isum_all, isum);
        msum_all = _mm256_add_epi32(msum_all, m);
      } else {
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), d, acc);
        accm = _mm256_fmadd_ps(_mm256_cvtepi32_ps(m), dm, accm);
      }
    }
    if constexpr (kGemvOrder) {
      acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum_all), d, acc);
      accm = _mm256_fmadd_ps(_mm256_cvtepi32_ps(msum_all), dm, accm);
    }
  }
  _mm256_store_ps(acc_io, acc);
  _mm256_store_ps(accm_io, accm);
}

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
// The same arrangement for 16 weight rows in 512-bit lanes (AVX-512 level):
// half the instructions per product, and each lane's float operations are
// those of the 8-row version, so the sums are the same bit for bit.
struct KRows16 {
  alignas(64) uint8_t q[kKPass][8][8][64];  // [super-block][sub-block][step e][4 * r + t]
  alignas(64) int32_t sc[kKPass][8][16];
  alignas(64) int32_t mn[kKPass][4][16];
  alignas(64) float d[kKPass][16];
  alignas(64) float dmin[kKPass][16];
};

// v[r] byte c -> v[c] byte r.
inline void transpose16x16_u8(__m128i v[16]) {
  __m128i a[16], b[16];
  for (int i = 0; i < 8; ++i) {
    a[i] = _mm_unpacklo_epi8(v[2 * i], v[2 * i + 1]);
    a[i + 8] = _mm_unpackhi_epi8(v[2 * i], v[2 * i + 1]);
  }
  for (int h = 0; h < 2; ++h) {
    for (int i = 0; i < 4; ++i) {
      b[8 * h + i] = _mm_unpacklo_epi16(a[8 * h + 2 * i], a[8 * h + 2 * i + 1]);
      b[8 * h + i + 4] = _mm_unpackhi_epi16(a[8 * h + 2 * i], a[8 * h + 2 * i + 1]);
    }
  }
  for (int q = 0; q < 4; ++q) {
    for (int i = 0; i < 2; ++i) {
      a[4 * q + i] = _mm_unpacklo_epi32(b[4 * q + 2 * i], b[4 * q + 2 * i + 1]);
      a[4 * q + i + 2] = _mm_unpackhi_epi32(b[4 * q + 2 * i], b[4 * q + 2 * i + 1]);
    }
  }
  for (int o = 0; o < 8; ++o) {
    b[2 * o] = _mm_unpacklo_epi64(a[2 * o], a[2 * o + 1]);
    b[2 * o + 1] = _mm_unpackhi_epi64(a[2 * o], a[2 * o + 1]);
  }
  for (int i = 0; i < 16; ++i) v[i] = b[i];
}

// Rows [0, 16) of a group, super-blocks [b0, b0 + nb).
inline void k_rows16_prepare(KRows16& k, const uint8_t* x, size_t bx, int b0, int nb) {
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  for (int i = 0; i < nb; ++i) {
    const BlockQ4_K* xb[16];
    __m128i t[16];  // row r: its 8 scales and 8 mins
    alignas(32) uint16_t dh[16], mh[16];
    for (int r = 0; r < 16; ++r) {
      xb[r] = reinterpret_cast<const BlockQ4_K*>(x + r * bx) + b0 + i;
      t[r] = _mm256_castsi256_si128(k_scales_mins(xb[r]->scales));
      dh[r] = xb[r]->d;
      mh[r] = xb[r]->dmin;
    }
    // exact f16 -> f32, as _cvtsh_ss
    _mm512_store_ps(k.d[i], _mm512_maskz_cvtph_ps(0xFFFF, _mm256_load_si256(reinterpret_cast<const __m256i*>(dh))));
    _mm512_store_ps(k.dmin[i], _mm512_maskz_cvtph_ps(0xFFFF, _mm256_load_si256(reinterpret_cast<const __m256i*>(mh))));
    // 16 x 16 byte transpose: t[j] = value j (scale 0..7, min 0..7) of rows 0..15
    transpose16x16_u8(t);
    for (int j = 0; j < 8; ++j) _mm512_store_si512(k.sc[i][j], _mm512_maskz_cvtepu8_epi32(0xFFFF, t[j]));
    for (int p = 0; p < 4; ++p) {
      const __m512i lo = _mm512_maskz_cvtepu8_epi32(0xFFFF, t[8 + 2 * p]);
      const __m512i hi = _mm512_maskz_cvtepu8_epi32(0xFFFF, t[9 + 2 * p]);
      _mm512_store_si512(k.mn[i][p], _mm512_or_si512(lo, _mm512_maskz_slli_epi32(0xFFFF, hi, 16)));
    }
    for (int half = 0; half < 2; ++half) {
      for (int p = 0; p < 4; ++p) {
        __m256i lo[8], hi[8];
        for (int r = 0; r < 8; ++r) {
          const __m256i q = load(xb[8 * half + r]->qs + 32 * p);
          lo[r] = _mm256_and_si256(q, m4);
          hi[r] = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
        }
        transpose8(lo);
        transpose8(hi);
        for (int e = 0; e < 8; ++e) {
          _mm256_store_si256(reinterpret_cast<__m256i*>(k.q[i][2 * p][e] + 32 * half), lo[e]);
          _mm256_store_si256(reinterpret_cast<__m256i*>(k.q[i][2 * p + 1][e] + 32 * half), hi[e]);
        }
      }
    }
  }
}

// int32 -> float, zero-masked (GCC 12's plain form trips -Wmaybe-uninitialized)
inline __m512 cvt16(__m512i v) { return _mm512_maskz_cvtepi32_ps(0xFFFF, v); }

inline __m512i k_rows16_sub(const KRows16& k, int i, int j, const int8_t* y32) {
  __m512i acc = _mm512_setzero_si512();
  for (int e = 0; e < 8; ++e) {
    int32_t v;
    std::memcpy(&v, y32 + 4 * e, 4);
    acc = _mm512_dpbusd_epi32(acc, _mm512_load_si512(k.q[i][j][e]), _mm512_set1_epi32(v));
  }
  return _mm512_mullo_epi32(acc, _mm512_load_si512(k.sc[i][j]));
}

// k_rows_column for 16 rows: the same operations lane by lane.
template <bool kGemvOrder>
inline void k_rows16_column(const KRows16& k, const BlockQ8_K* a, int nb, float* acc_io, float* accm_io) {
  __m512 acc = _mm512_load_ps(acc_io);
  __m512 accm = _mm512_load_ps(accm_io);
  for (int i = 0; i < nb; ++i) {
    const __m512 da = _mm512_set1_ps(a[i].d);
    const __m512 d = _mm512_mul_ps(_mm512_load_ps(k.d[i]), da);
    const __m512 dm = _mm512_mul_ps(_mm512_load_ps(k.dmin[i]), da);
    const __m256i bs16 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[i].bsums));
    alignas(16) int32_t bsum_w[4];
    _mm_store_si128(reinterpret_cast<__m128i*>(bsum_w),
                    _mm_hadd_epi16(_mm256_castsi256_si128(bs16), _mm256_extracti128_si256(bs16, 1)));
    const int8_t* yq = a[i].qs;
    __m512i isum_all = _mm512_setzero_si512(), msum_all = _mm512_setzero_si512();
    for (int p = 0; p < 4; ++p) {
      const __m512i isum =
          _mm512_add_epi32(k_rows16_sub(k, i, 2 * p, yq + 64 * p), k_rows16_sub(k, i, 2 * p + 1, yq + 64 * p + 32));
      // sums of sub-blocks 2p and 2p + 1 = int32 word p of bsum, in every lane
      const __m512i pair = _mm512_set1_epi32(bsum_w[p]);
      const __m512i m = _mm512_madd_epi16(_mm512_load_si512(k.mn[i][p]), pair);
      if constexpr (kGemvOrder) {
        isum_all = _mm512_add_epi32(isum_all, isum);
        msum_all = _mm512_add_epi32(msum_all, m);
      } else {
        acc = _mm512_fmadd_ps(cvt16(isum), d, acc);
        accm = _mm512_fmadd_ps(cvt16(m), dm, accm);
      }
    }
    if constexpr (kGemvOrder) {
      acc = _mm512_fmadd_ps(cvt16(isum_all), d, acc);
      accm = _mm512_fmadd_ps(cvt16(msum_all), dm, accm);
    }
  }
  _mm512_store_ps(acc_io, acc);
  _mm512_store_ps(accm_io, accm);
}

// 16 weight rows x nc activation rows (q4k_rows' loop for one 16-row group;
// the group after it, when there is one, starts 16 rows further on).
template <bool kGemvOrder>
inline void q4k_rows16(int nb_all, const uint8_t* x, size_t bx, const uint8_t* y, size_t by, int nc, float* s,
                       size_t bs, bool next_group) {
  KRows16 k;
  constexpr int kCols = 64;
  alignas(64) float acc[kCols][16];
  alignas(64) float accm[kCols][16];
  for (int c0 = 0; c0 < nc; c0 += kCols) {
    const int cc = std::min(kCols, nc - c0);
    for (int c = 0; c < cc; ++c) {
      _mm512_store_ps(acc[c], _mm512_setzero_ps());
      _mm512_store_ps(accm[c], _mm512_setzero_ps());
    }
    for (int b0 = 0; b0 < nb_all; b0 += kKPass) {
      const int nb = std::min(kKPass, nb_all - b0);
      if (c0 == 0 || nb_all > kKPass) k_rows16_prepare(k, x, bx, b0, nb);
      // while these columns compute, the weights of the next prepare into the
      // cache: this group's next pass, or the next group's first
      const uint8_t* next = nullptr;
      int next_nb = 0;
      if (b0 + kKPass < nb_all && (c0 + cc < nc ? nb_all > kKPass : true)) {
        next = x + (b0 + kKPass) * sizeof(BlockQ4_K);
        next_nb = std::min(kKPass, nb_all - b0 - kKPass);
      } else if (c0 + cc >= nc && next_group) {
        next = x + 16 * bx;
        next_nb = std::min(kKPass, nb_all);
      }
      const int row_lines = next_nb * static_cast<int>(sizeof(BlockQ4_K)) / 64 + 1;
      const int lines = next ? 16 * row_lines : 0;
      int pf = 0;
      for (int c = 0; c < cc; ++c) {
        const auto* a = reinterpret_cast<const BlockQ8_K*>(y + (c0 + c) * by) + b0;
        k_rows16_column<kGemvOrder>(k, a, nb, acc[c], accm[c]);
        for (const int until = lines * (c + 1) / cc; pf < until; ++pf) {
          _mm_prefetch(reinterpret_cast<const char*>(next + (pf / row_lines) * bx + 64 * (pf % row_lines)),
                       _MM_HINT_T0);
        }
      }
    }
    for (int c = 0; c < cc; ++c) {
      _mm512_storeu_ps(s + (c0 + c) * bs, _mm512_sub_ps(_mm512_load_ps(acc[c]), _mm512_load_ps(accm[c])));
    }
  }
}
#endif

// nr weight rows x nc activation rows, lanes = rows, every column summed in
// the gemm order (kGemvOrder false: libllama's 4-column gemm) or the gemv
// order (true: bit for bit q4k_gemv per column, what libllama computes for
// MoE experts, mul_mat_id). Each group of 8 weight rows is unpacked once per
// pass and, when a row is one pass, once for all columns.
template <bool kGemvOrder>
inline void q4k_rows(int nb_all, const uint8_t* x, size_t bx, int nr, const uint8_t* y, size_t by, int nc, float* s,
                     size_t bs) {
  KRows k;
  constexpr int kCols = 64;
  alignas(32) float acc[kCols][8];
  alignas(32) float accm[kCols][8];
  for (int r0 = 0; r0 < nr; r0 += 8) {
    const int rr = std::min(8, nr - r0);
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
    if (nr - r0 >= 16) {
      // matmul calls this per 16 rows, so the rows after the call's are most
      // likely the next call's: prefetched (a prefetch never faults)
      q4k_rows16<kGemvOrder>(nb_all, x + r0 * bx, bx, y, by, nc, s + r0, bs, true);
      r0 += 8;
      continue;
    }
#endif
    for (int c0 = 0; c0 < nc; c0 += kCols) {
      const int cc = std::min(kCols, nc - c0);
      for (int c = 0; c < cc; ++c) {
        _mm256_store_ps(acc[c], _mm256_setzero_ps());
        _mm256_store_ps(accm[c], _mm256_setzero_ps());
      }
      for (int b0 = 0; b0 < nb_all; b0 += kKPass) {
        const int nb = std::min(kKPass, nb_all - b0);
        if (c0 == 0 || nb_all > kKPass) k_rows_prepare(k, x + r0 * bx, bx, rr, b0, nb);
        for (int c = 0; c < cc; ++c) {
          const auto* a = reinterpret_cast<const BlockQ8_K*>(y + (c0 + c) * by) + b0;
          k_rows_column<kGemvOrder>(k, a, nb, acc[c], accm[c]);
        }
      }
      for (int c = 0; c < cc; ++c) {
        alignas(32) float t[8];
        _mm256_store_ps(t, _mm256_sub_ps(_mm256_load_ps(acc[c]), _mm256_load_ps(accm[c])));
        for (int r = 0; r < rr; ++r) s[(c0 + c) * bs + r0 + r] = t[r];
      }
    }
  }
}

// Q4_K for MoE experts: every column in the gemv order; a lone column by rows.
inline void gemv_cols_q4_K(int n, const void* vx, size_t bx, int nr, const void* vy, size_t by, int nc, float* s,
                           size_t bs) {
  const auto* x = static_cast<const uint8_t*>(vx);
  const auto* y = static_cast<const uint8_t*>(vy);
  if (nc < 2) {
    for (int c = 0; c < nc; ++c) q4k_gemv(n / 256, x, bx, nr, y + c * by, s + c * bs);
    return;
  }
  q4k_rows<true>(n / 256, x, bx, nr, y, by, nc, s, bs);
}

// Q4_K: columns [0, nc - nc % 4) in gemm order, the rest in gemv order.
inline void gemm_q4_K(int n, const void* vx, size_t bx, int nr, const void* vy, size_t by, int nc, float* s,
                      size_t bs) {
  const auto* x = static_cast<const uint8_t*>(vx);
  const auto* y = static_cast<const uint8_t*>(vy);
  const int nb = n / 256;
  const int ngemm = nc - nc % 4;
  if (ngemm > 0) q4k_rows<false>(nb, x, bx, nr, y, by, ngemm, s, bs);
  for (int c = ngemm; c < nc; ++c) q4k_gemv(nb, x, bx, nr, y + c * by, s + c * bs);
}

// ------------------------------------------------------------------------ Q2_K

// libllama repacks Q2_K at its AVX-512 level only (repack.h). Per output, with
// S and M the exact int sums of scale_j * (q . y)_j and min_j * bsum_j over a
// chunk of sub-blocks: acc = fma(float(S), dw * da, acc) and
// accm = fma(float(M), dmin * da, accm) per chunk, the result acc - accm.
// The gemv's chunk is a super-block; kChunks splits one into equal chunks.
inline int hsum_i32(__m256i v) {
  __m128i r = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  r = _mm_add_epi32(r, _mm_unpackhi_epi64(r, r));
  r = _mm_add_epi32(r, _mm_shuffle_epi32(r, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(r);
}

template <int kChunks>
inline float q2k_dot(const quant::BlockQ2_K* x, const BlockQ8_K* y, int nb) {
  static_assert(kChunks == 1 || kChunks == 2);
  const __m256i mask2 = _mm256_set1_epi8(3);
  float acc = 0.0f, accm = 0.0f;
  for (int i = 0; i < nb; ++i) {
    const float d = _cvtsh_ss(x[i].d) * y[i].d;
    const float dm = _cvtsh_ss(x[i].dmin) * y[i].d;
    const __m128i sc_bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].scales));
    const __m256i mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc_bytes, 4), _mm_set1_epi8(0x0F)));
    // lanes 0..3: sub-blocks 0..7 (first 128 elements), lanes 4..7: 8..15
    const __m256i mprod = _mm256_madd_epi16(load(y[i].bsums), mins);
    int sum_s[2], sum_m[2];
    for (int c = 0; c < 2; ++c) {  // 128 elements: 32 bytes, four 2-bit planes
      const __m256i bits = load(x[i].qs + 32 * c);
      __m256i sumi = _mm256_setzero_si256();
      for (int j = 0; j < 4; ++j) {
        const __m256i q = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * j), mask2);
        const __m256i p = _mm256_maddubs_epi16(q, load(y[i].qs + 128 * c + 32 * j));
        // low 128-bit lane: sub-block 2j, high lane: 2j + 1 (16 elements each)
        const uint8_t* sb = x[i].scales + 8 * c + 2 * j;
        const __m256i sc = _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(sb[1] & 0x0F)),
                                            _mm_set1_epi16(static_cast<int16_t>(sb[0] & 0x0F)));
        sumi = dot_i16(sumi, p, sc);
      }
      sum_s[c] = hsum_i32(sumi);
      const __m256i mc = c ? _mm256_permute2x128_si256(mprod, mprod, 0x11) : _mm256_permute2x128_si256(mprod, mprod, 0);
      sum_m[c] = hsum_i32(mc) / 2;  // the chunk's 4 lanes appear twice
    }
    if constexpr (kChunks == 1) {
      acc = std::fma(static_cast<float>(sum_s[0] + sum_s[1]), d, acc);
      accm = std::fma(static_cast<float>(sum_m[0] + sum_m[1]), dm, accm);
    } else {
      for (int c = 0; c < 2; ++c) {
        acc = std::fma(static_cast<float>(sum_s[c]), d, acc);
        accm = std::fma(static_cast<float>(sum_m[c]), dm, accm);
      }
    }
  }
  return acc - accm;
}

// Q2_K gemm order for chunks of 128 elements (two per super-block): columns
// [0, nc - nc % 4); gemv order for the rest.
constexpr int kQ2kGemmChunks = 2;

inline void gemm_q2_K(int n, const void* vx, size_t bx, int nr, const void* vy, size_t by, int nc, float* s,
                      size_t bs) {
  const auto* x = static_cast<const uint8_t*>(vx);
  const auto* y = static_cast<const uint8_t*>(vy);
  const int nb = n / 256;
  const int ngemm = nc - nc % 4;
  for (int c = 0; c < nc; ++c) {
    const auto* yc = reinterpret_cast<const BlockQ8_K*>(y + c * by);
    for (int r = 0; r < nr; ++r) {
      const auto* xr = reinterpret_cast<const quant::BlockQ2_K*>(x + r * bx);
      s[c * bs + r] = c < ngemm ? q2k_dot<kQ2kGemmChunks>(xr, yc, nb) : q2k_dot<1>(xr, yc, nb);
    }
  }
}

}  // namespace repack

// Replaces the gemm entries of the types libllama repacks (see repack.h).
inline void fill_x86_repack(CpuKernels& k) {
  k.gemm[static_cast<uint32_t>(GgmlType::Q4_0)] = repack::gemm_legacy<repack::LevelsQ4_0>;
  k.gemm[static_cast<uint32_t>(GgmlType::IQ4_NL)] = repack::gemm_legacy<repack::LevelsIq4Nl>;
  k.gemm[static_cast<uint32_t>(GgmlType::Q4_K)] = repack::gemm_q4_K;
  k.gemv_cols[static_cast<uint32_t>(GgmlType::Q4_K)] = repack::gemv_cols_q4_K;
#if defined(__AVX512F__)
  k.gemm[static_cast<uint32_t>(GgmlType::Q2_K)] = repack::gemm_q2_K;
#endif
}

}  // namespace
}  // namespace strix::cpu
