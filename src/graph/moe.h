// The mixture-of-experts feed-forward block (llama.cpp's build_moe_ffn):
// router, top-k routing, per-expert gated FFN from 3-D expert tensors, and the
// weighted sum of the selected experts in slot order.
//
// Tokens are grouped by expert: each selected expert's rows are multiplied
// once with all the tokens routed to it (ops::matmul's `expert` argument picks
// the 2-D slice), its outputs are weighted into [token, slot] rows, and the
// slots are added per token in the order ggml adds them.
#pragma once

#include <cstdint>

#include "models/model.h"
#include "ops/exec.h"
#include "ops/moe_ops.h"

namespace strix::graph {

struct MoeWeights {
  Weight gate_inp, gate_inp_b;                 // router [n_embd, n_expert] (+ bias [n_expert])
  Weight gate_exps, up_exps;                   // [n_embd, n_ff_exp, n_expert]
  Weight down_exps;                            // [n_ff_exp, n_embd, n_expert]
  Weight gate_exps_b, up_exps_b, down_exps_b;  // [n_ff_exp, n_expert], [n_embd, n_expert] (gpt-oss)
};

enum class MoeAct {
  kSilu,       // silu(gate) * up
  kSwigluOai,  // gpt-oss: clamped, alpha 1.702, limit 7
};

struct MoeConfig {
  ops::MoeRouting routing;
  MoeAct act = MoeAct::kSilu;
};

// Floats of Workspace::moe one token row needs (context.cpp sizes ws.moe with it).
int64_t moe_scratch_width(int64_t n_embd, int64_t n_expert, int64_t n_expert_used, int64_t n_ff_exp);

// out[t] = MoE(in[t]) for the step's tokens. Uses ws.moe only;
// `out` may be `in` (it is written only after the last read of `in`).
void moe_ffn(Exec& e, Step& s, const MoeWeights& w, const MoeConfig& cfg, const float* in, int64_t in_stride,
             float* out, int64_t out_stride);

}  // namespace strix::graph
