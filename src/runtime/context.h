// An inference context: a model, its paged KV cache, the thread pool and the
// activation buffers, all allocated once. decode() runs one flat, ragged batch
// of tokens from any of its sequences (prefill chunks and decode tokens mixed),
// split into micro-batches of at most n_ubatch tokens; it is the only forward
// path, single-prompt use being the batch-of-one case.
//
//   Context ctx(*model, {.n_ctx = 4096, .n_threads = 2});
//   ctx.decode(tokens, positions, seq_ids, want_logits);  // like llama_decode
//   std::span<const float> row = ctx.logits(i);           // batch index i
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/thread_pool.h"
#include "kv/kv_cache.h"
#include "models/model.h"
#include "ops/exec.h"
#include "runtime/batch_context.h"

namespace strix {

struct ContextOptions {
  int64_t n_ctx = 4096;    // KV capacity in tokens, shared by all sequences
  int64_t n_ubatch = 512;  // most tokens in one forward pass
  int n_threads = 0;       // 0: all cores
  int n_seq_max = 1;
  // Partial offload (runtime/hybrid_context.h): L > 0 makes a CPU context of
  // layers [0, L) only (its KV cache holds their cells), driven through
  // forward_part; 0: the whole model.
  int64_t layer_end = 0;
  // CUDA: libllama's CPU float order in every op (backend/cuda/exact.h; `--exact`), for
  // logits equal to libllama's bit for bit on dense models of F32 / F16 / Q8_0 / Q4_K / Q6_K weights, slower.
  // The CPU Context always computes in that order.
  bool exact_numerics = false;
};

class Context final : public BatchContext {
 public:
  Context(const Model& model, const ContextOptions& opts);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // Runs the batch. Each token's position must be its sequence's next one
  // (the cached length, then consecutive); want_logits: one flag per token, or
  // empty for "the last token only". Throws Error for a bad batch or a full
  // cache (nothing of the batch is kept then).
  void decode(std::span<const int32_t> tokens, std::span<const int32_t> pos, std::span<const int32_t> seq,
              std::span<const uint8_t> want_logits = {}) override;

  // Logits of batch index i of the last decode (negative: from the end of the
  // outputs). Throws Error when that token had no output.
  std::span<const float> logits(int32_t i) const override;

  void clear() override { kv_.clear(); }
  // Drops positions [p0, end) of a sequence.
  void seq_truncate(int seq, int32_t p0) override { kv_.truncate(seq, p0); }
  // Drops positions [p0, p1) of a sequence and moves the later cells down to
  // p0, their keys rotated by p0 - p1 positions: llama_memory_seq_rm(p0, p1)
  // then llama_memory_seq_add(p1, end, p0 - p1), which llama-server's
  // --cache-reuse does. The sequence stops registering prefix blocks. Throws
  // Refusal for an architecture whose keys cannot move.
  void seq_cut(int seq, int32_t p0, int32_t p1) override;
  // Whether seq_cut can move this model's cells (every layer's keys have RoPE).
  bool can_cut() const override;

  // Partial offload (options().layer_end > 0; HybridContext drives it): the
  // token embedding and layers [0, layer_end) of one micro-batch whose cells
  // are reserved in kv_cache() (nothing is committed), the residual stream
  // after them copied to `hidden` ([rows, n_embd] floats). out_ids: the
  // micro-batch's indices that want logits, ascending. Returns rows: the
  // token count, or out_ids.size() when layer_end is every layer (the last one
  // keeps only the output rows, as the full forward does).
  int forward_part(std::span<const int32_t> tokens, std::span<const int32_t> pos, std::span<const int32_t> seq,
                   std::span<const int32_t> out_ids, float* hidden);
  // seq_cut's moves of this context's cells (cells [p1, p1 + n) of `seq` to
  // [p0, p0 + n), keys rotated by p0 - p1), for a cut whose bookkeeping runs
  // elsewhere (KvCache::cut_cells: HybridContext).
  void move_cells(int seq, int32_t p0, int32_t p1, int32_t n);

  const Model& model() const { return model_; }
  const ContextOptions& options() const { return opts_; }
  int64_t n_vocab() const { return model_.hparams().n_vocab; }
  int n_threads() const override { return pool_.size(); }
  int64_t n_ctx() const override { return opts_.n_ctx; }
  // Per-sequence context size as llama.cpp computes it (see Step::n_ctx_seq).
  int64_t n_ctx_seq() const { return n_ctx_seq_; }
  const KvCache& kv() const override { return kv_; }
  // The cache itself, for prefix caching (KvCache::seq_set_caching,
  // attach_prefix): the server's engine shares blocks between its sequences.
  KvCache& kv_cache() override { return kv_; }

 private:
  void run_ubatch(int32_t first, int32_t count);

  const Model& model_;
  ContextOptions opts_;
  ThreadPool pool_;
  KvCache kv_;
  Workspace ws_;
  std::vector<float> buffers_;  // backing store of ws_ (floats)
  std::vector<uint8_t> act_;    // ws_.act
  const cpu::CpuKernels& kernels_;
  int64_t n_ctx_seq_ = 0;  // Step::n_ctx_seq

  // the current batch
  std::span<const int32_t> tokens_, pos_, seq_;
  std::vector<int32_t> out_ids_;    // per ubatch: indices with outputs
  std::vector<int32_t> output_of_;  // batch index -> output row or -1
  std::vector<float> logits_;       // [n_outputs, n_vocab]
  int32_t n_outputs_ = 0;
  std::vector<int32_t> out_rows_;  // output row -> batch index
};

}  // namespace strix
