// CpuKernels::gemm of the types libllama repacks (Q4_0, IQ4_NL, Q4_K; see
// backend/cpu/repack.h) against libggml-cpu's own repacked kernels, bit for
// bit: ggml_gemv_*_8x8 (one activation row) and ggml_gemm_*_8x8 (groups of
// four), called on weights this test interleaves into libggml's layouts
// (block_q4_0x8, block_iq4_nlx8, block_q4_Kx8) and activations quantized by
// libggml (quantize_row_q8_*, and ggml_quantize_mat_t<8, ...> for the groups).
// A Strix call of nc columns must give gemm results for its first
// nc - nc % 4 columns and gemv results for the rest.
// Negative controls: the vec_dot order (what Strix used before) and the gemv
// order on gemm columns both differ from libggml somewhere.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/kernel_blocks.h"
#include "backend/cpu/repack.h"
#include "test_util.h"

namespace strix::cpu::test {
namespace {

using GemvFn = void (*)(int n, float* s, size_t bs, const void* vx, const void* vy, int nr, int nc);
using QuantizeMatFn = void (*)(const float* x, void* vy, int64_t nrow, int64_t n_per_row);

// libggml's interleaved weights: 8 rows per group, per block the 8 rows'
// scales then their quants in chunks of 8 bytes taken from row i % 8.
std::vector<uint8_t> interleave_legacy(const std::vector<uint8_t>& w, int nr, int n, bool q4_0) {
  const int nb = n / 32;
  const size_t bx = static_cast<size_t>(nb) * 18;
  std::vector<uint8_t> out(static_cast<size_t>(nr) * bx);
  uint8_t* o = out.data();
  for (int g = 0; g < nr; g += 8) {
    for (int b = 0; b < nb; ++b) {
      for (int j = 0; j < 8; ++j) std::memcpy(o + 2 * j, w.data() + (g + j) * bx + b * 18, 2);
      for (int i = 0; i < 16; ++i) {
        const uint8_t* src = w.data() + (g + i % 8) * bx + b * 18 + 2 + (i / 8) * 8;
        for (int k = 0; k < 8; ++k) o[16 + i * 8 + k] = static_cast<uint8_t>(src[k] ^ (q4_0 ? 0x88 : 0));
      }
      o += 16 + 128;
    }
  }
  return out;
}

// The 12-byte Q4_K packing of 8 six-bit scales and 8 six-bit mins.
void pack_k_scales(const uint8_t sc[8], const uint8_t mn[8], uint8_t out[12]) {
  for (int j = 0; j < 4; ++j) {
    out[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] & 48) << 2));
    out[j + 4] = static_cast<uint8_t>((mn[j] & 63) | ((mn[j + 4] & 48) << 2));
    out[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4));
  }
}

// block_q4_Kx8: d[8], dmin[8], then per sub-block g the 8 rows' scale and
// min of g in the 12-byte packing, then the quants in chunks of 8 bytes.
std::vector<uint8_t> interleave_q4_K(const std::vector<uint8_t>& w, int nr, int n) {
  const int nb = n / 256;
  const size_t bx = static_cast<size_t>(nb) * sizeof(quant::BlockQ4_K);
  std::vector<uint8_t> out(static_cast<size_t>(nr) * bx);
  uint8_t* o = out.data();
  for (int g = 0; g < nr; g += 8) {
    for (int b = 0; b < nb; ++b) {
      const quant::BlockQ4_K* in[8];
      uint8_t sm[8][16];
      for (int j = 0; j < 8; ++j) {
        in[j] = reinterpret_cast<const quant::BlockQ4_K*>(w.data() + (g + j) * bx) + b;
        unpack_k_scales(in[j]->scales, sm[j]);
        std::memcpy(o + 2 * j, &in[j]->d, 2);
        std::memcpy(o + 16 + 2 * j, &in[j]->dmin, 2);
      }
      for (int sub = 0; sub < 8; ++sub) {
        uint8_t sc[8], mn[8];
        for (int j = 0; j < 8; ++j) {
          sc[j] = sm[j][sub];
          mn[j] = sm[j][8 + sub];
        }
        pack_k_scales(sc, mn, o + 32 + 12 * sub);
      }
      for (int i = 0; i < 128; ++i) std::memcpy(o + 128 + i * 8, in[i % 8]->qs + (i / 8) * 8, 8);
      o += 128 + 1024;
    }
  }
  return out;
}

