// The CUDA forward (-ngl 99) against libllama on the CPU, through the same
// run_parity as `strix parity`: small synthetic llama / qwen2 / qwen3 models
// (F16, Q8_0, libllama-quantized Q4_K_M) in all three batch modes, a negative
// control that must fail the bar, and stories260K greedy. Skips without a GPU.
#include <gtest/gtest.h>

#if STRIX_HAVE_CUDA

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "backend/cuda/cuda_context.h"
#include "backend_cuda/test_models.h"
#include "core/source_dir.h"
#include "ref/libllama.h"
#include "synth/synth.h"
#include "tools/parity.h"

namespace strix::cuda {
namespace {

std::string dir() {
  static const std::string d = test::temp_dir("parity");
  return d;
}
using test::stories;

// arch at 4 layers, 256 wide, 8 heads (4 KV), stories260K's vocabulary when present; "q4_k_m" is libllama's quantizer
std::string model(const std::string& arch, const std::string& type, uint64_t seed = 1) {
  return test::synth_once(dir(), arch + "-" + type + "-" + std::to_string(seed), test::small_shape(arch, seed), type);
}

class CudaParity : public test::NeedsGpu, public ::testing::WithParamInterface<std::tuple<std::string, std::string>> {};

TEST_P(CudaParity, MeetsTheCudaBarInEveryMode) {
  const auto& [arch, type] = GetParam();
  const std::string path = model(arch, type);
  test::expect_cuda_bar_in_every_mode(path, arch + " " + type);
}

INSTANTIATE_TEST_SUITE_P(Models, CudaParity,
                         ::testing::Combine(::testing::Values("llama", "qwen2", "qwen3"),
                                            ::testing::Values("f16", "q8_0", "q4_k_m")));

class CudaParityControl : public test::NeedsGpu {};

// Strix runs other weights (seed 2) than libllama (seed 1): must fail.
TEST_F(CudaParityControl, OtherWeightsFail) {
  const ParityReport r = test::gpu_parity(model("llama", "q8_0", 1), "decode", 32, "99", model("llama", "q8_0", 2));
  EXPECT_FALSE(r.cuda_pass()) << r.summary();
}

// A subtler one: the RMS norm epsilon changed (1e-5 -> 0.1) must fail too.
TEST_F(CudaParityControl, NormEpsilonChangedFails) {
  const std::string path = model("llama", "f16");
  const std::string variant = dir() + "/llama-f16-eps.gguf";
  write_variant(path, variant, {.set_f32 = {{"llama.attention.layer_norm_rms_epsilon", 1e-1}}});
  const ParityReport r = test::gpu_parity(path, "prefill", 32, "99", variant);
  EXPECT_FALSE(r.cuda_pass()) << r.summary();
}

TEST_F(CudaParityControl, Stories260KGreedy200) {
  const std::string path = stories();
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is absent";
  ParityOptions o;
  o.ngl = "99";
  const GreedyReport g = run_greedy(path, 200, o);
  EXPECT_TRUE(g.pass()) << "first difference at " << g.first_diff << ": " << g.text;
  EXPECT_NE(g.text.find("Once upon a time"), std::string::npos) << g.text;
}

}  // namespace
}  // namespace strix::cuda

#endif
