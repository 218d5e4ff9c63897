// qwen2 vs libllama: synthetic models (q/k/v biases, NEOX RoPE) of two shapes
// and eight weight types, one with the real Qwen vocabulary, and negative
// controls (RoPE base changed, biases dropped) that must fail; the same with
// one fused attn_qkv projection (llama.cpp's loader takes either form).
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "models/model.h"
#include "parity/parity_util.h"
#include "parity/qkv_variants.h"

namespace strix::test {
namespace {

synth::SynthOptions qwen2_shape(const std::string& type, int shape) {
  synth::SynthOptions o;
  o.arch = "qwen2";
  o.type = type;
  o.seed = 21 + shape;
  if (shape == 1) {  // GQA 3:1, odd head count, deeper, tied lm head
    o.n_layer = 3;
    o.n_head = 6;
    o.n_head_kv = 2;
    o.n_embd = 192;
    o.n_ff = 320;
    o.tied_output = true;
  }
  return o;
}

class Qwen2Parity : public ::testing::TestWithParam<std::string> {};

TEST_P(Qwen2Parity, DefaultShape) {
  const std::string type = GetParam();
  expect_parity(synth_model(qwen2_shape(type, 0), "qwen2_0_" + type), 256);
}

TEST_P(Qwen2Parity, GqaOddHeadsTied) {
  const std::string type = GetParam();
  expect_parity(synth_model(qwen2_shape(type, 1), "qwen2_1_" + type), 128, {"prefill", "mixed"});
}

INSTANTIATE_TEST_SUITE_P(Types, Qwen2Parity,
                         ::testing::Values("f32", "f16", "q8_0", "q4_0", "q4_K", "q5_K", "q6_K", "iq4_xs"));

// Qwen's own 151k-token vocabulary (narrow model so the lm head stays cheap).
TEST(Qwen2RealVocab, QwenVocabulary) {
  synth::SynthOptions o = qwen2_shape("q8_0", 0);
  o.vocab = "qwen3";
  o.n_embd = 64;
  o.n_ff = 128;
  expect_parity(synth_model(o, "qwen2_qvocab_q8_0"), 128, {"prefill"});
}

TEST(Qwen2FusedQkv, Parity) {
  for (const std::string type : {"f32", "q4_K"}) {
    const std::string path = synth_model(qwen2_shape(type, 1), "qwen2_1_" + type);
    const std::string fused = parity_dir() + "/qwen2_1_" + type + "_fused.gguf";
    write_rewrite(path, fused, {.fuse_qkv = true});
    ASSERT_TRUE(Model::load(fused)->file().find_tensor("blk.0.attn_qkv.bias"));
    expect_parity(fused, 128, {"prefill", "decode"});
  }
}

// YaRN as Qwen2.5's long-context GGUFs carry it (factor 4 over the original
// context; here 64 so that the ramp spans the tiny model's frequencies).
TEST(Qwen2Yarn, Parity) {
  const std::string path = synth_model(qwen2_shape("f32", 0), "qwen2_0_f32");
  const std::string yarn = parity_dir() + "/qwen2_0_f32_yarn.gguf";
  write_rewrite(path, yarn,
                {.set_u32 = {{"qwen2.rope.scaling.original_context_length", 64}},
                 .set_f32 = {{"qwen2.rope.scaling.factor", 4.0f}},
                 .set_str = {{"qwen2.rope.scaling.type", "yarn"}}});
  expect_parity(yarn, 128, {"prefill", "decode"});
  // control: Strix without the scaling
  expect_parity_fails(yarn, path, 128);
}

// Keys that change the computation and are not implemented are refused by name.
TEST(Qwen2Refusals, SlidingWindowKeyIsRefused) {
  const std::string path = synth_model(qwen2_shape("f32", 0), "qwen2_0_f32");
  const std::string variant = parity_dir() + "/qwen2_0_f32_swa.gguf";
  write_variant(path, variant, {.set_u32 = {{"qwen2.attention.sliding_window", 64}}});
  try {
    const auto m = Model::load(variant);
    (void)m;
    FAIL() << "loaded a qwen2 file with a sliding window";
  } catch (const Refusal& r) {
    EXPECT_NE(std::string(r.what()).find("qwen2.attention.sliding_window"), std::string::npos) << r.what();
  }
}

TEST(Qwen2ParityControl, RopeBaseChangedFails) {
  const std::string path = synth_model(qwen2_shape("f32", 0), "qwen2_0_f32");
  const std::string variant = parity_dir() + "/qwen2_0_f32_rope.gguf";
  write_variant(path, variant, {.set_f32 = {{"qwen2.rope.freq_base", 10000.0}}});
  expect_parity_fails(path, variant, 64);
}

TEST(Qwen2ParityControl, BiasDroppedFails) {
  const std::string path = synth_model(qwen2_shape("q4_K", 0), "qwen2_0_q4_K");
  const std::string variant = parity_dir() + "/qwen2_0_q4_K_bias.gguf";
  // q and k biases of zero: as if the biases were not added
  write_variant(path, variant, {.scale_tensor = {{"blk.0.attn_q.bias", 0.0f}, {"blk.0.attn_k.bias", 0.0f}}});
  expect_parity_fails(path, variant, 64);
}

}  // namespace
}  // namespace strix::test
