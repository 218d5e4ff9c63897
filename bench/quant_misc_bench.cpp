// Row conversion micro-benchmark on a memory-sized row: for every ggml type
// Strix knows, our reference dequantize_row / quantize_row_ref against
// libggml-base's exported ones on the same 1M-element row (4096 x 256), so the
// row (4 MiB of floats) does not fit in L2. quant_bench.cpp measures the same
// pairs on L2-resident 64K rows; this one shows what is left once memory
// traffic counts.
//
//   build-x/bench/quant_misc_bench --benchmark_min_time=0.05
//   names: dequant_1m/<type>/strix, dequant_1m/<type>/libggml, quant_ref_1m/<type>/...
//
// A type whose Strix function is still a placeholder (throws Refusal) is
// reported with SkipWithError, as is one libggml-base does not export.
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "quant/types.h"
#include "ref/reference.h"

namespace {

using strix::GgmlType;
using strix::TypeTraits;

constexpr int64_t kRowElements = 4096 * 256;  // a multiple of every block size (32, 64, 128, 256)

using DequantFn = void (*)(const void*, float*, int64_t);
using QuantFn = void (*)(const float*, void*, int64_t);

// libggml names its half-float rows differently (ggml_fp16_to_fp32_row ...);
// these thunks give them the row-function shape.
void ref_f16_to_f32(const void* x, float* y, int64_t k) {
  strix::ref::LibGgml::get().fp16_to_fp32_row(static_cast<const uint16_t*>(x), y, k);
}
void ref_bf16_to_f32(const void* x, float* y, int64_t k) {
  strix::ref::LibGgml::get().bf16_to_fp32_row(static_cast<const uint16_t*>(x), y, k);
}
void ref_f32_to_f16(const float* x, void* y, int64_t k) {
  strix::ref::LibGgml::get().fp32_to_fp16_row(x, static_cast<uint16_t*>(y), k);
}
void ref_f32_to_bf16(const float* x, void* y, int64_t k) {
  strix::ref::LibGgml::get().fp32_to_bf16_row_ref(x, static_cast<uint16_t*>(y), k);
}

DequantFn ref_dequant(GgmlType type) {
  if (type == GgmlType::F16) return ref_f16_to_f32;
  if (type == GgmlType::BF16) return ref_bf16_to_f32;
  return strix::ref::LibGgml::get().dequantize_row(static_cast<uint32_t>(type));
}
QuantFn ref_quant(GgmlType type) {
  if (type == GgmlType::F16) return ref_f32_to_f16;
  if (type == GgmlType::BF16) return ref_f32_to_bf16;
  return strix::ref::LibGgml::get().quantize_row_ref(static_cast<uint32_t>(type));
}

// Seeded N(0, 1) floats: the source for quantize and, once quantized, for dequantize.
const std::vector<float>& source_row() {
  static const std::vector<float> row = [] {
    std::mt19937 rng(1234);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> v(static_cast<size_t>(kRowElements));
    for (auto& x : v) x = normal(rng);
    return v;
  }();
  return row;
}

// Quantized bytes of the row: libggml's own reference quantization where it has
// one, else random bytes (types without a reference quantizer, e.g. IQ2_XXS;
// fine for timing, none of these decoders branches on the data).
std::vector<uint8_t> quantized_row(const TypeTraits& t) {
  strix::ref::LibGgml::get().quantize_init(static_cast<int>(t.type));  // IQ grids; idempotent
  std::vector<uint8_t> q(strix::row_size(t.type, kRowElements));
  const QuantFn ref_q = ref_quant(t.type);
  if (ref_q != nullptr) {
    ref_q(source_row().data(), q.data(), kRowElements);
  } else if (t.type == GgmlType::F32) {
    std::memcpy(q.data(), source_row().data(), q.size());
  } else {
    std::mt19937_64 rng(99);
    for (auto& b : q) b = static_cast<uint8_t>(rng() >> 56);
  }
  return q;
}

void run_dequant(benchmark::State& state, const TypeTraits* t, bool ours) {
  const DequantFn fn = ours ? t->to_float : ref_dequant(t->type);
  if (fn == nullptr) {
    state.SkipWithError("libggml-base exports no dequantize_row for this type");
    return;
  }
  const std::vector<uint8_t> q = quantized_row(*t);
  std::vector<float> y(static_cast<size_t>(kRowElements));
  try {
    fn(q.data(), y.data(), kRowElements);  // warm up, and find placeholders
  } catch (const strix::Refusal& e) {
    state.SkipWithError(e.what());
    return;
  }
  for (auto _ : state) {
    fn(q.data(), y.data(), kRowElements);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kRowElements);
}

void run_quant(benchmark::State& state, const TypeTraits* t, bool ours) {
  const QuantFn fn = ours ? t->from_float_ref : ref_quant(t->type);
  if (fn == nullptr) {
    state.SkipWithError("libggml-base exports no reference quantizer for this type");
    return;
  }
  strix::ref::LibGgml::get().quantize_init(static_cast<int>(t->type));
  std::vector<uint8_t> q(strix::row_size(t->type, kRowElements));
  const std::vector<float>& x = source_row();
  try {
    fn(x.data(), q.data(), kRowElements);
  } catch (const strix::Refusal& e) {
    state.SkipWithError(e.what());
    return;
  }
  for (auto _ : state) {
    fn(x.data(), q.data(), kRowElements);
    benchmark::DoNotOptimize(q.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kRowElements);
}

// Registered at start-up from the type table, so a new type needs no edit here.
[[maybe_unused]] const bool kRegistered = [] {
  for (uint32_t id = 0; id < strix::kGgmlTypeCount; ++id) {
    const TypeTraits* t = strix::type_traits(id);
    if (t == nullptr) continue;
    const std::string name = t->name;
    if (t->to_float != nullptr) {
      for (bool ours : {true, false}) {
        benchmark::RegisterBenchmark(("dequant_1m/" + name + (ours ? "/strix" : "/libggml")).c_str(),
                                     [t, ours](benchmark::State& s) { run_dequant(s, t, ours); })
            ->Unit(benchmark::kMicrosecond);
      }
    }
    if (t->from_float_ref != nullptr) {
      for (bool ours : {true, false}) {
        benchmark::RegisterBenchmark(("quant_ref_1m/" + name + (ours ? "/strix" : "/libggml")).c_str(),
                                     [t, ours](benchmark::State& s) { run_quant(s, t, ours); })
            ->Unit(benchmark::kMicrosecond);
      }
    }
  }
  return true;
}();

}  // namespace
