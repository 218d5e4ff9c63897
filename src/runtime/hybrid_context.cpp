#include "runtime/hybrid_context.h"

#include <string>

#include "core/error.h"

namespace strix {

HybridContext::HybridContext(const Model& model, const ContextOptions& opts, int64_t first_gpu_layer)
    : first_gpu_layer_(first_gpu_layer) {
  const int64_t n_layer = model.hparams().n_layer;
  if (first_gpu_layer < 1 || first_gpu_layer > n_layer) {
    throw Error("partial offload: the CPU runs layers [0, " + std::to_string(first_gpu_layer) +
                "), which must hold 1 to " + std::to_string(n_layer) + " layers");
  }
  cuda::check_model(model);  // the GPU's checks first: the CPU half assumes one of its architectures
  ContextOptions co = opts;
  co.layer_end = first_gpu_layer;
  cpu_ = std::make_unique<Context>(model, co);
  cuda::GpuPart part;
  part.first_layer = first_gpu_layer;
  part.kv = &cpu_->kv_cache();
  part.hidden = [this](size_t first, int count, std::span<const int32_t> out_ids, float* hidden) {
    const size_t n = static_cast<size_t>(count);
    return cpu_->forward_part(tokens_.subspan(first, n), pos_.subspan(first, n), seq_.subspan(first, n), out_ids,
                              hidden);
  };
  part.move_cells = [this](int seq, int32_t p0, int32_t p1, int32_t n) { cpu_->move_cells(seq, p0, p1, n); };
  gpu_ = std::make_unique<cuda::CudaContext>(model, opts, std::move(part));
}

HybridContext::~HybridContext() = default;

void HybridContext::decode(std::span<const int32_t> tokens, std::span<const int32_t> pos, std::span<const int32_t> seq,
                           std::span<const uint8_t> want) {
  tokens_ = tokens;
  pos_ = pos;
  seq_ = seq;
  // the GPU's decode checks and reserves the batch in the shared cache, then
  // asks part.hidden for each micro-batch's CPU layers before running its own
  gpu_->decode(tokens, pos, seq, want);
}

}  // namespace strix
