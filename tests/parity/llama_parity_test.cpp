// llama vs libllama: synthetic models of several shapes and weight types, the
// real stories260K (greedy 200 tokens), and negative controls.
#include "core/source_dir.h"
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "models/model.h"
#include "parity/parity_util.h"
#include "ref/libllama.h"
#include "runtime/context.h"

namespace strix::test {
namespace {

synth::SynthOptions llama_shape(const std::string& type, int shape) {
  synth::SynthOptions o;
  o.arch = "llama";
  o.type = type;
  o.seed = 7 + shape;
  if (shape == 1) {  // GQA 3:1, odd head count, deeper
    o.n_layer = 3;
    o.n_head = 6;
    o.n_head_kv = 2;
    o.n_embd = 192;
    o.n_ff = 320;
  }
  return o;
}

class LlamaParity : public ::testing::TestWithParam<std::string> {};

TEST_P(LlamaParity, DefaultShape) {
  const std::string type = GetParam();
  expect_parity(synth_model(llama_shape(type, 0), "llama0_" + type), 256);
}

TEST_P(LlamaParity, GqaOddHeads) {
  const std::string type = GetParam();
  expect_parity(synth_model(llama_shape(type, 1), "llama1_" + type), 128, {"prefill", "mixed"});
}

INSTANTIATE_TEST_SUITE_P(Types, LlamaParity,
                         ::testing::Values("f32", "f16", "q8_0", "q4_0", "q4_K", "q5_K", "q6_K", "iq4_xs"));

TEST(LlamaParityControl, RopeBaseChangedFails) {
  const std::string path = synth_model(llama_shape("f32", 0), "llama0_f32");
  const std::string variant = parity_dir() + "/llama0_f32_rope.gguf";
  write_variant(path, variant, {.set_f32 = {{"llama.rope.freq_base", 500000.0}}});
  expect_parity_fails(path, variant, 64);
}

TEST(LlamaParityControl, NormSkippedFails) {
  const std::string path = synth_model(llama_shape("q4_K", 0), "llama0_q4_K");
  const std::string variant = parity_dir() + "/llama0_q4_K_norm.gguf";
  // an attention norm of all ones: as if the learned scale were skipped
  write_variant(path, variant, {.scale_tensor = {{"blk.1.attn_norm.weight", 0.0f}}});
  expect_parity_fails(path, variant, 64);
}

std::string stories_path() { return std::string(STRIX_SOURCE_DIR) + "/../shared/data/stories260K.gguf"; }

TEST(LlamaStories, ParityAllModes) {
  if (!std::filesystem::exists(stories_path())) GTEST_SKIP() << "../shared is absent";
  expect_parity(stories_path(), 256);
}

TEST(LlamaStories, Greedy200TokensEqualLibllama) {
  if (!std::filesystem::exists(stories_path())) GTEST_SKIP() << "../shared is absent";
  ref::LlamaModel rm(stories_path());
  ref::LlamaContext rc(rm, {.n_ctx = 512, .n_batch = 512, .n_ubatch = 512, .n_threads = 1});
  auto model = Model::load(stories_path());
  Context ctx(*model, {.n_ctx = 512, .n_ubatch = 512, .n_threads = 2});
  std::vector<int32_t> ref_ids{rm.bos()}, our_ids{rm.bos()};
  rc.decode_seq(ref_ids, 0);
  ctx.decode_seq(our_ids);
  for (int i = 0; i < 200; ++i) {
    const auto rl = rc.logits(-1);
    const auto sl = ctx.logits(-1);
    const int32_t rt = static_cast<int32_t>(std::max_element(rl.begin(), rl.end()) - rl.begin());
    const int32_t st = static_cast<int32_t>(std::max_element(sl.begin(), sl.end()) - sl.begin());
    ref_ids.push_back(rt);
    our_ids.push_back(st);
    ASSERT_EQ(rt, st) << "token " << i;
    rc.decode_seq(std::vector<int32_t>{rt}, static_cast<int32_t>(ref_ids.size() - 1));
    ctx.decode_seq(std::vector<int32_t>{st});
  }
  const std::string text = rm.detokenize(ref_ids, true, false);
  EXPECT_NE(text.find("Once upon a time, there was a little girl named Lily"), std::string::npos) << text;
}

}  // namespace
}  // namespace strix::test
