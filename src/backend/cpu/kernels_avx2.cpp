// AVX2 + FMA + F16C level: the shared x86 SIMD kernels compiled for AVX2.
#include "backend/cpu/gemm_repack_x86.h"
#include "backend/cpu/gemm_x86_simd.h"
#include "backend/cpu/kernels_x86_simd.h"

namespace strix::cpu::detail {

void fill_avx2(CpuKernels& k) {
  fill_x86_simd(k);
  fill_x86_gemm(k);
  fill_x86_repack(k);  // after fill_x86_gemm: libllama's repack order for Q4_0, Q4_K, IQ4_NL
}

}  // namespace strix::cpu::detail
