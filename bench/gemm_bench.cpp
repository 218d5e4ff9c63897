// GEMM tiles (CpuKernels::gemm) vs a loop over vec_dot, single thread:
// a 2048 x 2048 weight matrix times 64 activation rows (a prefill chunk),
// called as the engine's matmul does: blocks of kBlockRows weight rows x all
// 64 activation rows. The nc4/ and nc1/ rows: 4 and 1 activation rows
// (batched and single decode), best level only.
//   gemm/<type>/strix_<level>_tile     our tile
//   gemm/<type>/strix_<level>_vec_dot  the same level's vec_dot, pair by pair
//   gemm/<type>/ggml_<variant>_vec_dot libggml-cpu's vec_dot (nrc = 1), pair by pair
// libggml-cpu's own GEMMs (ggml_gemm_q4_K_8x8_q8_K ...) need its repacked
// weight and activation layouts, so they are not called here.
// Counter GFLOPs: 2 * rows * cols * n per second (CPU time).
//
//   build-x/bench/gemm_bench --benchmark_filter='q4_K'
#include <benchmark/benchmark.h>

#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
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

constexpr int kN = 2048;        // row length
constexpr int kRows = 2048;     // weight rows
constexpr int kCols = 64;       // activation rows
constexpr int kBlockRows = 64;  // weight rows per gemm call

const GgmlType kTypes[] = {GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q8_0,   GgmlType::F16,  GgmlType::F32,
                           GgmlType::Q5_K, GgmlType::Q4_0, GgmlType::IQ4_XS, GgmlType::MXFP4};

std::vector<float> normal_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

const std::vector<uint8_t>& weights(GgmlType type) {
  static std::map<GgmlType, std::unique_ptr<std::vector<uint8_t>>> cache;
  auto& slot = cache[type];
  if (!slot) {
    const auto src = normal_floats(static_cast<size_t>(kRows) * kN, 1);
    slot = std::make_unique<std::vector<uint8_t>>(strix::row_size(type, kN) * kRows);
    if (type == GgmlType::F32) {
      std::memcpy(slot->data(), src.data(), src.size() * sizeof(float));
    } else if (type == GgmlType::F16) {
      strix::ref::LibGgml::get().fp32_to_fp16_row(src.data(), reinterpret_cast<uint16_t*>(slot->data()),
                                                  static_cast<int64_t>(src.size()));
    } else {
      const auto& g = strix::ref::LibGgml::get();
      g.quantize_init(static_cast<int>(type));
      g.quantize_chunk(static_cast<int>(type), src.data(), slot->data(), 0, kRows, kN, nullptr);
    }
  }
  return *slot;
}

// kCols activation rows of `act` type, quantized by the best level.
const std::vector<uint8_t>& activations(GgmlType act) {
  static std::map<GgmlType, std::unique_ptr<std::vector<uint8_t>>> cache;
  auto& slot = cache[act];
  if (!slot) {
    const auto x = normal_floats(static_cast<size_t>(kCols) * kN, 2);
    const size_t rs = strix::row_size(act, kN);
    slot = std::make_unique<std::vector<uint8_t>>(rs * kCols);
    for (int c = 0; c < kCols; ++c) {
      if (act == GgmlType::F32) {
        std::memcpy(slot->data() + rs * c, x.data() + static_cast<size_t>(kN) * c, rs);
      } else {
        strix::cpu::cpu_kernels().quantize_act[static_cast<uint32_t>(act)](x.data() + static_cast<size_t>(kN) * c,
                                                                           slot->data() + rs * c, kN);
      }
    }
  }
  return *slot;
}

template <typename Block>
void run(benchmark::State& state, GgmlType type, int cols, Block block) {
  const GgmlType act = strix::cpu::cpu_kernels().vec_dot_type[static_cast<uint32_t>(type)];
  const auto& w = weights(type);
  const auto& a = activations(act);
  const size_t bx = strix::row_size(type, kN);
  const size_t by = strix::row_size(act, kN);
  std::vector<float> out(static_cast<size_t>(kRows) * kCols);
  for (auto _ : state) {
    for (int r0 = 0; r0 < kRows; r0 += kBlockRows) {
      block(w.data() + bx * r0, bx, a.data(), by, cols, out.data() + r0, static_cast<size_t>(kRows));
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.counters["GFLOPs"] = benchmark::Counter(2.0 * kRows * cols * kN * static_cast<double>(state.iterations()),
                                                benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

void register_all() {
  for (GgmlType type : kTypes) {
    const std::string name = strix::type_traits(type).name;
    for (auto [isa, cols] : {std::pair{CpuIsa::kAvx2, kCols}, std::pair{CpuIsa::kAvx512, kCols},
                             std::pair{CpuIsa::kAvx512, 4}, std::pair{CpuIsa::kAvx512, 1}}) {
      if (!strix::cpu::cpu_supports(isa)) continue;
      const std::string shape = cols == kCols ? "" : "nc" + std::to_string(cols) + "/";
      const CpuKernels* k = &strix::cpu::cpu_kernels_for(isa);
      const uint32_t t = static_cast<uint32_t>(type);
      const std::string level = strix::cpu::cpu_isa_name(isa);
      benchmark::RegisterBenchmark(("gemm/" + name + "/" + shape + "strix_" + level + "_tile").c_str(),
                                   [k, t, type, cols](benchmark::State& st) {
                                     run(st, type, cols,
                                         [&](const uint8_t* x, size_t bx, const uint8_t* y, size_t by, int nc, float* s,
                                             size_t bs) { k->gemm[t](kN, x, bx, kBlockRows, y, by, nc, s, bs); });
                                   });
      benchmark::RegisterBenchmark(
          ("gemm/" + name + "/" + shape + "strix_" + level + "_vec_dot").c_str(),
          [k, t, type, cols](benchmark::State& st) {
            run(st, type, cols,
                [&](const uint8_t* x, size_t bx, const uint8_t* y, size_t by, int nc, float* s, size_t bs) {
                  for (int c = 0; c < nc; ++c) {
                    for (int r = 0; r < kBlockRows; ++r) {
                      k->vec_dot[t](kN, s + c * bs + r, x + r * bx, y + c * by);
                    }
                  }
                });
          });
    }
    const GgmlType act = strix::cpu::cpu_kernels().vec_dot_type[static_cast<uint32_t>(type)];
    const std::string sym = type == GgmlType::F32 ? "ggml_vec_dot_f32"
                                                  : strix::ref::ggml_vec_dot_symbol(static_cast<uint32_t>(type),
                                                                                    static_cast<uint32_t>(act));
    for (const char* variant : {"haswell", "zen4"}) {
      if (std::string(variant) == "zen4" && !strix::cpu_features().avx512bf16) continue;
      const auto fn = strix::ref::LibGgmlCpu::get(variant).vec_dot(sym);
      if (!fn) continue;
      benchmark::RegisterBenchmark(
          ("gemm/" + name + "/ggml_" + variant + "_vec_dot").c_str(), [fn, type](benchmark::State& st) {
            run(st, type, kCols,
                [&](const uint8_t* x, size_t bx, const uint8_t* y, size_t by, int nc, float* s, size_t bs) {
                  for (int c = 0; c < nc; ++c) {
                    for (int r = 0; r < kBlockRows; ++r) {
                      fn(kN, s + c * bs + r, 0, x + r * bx, 0, y + c * by, 0, 1);
                    }
                  }
                });
          });
    }
  }
}

const int kRegistered = (register_all(), 0);

}  // namespace
