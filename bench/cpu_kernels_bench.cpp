// CPU kernels: Strix (each level this CPU runs) vs libggml-cpu's own SIMD
// kernels (haswell = AVX2, zen4 = AVX-512 builds), single thread.
//   vec_dot/<type>/row/<impl>    one 4096-element row pair (stays in L1)
//   vec_dot/<type>/gemv/<impl>   4096 x 4096 weights, row by row, against one
//                                activation row (weights stream from memory)
//   quantize/<act>/<impl>        4096 floats -> activation row (bf16: the F32 -> BF16
//                                conversion ggml-cpu uses as BF16's from_float)
// bytes/s counts weight bytes (vec_dot) or float bytes in (quantize).
// Weights are quantized once by libggml-base (the types listed in
// random_block_scales are random blocks instead), activations by the libggml-cpu
// variant's quantize_row (they are bit-identical to ours, see tests/backend_cpu).
//
//   build-x/bench/cpu_kernels_bench --benchmark_filter='q4_K/gemv'
#include <benchmark/benchmark.h>

#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/kernels.h"
#include "core/cpu_features.h"
#include "quant/types.h"
#include "ref/libggml_cpu.h"
#include "ref/reference.h"

namespace {

using strix::GgmlType;
using strix::cpu::CpuIsa;
using strix::cpu::CpuKernels;

constexpr int kN = 4096;     // row length
constexpr int kRows = 4096;  // GEMV rows

const GgmlType kTypes[] = {GgmlType::Q8_0,   GgmlType::Q4_0,  GgmlType::Q4_1,    GgmlType::Q5_0,   GgmlType::Q5_1,
                           GgmlType::Q4_K,   GgmlType::Q5_K,  GgmlType::Q6_K,    GgmlType::IQ4_NL, GgmlType::IQ4_XS,
                           GgmlType::MXFP4,  GgmlType::F16,   GgmlType::Q2_K,    GgmlType::Q3_K,   GgmlType::IQ2_XXS,
                           GgmlType::IQ2_XS, GgmlType::IQ2_S, GgmlType::IQ3_XXS, GgmlType::IQ3_S,  GgmlType::IQ1_S,
                           GgmlType::IQ1_M,  GgmlType::TQ1_0, GgmlType::TQ2_0,   GgmlType::NVFP4,  GgmlType::Q1_0,
                           GgmlType::Q2_0,   GgmlType::BF16,  GgmlType::F32};

// Offsets of the fp16 scales in one block of the types whose weights are
// random blocks here (IQ1_M: its scale nibbles, set separately; NVFP4: random
// UE4M3 bytes). Their kernels' speed does not depend on the values, and the
// grid types would need an importance matrix to be quantized.
std::vector<int> random_block_scales(GgmlType t) {
  switch (t) {
    case GgmlType::Q2_K:
      return {80, 82};
    case GgmlType::Q3_K:
      return {108};
    case GgmlType::TQ1_0:
      return {52};
    case GgmlType::TQ2_0:
      return {64};
    case GgmlType::IQ2_XXS:
    case GgmlType::IQ2_XS:
    case GgmlType::IQ2_S:
    case GgmlType::IQ3_XXS:
    case GgmlType::IQ3_S:
    case GgmlType::IQ1_S:
    case GgmlType::Q1_0:
    case GgmlType::Q2_0:
      return {0};
    default:
      return {};
  }
}
bool random_blocks(GgmlType t) {
  return !random_block_scales(t).empty() || t == GgmlType::IQ1_M || t == GgmlType::NVFP4;
}

std::vector<float> normal_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// A kRows x kN weight matrix of `type` (row-major, rows contiguous).
const std::vector<uint8_t>& weights(GgmlType type) {
  static std::map<GgmlType, std::unique_ptr<std::vector<uint8_t>>> cache;
  auto& slot = cache[type];
  if (!slot) {
    const auto& g = strix::ref::LibGgml::get();
    slot = std::make_unique<std::vector<uint8_t>>(strix::row_size(type, kN) * kRows);
    if (random_blocks(type)) {
      std::mt19937 rng(1);
      for (auto& b : *slot) b = static_cast<uint8_t>(rng());
      const auto& tr = strix::type_traits(type);
      const uint16_t half = 0x2000;  // 2^-7
      for (size_t off = 0; off < slot->size(); off += tr.type_size) {
        for (int f : random_block_scales(type)) std::memcpy(slot->data() + off + f, &half, 2);
        if (type == GgmlType::IQ1_M) {  // nibble j of the scale in the top of scale word j
          for (int j = 0; j < 4; ++j) {
            uint16_t w;
            std::memcpy(&w, slot->data() + off + 48 + 2 * j, 2);
            w = static_cast<uint16_t>((w & 0x0FFF) | (((half >> (4 * j)) & 0xF) << 12));
            std::memcpy(slot->data() + off + 48 + 2 * j, &w, 2);
          }
        }
      }
      return *slot;
    }
    const auto src = normal_floats(static_cast<size_t>(kRows) * kN, 1);
    if (type == GgmlType::F32) {
      std::memcpy(slot->data(), src.data(), slot->size());
    } else if (type == GgmlType::BF16) {
      g.fp32_to_bf16_row_ref(src.data(), reinterpret_cast<uint16_t*>(slot->data()), static_cast<int64_t>(src.size()));
    } else {
      g.quantize_init(static_cast<int>(type));
      g.quantize_chunk(static_cast<int>(type), src.data(), slot->data(), 0, kRows, kN, nullptr);
    }
  }
  return *slot;
}

// One activation row of `act` type.
std::vector<uint8_t> activation(GgmlType act) {
  const auto x = normal_floats(kN, 2);
  std::vector<uint8_t> a(strix::row_size(act, kN));
  if (act == GgmlType::F16) {
    strix::ref::LibGgml::get().fp32_to_fp16_row(x.data(), reinterpret_cast<uint16_t*>(a.data()), kN);
  } else if (act == GgmlType::F32) {
    std::memcpy(a.data(), x.data(), a.size());
  } else if (act == GgmlType::BF16) {
    strix::ref::LibGgml::get().fp32_to_bf16_row_ref(x.data(), reinterpret_cast<uint16_t*>(a.data()), kN);
  } else {
    strix::ref::LibGgmlCpu::get("haswell").quantize(std::string("quantize_row_") + strix::type_traits(act).name)(
        x.data(), a.data(), kN);
  }
  return a;
}

// Calls one kernel, ours or ggml's, through one signature.
struct Dot {
  strix::cpu::VecDotFn ours = nullptr;
  strix::ref::LibGgmlCpu::VecDotFn theirs = nullptr;
  void operator()(int n, float* s, const void* x, const void* y) const {
    if (ours) {
      ours(n, s, x, y);
    } else {
      theirs(n, s, 0, x, 0, y, 0, 1);
    }
  }
};

void run_row(benchmark::State& state, GgmlType type, Dot dot) {
  const auto& w = weights(type);
  const auto a = activation(strix::cpu::cpu_kernels_for(CpuIsa::kScalar).vec_dot_type[static_cast<uint32_t>(type)]);
  const size_t row_bytes = strix::row_size(type, kN);
  float s = 0;
  for (auto _ : state) {
    dot(kN, &s, w.data(), a.data());
    benchmark::DoNotOptimize(s);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * row_bytes));
}

