// olmoe vs libllama: synthetic mixture-of-experts models (8 experts, 3 used:
// softmax router, top-k without renormalisation, SiLU experts; q/k RMS norms
// over the whole projection) with eight weight types, and negative controls
// (experts used changed, q norm scaled) that must fail.
#include <gtest/gtest.h>

#include <string>

#include "parity/parity_util.h"

namespace strix::test {
namespace {

synth::SynthOptions olmoe_shape(const std::string& type) {
  synth::SynthOptions o;
  o.arch = "olmoe";
  o.type = type;
  o.n_expert = 8;
  o.n_expert_used = 3;
  o.seed = 61;
  return o;
}

class OlmoeParity : public ::testing::TestWithParam<std::string> {};

TEST_P(OlmoeParity, EightExpertsThreeUsed) {
  const std::string type = GetParam();
  expect_parity(synth_model(olmoe_shape(type), "olmoe_" + type), type == "f32" ? 256 : 128);
}

INSTANTIATE_TEST_SUITE_P(Types, OlmoeParity,
                         ::testing::Values("f32", "f16", "q8_0", "q4_0", "q4_K", "q5_K", "q6_K", "iq4_xs"));

TEST(OlmoeParityControl, ExpertsUsedChangedFails) {
  const std::string path = synth_model(olmoe_shape("f32"), "olmoe_f32");
  const std::string variant = parity_dir() + "/olmoe_f32_used2.gguf";
  write_variant(path, variant, {.set_u32 = {{"olmoe.expert_used_count", 2}}});
  expect_parity_fails(path, variant, 64);
}

TEST(OlmoeParityControl, QNormScaledFails) {
  const std::string path = synth_model(olmoe_shape("f32"), "olmoe_f32");
  const std::string variant = parity_dir() + "/olmoe_f32_qnorm.gguf";
  write_variant(path, variant, {.scale_tensor = {{"blk.0.attn_q_norm.weight", 0.5f}}});
  expect_parity_fails(path, variant, 64);
}

}  // namespace
}  // namespace strix::test
