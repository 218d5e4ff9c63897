// Shared helpers of the per-architecture parity tests: synthetic models made
// once per test binary run (in a temp dir), run_parity against libllama, and
// negative controls (altered copies that Strix loads while libllama loads the
// original) that must FAIL the same bar.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "synth/synth.h"
#include "tools/parity.h"

namespace strix::test {

inline std::string parity_dir() {
  static const std::string dir = [] {
    const auto d = std::filesystem::temp_directory_path() / ("strix-parity-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    // the models are this process's: gone when it exits (each test is a process).
    // The handler runs after the string below is destroyed, so it keeps a copy.
    static char path[4096];
    std::snprintf(path, sizeof path, "%s", d.c_str());
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    });
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

// Weight types whose CPU kernels sum in libllama's own float order on this
// machine (KL 0 in every mode): a model made only of these must meet the
// issue's bar with no allowance for libllama's noise. docs/MODELS.md lists the
// others, which are held to a looser bar until they are.
inline bool exact_types_only(const ParityReport& r) {
  // (MXFP4 experts are exact in prefill and decode but keep 1-ulp residuals in
  // mixed batches on gpt-oss's sliding-window layers, so they are not listed.)
  static const std::set<std::string> exact = {"f32",  "f16",  "q8_0", "q4_0", "q4_1",   "q5_0",  "q5_1",
                                              "q2_K", "q3_K", "q4_K", "q5_K", "q6_K",   "iq4_nl", "iq4_xs"};
  for (const std::string& t : r.all_weight_types) {
    if (!exact.count(t)) return false;
  }
  return true;
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
    std::printf("    %s\n", r.summary().c_str());
    // The bar (top-1 100%, max KL <= 1e-6 / 1e-4) with no allowance
    // for libllama's own noise: Strix sums in libllama's float order.
    if (exact_types_only(r)) {
      EXPECT_TRUE(r.meets_bar() && r.pass()) << path << ": " << r.summary();
    } else {
      // the floor-relative bar, or the looser one while these kernels are not
      // yet in libllama's order (sane(): mean KL <= 1e-3, top-1 >= 95%)
      EXPECT_TRUE(r.pass() || r.sane()) << path << ": " << r.summary();
    }
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
  EXPECT_FALSE(r.meets_bar()) << "negative control met the issue's bar: " << r.summary();
  EXPECT_FALSE(r.sane()) << "negative control passed the looser bar: " << r.summary();
}

}  // namespace strix::test
