// Partial GPU offload (-ngl N, 0 < N <= n_layer; runtime/hybrid_context.h):
// the CPU runs the token embedding and the first layers, the GPU the last N-1
// repeating layers and the output layer (llama.cpp's count). Against libllama
// on the CPU through the same run_parity as `strix parity`, judged by the
// CUDA bar:
//   - a synthetic llama F16 (4 layers) at -ngl 1 (output layer only), 2, 4 and
//     5 (full), in prefill / decode / mixed batches, small micro-batches too;
//     qwen3 (QK norm) and a tied-output llama (the head is the embedding) at 2;
//   - negative controls that must fail: other weights at -ngl 2, and a wrong
//     split (the GPU takes the CPU's hidden state one layer too late);
//   - stories260K greedy 200 tokens equal to libllama's at -ngl 3 and 1;
//   - the server's engine at a partial -ngl (one KV bookkeeping for both
//     halves): concurrent requests, the prefix cache, copy-on-write of a shared
//     block, the context shift moving the cells of both halves.
// Skips without a CUDA backend or a GPU.
#include <gtest/gtest.h>

#if STRIX_HAVE_CUDA

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "backend/cuda/cuda_context.h"
#include "common/engine_harness.h"
#include "core/source_dir.h"
#include "models/model.h"
#include "ref/libllama.h"
#include "runtime/context.h"
#include "runtime/hybrid_context.h"
#include "runtime/offload.h"
#include "server/engine.h"
#include "synth/synth.h"
#include "tokenizer/tokenizer.h"
#include "tools/parity.h"

namespace strix::cuda {
namespace {

std::string dir() {
  static const std::string d = [] {
    const auto p = std::filesystem::temp_directory_path() / ("strix-cuda-ngl-" + std::to_string(::getpid()));
    std::filesystem::create_directories(p);
    return p.string();
  }();
  return d;
}

std::string stories() {
  const char* env = std::getenv("STRIX_STORIES");
  return env && *env ? env : std::string(STRIX_SOURCE_DIR) + "/../shared/data/stories260K.gguf";
}

// arch at 4 layers, 256 wide, 8 heads (4 KV), stories260K's vocabulary when present
std::string model(const std::string& arch, const std::string& type, uint64_t seed = 1, bool tied = false) {
  const std::string path =
      dir() + "/" + arch + "-" + type + "-" + std::to_string(seed) + (tied ? "-tied" : "") + ".gguf";
  if (std::filesystem::exists(path)) return path;
  synth::SynthOptions o;
  o.arch = arch;
  o.n_layer = 4;
  o.n_embd = 256;
  o.n_head = 8;
  o.n_head_kv = 4;
  o.head_dim = 32;
  o.n_ff = 768;
  o.seed = seed;
  o.type = type;
  o.tied_output = tied;
  if (std::filesystem::exists(stories())) o.vocab = stories();
  o.out = path;
  synth::synth_write(o);
  return path;
}

class NeedsGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!available(&why)) GTEST_SKIP() << why;
  }
};

class PartialParity : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::string why;
    if (!available(&why)) GTEST_SKIP() << why;
  }
};

// llama F16, 4 layers: -ngl 1 (the output layer), 2, 4 (layers 1..3) and 5 (all)
TEST_P(PartialParity, LlamaF16MeetsTheCudaBarInEveryMode) {
  const std::string path = model("llama", "f16");
  for (const char* mode : {"prefill", "decode", "mixed"}) {
    ParityOptions o;
    o.n_tokens = 64;
    o.mode = mode;
    o.ngl = GetParam();
    const ParityReport r = run_parity(path, o);
    std::printf("  llama f16 -ngl %s: %s\n", o.ngl.c_str(), r.summary().c_str());
    EXPECT_EQ(r.backend, "cuda");
    EXPECT_TRUE(r.cuda_pass()) << r.summary();
  }
}

INSTANTIATE_TEST_SUITE_P(Ngl, PartialParity, ::testing::Values("1", "2", "4", "5"));

// micro-batches of 16: the hidden state crosses once per micro-batch
TEST_F(NeedsGpu, SmallMicroBatchesMeetTheCudaBar) {
  for (const char* mode : {"prefill", "mixed"}) {
    ParityOptions o;
    o.n_tokens = 64;
    o.mode = mode;
    o.n_ubatch = 16;
    o.ngl = "3";
    const ParityReport r = run_parity(model("llama", "f16"), o);
    std::printf("  llama f16 -ngl 3 -ub 16: %s\n", r.summary().c_str());
    EXPECT_TRUE(r.cuda_pass()) << r.summary();
  }
}

