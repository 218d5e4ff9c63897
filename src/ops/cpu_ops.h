// CPU ops with llama.cpp's numerics. Every op is called by all threads of the
// step (Exec), splits its work by (ith, nth) and ends with a barrier, so its
// output is complete for everybody when it returns.
//
// Precision follows ggml-cpu: matmul quantizes the activations to the weight
// type's vec_dot partner (Q8_0, Q8_K, F16 ...), RMS norm sums squares in
// double, softmax sums exps in double, the KV cache is f16 and attention rounds
// q and the probabilities to f16 as ggml's mul_mat with an f16 cache does.
#pragma once

#include <cstdint>
#include <vector>

#include "models/hparams.h"
#include "models/model.h"
#include "ops/exec.h"

namespace strix::ops {

// out[t] = dequantized row tokens[t] of w (token embeddings).
void get_rows(Exec& e, const Weight& w, const int32_t* tokens, int n, float* out, int64_t out_stride);

// out = x / rms(x) (* w when given), per row of `dim`; rows are stride apart.
// In place is fine (out == x).
void rms_norm(Exec& e, const float* x, int64_t n_rows, int64_t dim, int64_t x_stride, float* out, int64_t out_stride,
              const float* w, float eps);

// y[t][r] = dot(W row r, x[t]) (+ bias[r]) for t < n, r < W.ne[1]; `expert`
// picks the 2-D slice of a 3-D weight. x rows x_stride floats apart, y rows
// y_stride floats apart. Refuses (Refusal naming the tensor and type) when no
// kernel exists for the weight type.
void matmul(Exec& e, const Weight& w, const float* x, int n, int64_t x_stride, float* y, int64_t y_stride,
            const float* bias = nullptr, int64_t expert = 0);

// Several products of the same input (q/k/v, gate/up): the activations are
// quantized once when the weights share a partner type, and all products run
// in one parallel region (one barrier instead of one per weight).
struct MatmulOut {
  const Weight* w;
  float* y;
  int64_t y_stride;
  const float* bias;
  int64_t expert = 0;  // the expert of a 3-D weight
};
void matmul_group(Exec& e, const MatmulOut* outs, int count, const float* x, int n, int64_t x_stride);

// RoPE in place on n tokens x n_heads heads of head_dim floats (rows of
// n_heads * head_dim, stride floats apart), positions pos[t]. freq_factors:
// n_rot / 2 divisors of theta (llama 3 rope_freqs, LongRoPE), or null.
void rope(Exec& e, float* x, int n, int64_t n_heads, int64_t head_dim, int64_t stride, const int32_t* pos,
          const RopeParams& rp, const float* freq_factors);

// Keys moved by `delta` positions (llama.cpp's K shift, build_rope_shift): the
// RoPE of position delta applied to an f16 row of n_heads heads (converted to
// f32, rotated as rope() rotates, rounded back to f16). The cos/sin table is
// made once per (delta, layer's RoPE).
struct RopeShift {
  const RopeParams* rp = nullptr;
  std::vector<float> cache;  // n_rot: cos, sin per pair
};
RopeShift rope_shift(int32_t delta, const RopeParams& rp, const float* freq_factors);
void rope_shift_row_f16(const RopeShift& sh, const uint16_t* src, uint16_t* dst, int64_t n_heads, int64_t head_dim,
                        float* tmp);

// Writes K and V rows of the step's tokens into the cache of layer il (f16).
void kv_store(Exec& e, Step& s, int64_t il, const float* k, int64_t k_stride, const float* v, int64_t v_stride);

// Attention of every step token over its sequence's cells [0, pos] (and only
// the last n_swa of them when n_swa > 0), per head, GQA-grouped.
// q: [n, n_head * head_dim_k] stride q_stride; out: [n, n_head * head_dim_v].
// sinks: per-head logit joined to the softmax (gpt-oss), or null.
void attention(Exec& e, Step& s, int64_t il, const float* q, int64_t q_stride, float* out, int64_t out_stride,
               float kq_scale, int64_t n_swa, const float* sinks);

// out[i] = silu(gate[i]) * up[i] over n rows of width, rows stride apart.
void swiglu(Exec& e, const float* gate, int64_t gate_stride, const float* up, int64_t up_stride, float* out,
            int64_t out_stride, int n, int64_t width);
// out[i] = gelu_tanh(gate[i]) * up[i] (ggml's GELU: f16 table).
void geglu(Exec& e, const float* gate, int64_t gate_stride, const float* up, int64_t up_stride, float* out,
           int64_t out_stride, int n, int64_t width);

// out = a + b over n rows of width (rows stride apart; may alias a).
void add(Exec& e, const float* a, const float* b, float* out, int n, int64_t width, int64_t stride);
// x += y, then out = rms_norm(x) (* w): the residual add and the next norm in
// one pass and one barrier (same arithmetic as add() then rms_norm()).
void add_rms_norm(Exec& e, float* x, const float* y, float* out, int n, int64_t dim, const float* w, float eps);
// x *= s over n rows of width.
void scale(Exec& e, float* x, float s, int n, int64_t width, int64_t stride);

// Keeps rows ids[0..m) of buf (ascending, ids[i] >= i) as rows 0..m. For the
// last layer, where only the tokens that want logits are needed.
void gather_rows(Exec& e, float* buf, int64_t stride, int64_t width, const int32_t* ids, int m);

}  // namespace strix::ops
