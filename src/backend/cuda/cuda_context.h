// The CUDA inference context: the Context of src/runtime/context.h (same
// decode / logits contract) with the model's weights uploaded once to the GPU
// and the whole forward pass run there (full offload, -ngl 99 / all), or the
// last layers and the output head of it (GpuPart: partial offload, driven by
// runtime/hybrid_context.h).
//
//   cuda::check_model(*model);                 // Refusal naming what does not run
//   cuda::CudaContext ctx(*model, {.n_ctx = 4096});
//   ctx.decode(tokens, positions, seq_ids, want_logits);
//   std::span<const float> row = ctx.logits(i);
//
// Runs the prenorm decoders llama (with rope_freqs), qwen2 and qwen3 (QK norm),
// and the mixture-of-experts qwen3moe and olmoe (softmax router, top-k, SiLU
// experts; decode through indirect GEMVs without a host sync, prefill grouped
// by expert after one sync per MoE layer), with weights F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K..Q6_K,
// IQ4_NL, IQ4_XS and MXFP4 (Q8_0 / Q4_K / Q6_K through the integer GEMV, the
// rest through the float GEMV on activations rounded as the CPU's partner
// quantizer rounds them); anything else is refused by name.
// The KV cache is f16 and paged as the CPU's (n_ctx cells in 32-cell blocks
// shared by all sequences, KvCache's block tables and prefix index on the
// host, the cells in GPU memory), so the server's engine drives it as it
// drives the CPU Context (BatchContext), moving cells (seq_cut) included.
// This header has no CUDA types, so it also builds with STRIX_CUDA=OFF, where
// every entry point refuses (cuda_off.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "models/model.h"
#include "runtime/batch_context.h"
#include "runtime/context.h"
#include "runtime/offload.h"

namespace strix::cuda {

// Whether this build has the CUDA backend and a GPU is usable; `why` says why not.
bool available(std::string* why = nullptr);

// Throws Refusal naming the architecture, feature or weight type (and tensor)
// the CUDA forward does not run.
void check_model(const Model& model);

// -ngl VALUE: how many of the model's n_layer + 1 layers go to the GPU, as
// llama.cpp counts them (runtime/offload.h): "all" or a count >= n_layer + 1
// (e.g. 99) is full offload, 0 the CPU, a count in between partial offload
// (HybridContext); "auto" (the CLI's default, as llama.cpp's): full when a GPU
// is usable, else none. A bad value (not a count, negative) is an Error.
// Builds without the backend answer "none" for "0" / "auto" and refuse the rest.
Offload parse_ngl(std::string_view value, int64_t n_layer);

// Partial offload (runtime/hybrid_context.h): the part of the model a
// CudaContext runs when the CPU runs the layers before it.
struct GpuPart {
  // Repeating layers [first_layer, n_layer) and the output head run here; the
  // weights of the others (and the token embedding, unless it is also the
  // output) are not uploaded, and the GPU's KV cells are those of its layers.
  int64_t first_layer = 0;
  // The block bookkeeping (block tables, prefix index): the CPU context's
  // cache, whose host cells are the CPU's layers; this context copies its
  // cells on copy-on-write (set_block_copier) and reads the tables from it.
  KvCache* kv = nullptr;
  // For each micro-batch [first, first + count) of the batch decode() runs:
  // the residual stream after layer first_layer - 1 into `hidden` ([rows,
  // n_embd] floats, rows returned: count, or out_ids.size() when first_layer is
  // n_layer and the output rows were kept), instead of the token embedding.
  // out_ids: the micro-batch's indices that want logits.
  std::function<int(size_t first, int count, std::span<const int32_t> out_ids, float* hidden)> hidden;
  // seq_cut, after the bookkeeping's copies: moves the other side's cells
  // [p1, p1 + n) to [p0, p0 + n) (Context::move_cells).
  std::function<void(int seq, int32_t p0, int32_t p1, int32_t n)> move_cells;
};

class CudaContext final : public BatchContext {
 public:
  CudaContext(const Model& model, const ContextOptions& opts);
  // Partial offload: the part's layers only (HybridContext drives it).
  CudaContext(const Model& model, const ContextOptions& opts, GpuPart part);
  ~CudaContext();
  CudaContext(const CudaContext&) = delete;
  CudaContext& operator=(const CudaContext&) = delete;

  // As Context::decode / logits (decode_seq: BatchContext's).
  void decode(std::span<const int32_t> tokens, std::span<const int32_t> pos, std::span<const int32_t> seq,
              std::span<const uint8_t> want_logits = {}) override;
  std::span<const float> logits(int32_t i) const override;
  // Found on the device with each forward (kernels.h top_logits); the whole
  // row is copied only when logits(i) asks for it.
  TopLogits top_logits(int32_t i) const override;

  void clear() override;
  void seq_truncate(int seq, int32_t p0) override;
  // As Context::seq_cut, on the GPU's cells.
  void seq_cut(int seq, int32_t p0, int32_t p1) override;
  bool can_cut() const override { return true; }
  // The most cells one sequence may hold: n_ctx, or less where the prefill
  // attention's shared memory bounds it.
  int64_t n_ctx() const override;
  int n_threads() const override { return 1; }
  const KvCache& kv() const override;
  KvCache& kv_cache() override;

  const Model& model() const;
  int64_t n_vocab() const;
  std::string device_name() const;
  uint64_t weight_bytes() const;  // uploaded to the GPU

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The GPU's name and its device-to-device copy bandwidth (bytes read + bytes
// written per second, median of timed 1 GiB copies): the memory-bandwidth
// ceiling that decode speed is reported against.
struct GpuInfo {
  std::string name;
  double copy_bytes_per_s = 0;
};
GpuInfo gpu_info(bool measure_bandwidth);

}  // namespace strix::cuda
