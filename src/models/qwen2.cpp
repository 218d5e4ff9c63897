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

class Qwen2 : public Arch {
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
          graph::self_attention(e, s, il, L.attn, attn_cfg, e.ws.cur, s.hp->n_embd, e.ws.cur, s.hp->n_embd);
        },
        [&](Exec& e, Step& s, int64_t, const Layer& L) {
          graph::gated_ffn(e, s, L.ffn, graph::Glu::kSilu, e.ws.cur, s.hp->n_embd, e.ws.cur, s.hp->n_embd);
        });
  }
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
    L.attn = load_attention(ld, p, hp, {.fused_qkv = true, .qkv_bias = Need::kOptional});
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