void run_gemv(benchmark::State& state, GgmlType type, Dot dot) {
  const auto& w = weights(type);
  const auto a = activation(strix::cpu::cpu_kernels_for(CpuIsa::kScalar).vec_dot_type[static_cast<uint32_t>(type)]);
  const size_t row_bytes = strix::row_size(type, kN);
  std::vector<float> out(kRows);
  for (auto _ : state) {
    for (int r = 0; r < kRows; ++r) dot(kN, &out[r], w.data() + row_bytes * r, a.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * row_bytes * kRows));
}

void run_quantize(benchmark::State& state, GgmlType act, strix::cpu::QuantizeActFn ours,
                  strix::ref::LibGgmlCpu::QuantizeFn theirs) {
  const auto x = normal_floats(kN, 3);
  std::vector<uint8_t> y(strix::row_size(act, kN));
  for (auto _ : state) {
    if (ours) {
      ours(x.data(), y.data(), kN);
    } else {
      theirs(x.data(), y.data(), kN);
    }
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kN * sizeof(float)));
}

const int kRegistered = [] {
  std::vector<CpuIsa> levels;
  for (CpuIsa isa : {CpuIsa::kScalar, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
    if (strix::cpu::cpu_supports(isa)) levels.push_back(isa);
  }
  std::vector<std::string> variants = {"haswell"};
  // zen4 needs Zen 4's AVX-512 extensions (BF16, VBMI ...); else the plain AVX-512 build
  if (strix::cpu::cpu_supports(CpuIsa::kAvx512))
    variants.push_back(strix::cpu_features().avx512bf16 ? "zen4" : "skylakex");
  for (GgmlType t : kTypes) {
    const uint32_t ti = static_cast<uint32_t>(t);
    const GgmlType act = strix::cpu::cpu_kernels_for(CpuIsa::kScalar).vec_dot_type[ti];
    const std::string sym = (t == GgmlType::F32 || t == GgmlType::BF16)
                                ? std::string("ggml_vec_dot_") + strix::type_traits(t).name
                                : strix::ref::ggml_vec_dot_symbol(ti, static_cast<uint32_t>(act));
    std::vector<std::pair<std::string, Dot>> impls;
    for (CpuIsa isa : levels) {
      impls.push_back({std::string("strix_") + strix::cpu::cpu_isa_name(isa),
                       Dot{strix::cpu::cpu_kernels_for(isa).vec_dot[ti], nullptr}});
    }
    for (const auto& v : variants) {
      if (auto f = strix::ref::LibGgmlCpu::get(v).vec_dot(sym)) impls.push_back({"ggml_" + v, Dot{nullptr, f}});
    }
    const std::string base = std::string("vec_dot/") + strix::type_traits(t).name;
    for (const auto& [name, dot] : impls) {
      benchmark::RegisterBenchmark((base + "/row/" + name).c_str(), run_row, t, dot);
    }
    for (const auto& [name, dot] : impls) {
      benchmark::RegisterBenchmark((base + "/gemv/" + name).c_str(), run_gemv, t, dot)->Unit(benchmark::kMillisecond);
    }
  }
  for (GgmlType act : {GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::Q8_K, GgmlType::BF16}) {
    const std::string name = strix::type_traits(act).name;
    // ggml-cpu's BF16 activation conversion is ggml_cpu_fp32_to_bf16 (same signature)
    const std::string ggml_name = act == GgmlType::BF16 ? "ggml_cpu_fp32_to_bf16" : "quantize_row_" + name;
    for (CpuIsa isa : levels) {
      benchmark::RegisterBenchmark(("quantize/" + name + "/strix_" + strix::cpu::cpu_isa_name(isa)).c_str(),
                                   run_quantize, act,
                                   strix::cpu::cpu_kernels_for(isa).quantize_act[static_cast<uint32_t>(act)], nullptr);
    }
    for (const auto& v : variants) {
      benchmark::RegisterBenchmark(("quantize/" + name + "/ggml_" + v).c_str(), run_quantize, act, nullptr,
                                   strix::ref::LibGgmlCpu::get(v).quantize(ggml_name));
    }
  }
  return 0;
}();

}  // namespace
