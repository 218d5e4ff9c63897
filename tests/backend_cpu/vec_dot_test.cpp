// Strix CPU dot products vs the pinned libggml-cpu kernels, per level.
//
// Tolerance: |ours - ggml| <= 1e-6 * sum_i |w_i * a_i|. The integer parts of
// every quantized kernel are exact; what differs is the order in which the
// per-block float terms are summed (ggml's generic code, its AVX2 code and
// ours each use a different one). Each reordering moves the result by at most
// a few ulps of the running magnitude per term, far below 1e-6 of the
// magnitude for rows of <= 4096 elements (<= 128 block terms); a relative
// error of the result itself would be meaningless when the dot cancels.
// The scalar level sums exactly like ggml's *_generic functions, so against
// the baseline (x64) build it must be bit-identical.
#include <gtest/gtest.h>

#include <cstring>

#include "core/error.h"
#include "test_util.h"

namespace strix::cpu::test {
namespace {

constexpr double kTolerance = 1e-6;

const GgmlType kWeightTypes[] = {GgmlType::Q8_0,   GgmlType::Q4_0,   GgmlType::Q4_1,  GgmlType::Q5_0,
                                 GgmlType::Q5_1,   GgmlType::Q4_K,   GgmlType::Q5_K,  GgmlType::Q6_K,
                                 GgmlType::IQ4_NL, GgmlType::IQ4_XS, GgmlType::MXFP4, GgmlType::F16};

struct Case {
  std::vector<uint8_t> w, a;
  GgmlType at;
};

// Weight row quantized by libggml-base; activation quantized by the
// libggml-cpu variant's own quantize_row (what llama.cpp does at inference).
Case make_case(GgmlType wt, const CpuKernels& k, int n, uint32_t seed, float scale) {
  Case c;
  c.at = k.vec_dot_type[id(wt)];
  c.w = ggml_quantize(wt, random_row(n, seed, scale, seed % 2 == 0));
  const std::vector<float> act = random_row(n, seed * 7919u + 1, 1.0f / scale, seed % 3 == 0);
  c.a.assign(row_size(c.at, n) + 64, 0xCD);
  if (c.at == GgmlType::F16) {
    ref::LibGgml::get().fp32_to_fp16_row(act.data(), reinterpret_cast<uint16_t*>(c.a.data()), n);
  } else {
    const auto& lib = ref::LibGgmlCpu::get(ggml_variant(k.isa));
    auto q = lib.quantize(std::string("quantize_row_") + type_traits(c.at).name);
    if (!q) throw Error("libggml-cpu lacks quantize_row for the activation type");
    q(act.data(), c.a.data(), n);
  }
  // exact-size copies, so ASan catches a kernel reading past either row
  c.w = std::vector<uint8_t>(c.w.begin(), c.w.begin() + static_cast<std::ptrdiff_t>(row_size(wt, n)));
  c.a = std::vector<uint8_t>(c.a.begin(), c.a.begin() + static_cast<std::ptrdiff_t>(row_size(c.at, n)));
  return c;
}

TEST(CpuVecDot, pairs_weight_types_with_ggml_activation_types) {
  const CpuKernels& k = cpu_kernels_for(CpuIsa::kScalar);
  EXPECT_EQ(k.vec_dot_type[id(GgmlType::Q4_0)], GgmlType::Q8_0);
  EXPECT_EQ(k.vec_dot_type[id(GgmlType::Q4_1)], GgmlType::Q8_1);
  EXPECT_EQ(k.vec_dot_type[id(GgmlType::Q5_1)], GgmlType::Q8_1);
  EXPECT_EQ(k.vec_dot_type[id(GgmlType::MXFP4)], GgmlType::Q8_0);
  EXPECT_EQ(k.vec_dot_type[id(GgmlType::IQ4_NL)], GgmlType::Q8_0);
  EXPECT_EQ(k.vec_dot_type[id(GgmlType::Q6_K)], GgmlType::Q8_K);
  EXPECT_EQ(k.vec_dot_type[id(GgmlType::IQ4_XS)], GgmlType::Q8_K);
  EXPECT_EQ(k.vec_dot_type[id(GgmlType::F16)], GgmlType::F16);
}

TEST(CpuVecDot, matches_libggml_generic_and_simd_on_every_level) {
  int checked = 0;
  for (CpuIsa isa : supported_levels()) {
    const CpuKernels& k = cpu_kernels_for(isa);
    const auto& lib = ref::LibGgmlCpu::get(ggml_variant(isa));
    for (GgmlType wt : kWeightTypes) {
      ASSERT_NE(k.vec_dot[id(wt)], nullptr) << type_traits(wt).name;
      const std::string sym = ref::ggml_vec_dot_symbol(id(wt), id(k.vec_dot_type[id(wt)]));
      const auto simd = lib.vec_dot(sym);
      const auto generic = lib.vec_dot(sym + "_generic");  // absent for f16
      ASSERT_NE(simd, nullptr) << sym;
      for (int n : {256, 1024, 4096}) {
        for (uint32_t seed = 1; seed <= 4; ++seed) {
          for (float scale : {1.0f, 1e-3f, 3e2f}) {
            const Case c = make_case(wt, k, n, seed, scale);
            float ours = 0, ref_simd = 0, ref_generic = 0;
            k.vec_dot[id(wt)](n, &ours, c.w.data(), c.a.data());
            simd(n, &ref_simd, 0, c.w.data(), 0, c.a.data(), 0, 1);
            const double tol = kTolerance * dot_magnitude(wt, c.w.data(), c.at, c.a.data(), n);
            const std::string what = std::string(cpu_isa_name(isa)) + " " + sym + " n=" + std::to_string(n) +
                                     " seed=" + std::to_string(seed) + " scale=" + std::to_string(scale);
            EXPECT_NEAR(ours, ref_simd, tol) << what << " vs simd";
            if (generic) {
              generic(n, &ref_generic, 0, c.w.data(), 0, c.a.data(), 0, 1);
              EXPECT_NEAR(ours, ref_generic, tol) << what << " vs generic";
              if (isa == CpuIsa::kScalar) {
                // same summation order, no FMA contraction on either side
                EXPECT_EQ(std::memcmp(&ours, &ref_generic, 4), 0)
                    << what << " scalar " << ours << " != " << ref_generic;
              }
            }
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 0);
}

// Negative control: the same comparison must catch an activation whose block
// scale is off (a kernel reading the wrong scale) and an activation quantized
// to the wrong type.
TEST(CpuVecDot, tolerance_catches_a_wrong_scale_and_a_wrong_activation_type) {
  for (CpuIsa isa : supported_levels()) {
    const CpuKernels& k = cpu_kernels_for(isa);
    const auto& lib = ref::LibGgmlCpu::get(ggml_variant(isa));
    const int n = 1024;
    // Q4_0 with one Q8_0 activation scale doubled
    Case c = make_case(GgmlType::Q4_0, k, n, 5, 1.0f);
    float good = 0, bad = 0;
    lib.vec_dot("ggml_vec_dot_q4_0_q8_0")(n, &good, 0, c.w.data(), 0, c.a.data(), 0, 1);
    const double tol = kTolerance * dot_magnitude(GgmlType::Q4_0, c.w.data(), c.at, c.a.data(), n);
    uint16_t d;
    std::memcpy(&d, c.a.data() + 34 * 3, 2);  // block 3 of the Q8_0 row
    d = static_cast<uint16_t>(d + 0x0400);    // exponent + 1: scale x2
    std::memcpy(c.a.data() + 34 * 3, &d, 2);
    k.vec_dot[id(GgmlType::Q4_0)](n, &bad, c.w.data(), c.a.data());
    EXPECT_FALSE(std::fabs(bad - good) <= tol) << cpu_isa_name(isa) << " " << bad << " vs " << good;
    // Q4_K fed a Q8_0 activation row (the wrong type) instead of Q8_K
    Case kq = make_case(GgmlType::Q4_K, k, n, 6, 1.0f);
    float kgood = 0, kbad = 0;
    lib.vec_dot("ggml_vec_dot_q4_K_q8_K")(n, &kgood, 0, kq.w.data(), 0, kq.a.data(), 0, 1);
    std::vector<uint8_t> wrong(row_size(GgmlType::Q8_K, n), 0);
    const std::vector<float> act = random_row(n, 6 * 7919u + 1, 1.0f, true);
    lib.quantize("quantize_row_q8_0")(act.data(), wrong.data(), n);
    k.vec_dot[id(GgmlType::Q4_K)](n, &kbad, kq.w.data(), wrong.data());
    const double ktol = kTolerance * dot_magnitude(GgmlType::Q4_K, kq.w.data(), kq.at, kq.a.data(), n);
    // (a NaN result counts as caught: it is never within tolerance)
    EXPECT_FALSE(std::fabs(kbad - kgood) <= ktol) << cpu_isa_name(isa) << " " << kbad << " vs " << kgood;
  }
}

}  // namespace
}  // namespace strix::cpu::test
