// strix bench-serve: one tiny end-to-end run on the CPU (the receipt's rows and
// fields), and its refusals: -ngl with the CPU-only libllama comparison, a
// partial -ngl, bad counts. No speed is asserted here (timing belongs in
// benchmarks/).
#include "tools/bench_serve.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "core/error.h"
#include "synth/synth.h"

namespace strix {
namespace {

class BenchServeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("strix-bserve-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    synth::SynthOptions so;
    so.arch = "llama";
    so.type = "f32";
    so.seed = 6;
    so.out = (dir_ / "tiny.gguf").string();
    synth::synth_write(so);
    o_.model = so.out;
    o_.streams = {1, 2};
    o_.n_prompt = 4;
    o_.n_gen = 4;
    o_.n_system = 40;
    o_.n_suffix = 4;
    o_.reps = 1;
    o_.n_threads = 1;
    o_.compare = false;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
  BenchServeOptions o_;
};

TEST_F(BenchServeTest, cpu_run_writes_the_receipt) {
  const nlohmann::json r = run_bench_serve(o_, "test", "test");
  ASSERT_EQ(r["results"].size(), 2u);
  EXPECT_EQ(r["results"][1]["streams"], 2);
  EXPECT_EQ(r["results"][1]["strix_ts"]["samples"].size(), 1u);  // one repetition (its value is timing: not asserted)
  EXPECT_EQ(r["options"]["backend"], "CPU");
  EXPECT_EQ(r["options"]["ngl"], "0");
  EXPECT_EQ(r["shared_prefix"]["n_prompt"], 44);
}

TEST_F(BenchServeTest, refusals) {
  o_.compare = true;
  o_.ngl = "99";
  try {
    run_bench_serve(o_, "test", "test");
    ADD_FAILURE() << "-ngl 99 with the libllama comparison ran";
  } catch (const Refusal& e) {
    // the comparison is refused by name, or a build without the CUDA backend refuses -ngl itself
    const std::string why = e.what();
    EXPECT_TRUE(why.find("--no-compare") != std::string::npos ||
                why.find("without the CUDA backend") != std::string::npos)
        << why;
  }
  o_.compare = false;
  o_.ngl = "1";  // a partial count
  EXPECT_THROW(run_bench_serve(o_, "test", "test"), Error);
  o_.ngl = "0";
  o_.streams = {0};
  EXPECT_THROW(run_bench_serve(o_, "test", "test"), Error);
}

}  // namespace
}  // namespace strix
