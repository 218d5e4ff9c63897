// qwen3moe vs libllama: synthetic mixture-of-experts models (8 experts, 4 used:
// softmax router, top-k, renormalised weights, SiLU experts; qwen3 attention)
// with eight types for the 2-D weights and the experts, quantized experts
// under f32 attention, 32 experts / 8 used, and negative controls (experts used changed, router
// scaled) that must fail.
#include <gtest/gtest.h>

#include <string>

#include "parity/parity_util.h"

namespace strix::test {
namespace {

synth::SynthOptions qwen3moe_shape(const std::string& type, const std::string& expert_type = "") {
  synth::SynthOptions o;
  o.arch = "qwen3moe";
  o.type = type;
  if (!expert_type.empty()) o.expert_type = expert_type;
  o.n_expert = 8;
  o.n_expert_used = 4;
  o.seed = 51;
  return o;
}

class Qwen3MoeParity : public ::testing::TestWithParam<std::string> {};

TEST_P(Qwen3MoeParity, EightExpertsFourUsed) {
  const std::string type = GetParam();
  expect_parity(synth_model(qwen3moe_shape(type), "qwen3moe_" + type), type == "f32" ? 256 : 128);
}

INSTANTIATE_TEST_SUITE_P(Types, Qwen3MoeParity,
                         ::testing::Values("f32", "f16", "q8_0", "q4_0", "q4_K", "q5_K", "q6_K", "iq4_xs"));

class Qwen3MoeExpertParity : public ::testing::TestWithParam<std::string> {};

// Only the experts quantized: the MoE path (grouping, 3-D slices) under each expert type.
TEST_P(Qwen3MoeExpertParity, QuantizedExpertsF32Rest) {
  const std::string et = GetParam();
  expect_parity(synth_model(qwen3moe_shape("f32", et), "qwen3moe_f32_e" + et), 128, {"prefill", "decode"});
}

INSTANTIATE_TEST_SUITE_P(ExpertTypes, Qwen3MoeExpertParity, ::testing::Values("q8_0", "q4_K", "q6_K"));

// 32 experts, 8 used: the router softmax over 16+ lanes, many small expert groups.
TEST(Qwen3MoeParityMany, ThirtyTwoExpertsEightUsedF32) {
  synth::SynthOptions o = qwen3moe_shape("f32");
  o.n_expert = 32;
  o.n_expert_used = 8;
  expect_parity(synth_model(o, "qwen3moe_e32_f32"), 128);
}

TEST(Qwen3MoeParityControl, ExpertsUsedChangedFails) {
  const std::string path = synth_model(qwen3moe_shape("f32"), "qwen3moe_f32");
  const std::string variant = parity_dir() + "/qwen3moe_f32_used3.gguf";
  write_variant(path, variant, {.set_u32 = {{"qwen3moe.expert_used_count", 3}}});
  expect_parity_fails(path, variant, 64);
}

TEST(Qwen3MoeParityControl, RouterScaledFails) {
  const std::string path = synth_model(qwen3moe_shape("f32"), "qwen3moe_f32");
  const std::string variant = parity_dir() + "/qwen3moe_f32_router.gguf";
  // a sharper router on one layer: same experts mostly, different weights
  write_variant(path, variant, {.scale_tensor = {{"blk.1.ffn_gate_inp.weight", 2.0f}}});
  expect_parity_fails(path, variant, 64);
}

}  // namespace
}  // namespace strix::test