struct Case {
  GgmlType wt;
  const char* gemv;
  const char* gemm;
};

const Case kCases[] = {
    {GgmlType::Q4_0, "ggml_gemv_q4_0_8x8_q8_0", "ggml_gemm_q4_0_8x8_q8_0"},
    {GgmlType::IQ4_NL, "ggml_gemv_iq4_nl_8x8_q8_0", "ggml_gemm_iq4_nl_8x8_q8_0"},
    {GgmlType::Q4_K, "ggml_gemv_q4_K_8x8_q8_K", "ggml_gemm_q4_K_8x8_q8_K"},
};

struct Product {
  int n = 0, nr = 0, nc = 0;
  GgmlType at = GgmlType::Q8_0;
  size_t bx = 0, by = 0;
  std::vector<uint8_t> w;        // nr rows of the weight type
  std::vector<uint8_t> a;        // nc rows of the activation type (libggml's quantize_row)
  std::vector<float> x;          // the activations as floats
  std::vector<float> reference;  // libggml: reference[c * nr + r]
};

// Builds a product and libggml's result: gemm for columns [0, nc - nc % 4), gemv for the rest
// (gemv for all of them with gemv_only, what libggml's mul_mat_id does for MoE experts).
Product make_product(const ref::LibGgmlCpu& lib, const Case& cs, int n, int nr, int nc, uint32_t seed,
                     bool gemv_only = false) {
  Product p;
  p.n = n;
  p.nr = nr;
  p.nc = nc;
  p.at = cs.wt == GgmlType::Q4_K ? GgmlType::Q8_K : GgmlType::Q8_0;
  p.bx = row_size(cs.wt, n);
  p.by = row_size(p.at, n);
  // libggml's kernels take groups of 8 rows: the reference runs on nr rounded up
  const int nr8 = (nr + 7) / 8 * 8;
  for (int r = 0; r < nr8; ++r) {
    const auto q = ggml_quantize(cs.wt, random_row(n, seed + r, 1.0f, r % 3 == 0));
    p.w.insert(p.w.end(), q.begin(), q.begin() + static_cast<std::ptrdiff_t>(p.bx));
  }
  p.x.resize(static_cast<size_t>(nc) * n);
  for (int c = 0; c < nc; ++c) {
    const auto row = random_row(n, seed + 1000 + c, 0.5f, c % 2 == 1);
    std::copy(row.begin(), row.end(), p.x.begin() + static_cast<std::ptrdiff_t>(c) * n);
  }
  const auto quantize_row = lib.quantize(std::string("quantize_row_") + (p.at == GgmlType::Q8_K ? "q8_K" : "q8_0"));
  p.a.resize(static_cast<size_t>(nc) * p.by);
  for (int c = 0; c < nc; ++c) quantize_row(p.x.data() + c * n, p.a.data() + c * p.by, n);

  const std::vector<uint8_t> wx =
      cs.wt == GgmlType::Q4_K ? interleave_q4_K(p.w, nr8, n) : interleave_legacy(p.w, nr8, n, cs.wt == GgmlType::Q4_0);
  const auto gemv = lib.lib().fn<GemvFn>(cs.gemv);
  const auto gemm = lib.lib().fn<GemvFn>(cs.gemm);
  const auto quantize_mat =
      lib.lib().fn<QuantizeMatFn>(p.at == GgmlType::Q8_K ? "_Z19ggml_quantize_mat_tILl8EL9ggml_type15EEvPKfPvll"
                                                         : "_Z19ggml_quantize_mat_tILl8EL9ggml_type8EEvPKfPvll");
  std::vector<float> full(static_cast<size_t>(nc) * nr8, 0.0f);
  const int ngemm = gemv_only ? 0 : nc - nc % 4;
  if (ngemm > 0) {
    std::vector<uint8_t> ax(static_cast<size_t>(ngemm) * p.by + 64);
    for (int c = 0; c < ngemm; c += 4) quantize_mat(p.x.data() + c * n, ax.data() + c * p.by, 4, n);
    gemm(n, full.data(), static_cast<size_t>(nr8), wx.data(), ax.data(), ngemm, nr8);
  }
  for (int c = ngemm; c < nc; ++c) {
    gemv(n, full.data() + c * nr8, static_cast<size_t>(nr8), wx.data(), p.a.data() + c * p.by, 1, nr8);
  }
  p.reference.resize(static_cast<size_t>(nc) * nr);
  for (int c = 0; c < nc; ++c) {
    for (int r = 0; r < nr; ++r) p.reference[c * nr + r] = full[c * nr8 + r];
  }
  return p;
}

