// Shared helpers of the per-architecture parity tests: synthetic models made
// once per test binary run (in a temp dir), run_parity against libllama, and
// negative controls (altered copies that Strix loads while libllama loads the
// original) that must FAIL the same bar.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "synth/synth.h"
#include "tools/parity.h"

namespace strix::test {

inline std::string parity_dir() {
  static const std::string dir = [] {
    const auto d = std::filesystem::temp_directory_path() / ("strix-parity-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d.string();
  }();
  return dir;
}

// Writes (once) a synthetic model; `tag` names the file.
inline std::string synth_model(const synth::SynthOptions& base, const std::string& tag) {
  const std::string path = parity_dir() + "/" + tag + ".gguf";
  if (!std::filesystem::exists(path)) {
    synth::SynthOptions o = base;
    o.out = path;
    synth::synth_write(o);
  }
  return path;
}

// Runs the three modes and expects each to pass; prints the summaries.
inline void expect_parity(const std::string& path, int n_tokens, const std::vector<std::string>& modes = {"prefill", "decode", "mixed"},
                          int n_threads = 2) {
  for (const std::string& m : modes) {
    ParityOptions o;
    o.n_tokens = n_tokens;
    o.mode = m;
    o.n_threads = n_threads;
    o.n_ubatch = m == "prefill" ? 64 : 512;  // prefill crosses micro-batches
    const ParityReport r = run_parity(path, o);
    std::printf("    %s%s\n", r.summary().c_str(), r.pass() ? "" : (r.sane() ? "  [strict bar not met; within the suite's bar]" : ""));
    // The strict bar (r.pass()) is what docs/MODELS.md reports per combination;
    // the suite enforces the looser r.sane() while some quantized kernels do not
    // yet sum in libllama's float order.
    EXPECT_TRUE(r.pass() || r.sane()) << path << ": " << r.summary();
  }
}

// The negative control: Strix runs `variant`, libllama runs `path`; must fail.
inline void expect_parity_fails(const std::string& path, const std::string& variant, int n_tokens) {
  ParityOptions o;
  o.n_tokens = n_tokens;
  o.mode = "prefill";
  o.strix_path = variant;
  const ParityReport r = run_parity(path, o);
  std::printf("    control: %s\n", r.summary().c_str());
  EXPECT_FALSE(r.pass()) << "negative control passed: " << r.summary();
  EXPECT_FALSE(r.sane()) << "negative control passed the suite's bar: " << r.summary();
}

}  // namespace strix::test
