// Shared helpers of the CPU kernel tests: rows quantized by libggml, the
// libggml-cpu variant that matches each Strix level, and the "magnitude" of
// a dot product used to scale tolerances.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/kernels.h"
#include "core/cpu_features.h"
#include "quant/types.h"
#include "ref/libggml_cpu.h"
#include "ref/reference.h"

namespace strix::cpu::test {

// The ggml CPU build whose SIMD code corresponds to a Strix level.
inline const char* ggml_variant(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kScalar:
      return "x64";
    case CpuIsa::kAvx2:
      return "haswell";
    case CpuIsa::kAvx512:
      // zen4 is built for AMD Zen 4 (VBMI, BF16 ...); without BF16 use the
      // plain AVX-512 build. (A CPU with BF16 but no VBMI would need
      // cooperlake; none such is in use here.)
      return cpu_features().avx512bf16 ? "zen4" : "skylakex";
  }
  return "x64";
}

inline std::vector<CpuIsa> supported_levels() {
  std::vector<CpuIsa> out;
  for (CpuIsa isa : {CpuIsa::kScalar, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
    if (cpu_supports(isa)) out.push_back(isa);
  }
  return out;
}

// n floats ~ N(0, scale), with a few outliers of 20x when `outliers`.
inline std::vector<float> random_row(int n, uint32_t seed, float scale, bool outliers) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  if (outliers) {
    for (int i = 0; i < n; i += 97) v[i] *= 20.0f;
  }
  return v;
}

// One row quantized by libggml-base (quantize_chunk, the reference path).
inline std::vector<uint8_t> ggml_quantize(GgmlType type, const std::vector<float>& x) {
  const auto& g = ref::LibGgml::get();
  const int t = static_cast<int>(type);
  std::vector<uint8_t> out(row_size(type, static_cast<int64_t>(x.size())) + 64, 0xAB);
  g.quantize_init(t);
  g.quantize_chunk(t, x.data(), out.data(), 0, 1, static_cast<int64_t>(x.size()), nullptr);
  return out;
}

// Sum of |w_i * a_i| over the dequantized rows, in double: the size of the
// terms a float summation rounds, so tolerances scale with it, not with the
// (possibly cancelling) result.
inline double dot_magnitude(GgmlType wt, const void* w, GgmlType at, const void* a, int n) {
  const auto& g = ref::LibGgml::get();
  auto dequant = [&](GgmlType t, const void* src, std::vector<float>& dst) {
    if (t == GgmlType::F16) {
      g.fp16_to_fp32_row(static_cast<const uint16_t*>(src), dst.data(), n);
    } else if (auto f = g.dequantize_row(static_cast<uint32_t>(t))) {
      f(src, dst.data(), n);
    } else {
      // libggml exports no dequantize_row_q8_1; the magnitude only scales the tolerance
      type_traits(t).to_float(src, dst.data(), n);
    }
  };
  std::vector<float> fw(n), fa(n);
  dequant(wt, w, fw);
  dequant(at, a, fa);
  double m = 0;
  for (int i = 0; i < n; ++i) m += std::fabs(static_cast<double>(fw[i]) * fa[i]);
  return m;
}

inline uint32_t id(GgmlType t) { return static_cast<uint32_t>(t); }

}  // namespace strix::cpu::test
