// What a forward pass runs with: the thread it is on (Exec), the batch and its
// buffers (Step). A forward pass is ordinary C++ run by every thread of the
// pool at once; each op splits its work by (ith, nth) and ends at a barrier, so
// one pool run holds the whole step (no fork-join per op, no allocation).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "backend/cpu/kernels.h"
#include "core/thread_pool.h"

namespace strix {

class KvCache;
struct Hparams;

// Activation buffers of one step, allocated once per context for the largest
// micro-batch. Rows are token-major: buffer[t * width + i].
struct Workspace {
  int64_t n_tokens_max = 0;
  float* x = nullptr;     // residual stream [n_tokens, n_embd]
  float* cur = nullptr;   // normed input / block output [n_tokens, max(n_embd, q_dim)]
  float* q = nullptr;     // [n_tokens, q_dim]  (or fused qkv [n_tokens, q_dim + 2 * k_dim])
  float* k = nullptr;     // [n_tokens, k_dim]
  float* v = nullptr;     // [n_tokens, v_dim]
  float* att = nullptr;   // attention output [n_tokens, n_head * head_dim_v]
  float* ff_a = nullptr;  // FFN gate (or fused gate+up) [n_tokens, 2 * n_ff]
  float* ff_b = nullptr;  // FFN up [n_tokens, n_ff]
  float* moe = nullptr;   // MoE scratch (router logits, accumulators), arch-sized
  uint8_t* act = nullptr;  // quantized activation rows for matmul
  size_t act_size = 0;
  float* thread_scratch = nullptr;  // per thread: thread_scratch_floats each
  size_t thread_scratch_floats = 0;
};

// The batch of one step (one micro-batch), as the engine prepared it.
struct Step {
  int n_tokens = 0;
  const int32_t* tokens = nullptr;
  const int32_t* pos = nullptr;
  const int32_t* seq = nullptr;
  int n_outputs = 0;
  const int32_t* out_ids = nullptr;  // batch indices that want logits, ascending
  float* logits = nullptr;           // [n_outputs, n_vocab]
  KvCache* kv = nullptr;
  Workspace* ws = nullptr;
  const Hparams* hp = nullptr;
  // The context size of one sequence as llama.cpp computes it (n_ctx_seq:
  // n_ctx padded to 256, divided by n_seq_max, padded to 256). Architectures
  // whose computation depends on the context size read it (phi3 LongRoPE).
  int64_t n_ctx_seq = 0;
  // Partial offload (runtime/hybrid_context.h): 0 runs every layer and the
  // output head; L > 0 runs layers [0, L) only and leaves the residual stream
  // after them in ws.x (rows: n_tokens, or n_outputs when L is every layer,
  // whose last one keeps only the output rows). Read by graph::prenorm_decoder.
  int64_t layer_end = 0;
};

class Exec {
 public:
  Exec(ThreadPool& pool, int ith, int nth, const cpu::CpuKernels& kernels, Workspace& ws)
      : ith(ith), nth(nth), k(kernels), ws(ws), pool_(pool) {}

  const int ith;
  const int nth;
  const cpu::CpuKernels& k;
  Workspace& ws;

  void barrier() {
    if (nth > 1) pool_.barrier();
  }
  // This thread's share [first, second) of [0, n), in pieces of `align`.
  std::pair<int64_t, int64_t> range(int64_t n, int64_t align = 1) const {
    const int64_t units = (n + align - 1) / align;
    const int64_t per = units / nth, extra = units % nth;
    const int64_t u0 = ith * per + (ith < extra ? ith : extra);
    const int64_t u1 = u0 + per + (ith < extra ? 1 : 0);
    const int64_t a = u0 * align, b = u1 * align;
    return {a < n ? a : n, b < n ? b : n};
  }
  float* scratch() const { return ws.thread_scratch + static_cast<size_t>(ith) * ws.thread_scratch_floats; }

 private:
  ThreadPool& pool_;
};

}  // namespace strix
