// Run-time choice of the kernel level: never a level the CPU lacks,
// STRIX_ISA forces a level, bad names are errors.
#include <gtest/gtest.h>

#include <cstdlib>

#include "backend/cpu/kernels.h"
#include "core/cpu_features.h"
#include "core/error.h"

namespace strix::cpu {
namespace {

TEST(CpuDispatch, best_level_is_supported_by_this_cpu) {
  const CpuFeatures& f = cpu_features();
  const CpuIsa best = best_cpu_isa();
  EXPECT_TRUE(cpu_supports(best));
  if (best >= CpuIsa::kAvx2) {
    EXPECT_TRUE(f.avx2 && f.fma && f.f16c);
  }
  if (best == CpuIsa::kAvx512) {
    EXPECT_TRUE(f.avx512f && f.avx512bw && f.avx512vl && f.avx512vnni);
  }
  if (f.avx2 && f.fma && f.f16c) {
    EXPECT_GE(best, CpuIsa::kAvx2);  // and never below what it can run
  }
}

TEST(CpuDispatch, default_table_is_the_best_level_or_the_forced_one) {
  const char* env = std::getenv("STRIX_ISA");
  const CpuIsa expected = (env && *env) ? parse_cpu_isa(env) : best_cpu_isa();
  EXPECT_EQ(cpu_kernels().isa, expected);
  EXPECT_TRUE(cpu_supports(cpu_kernels().isa));
}

TEST(CpuDispatch, strix_isa_forces_each_supported_level) {
  for (CpuIsa isa : {CpuIsa::kScalar, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
    if (cpu_supports(isa)) {
      const CpuKernels& k = cpu_kernels_for_env(cpu_isa_name(isa));
      EXPECT_EQ(k.isa, isa);
      EXPECT_EQ(&k, &cpu_kernels_for(isa));
    } else {
      EXPECT_THROW(cpu_kernels_for_env(cpu_isa_name(isa)), Refusal) << cpu_isa_name(isa);
    }
  }
  EXPECT_EQ(cpu_kernels_for_env(nullptr).isa, best_cpu_isa());
  EXPECT_EQ(cpu_kernels_for_env("").isa, best_cpu_isa());
  EXPECT_THROW(cpu_kernels_for_env("sse9"), Error);
}

TEST(CpuDispatch, higher_levels_replace_kernels_and_keep_every_entry_filled) {
  const CpuKernels& scalar = cpu_kernels_for(CpuIsa::kScalar);
  for (CpuIsa isa : {CpuIsa::kAvx2, CpuIsa::kAvx512}) {
    if (!cpu_supports(isa)) continue;
    const CpuKernels& k = cpu_kernels_for(isa);
    for (uint32_t t = 0; t < kGgmlTypeCount; ++t) {
      EXPECT_EQ(k.vec_dot[t] != nullptr, scalar.vec_dot[t] != nullptr) << t;
      EXPECT_EQ(k.vec_dot_type[t], scalar.vec_dot_type[t]) << t;
      EXPECT_EQ(k.quantize_act[t] != nullptr, scalar.quantize_act[t] != nullptr) << t;
    }
    // the SIMD Q4_K kernel is this level's own, not the scalar one
    EXPECT_NE(k.vec_dot[static_cast<uint32_t>(GgmlType::Q4_K)], scalar.vec_dot[static_cast<uint32_t>(GgmlType::Q4_K)]);
  }
}

}  // namespace
}  // namespace strix::cpu
