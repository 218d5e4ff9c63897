// CPU kernels: Strix (each level this CPU runs) vs libggml-cpu's own SIMD
// kernels (haswell = AVX2, zen4 = AVX-512 builds), single thread.
//   vec_dot/<type>/row/<impl>    one 4096-element row pair (stays in L1)
//   vec_dot/<type>/gemv/<impl>   4096 x 4096 weights, row by row, against one
//                                activation row (weights stream from memory)
//   quantize/<act>/<impl>        4096 floats -> activation row
// bytes/s counts weight bytes (vec_dot) or float bytes in (quantize).
// Weights are quantized once by libggml-base, activations by the libggml-cpu
// variant's quantize_row (they are bit-identical to ours, see tests/backend_cpu).
//
//   build-x/bench/cpu_kernels_bench --benchmark_filter='q4_K/gemv'
#include <benchmark/benchmark.h>

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

const GgmlType kTypes[] = {GgmlType::Q8_0,   GgmlType::Q4_0,   GgmlType::Q4_1,  GgmlType::Q5_0,
                           GgmlType::Q5_1,   GgmlType::Q4_K,   GgmlType::Q5_K,  GgmlType::Q6_K,
                           GgmlType::IQ4_NL, GgmlType::IQ4_XS, GgmlType::MXFP4, GgmlType::F16};

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
    const auto src = normal_floats(static_cast<size_t>(kRows) * kN, 1);
    slot = std::make_unique<std::vector<uint8_t>>(strix::row_size(type, kN) * kRows);
    g.quantize_init(static_cast<int>(type));
    g.quantize_chunk(static_cast<int>(type), src.data(), slot->data(), 0, kRows, kN, nullptr);
  }
  return *slot;
}

// One activation row of `act` type.
std::vector<uint8_t> activation(GgmlType act) {
  const auto x = normal_floats(kN, 2);
  std::vector<uint8_t> a(strix::row_size(act, kN));
  if (act == GgmlType::F16) {
    strix::ref::LibGgml::get().fp32_to_fp16_row(x.data(), reinterpret_cast<uint16_t*>(a.data()), kN);
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
    const std::string sym = strix::ref::ggml_vec_dot_symbol(ti, static_cast<uint32_t>(act));
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
  for (GgmlType act : {GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::Q8_K}) {
    const std::string name = strix::type_traits(act).name;
    for (CpuIsa isa : levels) {
      benchmark::RegisterBenchmark(("quantize/" + name + "/strix_" + strix::cpu::cpu_isa_name(isa)).c_str(),
                                   run_quantize, act,
                                   strix::cpu::cpu_kernels_for(isa).quantize_act[static_cast<uint32_t>(act)], nullptr);
    }
    for (const auto& v : variants) {
      benchmark::RegisterBenchmark(("quantize/" + name + "/ggml_" + v).c_str(), run_quantize, act, nullptr,
                                   strix::ref::LibGgmlCpu::get(v).quantize("quantize_row_" + name));
    }
  }
  return 0;
}();

}  // namespace
