// CpuKernels::gemm (matrix-product tiles) vs vec_dot of the same level, and
// vs libggml-cpu's vec_dot for the type, on random rows.
//
// Tolerance: |gemm - ref| <= 1e-5 * sum_i |w_i * a_i| (the dot's magnitude,
// as in vec_dot_test.cpp): a tile sums the same exact integer block products
// as vec_dot, only the float summation order differs (for F32 / F16 every
// product is a float term, hence 1e-5 rather than vec_dot_test's 1e-6).
// Shapes: every nr, nc in {1..9, 17}, so each tile size and every remainder
// path is taken; strides bx, by, bs larger than a row so a kernel mixing them
// up reads the wrong data. Buffers are exact-size for ASan.
// Negative control: the same check run on a product whose weight rows are
// shifted by one (a kernel indexing the wrong row) must fail.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "test_util.h"

namespace strix::cpu::test {
namespace {

constexpr double kTolerance = 1e-5;
constexpr int kMaxRows = 17;
const int kShapes[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 17};

const GgmlType kTypes[] = {GgmlType::Q4_K, GgmlType::Q6_K,   GgmlType::Q8_0,  GgmlType::F32,  GgmlType::F16,
                           GgmlType::Q5_K, GgmlType::IQ4_XS, GgmlType::MXFP4, GgmlType::Q4_0, GgmlType::Q5_0,
                           GgmlType::Q4_1, GgmlType::Q5_1,   GgmlType::IQ4_NL};

// kMaxRows weight rows (stride bx) and activation rows (stride by) of n elements.
struct Matrices {
  GgmlType wt, at;
  int n = 0;
  size_t bx = 0, by = 0;
  std::vector<uint8_t> w, a;
  std::vector<std::vector<float>> wf, af;  // dequantized, for the magnitudes
};

Matrices make_matrices(const CpuKernels& k, GgmlType wt, int n, uint32_t seed) {
  Matrices m;
  m.wt = wt;
  m.at = k.vec_dot_type[id(wt)];
  m.n = n;
  m.bx = row_size(wt, n) + 16;  // padded: strides differ from the row size
  m.by = row_size(m.at, n) + 32;
  m.w.assign(m.bx * (kMaxRows + 1), 0xEE);
  m.a.assign(m.by * kMaxRows, 0xEE);
  m.wf.resize(kMaxRows + 1);
  m.af.resize(kMaxRows);
  for (int r = 0; r <= kMaxRows; ++r) {
    const std::vector<float> src = random_row(n, seed * 131u + r, 1.0f, r % 3 == 0);
    if (wt == GgmlType::F32) {
      std::memcpy(m.w.data() + r * m.bx, src.data(), n * sizeof(float));
    } else if (wt == GgmlType::F16) {
      ref::LibGgml::get().fp32_to_fp16_row(src.data(), reinterpret_cast<uint16_t*>(m.w.data() + r * m.bx), n);
    } else {
      const std::vector<uint8_t> q = ggml_quantize(wt, src);
      std::memcpy(m.w.data() + r * m.bx, q.data(), row_size(wt, n));
    }
    m.wf[r].resize(n);
    type_traits(wt).to_float(m.w.data() + r * m.bx, m.wf[r].data(), n);
  }
  for (int c = 0; c < kMaxRows; ++c) {
    const std::vector<float> src = random_row(n, seed * 7919u + c, 0.5f, c % 2 == 0);
    uint8_t* dst = m.a.data() + c * m.by;
    if (m.at == GgmlType::F32) {
      std::memcpy(dst, src.data(), n * sizeof(float));
    } else {
      k.quantize_act[id(m.at)](src.data(), dst, n);
    }
    m.af[c].resize(n);
    type_traits(m.at).to_float(dst, m.af[c].data(), n);
  }
  // exact-size buffers: nothing past the last row's bytes
  m.w.resize(m.bx * kMaxRows + row_size(wt, n));
  m.a.resize(m.by * (kMaxRows - 1) + row_size(m.at, n));
  return m;
}

double magnitude(const Matrices& m, int r, int c) {
  double s = 0;
  for (int i = 0; i < m.n; ++i) s += std::fabs(static_cast<double>(m.wf[r][i]) * m.af[c][i]);
  return s;
}

// ref[c][r]: one dot product per pair, from `dot(n, s, x, y)`.
template <typename Dot>
std::vector<std::vector<float>> reference(const Matrices& m, int rows, Dot dot) {
  std::vector<std::vector<float>> ref(kMaxRows, std::vector<float>(rows));
  for (int c = 0; c < kMaxRows; ++c) {
    for (int r = 0; r < rows; ++r) dot(m.n, &ref[c][r], m.w.data() + r * m.bx, m.a.data() + c * m.by);
  }
  return ref;
}

// Runs gemm over the nr x nc corner starting at weight row r0; returns the
// number of entries off `ref` (rows 0..nr) by more than the tolerance.
int mismatches(const CpuKernels& k, const Matrices& m, int r0, int nr, int nc,
               const std::vector<std::vector<float>>& ref, std::string* first) {
  const size_t bs = static_cast<size_t>(nr) + 3;
  std::vector<float> s(bs * nc, -12345.0f);
  k.gemm[id(m.wt)](m.n, m.w.data() + r0 * m.bx, m.bx, nr, m.a.data(), m.by, nc, s.data(), bs);
  int bad = 0;
  for (int c = 0; c < nc; ++c) {
    for (int r = 0; r < nr; ++r) {
      const double tol = kTolerance * magnitude(m, r, c);
      const float got = s[c * bs + r];
      if (!(std::fabs(static_cast<double>(got) - ref[c][r]) <= tol)) {
        if (bad++ == 0 && first) {
          *first = "r=" + std::to_string(r) + " c=" + std::to_string(c) + " got " + std::to_string(got) + " want " +
                   std::to_string(ref[c][r]);
        }
      }
    }
    for (size_t r = nr; r < bs; ++r) {
      if (s[c * bs + r] != -12345.0f) ++bad;  // wrote outside the tile
    }
  }
  return bad;
}

std::string ggml_symbol(GgmlType wt, GgmlType at) {
  if (wt == GgmlType::F32) return "ggml_vec_dot_f32";
  return ref::ggml_vec_dot_symbol(id(wt), id(at));
}

TEST(CpuGemm, every_level_fills_a_gemm_for_every_vec_dot) {
  for (CpuIsa isa : supported_levels()) {
    const CpuKernels& k = cpu_kernels_for(isa);
    for (uint32_t t = 0; t < kGgmlTypeCount; ++t) {
      EXPECT_EQ(k.gemm[t] != nullptr, k.vec_dot[t] != nullptr) << cpu_isa_name(isa) << " type " << t;
    }
  }
}

TEST(CpuGemm, matches_vec_dot_and_libggml_for_every_shape) {
  int checked = 0;
  for (CpuIsa isa : supported_levels()) {
    const CpuKernels& k = cpu_kernels_for(isa);
    const auto& lib = ref::LibGgmlCpu::get(ggml_variant(isa));
    for (GgmlType wt : kTypes) {
      const bool is_float = wt == GgmlType::F32 || wt == GgmlType::F16;
      const std::vector<int> lengths = is_float ? std::vector<int>{512, 37} : std::vector<int>{512};
      for (int n : lengths) {
        const Matrices m = make_matrices(k, wt, n, 1 + static_cast<uint32_t>(wt) + static_cast<uint32_t>(n));
        const auto ours = reference(
            m, kMaxRows, [&](int nn, float* s, const void* x, const void* y) { k.vec_dot[id(wt)](nn, s, x, y); });
        const auto theirs_fn = lib.vec_dot(ggml_symbol(wt, m.at));
        ASSERT_NE(theirs_fn, nullptr) << ggml_symbol(wt, m.at);
        const auto theirs = reference(
            m, kMaxRows, [&](int nn, float* s, const void* x, const void* y) { theirs_fn(nn, s, 0, x, 0, y, 0, 1); });
        for (int nr : kShapes) {
          for (int nc : kShapes) {
            const std::string what = std::string(cpu_isa_name(isa)) + " " + type_traits(wt).name +
                                     " n=" + std::to_string(n) + " nr=" + std::to_string(nr) +
                                     " nc=" + std::to_string(nc) + ": ";
            std::string first;
            EXPECT_EQ(mismatches(k, m, 0, nr, nc, ours, &first), 0) << what << "vs vec_dot " << first;
            EXPECT_EQ(mismatches(k, m, 0, nr, nc, theirs, &first), 0) << what << "vs libggml " << first;
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 0);
}

// Rows longer than one pass of a tile (8 super-blocks, 32 legacy blocks,
// 1024 floats): the later passes add onto the first.
TEST(CpuGemm, long_rows_take_several_passes) {
  for (CpuIsa isa : supported_levels()) {
    const CpuKernels& k = cpu_kernels_for(isa);
    for (GgmlType wt : kTypes) {
      const int n = type_traits(wt).block_size == 256 ? 256 * 20 : 32 * 70;
      const Matrices m = make_matrices(k, wt, n, 7);
      const auto ours = reference(
          m, kMaxRows, [&](int nn, float* s, const void* x, const void* y) { k.vec_dot[id(wt)](nn, s, x, y); });
      for (auto [nr, nc] : {std::pair{3, 9}, std::pair{1, 17}}) {
        std::string first;
        EXPECT_EQ(mismatches(k, m, 0, nr, nc, ours, &first), 0)
            << cpu_isa_name(isa) << " " << type_traits(wt).name << " n=" << n << " " << first;
      }
    }
  }
}

// Negative control: weight rows shifted by one must fail the same check.
TEST(CpuGemm, tolerance_catches_shifted_weight_rows) {
  for (CpuIsa isa : supported_levels()) {
    const CpuKernels& k = cpu_kernels_for(isa);
    for (GgmlType wt : kTypes) {
      const Matrices m = make_matrices(k, wt, 512, 99);
      const auto ours = reference(
          m, kMaxRows, [&](int nn, float* s, const void* x, const void* y) { k.vec_dot[id(wt)](nn, s, x, y); });
      for (int nr : {1, 5, 8}) {
        EXPECT_GT(mismatches(k, m, 1, nr, 5, ours, nullptr), 0)
            << cpu_isa_name(isa) << " " << type_traits(wt).name << " nr=" << nr;
      }
    }
  }
}

}  // namespace
}  // namespace strix::cpu::test
