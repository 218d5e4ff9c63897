// AVX-512 level: the shared x86 SIMD kernels compiled with AVX-512 VNNI/VL:
// the u8*s8 and i16*i16 multiply-adds become single VNNI instructions on
// 256-bit vectors (dpbusd / dpwssd); 512-bit vectors measured no faster here.
#include "backend/cpu/gemm_repack_x86.h"
#include "backend/cpu/gemm_x86_simd.h"
#include "backend/cpu/kernels_x86_simd.h"

namespace strix::cpu::detail {

void fill_avx512(CpuKernels& k) {
  fill_x86_simd(k);
  fill_x86_gemm(k);
  fill_x86_repack(k);  // after fill_x86_gemm: libllama's repack order for Q4_0, Q4_K, IQ4_NL
}

}  // namespace strix::cpu::detail
