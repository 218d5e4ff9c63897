// Partial GPU offload (-ngl N with 0 < N <= n_layer, runtime/offload.h): the
// CPU runs the token embedding and layers [0, k) (a Context with layer_end k),
// the GPU layers [k, n_layer) and the output head (a cuda::CudaContext with a
// GpuPart). Per micro-batch the residual stream after layer k - 1 (f32 rows)
// goes from the CPU to the GPU once; the logits come back as with full
// offload. Each half computes exactly what its backend computes for those
// layers alone (the CPU's forward to the hidden state, the GPU's from it).
//
// One KV bookkeeping for both halves: the CPU context's KvCache (block
// tables, reference counts, prefix index) holds the CPU layers' cells, the
// GPU pool the GPU layers' cells under the same block ids; copy-on-write
// copies both (KvCache's host copy plus the GPU's block copier) and seq_cut
// moves both (KvCache::cut_cells with the CPU's and the GPU's moves). The
// server's engine and the CLI's generator drive it as any BatchContext.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/cuda/cuda_context.h"
#include "runtime/batch_context.h"
#include "runtime/context.h"

namespace strix {

class HybridContext final : public BatchContext {
 public:
  // Layers [0, first_gpu_layer) on the CPU (1 <= first_gpu_layer <= n_layer).
  HybridContext(const Model& model, const ContextOptions& opts, int64_t first_gpu_layer);
  ~HybridContext() override;
  HybridContext(const HybridContext&) = delete;
  HybridContext& operator=(const HybridContext&) = delete;

  void decode(std::span<const int32_t> tokens, std::span<const int32_t> pos, std::span<const int32_t> seq,
              std::span<const uint8_t> want_logits = {}) override;
  std::span<const float> logits(int32_t i) const override { return gpu_->logits(i); }
  TopLogits top_logits(int32_t i) const override { return gpu_->top_logits(i); }
  void seq_truncate(int seq, int32_t p0) override { gpu_->seq_truncate(seq, p0); }
  void clear() override { gpu_->clear(); }
  void seq_cut(int seq, int32_t p0, int32_t p1) override { gpu_->seq_cut(seq, p0, p1); }
  bool can_cut() const override { return cpu_->can_cut() && gpu_->can_cut(); }
  int64_t n_ctx() const override { return gpu_->n_ctx(); }
  int n_threads() const override { return cpu_->n_threads(); }
  const KvCache& kv() const override { return cpu_->kv(); }
  KvCache& kv_cache() override { return cpu_->kv_cache(); }

  int64_t first_gpu_layer() const { return first_gpu_layer_; }
  std::string device_name() const { return gpu_->device_name(); }
  uint64_t weight_bytes() const { return gpu_->weight_bytes(); }  // uploaded to the GPU
  Context& cpu() { return *cpu_; }
  cuda::CudaContext& gpu() { return *gpu_; }

 private:
  int64_t first_gpu_layer_ = 0;
  std::unique_ptr<Context> cpu_;
  std::unique_ptr<cuda::CudaContext> gpu_;
  // the batch decode() runs (the GPU's hook reads its micro-batches)
  std::span<const int32_t> tokens_, pos_, seq_;
};

}  // namespace strix
