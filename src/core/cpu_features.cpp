#include "core/cpu_features.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <cstdint>

namespace strix {

namespace {

#if defined(__x86_64__) || defined(__i386__)
uint64_t read_xcr0() {
  uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

CpuFeatures detect() {
  CpuFeatures f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  f.sse42 = c & bit_SSE4_2;
  const bool osxsave = c & bit_OSXSAVE;
  const uint64_t xcr0 = osxsave ? read_xcr0() : 0;
  const bool os_avx = (xcr0 & 0x6) == 0x6;            // XMM and YMM state
  const bool os_avx512 = (xcr0 & 0xe6) == 0xe6;       // plus opmask and ZMM state
  f.avx = os_avx && (c & bit_AVX);
  f.fma = f.avx && (c & bit_FMA);
  f.f16c = f.avx && (c & bit_F16C);
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    f.avx2 = f.avx && (b & bit_AVX2);
    f.avx512f = os_avx512 && (b & bit_AVX512F);
    f.avx512bw = f.avx512f && (b & bit_AVX512BW);
    f.avx512vl = f.avx512f && (b & bit_AVX512VL);
    f.avx512dq = f.avx512f && (b & bit_AVX512DQ);
    f.avx512vnni = f.avx512f && (c & bit_AVX512VNNI);
  }
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) {
    f.avx512bf16 = f.avx512f && (a & (1u << 5));
    f.avxvnni = f.avx2 && (a & (1u << 4));
  }
  return f;
}
#else
CpuFeatures detect() { return {}; }
#endif

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

std::string CpuFeatures::to_string() const {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(sse42, "sse4.2");
  add(avx, "avx");
  add(avx2, "avx2");
  add(fma, "fma");
  add(f16c, "f16c");
  add(avx512f, "avx512f");
  add(avx512bw, "avx512bw");
  add(avx512vl, "avx512vl");
  add(avx512dq, "avx512dq");
  add(avx512vnni, "avx512vnni");
  add(avx512bf16, "avx512bf16");
  add(avxvnni, "avxvnni");
  return s.empty() ? "none" : s;
}

}  // namespace strix
