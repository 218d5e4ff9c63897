// Row conversion throughput of our reference functions vs libggml-base's, for
// every type in the TypeTraits table:
//   dequant/<type>/strix     dequant/<type>/libggml      items/s = elements out
//   quant_ref/<type>/strix   quant_ref/<type>/libggml    items/s = elements in
// A libggml variant is registered only where libggml exports the function (it
// has no dequantize for Q8_1, no reference quantizer for IQ2_XXS ...), a strix
// variant only where ours does not refuse. Rows of 64K elements (quantized once
// from N(0,1) data by ggml_quantize_chunk, with a unit imatrix where the type
// needs one) stay in L2, so this measures the conversion, not memory.
//
//   build-x/bench/quant_bench --benchmark_filter='dequant/q4_K'
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "quant/types.h"
#include "ref/reference.h"

namespace {

using strix::GgmlType;
using strix::TypeTraits;

constexpr int64_t kRowElems = 1 << 16;

using DequantFn = void (*)(const void*, float*, int64_t);
using QuantFn = void (*)(const float*, void*, int64_t);

const std::vector<float>& source_row() {
  static const std::vector<float> row = [] {
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(kRowElems);
    for (auto& v : x) v = normal(rng);
    return x;
  }();
  return row;
}

std::vector<uint8_t> quantized_row(const TypeTraits& t) {
  const auto& g = strix::ref::LibGgml::get();
  const auto& x = source_row();
  std::vector<uint8_t> q(strix::row_size(t.type, kRowElems));
  const int id = static_cast<int>(t.type);
  if (t.type == GgmlType::F32) {
    std::memcpy(q.data(), x.data(), q.size());
    return q;
  }
  g.quantize_init(id);  // IQ grids; a no-op for the other types
  // ggml_quantize_chunk does not take the activation types (Q8_1, Q8_K): use
  // the reference quantizer where there is one.
  if (const auto ref_q = g.quantize_row_ref(static_cast<uint32_t>(id))) {
    ref_q(x.data(), q.data(), kRowElems);
    return q;
  }
  const std::vector<float> unit_imatrix(kRowElems, 1.0f);
  g.quantize_chunk(id, x.data(), q.data(), 0, 1, kRowElems,
                   g.quantize_requires_imatrix(id) ? unit_imatrix.data() : nullptr);
  return q;
}

DequantFn libggml_dequant(GgmlType type) {
  if (type == GgmlType::F16) {
    return [](const void* x, float* y, int64_t k) {
      strix::ref::LibGgml::get().fp16_to_fp32_row(static_cast<const uint16_t*>(x), y, k);
    };
  }
  if (type == GgmlType::BF16) {
    return [](const void* x, float* y, int64_t k) {
      strix::ref::LibGgml::get().bf16_to_fp32_row(static_cast<const uint16_t*>(x), y, k);
    };
  }
  if (type == GgmlType::F32) return nullptr;
  return strix::ref::LibGgml::get().dequantize_row(static_cast<uint32_t>(type));
}

QuantFn libggml_quant(GgmlType type) {
  if (type == GgmlType::F16) {
    return [](const float* x, void* y, int64_t k) {
      strix::ref::LibGgml::get().fp32_to_fp16_row(x, static_cast<uint16_t*>(y), k);
    };
  }
  if (type == GgmlType::BF16) {
    return [](const float* x, void* y, int64_t k) {
      strix::ref::LibGgml::get().fp32_to_bf16_row_ref(x, static_cast<uint16_t*>(y), k);
    };
  }
  if (type == GgmlType::F32) return nullptr;
  return strix::ref::LibGgml::get().quantize_row_ref(static_cast<uint32_t>(type));
}

// Whether our function runs (placeholders refuse by name).
template <typename Fn>
bool runs(Fn&& fn) {
  try {
    fn();
    return true;
  } catch (const strix::Refusal&) {
    return false;
  }
}

void bench_dequant(benchmark::State& state, const std::vector<uint8_t>* blocks, DequantFn fn) {
  std::vector<float> y(kRowElems);
  for (auto _ : state) {
    fn(blocks->data(), y.data(), kRowElems);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kRowElems);
}

void bench_quant(benchmark::State& state, size_t out_bytes, QuantFn fn) {
  std::vector<uint8_t> q(out_bytes);
  for (auto _ : state) {
    fn(source_row().data(), q.data(), kRowElems);
    benchmark::DoNotOptimize(q.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kRowElems);
}

struct Registrar {
  std::vector<std::unique_ptr<std::vector<uint8_t>>> rows;  // stable addresses for the benchmarks

  Registrar() {
    for (uint32_t id = 0; id < strix::kGgmlTypeCount; ++id) {
      const TypeTraits* t = strix::type_traits(id);
      if (t == nullptr || t->to_float == nullptr) continue;
      rows.push_back(std::make_unique<std::vector<uint8_t>>(quantized_row(*t)));
      const std::vector<uint8_t>* blocks = rows.back().get();
      std::vector<float> scratch(kRowElems);
      std::vector<uint8_t> qscratch(blocks->size());
      const std::string name = t->name;

      if (runs([&] { t->to_float(blocks->data(), scratch.data(), kRowElems); })) {
        benchmark::RegisterBenchmark(("dequant/" + name + "/strix").c_str(), bench_dequant, blocks, t->to_float);
      }
      if (DequantFn ref = libggml_dequant(t->type)) {
        benchmark::RegisterBenchmark(("dequant/" + name + "/libggml").c_str(), bench_dequant, blocks, ref);
      }
      if (t->from_float_ref != nullptr &&
          runs([&] { t->from_float_ref(source_row().data(), qscratch.data(), kRowElems); })) {
        benchmark::RegisterBenchmark(("quant_ref/" + name + "/strix").c_str(), bench_quant, blocks->size(),
                                     t->from_float_ref);
      }
      if (QuantFn ref = libggml_quant(t->type)) {
        benchmark::RegisterBenchmark(("quant_ref/" + name + "/libggml").c_str(), bench_quant, blocks->size(), ref);
      }
    }
  }
};

const Registrar registrar;

}  // namespace
