// The model files the CUDA model tests share: stories260K's path, one temp
// folder per test file, and small synthetic models written once per folder
// (the name says everything that differs: arch, type, seed, variants).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "backend/cuda/cuda_context.h"
#include "core/source_dir.h"
#include "ref/libllama.h"
#include "synth/synth.h"
#include "tools/parity.h"

namespace strix::test {

// stories260K: $STRIX_STORIES on a device machine (where ../shared does not travel), else ../shared/data.
inline std::string stories() {
  const char* env = std::getenv("STRIX_STORIES");
  return env && *env ? env : std::string(STRIX_SOURCE_DIR) + "/../shared/data/stories260K.gguf";
}

// <tmp>/strix-cuda-<tag>-<pid>, made on first use.
inline std::string temp_dir(const std::string& tag) {
  const auto p = std::filesystem::temp_directory_path() / ("strix-cuda-" + tag + "-" + std::to_string(::getpid()));
  std::filesystem::create_directories(p);
  return p.string();
}

// The small dense shape: 4 layers, 256 wide, 8 heads (4 KV) of 32, FFN 768, stories260K's
// vocabulary when present (it keeps the files small).
inline synth::SynthOptions small_shape(const std::string& arch, uint64_t seed) {
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
  return o;
}

// folder/name.gguf of `shape` in `type`, written unless it exists; "q4_k_m" is an F16 synth
// quantized by libllama's llama_model_quantize (llama-quantize's mix).
inline std::string synth_once(const std::string& folder, const std::string& name, synth::SynthOptions shape,
                              const std::string& type) {
  const std::string path = folder + "/" + name + ".gguf";
  if (std::filesystem::exists(path)) return path;
  const bool mix = type == "q4_k_m";
  shape.type = mix ? "f16" : type;
  shape.out = mix ? path + ".f16" : path;
  synth::synth_write(shape);
  if (mix) ref::quantize_model(shape.out, path, "Q4_K_M", 2);
  return path;
}

// run_parity of `path` with the GPU at -ngl `ngl`, n_tokens in `mode`; strix_path: Strix runs
// that file instead (a negative control).
inline ParityReport gpu_parity(const std::string& path, const std::string& mode, int n_tokens,
                               const std::string& ngl = "99", const std::string& strix_path = {}) {
  ParityOptions o;
  o.n_tokens = n_tokens;
  o.mode = mode;
  o.ngl = ngl;
  o.strix_path = strix_path;
  return run_parity(path, o);
}

// The CUDA bar (ParityReport::cuda_pass) at -ngl 99 over 64 tokens in prefill, decode and
// mixed batches, each report printed under `label`.
inline void expect_cuda_bar_in_every_mode(const std::string& path, const std::string& label) {
  for (const char* mode : {"prefill", "decode", "mixed"}) {
    const ParityReport r = gpu_parity(path, mode, 64);
    std::printf("  %s: %s\n", label.c_str(), r.summary().c_str());
    EXPECT_TRUE(r.cuda_pass()) << mode << ": " << r.summary();
  }
}

// A parity suite's fixture: skips without a usable GPU.
class NeedsGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda::available(&why)) GTEST_SKIP() << why;
  }
};

}  // namespace strix::test