TEST_F(NeedsGpu, Qwen3AndTiedOutputMeetTheCudaBar) {
  for (const std::string& path : {model("qwen3", "f16"), model("llama", "f16", 1, /*tied=*/true)}) {
    ParityOptions o;
    o.n_tokens = 64;
    o.mode = "mixed";
    o.ngl = "2";
    const ParityReport r = run_parity(path, o);
    std::printf("  %s -ngl 2: %s\n", std::filesystem::path(path).filename().c_str(), r.summary().c_str());
    EXPECT_TRUE(r.cuda_pass()) << r.summary();
  }
}

// Strix runs other weights (seed 2) than libllama (seed 1): must fail.
TEST_F(NeedsGpu, OtherWeightsFail) {
  ParityOptions o;
  o.n_tokens = 32;
  o.mode = "decode";
  o.ngl = "2";
  o.strix_path = model("llama", "f16", 2);
  const ParityReport r = run_parity(model("llama", "f16", 1), o);
  std::printf("  control, other weights -ngl 2: %s\n", r.summary().c_str());
  EXPECT_FALSE(r.cuda_pass()) << r.summary();
}

// A split assembled by hand: the CPU runs layers [0, cpu_end), the GPU
// [gpu_first, 4) and the head. Prefill of 48 tokens against libllama: mean KL
// and top-1 agreement.
struct SplitResult {
  double mean_kl = 0;
  double top1 = 0;
};
SplitResult run_split(const std::string& path, int64_t cpu_end, int64_t gpu_first) {
  auto m = Model::load(path);
  const Hparams& hp = m->hparams();
  const ContextOptions co{.n_ctx = 128, .n_ubatch = 512, .n_threads = 2};
  ContextOptions cpu_opts = co;
  cpu_opts.layer_end = cpu_end;
  Context cpu(*m, cpu_opts);
  std::vector<int32_t> tok(48), pos(48), seq(48, 0);
  ref::LlamaModel rm(path);
  tok = parity_tokens(hp.n_vocab, rm.add_bos() ? rm.bos() : -1, 48, 5);
  for (int i = 0; i < 48; ++i) pos[i] = i;
  GpuPart part;
  part.first_layer = gpu_first;
  part.kv = &cpu.kv_cache();
  part.hidden = [&](size_t first, int count, std::span<const int32_t> out_ids, float* hidden) {
    const size_t n = static_cast<size_t>(count);
    return cpu.forward_part(std::span<const int32_t>(tok).subspan(first, n),
                            std::span<const int32_t>(pos).subspan(first, n),
                            std::span<const int32_t>(seq).subspan(first, n), out_ids, hidden);
  };
  CudaContext gpu(*m, co, part);
  const std::vector<uint8_t> want(48, 1);
  gpu.decode(tok, pos, seq, want);
  ref::LlamaContext rc(rm, {.n_ctx = 128, .n_batch = 48, .n_ubatch = 48, .n_threads = 1});
  rc.decode(tok, pos, seq, want);
  SplitResult r;
  for (int i = 0; i < 48; ++i) {
    const auto a = rc.logits(i), b = gpu.logits(i);
    r.mean_kl += kl_divergence(a.data(), b.data(), hp.n_vocab) / 48;
    r.top1 += (std::max_element(a.begin(), a.end()) - a.begin() == std::max_element(b.begin(), b.end()) - b.begin()) /
              48.0;
  }
  return r;
}

TEST_F(NeedsGpu, WrongSplitFailsWhereTheRightOnePasses) {
  const std::string path = model("llama", "f16");
  const SplitResult good = run_split(path, 2, 2);
  const SplitResult skip = run_split(path, 1, 2);    // layer 1 never runs
  const SplitResult twice = run_split(path, 2, 1);   // layer 1 runs on both sides
  std::printf("  split 2|2: mean KL %.2e top-1 %.3f; 1|2 (a layer skipped): %.2e %.3f; 2|1 (twice): %.2e %.3f\n",
              good.mean_kl, good.top1, skip.mean_kl, skip.top1, twice.mean_kl, twice.top1);
  EXPECT_LE(good.mean_kl, 1e-4);
  EXPECT_GE(good.top1, 0.995);
  EXPECT_TRUE(skip.mean_kl > 1e-4 || skip.top1 < 0.995);
  EXPECT_TRUE(twice.mean_kl > 1e-4 || twice.top1 < 0.995);
}

