// qwen2 (general.architecture = "qwen2"): Qwen1.5, Qwen2, Qwen2.5 and their
// coder/math variants, DeepSeek-R1-Distill-Qwen.
//
// Block (llama.cpp's qwen2 graph):
//   x += Wo·attn(rope(Wq·n + bq), rope(Wk·n + bk), Wv·n + bv) with n = rmsnorm(x)·attn_norm;
//   x += down(silu(gate·m) * up·m) with m = rmsnorm(x)·ffn_norm.
// RoPE in NEOX mode (halves rotated) over the whole head; softmax scale
// 1/sqrt(head_dim). The lm head is output.weight, or token_embd tied.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "graph/blocks.h"
#include "models/archs.h"
#include "ops/cpu_ops.h"

namespace strix {

namespace {

struct Layer {
  Weight attn_norm, ffn_norm;
  graph::AttnWeights attn;
  graph::FfnWeights ffn;
};

class Qwen2 : public Arch {
 public:
  Weight tok_embd, output_norm, output;
  std::vector<Layer> layers;
  graph::AttnConfig attn_cfg;

  void forward(Exec& e, Step& s) const override {
    const Hparams& hp = *s.hp;
    Workspace& ws = e.ws;
    const int64_t d = hp.n_embd;
    ops::get_rows(e, tok_embd, s.tokens, s.n_tokens, ws.x, d);
    for (int64_t il = 0; il < hp.n_layer; ++il) {
      const Layer& L = layers[il];
      ops::rms_norm(e, ws.x, s.n_tokens, d, d, ws.cur, d, fp(L.attn_norm), hp.norm_eps);
      graph::self_attention(e, s, il, L.attn, attn_cfg, ws.cur, d, ws.cur, d);
      if (il == hp.n_layer - 1 && s.n_outputs < s.n_tokens) {
        // only the rows that want logits go on (llama.cpp's inp_out_ids)
        ops::gather_rows(e, ws.x, d, d, s.out_ids, s.n_outputs);
        ops::gather_rows(e, ws.cur, d, d, s.out_ids, s.n_outputs);
        s.n_tokens = s.n_outputs;
      }
      ops::add(e, ws.cur, ws.x, ws.x, s.n_tokens, d, d);
      ops::rms_norm(e, ws.x, s.n_tokens, d, d, ws.cur, d, fp(L.ffn_norm), hp.norm_eps);
      graph::gated_ffn(e, s, L.ffn, graph::Glu::kSilu, ws.cur, d, ws.cur, d);
      ops::add(e, ws.cur, ws.x, ws.x, s.n_tokens, d, d);
    }
    graph::lm_head(e, s, ws.x, s.n_tokens, output_norm, output, hp.norm_eps);
  }

 private:
  static const float* fp(const Weight& w) { return reinterpret_cast<const float*>(w.data); }
};

}  // namespace

std::unique_ptr<Arch> load_qwen2(ModelLoader& ld, Hparams& hp) {
  const std::string& path = ld.file().splits()[0].path;
  read_common_hparams(ld, hp);
  ld.accept("rope.scaling.finetuned");  // informational
  hp.rope.mode = RopeMode::kNeox;
  // llama.cpp asserts a full rotary head and equal k/v head sizes for qwen2
  if (hp.rope.n_rot != hp.head_dim_k || hp.head_dim_k != hp.head_dim_v) {
    throw Refusal(path + ": qwen2 with rope.dimension_count " + std::to_string(hp.rope.n_rot) + ", key_length " +
                  std::to_string(hp.head_dim_k) + " and value_length " + std::to_string(hp.head_dim_v) +
                  " (partial rotary or unequal head sizes) is not run by llama.cpp or Strix");
  }
  hp.rope_swa = hp.rope;
  hp.kq_scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim_k));
  if (hp.n_ff <= 0) throw Refusal(path + ": missing key qwen2.feed_forward_length");

  auto m = std::make_unique<Qwen2>();
  const int64_t d = hp.n_embd, qd = hp.q_dim(), kd = hp.k_dim(), vd = hp.v_dim();
  const GgufTensor* te = ld.file().find_tensor("token_embd.weight");
  if (!te) throw Refusal(path + ": missing tensor token_embd.weight");
  hp.n_vocab = te->ne[1];
  m->tok_embd = ld.tensor("token_embd.weight", {d, hp.n_vocab}, WeightUse::kRows);
  m->output_norm = ld.tensor("output_norm.weight", {d}, WeightUse::kVector);
  m->output = ld.optional("output.weight", {d, hp.n_vocab});
  if (!m->output.present()) {
    m->output = m->tok_embd;  // tied embeddings (Qwen2.5 0.5B-3B)
    ld.require_use(m->output, WeightUse::kMatmul);
  }
  m->layers.resize(hp.n_layer);
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    Layer& L = m->layers[il];
    L.attn_norm = ld.tensor(p + "attn_norm.weight", {d}, WeightUse::kVector);
    // one fused projection (q, k, v rows) or three; llama.cpp's build_qkv takes either
    L.attn.wqkv = ld.optional(p + "attn_qkv.weight", {d, qd + kd + vd});
    if (L.attn.wqkv.present()) {
      L.attn.bqkv = ld.optional(p + "attn_qkv.bias", {qd + kd + vd}, WeightUse::kVector);
    } else {
      L.attn.wq = ld.tensor(p + "attn_q.weight", {d, qd});
      L.attn.wk = ld.tensor(p + "attn_k.weight", {d, kd});
      L.attn.wv = ld.tensor(p + "attn_v.weight", {d, vd});
      L.attn.bq = ld.optional(p + "attn_q.bias", {qd}, WeightUse::kVector);
      L.attn.bk = ld.optional(p + "attn_k.bias", {kd}, WeightUse::kVector);
      L.attn.bv = ld.optional(p + "attn_v.bias", {vd}, WeightUse::kVector);
    }
    L.attn.wo = ld.tensor(p + "attn_output.weight", {qd, d});
    L.ffn_norm = ld.tensor(p + "ffn_norm.weight", {d}, WeightUse::kVector);
    L.ffn.gate = ld.tensor(p + "ffn_gate.weight", {d, hp.n_ff});
    L.ffn.up = ld.tensor(p + "ffn_up.weight", {d, hp.n_ff});
    L.ffn.down = ld.tensor(p + "ffn_down.weight", {hp.n_ff, d});
  }
  m->attn_cfg.rope = &hp.rope;
  m->attn_cfg.kq_scale = hp.kq_scale;
  return m;
}

}  // namespace strix
