// gpt-oss vs libllama: synthetic models (attention with biases and sinks,
// sliding window of 16 on the even layers so 128 positions cross it, YaRN
// RoPE, post-attention norm, biased router with softmax over the selected
// logits, biased SwiGLU-OAI experts; 8 experts, 4 used) with eight types for
// the 2-D weights (MXFP4 experts, as released), other expert types, and
// negative controls (router bias dropped, window widened, sinks zeroed) that
// must fail.
#include <gtest/gtest.h>

#include <string>

#include "parity/parity_util.h"

namespace strix::test {
namespace {

synth::SynthOptions gpt_oss_shape(const std::string& type, const std::string& expert_type = "mxfp4") {
  synth::SynthOptions o;
  o.arch = "gpt-oss";
  o.type = type;
  o.expert_type = expert_type;
  o.n_expert = 8;
  o.n_expert_used = 4;
  o.n_swa = 16;
  o.seed = 71;
  return o;
}

class GptOssParity : public ::testing::TestWithParam<std::string> {};

TEST_P(GptOssParity, Mxfp4ExpertsWindow16) {
  const std::string type = GetParam();
  expect_parity(synth_model(gpt_oss_shape(type), "gptoss_" + type), 128);
}

INSTANTIATE_TEST_SUITE_P(Types, GptOssParity,
                         ::testing::Values("f32", "f16", "q8_0", "q4_0", "q4_K", "q5_K", "q6_K", "iq4_xs"));

class GptOssExpertParity : public ::testing::TestWithParam<std::string> {};

TEST_P(GptOssExpertParity, ExpertTypeF32Rest) {
  const std::string et = GetParam();
  expect_parity(synth_model(gpt_oss_shape("f32", et), "gptoss_f32_e" + et), et == "f32" ? 256 : 128);
}

INSTANTIATE_TEST_SUITE_P(ExpertTypes, GptOssExpertParity, ::testing::Values("f32", "q8_0", "q4_K"));

const std::string& f32_model() {
  static const std::string path = synth_model(gpt_oss_shape("f32", "f32"), "gptoss_f32_ef32");
  return path;
}

TEST(GptOssParityControl, RouterBiasDroppedFails) {
  const std::string variant = parity_dir() + "/gptoss_f32_nobias.gguf";
  write_variant(f32_model(), variant,
                {.scale_tensor = {{"blk.0.ffn_gate_inp.bias", 0.0f}, {"blk.1.ffn_gate_inp.bias", 0.0f}}});
  expect_parity_fails(f32_model(), variant, 64);
}

TEST(GptOssParityControl, SlidingWindowWidenedFails) {
  const std::string variant = parity_dir() + "/gptoss_f32_noswa.gguf";
  write_variant(f32_model(), variant, {.set_u32 = {{"gpt-oss.attention.sliding_window", 4096}}});
  expect_parity_fails(f32_model(), variant, 64);
}

TEST(GptOssParityControl, SinksZeroedFails) {
  const std::string variant = parity_dir() + "/gptoss_f32_sinks.gguf";
  write_variant(f32_model(), variant,
                {.scale_tensor = {{"blk.0.attn_sinks.weight", 0.0f}, {"blk.1.attn_sinks.weight", 0.0f}}});
  expect_parity_fails(f32_model(), variant, 64);
}

}  // namespace
}  // namespace strix::test
