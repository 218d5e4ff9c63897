// The residual stream shared by the pre-norm decoders (llama.cpp's
// llm_build_llama shape, also qwen2, qwen3, qwen3moe, olmoe):
//   x = token_embd[tokens]
//   per layer:  x += attn(rms_norm(x) * attn_norm);  x += ffn(rms_norm(x) * ffn_norm)
//   logits = output · (rms_norm(x) * output_norm)
// Each residual add is fused with the norm that follows it (ops::add_rms_norm:
// the same arithmetic as add then rms_norm, one barrier fewer), and after the
// last layer's attention only the rows that want logits go on (llama.cpp's
// inp_out_ids). The architecture supplies its attention and feed-forward:
//   attn(e, s, il, layer): ws.cur (normed) -> ws.cur (attention output)
//   ffn(e, s, il, layer):  ws.cur (normed) -> ws.cur (feed-forward output)
// Layer needs Weight members attn_norm and ffn_norm (F32 vectors).
#pragma once

#include <vector>

#include "graph/blocks.h"
#include "ops/cpu_ops.h"

namespace strix::graph {

template <class Layer, class AttnFn, class FfnFn>
void prenorm_decoder(Exec& e, Step& s, const Weight& tok_embd, const std::vector<Layer>& layers,
                     const Weight& output_norm, const Weight& output, AttnFn&& attn, FfnFn&& ffn) {
  const Hparams& hp = *s.hp;
  Workspace& ws = e.ws;
  const int64_t d = hp.n_embd;
  auto fp = [](const Weight& w) { return reinterpret_cast<const float*>(w.data); };
  ops::get_rows(e, tok_embd, s.tokens, s.n_tokens, ws.x, d);
  ops::rms_norm(e, ws.x, s.n_tokens, d, d, ws.cur, d, fp(layers[0].attn_norm), hp.norm_eps);
  const int64_t end = s.layer_end > 0 ? s.layer_end : hp.n_layer;  // partial offload: the CPU's layers
  for (int64_t il = 0; il < end; ++il) {
    const Layer& L = layers[il];
    // ws.cur holds attn_norm(x) here (the previous layer's residual add computed it)
    attn(e, s, il, L);
    if (il == hp.n_layer - 1 && s.n_outputs < s.n_tokens) {
      ops::gather_rows(e, ws.x, d, d, s.out_ids, s.n_outputs);
      ops::gather_rows(e, ws.cur, d, d, s.out_ids, s.n_outputs);
      s.n_tokens = s.n_outputs;
    }
    ops::add_rms_norm(e, ws.x, ws.cur, ws.cur, s.n_tokens, d, fp(L.ffn_norm), hp.norm_eps);
    ffn(e, s, il, L);
    if (il + 1 < end) {
      ops::add_rms_norm(e, ws.x, ws.cur, ws.cur, s.n_tokens, d, fp(layers[il + 1].attn_norm), hp.norm_eps);
    } else {
      ops::add(e, ws.x, ws.cur, ws.x, s.n_tokens, d, d);
    }
  }
  if (s.layer_end > 0) return;  // ws.x: the residual stream, which the GPU takes on from
  lm_head(e, s, ws.x, s.n_tokens, output_norm, output, hp.norm_eps);
}

}  // namespace strix::graph
