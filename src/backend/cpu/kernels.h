// CPU kernel table: quantized dot products and activation quantizers, with
// llama.cpp's semantics, chosen once at run time from cpu_features().
//
// A weight row of type W is multiplied with an activation row quantized to
// vec_dot_type[W] (as ggml-cpu pairs them: F32 for F32, F16 for F16, BF16 for BF16,
// Q8_0 for Q4_0/Q5_0/Q8_0/IQ4_NL/MXFP4/NVFP4/Q1_0/Q2_0, Q8_1 for Q4_1/Q5_1, Q8_K
// for the K-quants, the IQ1/IQ2/IQ3/IQ4_XS grid types and TQ1_0/TQ2_0).
//
// Levels: scalar (kernels_scalar.cpp, the reference), avx2 (kernels_avx2.cpp),
// avx512 (kernels_avx512.cpp). A level starts from the table of the level below
// and overrides what it implements, so every entry is always filled.
// STRIX_ISA=scalar|avx2|avx512 forces a level (tests, benchmarks); a level the
// CPU lacks is refused, never run.
#pragma once

#include <cstdint>

#include "quant/types.h"

namespace strix::cpu {

// *s = dot(x[0..n), y[0..n)); x is a weight row, y an activation row of
// vec_dot_type. n is a multiple of both block sizes. No allocation, no state.
using VecDotFn = void (*)(int n, float* s, const void* x, const void* y);
// Quantize k floats (a multiple of the block size) into an activation row.
using QuantizeActFn = void (*)(const float* x, void* y, int64_t k);
// A tile of a matrix product, for prefill and batched decode:
//   s[c * bs + r] = dot(x + r * bx, y + c * by)   for r < nr, c < nc
// x: nr weight rows of the table's type, bx bytes apart; y: nc activation rows
// of vec_dot_type, by bytes apart; s: floats, bs floats between columns. Any
// nr, nc >= 1 (the kernel tiles internally, reusing loaded rows across the
// tile). Each s entry equals what vec_dot computes up to float summation order.
using GemmFn = void (*)(int n, const void* x, size_t bx, int nr, const void* y, size_t by, int nc, float* s,
                        size_t bs);

enum class CpuIsa : int { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

const char* cpu_isa_name(CpuIsa isa);  // "scalar" / "avx2" / "avx512"

struct CpuKernels {
  CpuIsa isa = CpuIsa::kScalar;
  VecDotFn vec_dot[kGgmlTypeCount] = {};            // by weight type; nullptr: not supported
  GgmlType vec_dot_type[kGgmlTypeCount] = {};       // by weight type
  QuantizeActFn quantize_act[kGgmlTypeCount] = {};  // by activation type (Q8_0, Q8_1, Q8_K, F16, BF16; F32 = none)
  GemmFn gemm[kGgmlTypeCount] = {};  // by weight type; where a level has none, a loop over vec_dot
  // by weight type: every column in libllama's gemv order, bit for bit a gemm call of one column
  // at a time (MoE experts); nullptr: call gemm one column at a time
  GemmFn gemv_cols[kGgmlTypeCount] = {};
  // by weight type: gemm sums every output in vec_dot's order, whatever the column count
  bool gemm_is_vec_dot[kGgmlTypeCount] = {};
};

// The best level this CPU runs, or the one STRIX_ISA names (read once).
// Throws Refusal when STRIX_ISA names a level the CPU lacks, Error when it is
// not a level name.
const CpuKernels& cpu_kernels();
// What cpu_kernels() picks for a STRIX_ISA value (nullptr or "" = best level).
const CpuKernels& cpu_kernels_for_env(const char* strix_isa);
// The table of one level; throws Refusal when the CPU cannot run it.
const CpuKernels& cpu_kernels_for(CpuIsa isa);
// The highest level the CPU supports.
CpuIsa best_cpu_isa();
// Whether the CPU supports `isa`.
bool cpu_supports(CpuIsa isa);
// Parse a STRIX_ISA value; throws Error naming the value when unknown.
CpuIsa parse_cpu_isa(const char* name);

// Filled by each level's file (internal; exposed for the dispatch file).
namespace detail {
void fill_scalar(CpuKernels& k);
void fill_avx2(CpuKernels& k);
void fill_avx512(CpuKernels& k);
}  // namespace detail

}  // namespace strix::cpu
