#include "models/moe_common.h"

#include "core/error.h"
#include "ops/moe_ops.h"

namespace strix {

void read_moe_hparams(ModelLoader& ld, Hparams& hp) {
  const std::string& path = ld.file().splits()[0].path;
  hp.n_expert = ld.u32("expert_count");
  hp.n_expert_used = ld.u32("expert_used_count");
  if (hp.n_expert <= 0 || hp.n_expert > ops::kMoeMaxExperts) {
    throw Error(path + ": " + ld.arch() + ".expert_count " + std::to_string(hp.n_expert) + " is outside 1..512");
  }
  if (hp.n_expert_used <= 0 || hp.n_expert_used > hp.n_expert) {
    throw Error(path + ": " + ld.arch() + ".expert_used_count " + std::to_string(hp.n_expert_used) + " is outside 1.." +
                std::to_string(hp.n_expert));
  }
  hp.n_ff_exp = ld.u32_or("expert_feed_forward_length", 0);
}

graph::MoeWeights load_moe_weights(ModelLoader& ld, const std::string& p, const Hparams& hp, bool biases) {
  const int64_t d = hp.n_embd, ne = hp.n_expert, ff = hp.n_ff_exp;
  graph::MoeWeights w;
  w.gate_inp = ld.tensor(p + "ffn_gate_inp.weight", {d, ne});
  w.gate_exps = ld.tensor(p + "ffn_gate_exps.weight", {d, ff, ne});
  w.down_exps = ld.tensor(p + "ffn_down_exps.weight", {ff, d, ne});
  w.up_exps = ld.tensor(p + "ffn_up_exps.weight", {d, ff, ne});
  if (biases) {
    w.gate_inp_b = ld.tensor(p + "ffn_gate_inp.bias", {ne}, WeightUse::kVector);
    w.gate_exps_b = ld.tensor(p + "ffn_gate_exps.bias", {ff, ne}, WeightUse::kVector);
    w.down_exps_b = ld.tensor(p + "ffn_down_exps.bias", {d, ne}, WeightUse::kVector);
    w.up_exps_b = ld.tensor(p + "ffn_up_exps.bias", {ff, ne}, WeightUse::kVector);
  }
  return w;
}

}  // namespace strix
