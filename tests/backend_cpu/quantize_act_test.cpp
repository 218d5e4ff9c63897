// Activation quantizers vs libggml-cpu's own quantize_row_q8_0 / q8_1 / q8_K
// of the matching build (x64 for scalar, haswell for avx2, zen4 for avx512):
// the bytes must be identical. ggml's x86 SIMD q8_0/q8_1 round half to even
// (and scale by 127/amax) where the reference rounds half away from zero, so
// a row with exact .5 products tells the two apart (negative control).
#include <gtest/gtest.h>

#include <cstring>

#include "test_util.h"

namespace strix::cpu::test {
namespace {

std::vector<std::vector<float>> input_rows(int n) {
  std::vector<std::vector<float>> rows;
  for (uint32_t seed = 1; seed <= 4; ++seed) rows.push_back(random_row(n, seed, 1.0f, seed % 2 == 0));
  rows.push_back(random_row(n, 9, 1e-6f, false));
  rows.push_back(random_row(n, 10, 1e4f, true));
  rows.push_back(std::vector<float>(n, 0.0f));  // all-zero blocks
  // ties: amax 127 per block so x * 127/amax = x, and many x = k + 0.5
  std::vector<float> ties(n);
  for (int i = 0; i < n; ++i) ties[i] = (i % 32 == 0) ? 127.0f : static_cast<float>(i % 17) - 8.5f;
  rows.push_back(ties);
  // a block whose largest magnitude appears with both signs (q8_K picks the first)
  std::vector<float> signs = random_row(n, 11, 1.0f, false);
  signs[3] = -50.0f;
  signs[100] = 50.0f;
  rows.push_back(signs);
  return rows;
}

const GgmlType kActTypes[] = {GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::Q8_K};

TEST(CpuQuantizeAct, bytes_match_libggml_cpu_on_every_level) {
  const int n = 4096;
  int checked = 0;
  for (CpuIsa isa : supported_levels()) {
    const CpuKernels& k = cpu_kernels_for(isa);
    const auto& lib = ref::LibGgmlCpu::get(ggml_variant(isa));
    for (GgmlType at : kActTypes) {
      const auto ref_q = lib.quantize(std::string("quantize_row_") + type_traits(at).name);
      ASSERT_NE(ref_q, nullptr);
      ASSERT_NE(k.quantize_act[id(at)], nullptr);
      const size_t bytes = row_size(at, n);
      for (const auto& row : input_rows(n)) {
        std::vector<uint8_t> ours(bytes, 0x11), theirs(bytes, 0x22);
        k.quantize_act[id(at)](row.data(), ours.data(), n);
        ref_q(row.data(), theirs.data(), n);
        if (at == GgmlType::Q8_K) {
          // ggml leaves bsums unwritten for an all-zero block (d = 0, so they
          // never matter); ours are defined. Compare everything else.
          for (int b = 0; b < n / 256; ++b) {
            float d;
            std::memcpy(&d, theirs.data() + 292 * b, 4);
            if (d == 0.0f) std::memcpy(theirs.data() + 292 * b + 260, ours.data() + 292 * b + 260, 32);
          }
        }
        EXPECT_EQ(std::memcmp(ours.data(), theirs.data(), bytes), 0)
            << cpu_isa_name(isa) << " " << type_traits(at).name << " row " << checked;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 0);
}

TEST(CpuQuantizeAct, f16_activation_matches_libggml) {
  const int n = 1000;  // not a multiple of 8: exercises the tail
  const auto row = random_row(n, 3, 10.0f, true);
  std::vector<uint16_t> theirs(n);
  ref::LibGgml::get().fp32_to_fp16_row(row.data(), theirs.data(), n);
  for (CpuIsa isa : supported_levels()) {
    std::vector<uint16_t> ours(n);
    cpu_kernels_for(isa).quantize_act[id(GgmlType::F16)](row.data(), ours.data(), n);
    EXPECT_EQ(ours, theirs) << cpu_isa_name(isa);
  }
}

// The tie row separates ggml's SIMD rounding from the reference rounding, so
// the byte comparison above would catch a level using the wrong one.
TEST(CpuQuantizeAct, tie_row_separates_simd_and_reference_rounding) {
  if (!cpu_supports(CpuIsa::kAvx2)) GTEST_SKIP() << "no AVX2";
  const int n = 256;
  const auto rows = input_rows(n);
  const auto& ties = rows[7];
  const size_t bytes = row_size(GgmlType::Q8_0, n);
  std::vector<uint8_t> scalar(bytes), simd(bytes), haswell(bytes);
  cpu_kernels_for(CpuIsa::kScalar).quantize_act[id(GgmlType::Q8_0)](ties.data(), scalar.data(), n);
  cpu_kernels_for(CpuIsa::kAvx2).quantize_act[id(GgmlType::Q8_0)](ties.data(), simd.data(), n);
  ref::LibGgmlCpu::get("haswell").quantize("quantize_row_q8_0")(ties.data(), haswell.data(), n);
  EXPECT_NE(scalar, haswell);  // reference rounding differs from ggml-cpu's AVX2 path
  EXPECT_EQ(simd, haswell);
}

}  // namespace
}  // namespace strix::cpu::test