TEST_F(NeedsGpu, Stories260KGreedy200AtPartialOffload) {
  const std::string path = stories();
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is absent";
  for (const char* ngl : {"3", "1"}) {
    ParityOptions o;
    o.ngl = ngl;
    const GreedyReport g = run_greedy(path, 200, o);
    EXPECT_EQ(g.backend, "cuda");
    EXPECT_TRUE(g.pass()) << "-ngl " << ngl << ": first difference at " << g.first_diff << ": " << g.text;
    EXPECT_NE(g.text.find("Once upon a time"), std::string::npos) << g.text;
  }
}

// ---------------------------------------------------------------------------
// the server's engine on a HybridContext

using server::Engine;
using server::GenEvent;
using server::GenRequest;
using server::GenStream;

class HybridEngine : public ::testing::TestWithParam<int> {
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
    ASSERT_TRUE(off.partial());
    ctx_ = std::make_unique<HybridContext>(*model_, ContextOptions{.n_ctx = n_ctx, .n_ubatch = 512, .n_threads = 2,
                                                                   .n_seq_max = n_parallel},
                                           off.first_gpu_layer());
    engine_ = std::make_unique<Engine>(*ctx_, *tk_, Engine::Options{.n_parallel = n_parallel, .ctx_shift = shift});
  }
  void TearDown() override {
    if (engine_) engine_->stop();
  }
  GenRequest request(const std::vector<int32_t>& prompt, int n) { return test::greedy_request(*tk_, prompt, n); }
  static std::pair<GenEvent, std::string> wait(const std::shared_ptr<GenStream>& s) { return test::wait_done(s); }
  std::string ref_greedy(const std::vector<int32_t>& prompt, int n, int swap_at = -1, int shift_ctx = 0,
                         int n_keep = 0) {
    return test::ref_greedy_text(*ref_, prompt, n, {.swap_at = swap_at, .shift_ctx = shift_ctx, .n_keep = n_keep});
  }

  std::unique_ptr<Model> model_;
  std::unique_ptr<tok::Tokenizer> tk_;
  std::unique_ptr<ref::LlamaModel> ref_;
  std::unique_ptr<HybridContext> ctx_;
  std::unique_ptr<Engine> engine_;
};

TEST_P(HybridEngine, ConcurrentRequestsAndThePrefixCacheGiveLibllamasTokens) {
  constexpr int kN = 48;
  const std::vector<std::string> texts = {
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends.",
      "The cat sat on the mat.", "Tom and Sue went to the beach", "One day, a big bird flew over the old tree and"};
  std::vector<std::vector<int32_t>> prompts;
  for (const std::string& t : texts) prompts.push_back(ref_->tokenize(t, true, true));
  ASSERT_GT(prompts[0].size(), 32u);
  std::vector<GenRequest> reqs;
  for (const auto& p : prompts) reqs.push_back(request(p, kN));
  const auto streams = engine_->submit_all(std::move(reqs));
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto [e, text] = wait(streams[i]);
    ASSERT_TRUE(e.done) << e.error;
    EXPECT_EQ(text, ref_greedy(prompts[i], kN)) << "prompt " << i;
  }
  // the first prompt again: its whole blocks from the cache (cells of both halves)
  const auto [e2, text2] = wait(engine_->submit(request(prompts[0], kN)));
  ASSERT_TRUE(e2.done) << e2.error;
  EXPECT_GE(e2.n_cached, 32);
  EXPECT_EQ(text2, ref_greedy(prompts[0], kN));
  EXPECT_NE(text2, ref_greedy(prompts[0], kN, /*swap_at=*/3));  // the comparison's negative control
  // three identical new prompts at once: the shared partial block copied on both sides
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
  engine_->stop();
  EXPECT_EQ(ctx_->kv().n_used_blocks(), 0);
}

TEST_P(HybridEngine, ContextShiftGivesLibllamasTokens) {
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

// stories260K has 5 layers: -ngl 3 (layers 3..4 + output), -ngl 1 (output only)
INSTANTIATE_TEST_SUITE_P(Ngl, HybridEngine, ::testing::Values(3, 1));

}  // namespace
}  // namespace strix::cuda

#else

TEST(PartialOffload, SkippedWithoutCudaBackend) { GTEST_SKIP() << "built with STRIX_CUDA=OFF"; }

#endif
