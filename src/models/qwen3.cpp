// qwen3 (general.architecture = "qwen3"): the dense Qwen3 models (0.6B-32B).
//
// Block (llama.cpp's qwen3 graph):
//   q = rope(rmsnorm_h(Wq·n)·q_norm), k = rope(rmsnorm_h(Wk·n)·k_norm), v = Wv·n
//   with n = rmsnorm(x)·attn_norm and rmsnorm_h an RMS norm over each head;
//   x += Wo·attn(q, k, v); x += down(silu(gate·m) * up·m), m = rmsnorm(x)·ffn_norm.
// head_dim comes from attention.key_length (128 while n_embd / n_head may be
// 64 or 80), so q_dim = n_head * head_dim need not equal n_embd. RoPE in NEOX
// mode over the whole head; softmax scale 1/sqrt(head_dim). q/k/v come from
// three projections or one fused attn_qkv (unpacked for the per-head norms).
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "graph/blocks.h"
#include "graph/decoder.h"
#include "models/archs.h"
#include "models/load_common.h"
#include "ops/cpu_ops.h"

namespace strix {

namespace {

struct Layer {
  Weight attn_norm, ffn_norm;
  graph::AttnWeights attn;
  graph::FfnWeights ffn;
};

class Qwen3 : public Arch {
 public:
  Weight tok_embd, output_norm, output;
  std::vector<Layer> layers;
  graph::AttnConfig attn_cfg;

  KeyRope key_rope(const Hparams&, int64_t, int64_t) const override {
    return {attn_cfg.rope, attn_cfg.rope_freq_factors};
  }
  void forward(Exec& e, Step& s) const override {
    graph::prenorm_decoder(
        e, s, tok_embd, layers, output_norm, output,
        [&](Exec& e, Step& s, int64_t il, const Layer& L) {
          if (L.attn.wqkv.present()) {
            fused_attention(e, s, il, L.attn, e.ws.cur, e.ws.cur);
          } else {
            graph::self_attention(e, s, il, L.attn, attn_cfg, e.ws.cur, s.hp->n_embd, e.ws.cur, s.hp->n_embd);
          }
        },
        [&](Exec& e, Step& s, int64_t, const Layer& L) {
          graph::gated_ffn(e, s, L.ffn, graph::Glu::kSilu, e.ws.cur, s.hp->n_embd, e.ws.cur, s.hp->n_embd);
        });
  }

 private:
  static const float* fp(const Weight& w) { return reinterpret_cast<const float*>(w.data); }

  // Attention with one fused attn_qkv projection: its rows [q | k | v] are
  // unpacked into ws.q / ws.k / ws.v so that each head is a packed row for the
  // per-head norms, then as graph::self_attention. `out` may be `in`.
  void fused_attention(Exec& e, Step& s, int64_t il, const graph::AttnWeights& w, const float* in, float* out) const {
    const Hparams& hp = *s.hp;
    Workspace& ws = e.ws;
    const int n = s.n_tokens;
    const int64_t d = hp.n_embd, hd = hp.head_dim_k, qd = hp.q_dim(), kd = hp.k_dim(), vd = hp.v_dim();
    const int64_t width = qd + kd + vd;
    ops::matmul(e, w.wqkv, in, n, d, ws.ff_a, width);
    const auto [t0, t1] = e.range(n);
    for (int64_t t = t0; t < t1; ++t) {
      const float* row = ws.ff_a + t * width;
      std::memcpy(ws.q + t * qd, row, sizeof(float) * qd);
      std::memcpy(ws.k + t * kd, row + qd, sizeof(float) * kd);
      std::memcpy(ws.v + t * vd, row + qd + kd, sizeof(float) * vd);
    }
    e.barrier();
    ops::rms_norm(e, ws.q, static_cast<int64_t>(n) * hp.n_head, hd, hd, ws.q, hd, fp(w.q_norm), hp.norm_eps);
    ops::rms_norm(e, ws.k, static_cast<int64_t>(n) * hp.n_head_kv, hd, hd, ws.k, hd, fp(w.k_norm), hp.norm_eps);
    ops::rope(e, ws.q, n, hp.n_head, hd, qd, s.pos, hp.rope, nullptr);
    ops::rope(e, ws.k, n, hp.n_head_kv, hd, kd, s.pos, hp.rope, nullptr);
    ops::kv_store(e, s, il, ws.k, kd, ws.v, vd);
    const int64_t ad = hp.n_head * hp.head_dim_v;
    ops::attention(e, s, il, ws.q, qd, ws.att, ad, hp.kq_scale, 0, nullptr);
    ops::matmul(e, w.wo, ws.att, n, ad, out, d);
  }
};

}  // namespace

std::unique_ptr<Arch> load_qwen3(ModelLoader& ld, Hparams& hp) {
  const std::string& path = ld.file().splits()[0].path;
  read_common_hparams(ld, hp);
  ld.accept("rope.scaling.finetuned");  // informational
  hp.rope.mode = RopeMode::kNeox;
  // llama.cpp asserts a full rotary head and equal k/v head sizes for qwen3
  if (hp.rope.n_rot != hp.head_dim_k || hp.head_dim_k != hp.head_dim_v) {
    throw Refusal(path + ": qwen3 with rope.dimension_count " + std::to_string(hp.rope.n_rot) + ", key_length " +
                  std::to_string(hp.head_dim_k) + " and value_length " + std::to_string(hp.head_dim_v) +
                  " (partial rotary or unequal head sizes) is not run by llama.cpp or Strix");
  }
  hp.rope_swa = hp.rope;
  hp.kq_scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim_k));
  if (hp.n_ff <= 0) throw Refusal(path + ": missing key qwen3.feed_forward_length");

  auto m = std::make_unique<Qwen3>();
  const int64_t d = hp.n_embd;
  const EmbedHead head = load_embed_head(ld, hp);
  m->tok_embd = head.tok_embd;
  m->output_norm = head.output_norm;
  m->output = head.output;
  m->layers.resize(hp.n_layer);
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    Layer& L = m->layers[il];
    L.attn_norm = ld.tensor(p + "attn_norm.weight", {d}, WeightUse::kVector);
    // one fused projection (q, k, v rows) or three; llama.cpp's build_qkv takes either
    L.attn = load_attention(ld, p, hp, {.fused_qkv = true, .q_norm_dim = hp.head_dim_k, .k_norm_dim = hp.head_dim_k});
    L.ffn_norm = ld.tensor(p + "ffn_norm.weight", {d}, WeightUse::kVector);
    L.ffn.gate = ld.tensor(p + "ffn_gate.weight", {d, hp.n_ff});
    L.ffn.up = ld.tensor(p + "ffn_up.weight", {d, hp.n_ff});
    L.ffn.down = ld.tensor(p + "ffn_down.weight", {hp.n_ff, d});
  }
  m->attn_cfg.qk_norm = graph::QkNorm::kPerHead;
  m->attn_cfg.rope = &hp.rope;
  m->attn_cfg.kq_scale = hp.kq_scale;
  return m;
}

}  // namespace strix
