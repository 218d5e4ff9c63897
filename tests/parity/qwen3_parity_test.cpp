// qwen3 vs libllama: synthetic models (per-head q/k RMS norms before NEOX
// RoPE) of two shapes, one with head_dim != n_embd / n_head, eight weight
// types, one with the real Qwen3 vocabulary, and negative controls (RoPE base
// changed, q norm scaled) that must fail.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "models/model.h"
#include "parity/parity_util.h"
#include "parity/qkv_variants.h"

namespace strix::test {
namespace {

synth::SynthOptions qwen3_shape(const std::string& type, int shape) {
  synth::SynthOptions o;
  o.arch = "qwen3";
  o.type = type;
  o.seed = 31 + shape;
  if (shape == 1) {  // GQA 3:1, odd head count, head_dim 48 != 192 / 6, deeper
    o.n_layer = 3;
    o.n_head = 6;
    o.n_head_kv = 2;
    o.n_embd = 192;
    o.head_dim = 48;
    o.n_ff = 320;
  }
  return o;
}

class Qwen3Parity : public ::testing::TestWithParam<std::string> {};

TEST_P(Qwen3Parity, DefaultShape) {
  const std::string type = GetParam();
  expect_parity(synth_model(qwen3_shape(type, 0), "qwen3_0_" + type), 256);
}

TEST_P(Qwen3Parity, GqaOddHeadsWideHeads) {
  const std::string type = GetParam();
  const std::string path = synth_model(qwen3_shape(type, 1), "qwen3_1_" + type);
  const auto m = Model::load(path);
  ASSERT_EQ(m->hparams().head_dim_k, 48);
  ASSERT_EQ(m->hparams().q_dim(), 288);
  expect_parity(path, 128, {"prefill", "mixed"});
}

INSTANTIATE_TEST_SUITE_P(Types, Qwen3Parity,
                         ::testing::Values("f32", "f16", "q8_0", "q4_0", "q4_K", "q5_K", "q6_K", "iq4_xs"));

// Qwen3's own 151k-token vocabulary; head_dim 32 wider than 64 / 4 = 16.
TEST(Qwen3RealVocab, Qwen3Vocabulary) {
  synth::SynthOptions o = qwen3_shape("q8_0", 0);
  o.vocab = "qwen3";
  o.n_embd = 64;
  o.head_dim = 32;
  o.n_ff = 128;
  expect_parity(synth_model(o, "qwen3_qvocab_q8_0"), 128, {"prefill"});
}

// Keys that change the computation and are not implemented are refused by name.
TEST(Qwen3Refusals, UnknownKeysAreRefusedByName) {
  const std::string path = synth_model(qwen3_shape("f32", 0), "qwen3_0_f32");
  for (const std::string key : {"qwen3.attention.sliding_window", "qwen3.pooling_type"}) {
    const std::string variant = parity_dir() + "/qwen3_0_f32_refuse.gguf";
    write_variant(path, variant, {.set_u32 = {{key, 1}}});
    try {
      const auto m = Model::load(variant);
      (void)m;
      ADD_FAILURE() << "loaded a qwen3 file with " << key;
    } catch (const Refusal& r) {
      EXPECT_NE(std::string(r.what()).find(key), std::string::npos) << r.what();
    }
  }
}

// One fused attn_qkv projection (llama.cpp's loader takes either form); the
// per-head norms then run on q/k rows unpacked from it.
TEST(Qwen3FusedQkv, Parity) {
  for (const std::string type : {"f32", "q4_K"}) {
    const std::string path = synth_model(qwen3_shape(type, 1), "qwen3_1_" + type);
    const std::string fused = parity_dir() + "/qwen3_1_" + type + "_fused.gguf";
    write_rewrite(path, fused, {.fuse_qkv = true});
    ASSERT_TRUE(Model::load(fused)->file().find_tensor("blk.0.attn_qkv.weight"));
    expect_parity(fused, 128, {"prefill", "decode"});
  }
}

TEST(Qwen3ParityControl, RopeBaseChangedFails) {
  const std::string path = synth_model(qwen3_shape("f32", 0), "qwen3_0_f32");
  const std::string variant = parity_dir() + "/qwen3_0_f32_rope.gguf";
  write_variant(path, variant, {.set_f32 = {{"qwen3.rope.freq_base", 10000.0}}});
  expect_parity_fails(path, variant, 64);
}

TEST(Qwen3ParityControl, QNormScaledFails) {
  const std::string path = synth_model(qwen3_shape("q4_K", 1), "qwen3_1_q4_K");
  const std::string variant = parity_dir() + "/qwen3_1_q4_K_qnorm.gguf";
  write_variant(path, variant, {.scale_tensor = {{"blk.1.attn_q_norm.weight", 1.5f}}});
  expect_parity_fails(path, variant, 64);
}

}  // namespace
}  // namespace strix::test
