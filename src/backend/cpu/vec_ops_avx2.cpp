// AVX2 + FMA + F16C vector ops. exp is a Cephes-style range reduction
// (x = n ln2 + r) with a degree-6 polynomial for e^r: within 2 ulp of expf
// over the float range; below -87.3 it flushes to 0, above 88.7 it is inf.
#include <immintrin.h>

#include <cmath>

#include "backend/cpu/attn_ref.h"
#include "backend/cpu/vec_ops.h"

namespace strix::cpu {

namespace {

void axpy_f16_avx2(int64_t n, float* y, const uint16_t* x, float a) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 xv = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(xv, va, _mm256_loadu_ps(y + i)));
  }
  for (; i < n; ++i) y[i] += a * _cvtsh_ss(x[i]);
}

void to_f16_avx2(int64_t n, const float* x, uint16_t* y) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), 0));
  }
  for (; i < n; ++i) y[i] = _cvtss_sh(x[i], 0);
}

// ---- ggml-order attention (see vec_ops.h) ----

inline __m256 load_h8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// GCC's _mm512_reduce_add_ps over lanes lo (0..7) and hi (8..15).
inline float reduce16(__m256 lo, __m256 hi) {
  const __m256 t8 = _mm256_add_ps(hi, lo);
  const __m128 t4 = _mm_add_ps(_mm256_extractf128_ps(t8, 1), _mm256_castps256_ps128(t8));
  const __m128 sw = _mm_shuffle_ps(t4, t4, _MM_SHUFFLE(1, 0, 3, 2));  // (2, 3, 0, 1)
  const __m128 t2 = _mm_add_ps(t4, sw);
  return _mm_cvtss_f32(_mm_add_ss(t2, _mm_movehdup_ps(t2)));
}

float attn_dot_vecdot_avx2(int n, const uint16_t* k, const float* q);

float attn_dot_avx2(int n, const uint16_t* k, const float* q) {
  // tinyBLAS declines k % 16 != 0: ggml_vec_dot_f16's order then, in any batch
  if (n % 16 != 0) return attn_dot_vecdot_avx2(n, k, q);
  __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
  for (int c = 0; c < n; c += 16) {
    lo = _mm256_fmadd_ps(load_h8(k + c), _mm256_loadu_ps(q + c), lo);
    hi = _mm256_fmadd_ps(load_h8(k + c + 8), _mm256_loadu_ps(q + c + 8), hi);
  }
  return reduce16(lo, hi);
}

// ggml_v_expf of the AVX-512 build, 8 lanes (scalef emulated by exponent arithmetic).
inline __m256 expf16_avx2(__m256 x) {
  const __m256 r = _mm256_set1_ps(0x1.8p23f);
  const __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(0x1.715476p+0f), r);
  const __m256 n = _mm256_sub_ps(z, r);
  const __m256 b =
      _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.7f7d1cp-20f), _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e4p-1f), x));
  const __m256 u = _mm256_mul_ps(b, b);
  const __m256 j = _mm256_fmadd_ps(
      _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b, _mm256_set1_ps(0x1.573e2ep-5f)), u,
                      _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b, _mm256_set1_ps(0x1.fffdb6p-2f))),
      u, _mm256_fmadd_ps(_mm256_set1_ps(0x1.ffffecp-1f), b, _mm256_set1_ps(1.0f)));
  // j * 2^n in two exact steps (n in [-192, 192] after the range check below)
  const __m256 nc = _mm256_max_ps(_mm256_min_ps(n, _mm256_set1_ps(192.0f)), _mm256_set1_ps(-192.0f));
  const __m256i ni = _mm256_cvtps_epi32(nc);
  const __m256i h = _mm256_srai_epi32(ni, 1);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(h, _mm256_set1_epi32(127)), 23));
  const __m256 s2 =
      _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(ni, h), _mm256_set1_epi32(127)), 23));
  __m256 res = _mm256_mul_ps(_mm256_mul_ps(j, s1), s2);
  const __m256 big = _mm256_cmp_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), n), _mm256_set1_ps(192.0f), _CMP_GT_OQ);
  if (_mm256_movemask_ps(big)) {
    const __m256 le0 = _mm256_cmp_ps(n, _mm256_setzero_ps(), _CMP_LE_OQ);
    const __m256 alt = _mm256_andnot_ps(le0, _mm256_set1_ps(INFINITY));
    res = _mm256_blendv_ps(res, alt, big);
  }
  return res;
}