std::vector<float> strix_gemm(const CpuKernels& k, GgmlType wt, const Product& p, int c0, int nc) {
  std::vector<float> s(static_cast<size_t>(nc) * p.nr, -1.0f);
  k.gemm[id(wt)](p.n, p.w.data(), p.bx, p.nr, p.a.data() + c0 * p.by, p.by, nc, s.data(), static_cast<size_t>(p.nr));
  return s;
}

// Columns [c0, c0 + nc) of a Strix result against the reference, bitwise.
int count_mismatches(const Product& p, const std::vector<float>& s, int c0, int nc) {
  int bad = 0;
  for (int c = 0; c < nc; ++c) {
    for (int r = 0; r < p.nr; ++r) {
      const float want = p.reference[(c0 + c) * p.nr + r];
      const float got = s[c * p.nr + r];
      if (std::memcmp(&want, &got, sizeof(float)) != 0) ++bad;
    }
  }
  return bad;
}

std::vector<CpuIsa> x86_levels() {
  std::vector<CpuIsa> out;
  for (CpuIsa isa : supported_levels()) {
    if (isa != CpuIsa::kScalar) out.push_back(isa);
  }
  return out;
}

TEST(CpuRepackOrder, gemm_and_gemv_columns_match_libggml_bit_for_bit) {
  const auto levels = x86_levels();
  if (levels.empty()) GTEST_SKIP() << "no AVX2";
  for (CpuIsa isa : levels) {
    const auto& k = cpu_kernels_for(isa);
    const auto& lib = ref::LibGgmlCpu::get(ggml_variant(isa));
    for (const Case& cs : kCases) {
      // nc: gemv only, gemm only, both, more than one 64-column chunk; nr: any
      // count (Strix passes multiples of 8, the contract allows any)
      for (int nc : {1, 3, 4, 8, 11, 16, 23, 70}) {
        for (int nr : {8, 13, 16, 24}) {
          const int n = cs.wt == GgmlType::Q4_K ? 512 : 256;
          const Product p =
              make_product(lib, cs, n, nr, nc, 17u * static_cast<uint32_t>(nc) + static_cast<uint32_t>(nr));
          const auto s = strix_gemm(k, cs.wt, p, 0, nc);
          EXPECT_EQ(count_mismatches(p, s, 0, nc), 0)
              << cpu_isa_name(isa) << " " << type_name(id(cs.wt)) << " nr " << nr << " nc " << nc;
        }
      }
    }
  }
}

TEST(CpuRepackOrder, longer_rows_in_several_passes_match_libggml) {
  const auto levels = x86_levels();
  if (levels.empty()) GTEST_SKIP() << "no AVX2";
  const CpuIsa isa = levels.back();
  const auto& k = cpu_kernels_for(isa);
  const auto& lib = ref::LibGgmlCpu::get(ggml_variant(isa));
  for (const Case& cs : kCases) {
    // more blocks than one pass of the column tiles (64 legacy blocks, 8 super-blocks)
    const int n = cs.wt == GgmlType::Q4_K ? 256 * 19 : 32 * 150;
    const Product p = make_product(lib, cs, n, 16, 13, 5);
    EXPECT_EQ(count_mismatches(p, strix_gemm(k, cs.wt, p, 0, 13), 0, 13), 0) << type_name(id(cs.wt));
  }
}

