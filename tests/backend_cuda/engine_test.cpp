// The server's engine on the GPU, on stories260K, at -ngl 99 (CudaContext: its
// paged KV cache on the GPU, the block bookkeeping on the host) and at a partial
// -ngl 3 and 1 (HybridContext: one bookkeeping for the CPU's and the GPU's
// cells; stories260K has 5 layers, so layers 3..4 + the output layer, then the
// output layer alone): every reply equals libllama's greedy tokens (CPU) for its
// prompt, with
//   - four different prompts decoded at once;
//   - a prompt sent again: its whole blocks come from the prefix cache;
//   - three identical prompts at once: computed once, the shared last block
//     copied (on both sides when split) by whichever writes it first;
//   - 150 tokens in a 64-cell context with the context shift (kv_move on the
//     GPU), against libllama running llama-server's loop; controls: the
//     runner-up once, and no shift.
// Negative control: the runner-up taken once gives another text.
// Skips without a CUDA backend, a GPU (CI) or stories260K.
#include <gtest/gtest.h>

#if STRIX_HAVE_CUDA

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "backend/cuda/cuda_context.h"
#include "backend_cuda/test_models.h"
#include "common/engine_harness.h"
#include "core/source_dir.h"
#include "models/model.h"
#include "ref/libllama.h"
#include "runtime/offload.h"
#include "server/engine.h"
#include "tokenizer/tokenizer.h"

namespace strix::cuda {
namespace {

using server::Engine;
using server::GenEvent;
using server::GenRequest;
using server::GenStream;

using test::stories;

// The parameter is the -ngl count.
class CudaEngine : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    std::string why;
    if (!available(&why)) GTEST_SKIP() << why;
    if (!std::filesystem::exists(stories())) GTEST_SKIP() << stories() << " is absent";
    model_ = Model::load(stories());
    tk_ = std::make_unique<tok::Tokenizer>(tok::Vocab::load(model_->file()));
    ref_ = std::make_unique<ref::LlamaModel>(stories());
    start(1024, 4, false);
  }
  void start(int64_t n_ctx, int n_parallel, bool shift) {
    if (engine_) engine_->stop();
    engine_.reset();
    const Offload off = offload_layers(GetParam(), model_->hparams().n_layer);
    ASSERT_EQ(off.partial(), GetParam() < 99);
    ctx_ = make_context(*model_,
                        ContextOptions{.n_ctx = n_ctx, .n_ubatch = 512, .n_threads = 2, .n_seq_max = n_parallel}, off);
    engine_ = std::make_unique<Engine>(*ctx_, *tk_, Engine::Options{.n_parallel = n_parallel, .ctx_shift = shift});
  }
  void TearDown() override {
    if (engine_) engine_->stop();
  }

  GenRequest request(const std::vector<int32_t>& prompt, int n) { return test::greedy_request(*tk_, prompt, n); }
  static std::pair<GenEvent, std::string> wait(const std::shared_ptr<GenStream>& s) { return test::wait_done(s); }
  // libllama (CPU): greedy n tokens after the prompt; shift_ctx > 0: llama-server's context shift
  std::string ref_greedy(const std::vector<int32_t>& prompt, int n, int swap_at = -1, int shift_ctx = 0,
                         int n_keep = 0) {
    return test::ref_greedy_text(*ref_, prompt, n, {.swap_at = swap_at, .shift_ctx = shift_ctx, .n_keep = n_keep});
  }

  std::unique_ptr<Model> model_;
  std::unique_ptr<tok::Tokenizer> tk_;
  std::unique_ptr<ref::LlamaModel> ref_;
  std::unique_ptr<BatchContext> ctx_;
  std::unique_ptr<Engine> engine_;
};

TEST_P(CudaEngine, ConcurrentRequestsAndThePrefixCacheGiveLibllamasTokens) {
  constexpr int kN = 48;
  const std::vector<std::string> texts = {
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends.",
      "The cat sat on the mat.", "Tom and Sue went to the beach", "One day, a big bird flew over the old tree and"};
  std::vector<std::vector<int32_t>> prompts;
  for (const std::string& t : texts) prompts.push_back(ref_->tokenize(t, true, true));
  ASSERT_GT(prompts[0].size(), 32u);

  // four different prompts at once
  std::vector<GenRequest> reqs;
  for (const auto& p : prompts) reqs.push_back(request(p, kN));
  const auto streams = engine_->submit_all(std::move(reqs));
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto [e, text] = wait(streams[i]);
    ASSERT_TRUE(e.done) << e.error;
    EXPECT_EQ(text, ref_greedy(prompts[i], kN)) << "prompt " << i;
  }
  // the first prompt again: its whole blocks from the cache
  const auto [e2, text2] = wait(engine_->submit(request(prompts[0], kN)));
  ASSERT_TRUE(e2.done) << e2.error;
  EXPECT_GE(e2.n_cached, 32);
  const std::string want0 = ref_greedy(prompts[0], kN);
  EXPECT_EQ(text2, want0);
  EXPECT_NE(text2, ref_greedy(prompts[0], kN, /*swap_at=*/3));  // the comparison's negative control

  // three identical new prompts at once: one prefill, the shared partial block copied (both sides when split)
  const std::vector<int32_t> p3 = ref_->tokenize("A little dog found a red ball in the garden and", true, true);
  std::vector<GenRequest> same;
  for (int i = 0; i < 3; ++i) same.push_back(request(p3, kN));
  const auto s3 = engine_->submit_all(std::move(same));
  const std::string want3 = ref_greedy(p3, kN);
  for (int i = 0; i < 3; ++i) {
    const auto [e, text] = wait(s3[i]);
    ASSERT_TRUE(e.done) << e.error;
    EXPECT_EQ(text, want3) << "copy " << i;
  }
  // nothing left running: every block is free or cached (read after the engine thread ended)
  engine_->stop();
  EXPECT_EQ(ctx_->kv().n_used_blocks(), 0);
}

TEST_P(CudaEngine, ContextShiftGivesLibllamasTokens) {
  constexpr int kCtx = 64, kGen = 150;
  start(kCtx, 1, true);
  const std::vector<int32_t> prompt =
      ref_->tokenize("Once upon a time, there was a little girl named Lily.", true, true);
  GenRequest r = request(prompt, kGen);
  r.n_keep = 5;
  const auto [e, text] = wait(engine_->submit(std::move(r)));
  ASSERT_TRUE(e.done) << e.error;
  EXPECT_EQ(e.n_gen, kGen);
  EXPECT_TRUE(e.truncated);
  EXPECT_EQ(text, ref_greedy(prompt, kGen, -1, kCtx, 5));
  EXPECT_NE(text, ref_greedy(prompt, kGen, 120, kCtx, 5));
  EXPECT_NE(text, ref_greedy(prompt, kGen));
}

INSTANTIATE_TEST_SUITE_P(Ngl, CudaEngine, ::testing::Values(99, 3, 1));

}  // namespace
}  // namespace strix::cuda

#else

TEST(CudaEngine, SkippedWithoutCudaBackend) { GTEST_SKIP() << "built with STRIX_CUDA=OFF"; }

#endif
