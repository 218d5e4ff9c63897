// Run-time choice of the CPU kernel level (see kernels.h).
#include "backend/cpu/kernels.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "core/cpu_features.h"
#include "core/error.h"

namespace strix::cpu {

namespace {

// The tile as a loop over vec_dot, for every type whose level has no GEMM
// kernel. One function per type (vec_dot fixed at compile time through the
// table index) so the loop calls a known pointer.
template <int kIsa, int kType>
void gemm_by_vec_dot(int n, const void* x, size_t bx, int nr, const void* y, size_t by, int nc, float* s,
                     size_t bs) {
  const VecDotFn dot = cpu_kernels_for(static_cast<CpuIsa>(kIsa)).vec_dot[kType];
  const auto* xb = static_cast<const uint8_t*>(x);
  const auto* yb = static_cast<const uint8_t*>(y);
  for (int c = 0; c < nc; ++c) {
    for (int r = 0; r < nr; ++r) dot(n, s + c * bs + r, xb + r * bx, yb + c * by);
  }
}

template <int kIsa, int... kTypes>
void fill_gemm_fallbacks(CpuKernels& k, std::integer_sequence<int, kTypes...>) {
  ((k.gemm_is_vec_dot[kTypes] = k.gemm_is_vec_dot[kTypes] || (k.gemm[kTypes] == nullptr && k.vec_dot[kTypes] != nullptr)),
   ...);
  ((k.gemm[kTypes] = (k.gemm[kTypes] == nullptr && k.vec_dot[kTypes] != nullptr) ? &gemm_by_vec_dot<kIsa, kTypes>
                                                                                  : k.gemm[kTypes]),
   ...);
}

CpuKernels build(CpuIsa isa) {
  CpuKernels k;
  detail::fill_scalar(k);
  if (isa >= CpuIsa::kAvx2) detail::fill_avx2(k);
  if (isa >= CpuIsa::kAvx512) detail::fill_avx512(k);
  k.isa = isa;
  constexpr auto kTypes = std::make_integer_sequence<int, static_cast<int>(kGgmlTypeCount)>{};
  switch (isa) {
    case CpuIsa::kScalar:
      fill_gemm_fallbacks<0>(k, kTypes);
      break;
    case CpuIsa::kAvx2:
      fill_gemm_fallbacks<1>(k, kTypes);
      break;
    case CpuIsa::kAvx512:
      fill_gemm_fallbacks<2>(k, kTypes);
      break;
  }
  return k;
}

}  // namespace

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kScalar:
      return "scalar";
    case CpuIsa::kAvx2:
      return "avx2";
    case CpuIsa::kAvx512:
      return "avx512";
  }
  return "?";
}

bool cpu_supports(CpuIsa isa) {
  const CpuFeatures& f = cpu_features();
  switch (isa) {
    case CpuIsa::kScalar:
      return true;
    case CpuIsa::kAvx2:
      return f.avx2 && f.fma && f.f16c;
    case CpuIsa::kAvx512:
      return f.avx2 && f.fma && f.f16c && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.avx512vnni;
  }
  return false;
}

CpuIsa best_cpu_isa() {
  if (cpu_supports(CpuIsa::kAvx512)) return CpuIsa::kAvx512;
  if (cpu_supports(CpuIsa::kAvx2)) return CpuIsa::kAvx2;
  return CpuIsa::kScalar;
}

CpuIsa parse_cpu_isa(const char* name) {
  for (CpuIsa isa : {CpuIsa::kScalar, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
    if (std::strcmp(name, cpu_isa_name(isa)) == 0) return isa;
  }
  throw Error(std::string("STRIX_ISA=") + name + ": unknown level (scalar, avx2, avx512)");
}

const CpuKernels& cpu_kernels_for(CpuIsa isa) {
  if (!cpu_supports(isa)) {
    throw Refusal(std::string("CPU kernels: this CPU cannot run the ") + cpu_isa_name(isa) + " level");
  }
  // Built once per level; immutable afterwards.
  static const CpuKernels tables[3] = {build(CpuIsa::kScalar),
                                       cpu_supports(CpuIsa::kAvx2) ? build(CpuIsa::kAvx2) : CpuKernels{},
                                       cpu_supports(CpuIsa::kAvx512) ? build(CpuIsa::kAvx512) : CpuKernels{}};
  return tables[static_cast<int>(isa)];
}

const CpuKernels& cpu_kernels_for_env(const char* strix_isa) {
  return cpu_kernels_for((strix_isa && *strix_isa) ? parse_cpu_isa(strix_isa) : best_cpu_isa());
}

const CpuKernels& cpu_kernels() {
  static const CpuKernels& chosen = cpu_kernels_for_env(std::getenv("STRIX_ISA"));
  return chosen;
}

}  // namespace strix::cpu