// CpuKernels::gemv_cols (MoE experts, many columns at once) against libggml's
// gemv on every column; negative control: the gemm order on the same columns.
TEST(CpuRepackOrder, gemv_cols_match_libggml_gemv_on_every_column) {
  const auto levels = x86_levels();
  if (levels.empty()) GTEST_SKIP() << "no AVX2";
  int checked = 0;
  for (CpuIsa isa : levels) {
    const auto& k = cpu_kernels_for(isa);
    const auto& lib = ref::LibGgmlCpu::get(ggml_variant(isa));
    for (const Case& cs : kCases) {
      const GemmFn fn = k.gemv_cols[id(cs.wt)];
      if (fn == nullptr) continue;
      for (int nb : {4, 8, 19}) {  // one pass kept over column chunks, and several passes
        for (int nc : {1, 2, 7, 64, 70, 131}) {
          const int n = 256 * nb, nr = 16;
          const Product p = make_product(lib, cs, n, nr, nc, 31u * static_cast<uint32_t>(nc) + 7u * nb, true);
          std::vector<float> s(static_cast<size_t>(nc) * nr, -1.0f);
          fn(n, p.w.data(), p.bx, nr, p.a.data(), p.by, nc, s.data(), static_cast<size_t>(nr));
          EXPECT_EQ(count_mismatches(p, s, 0, nc), 0)
              << cpu_isa_name(isa) << " " << type_name(id(cs.wt)) << " nb " << nb << " nc " << nc;
          if (nc == 64 && nb == 8) {
            EXPECT_GT(count_mismatches(p, strix_gemm(k, cs.wt, p, 0, nc), 0, nc), 0) << "negative control: gemm order";
          }
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 0);
}

TEST(CpuRepackOrder, negative_controls_differ_from_libggml) {
  const auto levels = x86_levels();
  if (levels.empty()) GTEST_SKIP() << "no AVX2";
  const CpuIsa isa = levels.back();
  const auto& k = cpu_kernels_for(isa);
  const auto& lib = ref::LibGgmlCpu::get(ggml_variant(isa));
  for (const Case& cs : kCases) {
    const int n = cs.wt == GgmlType::Q4_K ? 256 * 8 : 32 * 64;
    // one gemv column: vec_dot's order is not libggml's gemv order
    const Product p1 = make_product(lib, cs, n, 16, 1, 9);
    std::vector<float> vd(16);
    for (int r = 0; r < 16; ++r) k.vec_dot[id(cs.wt)](n, &vd[r], p1.w.data() + r * p1.bx, p1.a.data());
    EXPECT_GT(count_mismatches(p1, vd, 0, 1), 0) << type_name(id(cs.wt)) << ": vec_dot";
    if (cs.wt != GgmlType::Q4_K) continue;
    // Q4_K gemm columns computed one by one (gemv order) differ from libggml's gemm
    const Product p8 = make_product(lib, cs, n, 16, 8, 11);
    std::vector<float> by_column(static_cast<size_t>(8) * 16);
    for (int c = 0; c < 8; ++c) {
      const auto s = strix_gemm(k, cs.wt, p8, c, 1);
      std::copy(s.begin(), s.end(), by_column.begin() + c * 16);
    }
    EXPECT_GT(count_mismatches(p8, by_column, 0, 8), 0) << "Q4_K gemm columns in gemv order";
  }
}

TEST(CpuRepackOrder, only_q4_0_q4_K_iq4_nl_with_rows_a_multiple_of_8_are_repacked) {
  EXPECT_TRUE(libllama_repacks(CpuIsa::kAvx2, GgmlType::Q4_K, 2048));
  EXPECT_TRUE(libllama_repacks(CpuIsa::kAvx512, GgmlType::IQ4_NL, 8));
  EXPECT_FALSE(libllama_repacks(CpuIsa::kAvx512, GgmlType::Q4_0, 2049));
  EXPECT_FALSE(libllama_repacks(CpuIsa::kAvx512, GgmlType::Q6_K, 2048));
  EXPECT_FALSE(libllama_repacks(CpuIsa::kScalar, GgmlType::Q4_K, 2048));
}

}  // namespace
}  // namespace strix::cpu::test