// x[i] = ggml_v_expf(x[i] - max) over the whole 16-element chunks of [0, n);
// returns how far it got and adds each chunk's _mm512_reduce_add_ps to sum.
int64_t exp_chunks16(int64_t n, float* x, float max, double& sum) {
  const __m256 m = _mm256_set1_ps(max);
  int64_t c = 0;
  for (; c + 16 <= n; c += 16) {
    const __m256 lo = expf16_avx2(_mm256_sub_ps(_mm256_loadu_ps(x + c), m));
    const __m256 hi = expf16_avx2(_mm256_sub_ps(_mm256_loadu_ps(x + c + 8), m));
    _mm256_storeu_ps(x + c, lo);
    _mm256_storeu_ps(x + c + 8, hi);
    sum += static_cast<double>(reduce16(lo, hi));
  }
  return c;
}

double attn_exp_avx2(int n, float* x, float max) {
  double sum = 0;
  const int c = static_cast<int>(exp_chunks16(n, x, max, sum));
  if (c < n) {  // the cache's masked cells past n count as exp(-inf) = 0 in the last chunk
    alignas(32) float t[16];
    for (int l = 0; l < 16; ++l) t[l] = c + l < n ? x[c + l] - max : -INFINITY;
    const __m256 lo = expf16_avx2(_mm256_load_ps(t));
    const __m256 hi = expf16_avx2(_mm256_load_ps(t + 8));
    _mm256_store_ps(t, lo);
    _mm256_store_ps(t + 8, hi);
    for (int l = 0; c + l < n; ++l) x[c + l] = t[l];
    sum += static_cast<double>(reduce16(lo, hi));
  }
  return sum;
}

