// ops::rope against ggml_rope_ext computed by the pinned libggml (zen4 CPU
// backend, what libllama runs here): normal and NEOX modes, linear scaling,
// YaRN (with llama.cpp's attn_factor for it) and Llama 3 frequency factors,
// 256 positions. Exact equality, with a negative control per case.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/kernels.h"
#include "core/thread_pool.h"
#include "models/archs.h"
#include "models/hparams.h"
#include "ops/cpu_ops.h"
#include "ops/exec.h"
#include "ref/libggml_cpu.h"

namespace strix {
namespace {

constexpr int kHeadDim = 64, kHeads = 3, kTokens = 256;

// The little of ggml's C API this test needs (ggml.h, stable for years).
struct GgmlInitParams {
  size_t mem_size;
  void* mem_buffer;
  bool no_alloc;
};
struct Ggml {
  void* (*init)(GgmlInitParams);
  void (*free)(void*);
  void* (*new_1d)(void*, int, int64_t);
  void* (*new_3d)(void*, int, int64_t, int64_t, int64_t);
  void* (*data)(void*);
  void* (*rope_ext)(void*, void*, void*, void*, int, int, int, float, float, float, float, float, float);
  void* (*new_graph)(void*);
  void (*expand)(void*, void*);
  int (*compute)(void*, void*, int);
  static const Ggml& get() {
    static const Ggml g = [] {
      const ref::SharedLib& base = ref::LibGgml::get().lib();
      const ref::SharedLib& cpu = ref::LibGgmlCpu::get("zen4").lib();
      Ggml x;
      x.init = base.fn<decltype(x.init)>("ggml_init");
      x.free = base.fn<decltype(x.free)>("ggml_free");
      x.new_1d = base.fn<decltype(x.new_1d)>("ggml_new_tensor_1d");
      x.new_3d = base.fn<decltype(x.new_3d)>("ggml_new_tensor_3d");
      x.data = base.fn<decltype(x.data)>("ggml_get_data");
      x.rope_ext = base.fn<decltype(x.rope_ext)>("ggml_rope_ext");
      x.new_graph = base.fn<decltype(x.new_graph)>("ggml_new_graph");
      x.expand = base.fn<decltype(x.expand)>("ggml_build_forward_expand");
      x.compute = cpu.fn<decltype(x.compute)>("ggml_graph_compute_with_ctx");
      return x;
    }();
    return g;
  }
};

std::vector<float> input() {
  std::vector<float> x(static_cast<size_t>(kTokens) * kHeads * kHeadDim);
  uint64_t s = 12345;
  for (float& v : x) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    v = static_cast<float>(static_cast<int64_t>(s >> 40) - (1ll << 23)) / static_cast<float>(1 << 22);
  }
  return x;
}

std::vector<int32_t> positions() {
  std::vector<int32_t> p(kTokens);
  for (int i = 0; i < kTokens; ++i) p[i] = i;
  return p;
}

std::vector<float> ggml_rope(const RopeParams& rp, const float* ff) {
  const Ggml& g = Ggml::get();
  void* ctx = g.init({64u << 20, nullptr, false});
  void* x = g.new_3d(ctx, 0 /*F32*/, kHeadDim, kHeads, kTokens);
  void* pos = g.new_1d(ctx, 26 /*I32*/, kTokens);
  void* fft = nullptr;
  const std::vector<float> in = input();
  const std::vector<int32_t> p = positions();
  std::memcpy(g.data(x), in.data(), in.size() * sizeof(float));
  std::memcpy(g.data(pos), p.data(), p.size() * sizeof(int32_t));
  if (ff) {
    fft = g.new_1d(ctx, 0, rp.n_rot / 2);
    std::memcpy(g.data(fft), ff, sizeof(float) * (rp.n_rot / 2));
  }
  void* y = g.rope_ext(ctx, x, pos, fft, rp.n_rot, static_cast<int>(rp.mode), rp.n_ctx_orig, rp.freq_base,
                       rp.freq_scale, rp.ext_factor, rp.attn_factor, rp.beta_fast, rp.beta_slow);
  void* gf = g.new_graph(ctx);
  g.expand(gf, y);
  EXPECT_EQ(g.compute(ctx, gf, 1), 0);
  const auto* out = static_cast<const float*>(g.data(y));
  std::vector<float> r(out, out + in.size());
  g.free(ctx);
  return r;
}

std::vector<float> strix_rope(const RopeParams& rp, const float* ff, int n_threads) {
  std::vector<float> x = input();
  const std::vector<int32_t> p = positions();
  ThreadPool pool(n_threads);
  Workspace ws;
  std::vector<float> scratch(static_cast<size_t>(n_threads) * 1024);
  ws.thread_scratch = scratch.data();
  ws.thread_scratch_floats = 1024;
  const cpu::CpuKernels& k = cpu::cpu_kernels();
  pool.run([&](int ith, int nth) {
    Exec e(pool, ith, nth, k, ws);
    ops::rope(e, x.data(), kTokens, kHeads, kHeadDim, kHeads * kHeadDim, p.data(), rp, ff);
  });
  return x;
}

int64_t count_diff(const std::vector<float>& a, const std::vector<float>& b) {
  int64_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  return n;
}

RopeParams base(RopeMode mode) {
  RopeParams r;
  r.mode = mode;
  r.n_rot = kHeadDim;
  r.freq_base = 10000.0f;
  r.n_ctx_orig = 4096;
  return r;
}

// llama.cpp's attn_factor for YaRN (llama_context: get_mscale(factor) times the
// cancelling 1 / (1 + 0.1 ln factor), times rope.scaling.attn_factor).
RopeParams yarn(float factor, int n_ctx_orig) {
  RopeParams r = base(RopeMode::kNorm);
  r.freq_scale = 1.0f / factor;
  r.ext_factor = 1.0f;
  r.n_ctx_orig = n_ctx_orig;
  r.attn_factor = yarn_attn_factor(r);
  return r;
}

std::vector<float> llama3_factors() {
  std::vector<float> f(kHeadDim / 2);
  for (size_t i = 0; i < f.size(); ++i) f[i] = i < 8 ? 1.0f : (i < 20 ? 1.0f + 0.5f * static_cast<float>(i - 8) : 8.0f);
  return f;
}

void expect_exact(const std::string& what, const RopeParams& rp, const float* ff, const RopeParams& broken) {
  const std::vector<float> theirs = ggml_rope(rp, ff);
  for (int nt : {1, 2}) EXPECT_EQ(count_diff(strix_rope(rp, ff, nt), theirs), 0) << what << ", threads " << nt;
  EXPECT_GT(count_diff(strix_rope(broken, ff, 1), theirs), static_cast<int64_t>(theirs.size() / 4))
      << what << ": the control matched";
}

TEST(Rope, NormalMatchesGgml) {
  RopeParams broken = base(RopeMode::kNorm);
  broken.freq_base = 10001.0f;
  expect_exact("normal", base(RopeMode::kNorm), nullptr, broken);
}

TEST(Rope, NeoxMatchesGgml) {
  RopeParams rp = base(RopeMode::kNeox);
  rp.freq_base = 1000000.0f;
  expect_exact("neox", rp, nullptr, base(RopeMode::kNorm));
}

TEST(Rope, LinearScalingMatchesGgml) {
  RopeParams rp = base(RopeMode::kNorm);
  rp.freq_scale = 0.5f;
  expect_exact("linear 2", rp, nullptr, base(RopeMode::kNorm));
}

TEST(Rope, YarnMatchesGgml) {
  const RopeParams rp = yarn(4.0f, 64);
  RopeParams broken = rp;
  broken.ext_factor = 0.0f;
  expect_exact("yarn 4 / 64", rp, nullptr, broken);
  const RopeParams rp2 = yarn(16.0f, 128);
  expect_exact("yarn 16 / 128", rp2, nullptr, rp);
  for (float f : {1.5f, 2.5f, 3.0f, 5.0f, 7.0f, 10.0f, 32.0f, 40.0f}) {
    expect_exact("yarn " + std::to_string(f) + " / 96", yarn(f, 96), nullptr, rp);
  }
}

TEST(Rope, Llama3FreqFactorsMatchGgml) {
  const std::vector<float> ff = llama3_factors();
  RopeParams rp = base(RopeMode::kNorm);
  rp.freq_base = 500000.0f;
  const std::vector<float> theirs = ggml_rope(rp, ff.data());
  EXPECT_EQ(count_diff(strix_rope(rp, ff.data(), 2), theirs), 0);
  EXPECT_GT(count_diff(strix_rope(rp, nullptr, 1), theirs), 0);  // control: factors ignored
}

}  // namespace
}  // namespace strix
