// What the CPU we run on can execute (checked once, at run time): kernels are
// compiled per ISA and chosen from these flags, never from compile-time macros.
#pragma once

#include <string>

namespace strix {

struct CpuFeatures {
  bool sse42 = false;
  bool avx = false;
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512dq = false;
  bool avx512vnni = false;
  bool avx512bf16 = false;
  bool avxvnni = false;

  // "avx2 fma f16c avx512f ..." in a fixed order.
  std::string to_string() const;
};

const CpuFeatures& cpu_features();

}  // namespace strix
