// Mixture-of-experts ops with llama.cpp's numerics (build_moe_ffn in
// llama-graph.cpp and the ggml-cpu ops it uses). Like every op, each is called
// by all threads of the step, splits its work by (ith, nth) and ends with a
// barrier.
//
// Routing per token: logits [n_expert] (router matmul, + router bias) ->
// probs (softmax, or the logits themselves for kSoftmaxWeight) -> the
// n_expert_used largest probs, in descending order as ggml's argsort orders
// them (std::sort of the indices with `p[a] > p[b]`, so ties go exactly as in
// ggml) -> weights = probs of the selected (kSoftmaxWeight: softmax over the
// selected logits) -> optional renormalisation (sum in double, clamped below
// at 2^-14, then divided) -> optional scale.
#pragma once

#include <cstdint>

#include "ops/exec.h"

namespace strix::ops {

enum class MoeGating {
  kSoftmax,        // probs = softmax(logits); weights = probs[selected]
  kSoftmaxWeight,  // select by logits; weights = softmax(logits[selected]) (gpt-oss)
};

struct MoeRouting {
  MoeGating gating = MoeGating::kSoftmax;
  bool norm_weights = false;  // divide the selected weights by their sum (expert_weights_norm)
  float scale = 0.0f;         // multiply the weights (0 or 1: off), expert_weights_scale
};

// Most experts a model may have (llama.cpp's LLAMA_MAX_EXPERTS).
constexpr int64_t kMoeMaxExperts = 512;

// logits: [n, n_expert] (rows logits_stride apart). Writes ids [n, k] (expert
// per slot, slot 0 the largest) and weights [n, k].
void moe_route(Exec& e, const float* logits, int64_t logits_stride, int n, int64_t n_expert, int64_t k,
               const MoeRouting& r, int32_t* ids, float* weights);

// Groups the (token, slot) pairs by expert: after it, expert x's pairs are
// rows[offsets[x] .. offsets[x + 1]) in token order, each entry token * k + slot.
// offsets: n_expert + 1 ints; rows: n * k ints.
void moe_group(Exec& e, const int32_t* ids, int n, int64_t n_expert, int64_t k, int32_t* offsets, int32_t* rows);

// dst[i] = src[rows[i] / k] for i < m (rows of width floats): the inputs of
// the tokens routed to one expert, packed.
void moe_gather(Exec& e, const float* src, int64_t src_stride, const int32_t* rows, int m, int64_t k, float* dst,
                int64_t dst_stride, int64_t width);

// slots[rows[i]] = y[i] * weights[rows[i]] for i < m: one expert's outputs,
// weighted, into their (token, slot) rows of slots [n * k, width].
void moe_scatter(Exec& e, const float* y, int64_t y_stride, const int32_t* rows, int m, const float* weights,
                 float* slots, int64_t width);

// out[t] = ((slots[t][0] + slots[t][1]) + slots[t][2]) + ... over the k slots,
// in ggml's order (one add per slot).
void moe_sum(Exec& e, const float* slots, int n, int64_t k, int64_t width, float* out, int64_t out_stride);

// gpt-oss's SwiGLU (ggml's SWIGLU_OAI): x = min(gate, limit), y = clamp(up,
// -limit, limit), out = x / (1 + exp(-alpha x)) * (y + 1). May run in place
// (out == gate).
void swiglu_oai(Exec& e, const float* gate, int64_t gate_stride, const float* up, int64_t up_stride, float* out,
                int64_t out_stride, int n, int64_t width, float alpha, float limit);

}  // namespace strix::ops
