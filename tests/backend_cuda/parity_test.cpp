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
#include "core/source_dir.h"
#include "ref/libllama.h"
#include "synth/synth.h"
#include "tools/parity.h"

namespace strix::cuda {
namespace {

std::string dir() {
  static const std::string d = [] {
    const auto p = std::filesystem::temp_directory_path() / ("strix-cuda-parity-" + std::to_string(::getpid()));
    std::filesystem::create_directories(p);
    return p.string();
  }();
  return d;
}

// stories260K (its vocabulary makes the synthetic models small): $STRIX_STORIES on a
// device machine where ../shared does not travel, else ../shared/data.
std::string stories() {
  const char* env = std::getenv("STRIX_STORIES");
  return env && *env ? env : std::string(STRIX_SOURCE_DIR) + "/../shared/data/stories260K.gguf";
}

// arch at 4 layers, 256 wide, 8 heads (4 KV), stories260K's vocabulary when present; "q4_k_m" is libllama's quantizer
std::string model(const std::string& arch, const std::string& type, uint64_t seed = 1) {
  const std::string path = dir() + "/" + arch + "-" + type + "-" + std::to_string(seed) + ".gguf";
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
  if (std::filesystem::exists(stories())) o.vocab = stories();
  o.type = type == "q4_k_m" ? "f16" : type;
  o.out = type == "q4_k_m" ? path + ".f16" : path;
  synth::synth_write(o);
  if (type == "q4_k_m") ref::quantize_model(o.out, path, "Q4_K_M", 2);
  return path;
}

class CudaParity : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {
 protected:
  void SetUp() override {
    std::string why;
    if (!available(&why)) GTEST_SKIP() << why;
  }
};

TEST_P(CudaParity, MeetsTheCudaBarInEveryMode) {
  const auto& [arch, type] = GetParam();
  const std::string path = model(arch, type);
  for (const char* mode : {"prefill", "decode", "mixed"}) {
    ParityOptions o;
    o.n_tokens = 64;
    o.mode = mode;
    o.ngl = "99";
    const ParityReport r = run_parity(path, o);
    std::printf("  %s %s: %s\n", arch.c_str(), type.c_str(), r.summary().c_str());
    EXPECT_TRUE(r.cuda_pass()) << r.summary();
  }
}

INSTANTIATE_TEST_SUITE_P(Models, CudaParity,
                         ::testing::Combine(::testing::Values("llama", "qwen2", "qwen3"),
                                            ::testing::Values("f16", "q8_0", "q4_k_m")));

class CudaParityControl : public CudaParity {};

// Strix runs other weights (seed 2) than libllama (seed 1): must fail.
TEST_F(CudaParityControl, OtherWeightsFail) {
  ParityOptions o;
  o.n_tokens = 32;
  o.mode = "decode";
  o.ngl = "99";
  o.strix_path = model("llama", "q8_0", 2);
  const ParityReport r = run_parity(model("llama", "q8_0", 1), o);
  EXPECT_FALSE(r.cuda_pass()) << r.summary();
}

// A subtler one: the RMS norm epsilon changed (1e-5 -> 0.1) must fail too.
TEST_F(CudaParityControl, NormEpsilonChangedFails) {
  const std::string path = model("llama", "f16");
  const std::string variant = dir() + "/llama-f16-eps.gguf";
  write_variant(path, variant, {.set_f32 = {{"llama.attention.layer_norm_rms_epsilon", 1e-1}}});
  ParityOptions o;
  o.n_tokens = 32;
  o.mode = "prefill";
  o.ngl = "99";
  o.strix_path = variant;
  const ParityReport r = run_parity(path, o);
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
