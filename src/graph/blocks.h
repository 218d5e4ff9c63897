// Blocks the architectures share: self-attention (projections, optional
// biases and QK norms, RoPE, KV write, attention, output projection) and the
// gated feed-forward. Each runs on all threads of the step like the ops.
#pragma once

#include <cstdint>

#include "models/hparams.h"
#include "models/model.h"
#include "ops/exec.h"

namespace strix::graph {

enum class QkNorm {
  kNone,
  kPerHead,  // RMS norm over each head (qwen3, gemma3): weight [head_dim]
  kFull,     // RMS norm over the whole projection (olmoe): weight [q_dim] / [k_dim]
};

struct AttnWeights {
  Weight wq, wk, wv;  // separate projections, or
  Weight wqkv;        // one fused projection (q, k, v rows in that order)
  Weight bq, bk, bv, bqkv;
  Weight wo, bo;
  Weight q_norm, k_norm;
  Weight sinks;  // [n_head] (gpt-oss)
};

struct AttnConfig {
  QkNorm qk_norm = QkNorm::kNone;
  const RopeParams* rope = nullptr;       // null: no RoPE
  const float* rope_freq_factors = nullptr;
  int64_t n_swa = 0;                      // 0: full causal attention
  float kq_scale = 1.0f;
  float q_scale = 1.0f;                   // q *= q_scale after RoPE (gemma's f_attention_scale)
};

// out[t] = attention output of `in` (already normed) for layer il, after the
// output projection (and its bias). Uses ws.q/k/v/att; `out` may be ws.cur
// only when `in` is not.
void self_attention(Exec& e, Step& s, int64_t il, const AttnWeights& w, const AttnConfig& cfg, const float* in,
                    int64_t in_stride, float* out, int64_t out_stride);

enum class Glu { kSilu, kGelu };

// out = down(act(gate(in)) * up(in)); gate/up separate, or `up` fused as
// [gate; up] rows when gate is absent (phi3).
struct FfnWeights {
  Weight gate, up, down;
  Weight gate_b, up_b, down_b;
};
void gated_ffn(Exec& e, Step& s, const FfnWeights& w, Glu act, const float* in, int64_t in_stride, float* out,
               int64_t out_stride);

// Final norm and LM head over the output rows: s.logits[i] for i < n.
// `x` holds (at least) the n rows of the output tokens.
void lm_head(Exec& e, Step& s, const float* x, int n, const Weight& norm, const Weight& output, float eps);

}  // namespace strix::graph
