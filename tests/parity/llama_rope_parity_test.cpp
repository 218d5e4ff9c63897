// llama with RoPE scaling vs libllama, 256 positions: linear (factor 2), YaRN
// (factor 4 over an original context of 64, default betas) and Llama 3's
// rope_freqs.weight; the yarn_* keys libllama's llama loader ignores; and a
// negative control for each (Strix runs the file without the scaling).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "parity/parity_util.h"

namespace strix::test {
namespace {

constexpr int kHeadDim = 64;  // synth's llama default: 256 / 4 heads

std::string base_model(const std::string& type) {
  synth::SynthOptions o;
  o.arch = "llama";
  o.type = type;
  o.seed = 21;
  return synth_model(o, "llama_rope_" + type);
}

std::string variant(const std::string& src, const std::string& tag, const VariantEdit& edit) {
  const std::string path = parity_dir() + "/llama_rope_" + tag + ".gguf";
  write_variant(src, path, edit);
  return path;
}

const VariantEdit kLinear2 = {.set_f32 = {{"llama.rope.scaling.factor", 2.0}},
                              .set_str = {{"llama.rope.scaling.type", "linear"}}};
const VariantEdit kYarn4 = {.set_f32 = {{"llama.rope.scaling.factor", 4.0}},
                            .set_u32 = {{"llama.rope.scaling.original_context_length", 64}},
                            .set_str = {{"llama.rope.scaling.type", "yarn"}}};

// rope_freqs.weight as convert_hf_to_gguf writes it for Llama 3.1 (factor 8,
// low/high frequency factors 1 / 4), for an original context of 64.
std::vector<float> llama3_rope_freqs() {
  const float base = 10000.0f, factor = 8.0f, low = 1.0f, high = 4.0f, orig = 64.0f;
  const float low_wavelen = orig / low, high_wavelen = orig / high;
  std::vector<float> f;
  for (int i = 0; i < kHeadDim; i += 2) {
    const float freq = 1.0f / std::pow(base, static_cast<float>(i) / kHeadDim);
    const float wavelen = 2.0f * static_cast<float>(M_PI) / freq;
    if (wavelen < high_wavelen) {
      f.push_back(1.0f);
    } else if (wavelen > low_wavelen) {
      f.push_back(factor);
    } else {
      const float smooth = (orig / wavelen - low) / (high - low);
      f.push_back(1.0f / ((1.0f - smooth) / factor + smooth));
    }
  }
  return f;
}

TEST(LlamaRope, LinearFactor2) {
  const std::string v = variant(base_model("f32"), "linear2", kLinear2);
  expect_parity(v, 256);
  expect_parity_fails(v, variant(v, "linear2_off", {.remove = {"llama.rope.scaling.factor"}}), 128);
}

TEST(LlamaRope, YarnFactor4OrigCtx64) {
  const std::string v = variant(base_model("f32"), "yarn4", kYarn4);
  expect_parity(v, 256);
  // the same factor as plain linear interpolation: no YaRN ramp or magnitude
  expect_parity_fails(v, variant(v, "yarn4_linear", {.set_str = {{"llama.rope.scaling.type", "linear"}}}), 128);
}

TEST(LlamaRope, YarnQuantized) {
  const std::string v = variant(base_model("q4_K"), "yarn4_q4_K", kYarn4);
  expect_parity(v, 256, {"prefill", "mixed"});
  // the original context ignored (defaults to the training context)
  expect_parity_fails(v, variant(v, "yarn4_q4_K_ctx", {.remove = {"llama.rope.scaling.original_context_length"}}),
                      128);
}

TEST(LlamaRope, YarnKeysLibllamaIgnores) {
  // llama's loader reads neither betas nor the yarn factor overrides; the
  // magnitude key rope.scaling.attn_factor it does read
  VariantEdit e = kYarn4;
  e.set_f32.push_back({"llama.rope.scaling.yarn_beta_fast", 8.0});
  e.set_f32.push_back({"llama.rope.scaling.yarn_beta_slow", 4.0});
  e.set_f32.push_back({"llama.rope.scaling.yarn_ext_factor", 0.5});
  e.set_f32.push_back({"llama.rope.scaling.yarn_attn_factor", 2.0});
  e.set_f32.push_back({"llama.rope.scaling.attn_factor", 1.25});
  expect_parity(variant(base_model("f32"), "yarn4_keys", e), 128, {"prefill"});
}

TEST(LlamaRope, Llama3RopeFreqs) {
  const std::string v = variant(base_model("f32"), "freqs", {.add_tensor = {{"rope_freqs.weight", llama3_rope_freqs()}}});
  expect_parity(v, 256);
  // rope_freqs ignored: Strix runs the file without the tensor
  const std::string base = base_model("f32");
  expect_parity_fails(v, base, 128);
}

TEST(LlamaRope, ScalingTypeNoneIgnoresFactor) {
  expect_parity(variant(base_model("f32"), "none2", {.set_f32 = {{"llama.rope.scaling.factor", 2.0}},
                                                     .set_str = {{"llama.rope.scaling.type", "none"}}}),
                128, {"prefill"});
}

}  // namespace
}  // namespace strix::test
