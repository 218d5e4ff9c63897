// Hyperparameters shared by the architectures (what the engine needs to size
// its buffers and KV cache, and what the shared blocks compute with). Each
// architecture file fills them from its GGUF keys.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strix {

enum class RopeMode : int { kNone = -1, kNorm = 0, kNeox = 2 };

// One RoPE configuration (a model may have two: global and sliding-window layers).
struct RopeParams {
  RopeMode mode = RopeMode::kNorm;
  int n_rot = 0;              // rotated dims of each head (<= head_dim)
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;    // 1 / scaling factor (linear, yarn)
  float ext_factor = 0.0f;    // yarn extrapolation mix (0: off)
  float attn_factor = 1.0f;   // scales cos/sin (yarn magnitude)
  float beta_fast = 32.0f;
  float beta_slow = 1.0f;
  int n_ctx_orig = 0;         // training context before scaling
};

struct Hparams {
  std::string arch;
  std::string name;  // general.name
  int64_t n_vocab = 0;
  int64_t n_embd = 0;
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim_k = 0;  // per head
  int64_t head_dim_v = 0;
  int64_t n_ff = 0;        // dense FFN width (or the widest FFN buffer the arch needs)
  int64_t n_ctx_train = 0;
  float norm_eps = 1e-5f;

  RopeParams rope;      // global layers
  RopeParams rope_swa;  // sliding-window layers (same as rope unless the model says otherwise)

  float kq_scale = 0.0f;            // softmax scale of q.k
  int64_t n_swa = 0;                // sliding window size (0: none)
  std::vector<uint8_t> swa_layers;  // per layer: 1 = sliding-window attention
  bool attn_sinks = false;          // per-head sink logits (gpt-oss)

  int64_t n_expert = 0;
  int64_t n_expert_used = 0;
  int64_t n_ff_exp = 0;

  int64_t q_dim() const { return n_head * head_dim_k; }
  int64_t k_dim() const { return n_head_kv * head_dim_k; }
  int64_t v_dim() const { return n_head_kv * head_dim_v; }
  bool is_swa(int64_t il) const { return il < static_cast<int64_t>(swa_layers.size()) && swa_layers[il]; }
};

}  // namespace strix
