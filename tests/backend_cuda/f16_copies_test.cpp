// The CUDA context's kept f16 copies of the weights (STRIX_CUDA_F16_WEIGHTS):
// prefill logits with the copies, made at the first forward and read again at
// the second, equal bit for bit those of a context that dequantizes every
// weight at every forward. Negative control: another prompt's logits differ.
// Skips without a CUDA backend or GPU (CI).
#include <gtest/gtest.h>

#if STRIX_HAVE_CUDA

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "backend/cuda/cuda_context.h"
#include "backend_cuda/test_models.h"
#include "core/source_dir.h"
#include "models/model.h"
#include "synth/synth.h"

namespace strix::cuda {
namespace {

std::vector<float> prefill(const Model& m, const char* keep, const std::vector<int32_t>& prompt, int times) {
  setenv("STRIX_CUDA_F16_WEIGHTS", keep, 1);
  CudaContext ctx(m, {.n_ctx = 256, .n_ubatch = 64});
  unsetenv("STRIX_CUDA_F16_WEIGHTS");
  std::vector<float> out;
  for (int r = 0; r < times; ++r) {
    ctx.clear();
    ctx.decode_seq(prompt, 0, /*all_logits=*/true);
    out.clear();
    for (size_t i = 0; i < prompt.size(); ++i) {
      const auto l = ctx.logits(static_cast<int32_t>(i));
      out.insert(out.end(), l.begin(), l.end());
    }
  }
  return out;
}

using test::stories;

TEST(CudaF16Copies, KeptCopiesGiveTheLogitsOfDequantizingEveryForward) {
  std::string why;
  if (!available(&why)) GTEST_SKIP() << why;
  if (!std::filesystem::exists(stories())) GTEST_SKIP() << stories() << " is absent";
  const auto dir = std::filesystem::temp_directory_path() / ("strix-f16-copies-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  synth::SynthOptions o;
  o.arch = "llama";
  o.n_layer = 2;
  o.n_embd = 256;
  o.n_head = 8;
  o.n_head_kv = 4;
  o.head_dim = 32;
  o.n_ff = 768;
  o.type = "q8_0";
  o.vocab = stories();
  o.out = (dir / "llama-q8_0.gguf").string();
  synth::synth_write(o);
  const auto model = Model::load(o.out);
  std::vector<int32_t> prompt, other;
  for (int i = 0; i < 40; ++i) prompt.push_back(1 + (i * 37) % 200), other.push_back(1 + (i * 53) % 200);
  const auto fresh = prefill(*model, "0", prompt, 1);
  const auto kept = prefill(*model, "1", prompt, 2);  // the second forward reads the copies made by the first
  ASSERT_EQ(fresh.size(), kept.size());
  for (size_t i = 0; i < fresh.size(); ++i) ASSERT_EQ(fresh[i], kept[i]) << "logit " << i;
  const auto diff = prefill(*model, "1", other, 1);
  size_t n_diff = 0;
  for (size_t i = 0; i < fresh.size(); ++i) n_diff += diff[i] != fresh[i];
  EXPECT_GT(n_diff, fresh.size() / 2);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace strix::cuda

#else

TEST(CudaF16Copies, SkippedWithoutCudaBackend) { GTEST_SKIP() << "built with STRIX_CUDA=OFF"; }

#endif
