// gemma3 vs libllama: synthetic models (sliding window 32 / 48, so 128-256
// positions cross it) of two shapes and eight weight types; the
// optional keys as the pinned libllama reads them (freq_base_swa, the window
// pattern, final softcapping, no window, linear RoPE scaling); and negative
// controls that must fail.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/error.h"
#include "models/model.h"
#include "parity/parity_util.h"

namespace strix::test {
namespace {

synth::SynthOptions gemma3_shape(const std::string& type, int shape) {
  synth::SynthOptions o;
  o.arch = "gemma3";
  o.type = type;
  o.seed = 11 + shape;
  o.n_swa = 32;  // 6 layers: 0-4 slide, 5 is global
  if (shape == 1) {  // GQA 3:1, head_dim 32, a 7th layer (sliding) after the global one
    o.n_layer = 7;
    o.n_embd = 192;
    o.n_head = 6;
    o.n_head_kv = 2;
    o.head_dim = 32;
    o.n_ff = 320;
    o.n_swa = 48;
  }
  return o;
}

// synth's gemma3 predicts its input token with p ~ 1 (the sqrt(n_embd)-scaled
// embedding dominates the residual stream and the head is tied), which makes
// logit parity nearly blind to the blocks. Both sides therefore run a copy
// with the post-attention and post-FFW norms x4 (mean top-1 probability ~0.6;
// synth's llama: ~0.3).
constexpr float kSharp = 2.0f;

std::string model(const std::string& type, int shape) {
  const synth::SynthOptions o = gemma3_shape(type, shape);
  const std::string tag = "gemma3_" + std::to_string(shape) + "_" + type;
  const std::string raw = synth_model(o, tag);
  const std::string path = parity_dir() + "/" + tag + "_sharp.gguf";
  if (!std::filesystem::exists(path)) {
    VariantEdit e;
    for (int64_t il = 0; il < o.n_layer.value_or(6); ++il) {
      e.scale_tensor.push_back({"blk." + std::to_string(il) + ".post_attention_norm.weight", kSharp});
      e.scale_tensor.push_back({"blk." + std::to_string(il) + ".post_ffw_norm.weight", kSharp});
    }
    write_variant(raw, path, e);
  }
  return path;
}

std::string variant(const std::string& src, const std::string& tag, const VariantEdit& edit) {
  const std::string path = parity_dir() + "/gemma3_" + tag + ".gguf";
  write_variant(src, path, edit);
  return path;
}

class Gemma3Parity : public ::testing::TestWithParam<std::string> {};

// 256 positions in every mode for f32 and q4_K; 128 in prefill and mixed
// (which has single-token steps too) for the rest, to keep the binary fast.
TEST_P(Gemma3Parity, DefaultShape) {
  const std::string type = GetParam();
  if (type == "f32" || type == "q4_K") {
    expect_parity(model(type, 0), 256);
  } else {
    expect_parity(model(type, 0), 128, {"prefill", "mixed"});
  }
}

TEST_P(Gemma3Parity, GqaHeadDim32SevenLayers) { expect_parity(model(GetParam(), 1), 128, {"prefill", "mixed"}); }

INSTANTIATE_TEST_SUITE_P(Types, Gemma3Parity,
                         ::testing::Values("f32", "f16", "q8_0", "q4_0", "q4_K", "q5_K", "q6_K", "iq4_xs"));

// Both sides run the altered file: what the optional keys do in libllama.
TEST(Gemma3Keys, FreqBaseSwaIsRead) {
  expect_parity(variant(model("f32", 0), "base_swa", {.set_f32 = {{"gemma3.rope.freq_base_swa", 1e6}}}), 128,
                {"prefill"});
}

TEST(Gemma3Keys, SlidingWindowPatternIsRead) {
  const std::string m = model("f32", 0);
  expect_parity(variant(m, "pattern3", {.set_u32 = {{"gemma3.attention.sliding_window_pattern", 3}}}), 128,
                {"prefill"});
  expect_parity(variant(m, "pattern0", {.set_u32 = {{"gemma3.attention.sliding_window_pattern", 0}}}), 128,
                {"prefill"});
}

TEST(Gemma3Keys, FinalSoftcapWithAndWithoutWindow) {
  const std::string m = model("f32", 0);
  expect_parity(variant(m, "softcap", {.set_f32 = {{"gemma3.final_logit_softcapping", 5.0}}}), 128, {"prefill"});
  expect_parity(variant(m, "nowindow", {.remove = {"gemma3.attention.sliding_window"}}), 128, {"prefill"});
  expect_parity(variant(m, "nowindow_cap", {.set_f32 = {{"gemma3.final_logit_softcapping", 30.0}},
                                            .remove = {"gemma3.attention.sliding_window"}}),
                128, {"prefill", "decode"});
}

TEST(Gemma3Keys, LinearRopeScalingOnGlobalLayersOnly) {
  expect_parity(variant(model("q4_K", 0), "linear8", {.set_f32 = {{"gemma3.rope.scaling.factor", 8.0}}}), 128,
                {"prefill", "mixed"});
}

TEST(Gemma3Keys, YarnScaling) {
  expect_parity(variant(model("f32", 0), "yarn4", {.set_f32 = {{"gemma3.rope.scaling.factor", 4.0}},
                                                   .set_u32 = {{"gemma3.rope.scaling.original_context_length", 64}},
                                                   .set_str = {{"gemma3.rope.scaling.type", "yarn"}}}),
                128, {"prefill"});
}

TEST(Gemma3Keys, PatternOneIsRefused) {
  // no sliding layer left: libllama aborts on such a file, Strix refuses it
  const std::string v = variant(model("f32", 0), "pattern1", {.set_u32 = {{"gemma3.attention.sliding_window_pattern", 1}}});
  EXPECT_THROW(Model::load(v), Refusal);
}

// Negative controls: Strix runs the altered copy, libllama the original.
TEST(Gemma3ParityControl, SlidingWindowChangedFails) {
  const std::string m = model("f32", 0);
  expect_parity_fails(m, variant(m, "swa40", {.set_u32 = {{"gemma3.attention.sliding_window", 40}}}), 128);
}

TEST(Gemma3ParityControl, SwaRopeBaseChangedFails) {
  const std::string m = model("f32", 0);
  // the global layers' base on the sliding layers too
  expect_parity_fails(m, variant(m, "swa_base", {.set_f32 = {{"gemma3.rope.freq_base_swa", 1e6}}}), 128);
}

TEST(Gemma3ParityControl, GlobalRopeBaseChangedFails) {
  const std::string m = model("f32", 0);
  expect_parity_fails(m, variant(m, "global_base", {.set_f32 = {{"gemma3.rope.freq_base", 10000.0}}}), 128);
}

TEST(Gemma3ParityControl, PostFfwNormZeroedFails) {
  const std::string m = model("q4_K", 0);
  // a post-FFW norm of zeros: as if layer 2 dropped its FFN branch
  expect_parity_fails(m, variant(m, "postffw", {.scale_tensor = {{"blk.2.post_ffw_norm.weight", 0.0f}}}), 64);
}

TEST(Gemma3ParityControl, SoftcapAddedFails) {
  const std::string m = model("f32", 0);
  expect_parity_fails(m, variant(m, "cap", {.set_f32 = {{"gemma3.final_logit_softcapping", 5.0}}}), 64);
}

}  // namespace
}  // namespace strix::test
