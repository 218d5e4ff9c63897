#include "runtime/offload.h"

#include <algorithm>

#include "backend/cuda/cuda_context.h"
#include "core/error.h"
#include "runtime/hybrid_context.h"

namespace strix {

Offload offload_layers(int64_t n_gpu_layers, int64_t n_layer) {
  if (n_layer <= 0) throw Error("-ngl: the model has no layers");
  if (n_gpu_layers < 0) throw Error("-ngl: a negative layer count (" + std::to_string(n_gpu_layers) + ")");
  return {.n_layer = n_layer, .n_gpu = std::min(n_gpu_layers, n_layer + 1)};
}

std::string Offload::describe() const {
  if (!on_gpu()) return "every layer on the CPU";
  if (full()) return "every layer on the GPU";
  const int64_t first = first_gpu_layer();
  const std::string cpu = "repeating layers 0.." + std::to_string(first - 1) + " on the CPU";
  if (first == n_layer) return "the output layer on the GPU, " + cpu;
  return "repeating layers " + std::to_string(first) + ".." + std::to_string(n_layer - 1) +
         " and the output layer on the GPU, " + cpu;
}

std::unique_ptr<BatchContext> make_context(const Model& model, const ContextOptions& opts, const Offload& offload) {
  if (!offload.on_gpu()) return std::make_unique<Context>(model, opts);
  if (offload.full()) return std::make_unique<cuda::CudaContext>(model, opts);
  return std::make_unique<HybridContext>(model, opts, offload.first_gpu_layer());
}

std::string gpu_name(const BatchContext& ctx) {
  if (const auto* g = dynamic_cast<const cuda::CudaContext*>(&ctx)) return g->device_name();
  if (const auto* h = dynamic_cast<const HybridContext*>(&ctx)) return h->device_name();
  return "";
}

}  // namespace strix
