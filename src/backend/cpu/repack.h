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

// How to call our kernels so that every output of a weight product is summed
// in the order libllama's ggml-cpu sums it (all the rules in one place):
// - types it repacks: gemm (groups of 4 columns) + gemv, which our gemm
//   reproduces for blocks of columns; a weight it does not repack
//   (rows % 8 != 0) goes to vec_dot;
// - F32/F16: tinyBLAS (one chain per output) for n >= 2 when the rows are a
//   multiple of 4, else vec_dot; our gemm is tinyBLAS for >= 2 columns and
//   vec_dot for 1, so a lone last column of a batch must not be split off;
// - IQ4_XS: its 2-D product sums in our gemm's order when n >= 8 and in
//   vec_dot's below (measured: strix parity --ubatch 1..64 is exact only with
//   this split);
// - mul_mat_id (experts) multiplies one column at a time: gemv for repacked
//   types and vec_dot for F32/F16 (our gemm for one column), vec_dot for every
//   other type.
struct MatmulOrder {
  bool by_vec_dot = false;      // every output through vec_dot
  int64_t tok_block = 0;        // columns per gemm call
  int64_t vec_dot_tail = 0;     // the last columns that go through vec_dot instead
  bool keep_pair_tail = false;  // never leave a single column for the last gemm call
};

inline MatmulOrder libllama_matmul_order(CpuIsa isa, GgmlType t, int64_t rows, bool experts, int64_t n,
                                         int64_t tok_block) {
  const bool repack = libllama_repack_type(isa, t);
  const bool dense_float = t == GgmlType::F32 || t == GgmlType::F16;
  const bool iq4_xs_gemm = t == GgmlType::IQ4_XS && n >= 8;
  MatmulOrder o;
  o.by_vec_dot = (repack && rows % 8 != 0) || (dense_float && rows % 4 != 0) ||
                 (experts && !repack && !dense_float && !iq4_xs_gemm);
  o.tok_block = (experts && !iq4_xs_gemm) ? 1 : tok_block;
  o.vec_dot_tail = (t == GgmlType::IQ4_XS && !experts && n < 8) ? n : 0;
  o.keep_pair_tail = dense_float && o.tok_block > 2;
  return o;
}

}  // namespace strix::cpu
