// A context of several sequences over a paged KV cache whose block
// bookkeeping (KvCache: block tables, reference counts, the prefix index)
// lives on the host: what the server's engine and the CLI's generator drive,
// whichever backend runs it. The CPU Context (runtime/context.h) implements
// it, and so does cuda::CudaContext, which keeps the cells in GPU memory.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kv/kv_cache.h"

namespace strix {

class BatchContext {
 public:
  virtual ~BatchContext() = default;

  // Runs a flat, ragged batch (llama_decode's contract): each token's position
  // is its sequence's next one; want_logits one flag per token, or empty for
  // the last token only. Throws Error for a bad batch or a full cache (nothing
  // of the batch is kept then).
  virtual void decode(std::span<const int32_t> tokens, std::span<const int32_t> pos, std::span<const int32_t> seq,
                      std::span<const uint8_t> want_logits = {}) = 0;
  // One sequence continuing at its cached length; logits for the last token
  // only, or for all when all_logits.
  void decode_seq(std::span<const int32_t> tokens, int seq = 0, bool all_logits = false);
  // Logits of batch index i of the last decode; throws Error when it had none.
  virtual std::span<const float> logits(int32_t i) const = 0;
  // The largest logits of batch index i of the last decode, largest first
  // (equal values: the lower id first), when the backend found them with the
  // forward: the CUDA context does, on the device, so that a greedy sampler
  // (sampling::Sampler::pick_greedy) needs no copy of the whole row. Empty
  // when the backend does not, or when the row holds a NaN or +inf (logits()
  // shows it to the sampler, which refuses it).
  struct TopLogits {
    std::span<const float> logit;
    std::span<const int32_t> id;
  };
  virtual TopLogits top_logits(int32_t i) const {
    (void)i;
    return {};
  }
  // Drops cells [p0, len) of a sequence; clear() drops every sequence's.
  virtual void seq_truncate(int seq, int32_t p0) = 0;
  virtual void clear() = 0;
  // Drops cells [p0, p1) and moves the rest down, keys re-rotated
  // (llama_memory_seq_rm + llama_memory_seq_add); see Context::seq_cut.
  virtual void seq_cut(int seq, int32_t p0, int32_t p1) = 0;
  virtual bool can_cut() const = 0;
  // The most cells one sequence may hold (-c).
  virtual int64_t n_ctx() const = 0;
  virtual int n_threads() const = 0;
  // The block bookkeeping (prefix caching, block counts).
  virtual const KvCache& kv() const = 0;
  virtual KvCache& kv_cache() = 0;

  int32_t seq_len(int seq) const { return kv().seq_len(seq); }

 private:
  std::vector<int32_t> one_pos_, one_seq_;  // decode_seq's batch (kept: no allocation per token)
  std::vector<uint8_t> one_want_;
};

}  // namespace strix