void swiglu_avx2(int64_t n, const float* g, const float* u, float* out) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const int64_t nv = n - n % 16;  // ggml's 16-lane part; the rest goes through libm expf
  int64_t i = 0;
  for (; i < nv; i += 8) {
    const __m256 gv = _mm256_loadu_ps(g + i);
    const __m256 e = expf16_avx2(_mm256_sub_ps(_mm256_setzero_ps(), gv));
    const __m256 silu = _mm256_div_ps(gv, _mm256_add_ps(one, e));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(silu, _mm256_loadu_ps(u + i)));
  }
  for (; i < n; ++i) out[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

double softmax_exp_avx2(int64_t n, float* x, float max) {
  double sum = 0;
  for (int64_t i = exp_chunks16(n, x, max, sum); i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += static_cast<double>(x[i]);
  }
  return sum;
}

void attn_acc_avx2(int n, int first, const float* p, const uint16_t* v, size_t stride, int hd, int lanes, float* acc) {
  for (int i = 0; i < n; ++i) {
    if (p[i] == 0.0f) continue;
    float* a = acc + static_cast<size_t>((first + i) & (lanes - 1)) * hd;
    const uint16_t* vr = v + i * stride;
    const __m256 pv = _mm256_set1_ps(p[i]);
    int d = 0;
    for (; d + 8 <= hd; d += 8) _mm256_storeu_ps(a + d, _mm256_fmadd_ps(load_h8(vr + d), pv, _mm256_loadu_ps(a + d)));
    for (; d < hd; ++d) a[d] = std::fma(_cvtsh_ss(vr[d]), p[i], a[d]);
  }
}

void attn_reduce_avx2(int hd, int lanes, float* acc, float* out) {
  if (lanes == 64) attn_ref::fold64(hd, acc);
  int d = 0;
  auto row = [&](int l) { return acc + static_cast<size_t>(l) * hd; };
  for (; d + 8 <= hd; d += 8) {
    __m256 t8[8], t4[4];
    for (int l = 0; l < 8; ++l) t8[l] = _mm256_add_ps(_mm256_loadu_ps(row(8 + l) + d), _mm256_loadu_ps(row(l) + d));
    for (int l = 0; l < 4; ++l) t4[l] = _mm256_add_ps(t8[4 + l], t8[l]);
    const __m256 u0 = _mm256_add_ps(t4[0], t4[2]), u1 = _mm256_add_ps(t4[1], t4[3]);
    _mm256_storeu_ps(out + d, _mm256_add_ps(u0, u1));
  }
  for (; d < hd; ++d) {
    float t8[8], t4[4];
    for (int l = 0; l < 8; ++l) t8[l] = row(8 + l)[d] + row(l)[d];
    for (int l = 0; l < 4; ++l) t4[l] = t8[4 + l] + t8[l];
    out[d] = (t4[0] + t4[2]) + (t4[1] + t4[3]);
  }
}

// ggml_vec_dot_f16 (AVX-512 build): four 16-lane accumulators over 64-element
// steps, folded 0+2, 1+3, 0+1, reduced, then the tail in double: each tail
// product is a float product (computed 8 at a time), added in order.
float attn_dot_vecdot_avx2(int n, const uint16_t* k, const float* q) {
  const int np = n & ~63;
  double sum = 0;
  if (np > 0) {
    __m256 a[8];
    for (auto& r : a) r = _mm256_setzero_ps();
    for (int i = 0; i < np; i += 64) {
      for (int j = 0; j < 4; ++j) {
        a[2 * j] = _mm256_fmadd_ps(load_h8(k + i + 16 * j), _mm256_loadu_ps(q + i + 16 * j), a[2 * j]);
        a[2 * j + 1] = _mm256_fmadd_ps(load_h8(k + i + 16 * j + 8), _mm256_loadu_ps(q + i + 16 * j + 8), a[2 * j + 1]);
      }
    }
    const __m256 lo0 = _mm256_add_ps(a[0], a[4]), hi0 = _mm256_add_ps(a[1], a[5]);
    const __m256 lo1 = _mm256_add_ps(a[2], a[6]), hi1 = _mm256_add_ps(a[3], a[7]);
    sum = static_cast<double>(reduce16(_mm256_add_ps(lo0, lo1), _mm256_add_ps(hi0, hi1)));
  }
  int i = np;
  for (; i + 8 <= n; i += 8) {
    const __m256 pr = _mm256_mul_ps(load_h8(k + i), _mm256_loadu_ps(q + i));
    const __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(pr));
    const __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(pr, 1));
    alignas(32) double d[8];
    _mm256_store_pd(d, lo);
    _mm256_store_pd(d + 4, hi);
    for (int l = 0; l < 8; ++l) sum += d[l];
  }
  for (; i < n; ++i) sum += static_cast<double>(_cvtsh_ss(k[i]) * q[i]);
  return static_cast<float>(sum);
}

void round_f16_avx2(int64_t n, const float* x, float scale, float* out) {
  const __m256 s = _mm256_set1_ps(scale);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_mul_ps(_mm256_loadu_ps(x + i), s), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) out[i] = _cvtsh_ss(_cvtss_sh(x[i] * scale, _MM_FROUND_TO_NEAREST_INT));
}

}  // namespace

namespace detail {
void fill_vec_ops_avx2(VecOps& v) {
  v.axpy_f16 = axpy_f16_avx2;
  v.to_f16 = to_f16_avx2;
  v.swiglu = swiglu_avx2;
  v.softmax_exp = softmax_exp_avx2;
  v.attn_dot = attn_dot_avx2;
  v.attn_exp = attn_exp_avx2;
  v.attn_acc = attn_acc_avx2;
  v.round_f16 = round_f16_avx2;
  v.attn_reduce = attn_reduce_avx2;
  v.attn_dot_vecdot = attn_dot_vecdot_avx2;
}
}  // namespace detail

}  // namespace strix::cpu
