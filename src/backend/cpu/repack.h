// Which weights libllama's CPU backend "repacks", i.e. multiplies with its
// interleaved gemm / gemv kernels instead of vec_dot: on x86 with AVX2 (every
// level above scalar), Q4_0, Q4_K and IQ4_NL weights, and at the AVX-512
// level also Q2_K, whose row count ne[1] is a multiple of 8 (ggml-cpu
// repack.cpp, ggml_repack_get_optimal_repack_type).
// Their float summation order is not vec_dot's, and differs between
//   - a 2-D product (mul_mat): gemm for the first n - n % 4 activation rows,
//     gemv for the n % 4 left, and
//   - a 3-D one (mul_mat_id, MoE experts): gemv for every activation row.
// CpuKernels::gemm of these types at the x86 levels reproduces the 2-D order
// (gemm_repack_x86.h); matmul (ops/cpu_ops.cpp) calls it one column at a time
// for experts, and loops over vec_dot for the weights libllama does not
// repack. MXFP4 has repack kernels in that library too, but its experts
// (gpt-oss) match libllama bit for bit in vec_dot's order (strix parity on a
// synthetic gpt-oss model), so it stays a vec_dot type here.
#pragma once

#include <cstdint>

#include "backend/cpu/kernels.h"

namespace strix::cpu {

inline bool libllama_repack_type(CpuIsa isa, GgmlType t) {
  return (isa != CpuIsa::kScalar && (t == GgmlType::Q4_0 || t == GgmlType::Q4_K || t == GgmlType::IQ4_NL)) ||
         (isa == CpuIsa::kAvx512 && t == GgmlType::Q2_K);
}

inline bool libllama_repacks(CpuIsa isa, GgmlType t, int64_t ne1) {
  return libllama_repack_type(isa, t) && ne1 % 8 == 0;
}

}  // namespace strix::cpu
