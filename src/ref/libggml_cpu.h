// The pinned ggml CPU backends (libggml-cpu-<variant>.so from the npm package)
// as a reference for Strix's CPU kernels: their exported vec_dot and
// activation quantizer symbols, called directly.
//
// Variants used: "x64" (baseline, no AVX), "haswell" (AVX2), "zen4" and
// "skylakex" (AVX-512). Each is dlopen'ed once (after libggml-base.so) and
// ggml_cpu_init() is run in it, since some builds read fp16 tables it fills.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "ref/reference.h"

namespace strix::ref {

class LibGgmlCpu {
 public:
  // ggml's signature; bs/bx/by are strides used only when nrc > 1.
  using VecDotFn = void (*)(int n, float* s, size_t bs, const void* x, size_t bx, const void* y, size_t by, int nrc);
  using QuantizeFn = void (*)(const float* x, void* y, int64_t k);

  // The process-wide instance of one variant; throws Error when absent.
  static const LibGgmlCpu& get(const std::string& variant);

  // "ggml_vec_dot_q4_K_q8_K", "ggml_vec_dot_q4_K_q8_K_generic", "ggml_vec_dot_f16" ...
  // nullptr when the library does not export the symbol.
  VecDotFn vec_dot(const std::string& symbol) const;
  // "quantize_row_q8_0", "quantize_row_q8_0_generic" ...; nullptr when absent.
  QuantizeFn quantize(const std::string& symbol) const;

  const SharedLib& lib() const { return lib_; }

 private:
  explicit LibGgmlCpu(const std::string& variant);
  SharedLib lib_;
};

// ggml's name of the vec_dot between a weight type and its activation type:
// "ggml_vec_dot_q4_0_q8_0", or "ggml_vec_dot_f16" for F16 x F16.
std::string ggml_vec_dot_symbol(uint32_t weight_type, uint32_t act_type);

}  // namespace strix::ref
