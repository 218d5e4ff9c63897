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
//   - stories260K greedy 200 tokens equal to libllama's at -ngl 3 and 1.
// The server's engine at a partial -ngl is tests/backend_cuda/engine_test.cpp
// (CudaEngine at -ngl 99, 3 and 1).
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
#include "backend_cuda/test_models.h"
#include "core/source_dir.h"
#include "models/model.h"
#include "ref/libllama.h"
#include "runtime/context.h"
#include "runtime/hybrid_context.h"
#include "runtime/offload.h"
#include "synth/synth.h"
#include "tools/parity.h"

namespace strix::cuda {
namespace {

std::string dir() {
  static const std::string d = test::temp_dir("ngl");
  return d;
}
using test::stories;

// arch at 4 layers, 256 wide, 8 heads (4 KV), stories260K's vocabulary when present
std::string model(const std::string& arch, const std::string& type, uint64_t seed = 1, bool tied = false) {
  synth::SynthOptions o = test::small_shape(arch, seed);
  o.tied_output = tied;
  return test::synth_once(dir(), arch + "-" + type + "-" + std::to_string(seed) + (tied ? "-tied" : ""), o, type);
}

using test::NeedsGpu;
class PartialParity : public NeedsGpu, public ::testing::WithParamInterface<std::string> {};

// llama F16, 4 layers: -ngl 1 (the output layer), 2, 4 (layers 1..3) and 5 (all)
TEST_P(PartialParity, LlamaF16MeetsTheCudaBarInEveryMode) {
  const std::string path = model("llama", "f16");
  for (const char* mode : {"prefill", "decode", "mixed"}) {
    const ParityReport r = test::gpu_parity(path, mode, 64, GetParam());
    std::printf("  llama f16 -ngl %s: %s\n", GetParam().c_str(), r.summary().c_str());
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
    const ParityReport r = test::gpu_parity(path, "mixed", 64, "2");
    std::printf("  %s -ngl 2: %s\n", std::filesystem::path(path).filename().c_str(), r.summary().c_str());
    EXPECT_TRUE(r.cuda_pass()) << r.summary();
  }
}

// Strix runs other weights (seed 2) than libllama (seed 1): must fail.
TEST_F(NeedsGpu, OtherWeightsFail) {
  const ParityReport r = test::gpu_parity(model("llama", "f16", 1), "decode", 32, "2", model("llama", "f16", 2));
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
    r.top1 +=
        (std::max_element(a.begin(), a.end()) - a.begin() == std::max_element(b.begin(), b.end()) - b.begin()) / 48.0;
  }
  return r;
}

TEST_F(NeedsGpu, WrongSplitFailsWhereTheRightOnePasses) {
  const std::string path = model("llama", "f16");
  const SplitResult good = run_split(path, 2, 2);
  const SplitResult skip = run_split(path, 1, 2);   // layer 1 never runs
  const SplitResult twice = run_split(path, 2, 1);  // layer 1 runs on both sides
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

}  // namespace
}  // namespace strix::cuda

#else

TEST(PartialOffload, SkippedWithoutCudaBackend) { GTEST_SKIP() << "built with STRIX_CUDA=OFF"; }

#endif
