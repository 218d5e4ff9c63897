// strix batched-bench: llama-batched-bench's tests, skips and table, one tiny
// end-to-end run with --compare, and bad options. No speed is asserted here
// (timing belongs in benchmarks/).
#include "tools/batched_bench.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "core/error.h"
#include "synth/synth.h"

namespace strix {
namespace {

class BatchedBenchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("strix-bbench-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    synth::SynthOptions so;
    so.arch = "llama";
    so.type = "f32";
    so.seed = 5;
    so.out = (dir_ / "tiny.gguf").string();
    synth::synth_write(so);
    model_ = so.out;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
  std::string model_;
};

TEST_F(BatchedBenchTest, runs_llama_batched_bench_tests_on_both_sides) {
  BatchedBenchOptions o;
  o.model = model_;
  o.n_pp = {8, 16};
  o.n_tg = {4};
  o.n_pl = {1, 3};
  o.n_kv_max = 40;  // 3 x (16 + 4) = 60 cells: skipped, as llama-batched-bench skips it
  o.reps = 2;
  o.n_threads = 1;
  o.compare = true;
  o.pause_s = 0;
  int seen = 0;
  const nlohmann::json j = run_batched_bench(o, "test", "test", [&](const BatchedBenchRow& r) {
    ++seen;
    EXPECT_EQ(r.pp_ns.size(), 2u);
    EXPECT_EQ(r.ref_tg_ns.size(), 2u);
    const std::string row = batched_bench_row(r, true);
    EXPECT_EQ(row.front(), '|');
    EXPECT_EQ(std::count(row.begin(), row.end(), '|'), 15) << row;
  });
  EXPECT_EQ(seen, 3);
  ASSERT_EQ(j["rows"].size(), 3u);
  const int want[3][4] = {{8, 4, 1, 12}, {8, 4, 3, 36}, {16, 4, 1, 20}};
  for (size_t i = 0; i < 3; ++i) {
    const nlohmann::json& r = j["rows"][i];
    EXPECT_EQ(r["pp"], want[i][0]);
    EXPECT_EQ(r["tg"], want[i][1]);
    EXPECT_EQ(r["b"], want[i][2]);
    EXPECT_EQ(r["n_kv"], want[i][3]);
    EXPECT_GT(r["strix"]["s_tg"].get<double>(), 0.0);
    EXPECT_GT(r["libllama"]["s_pp"].get<double>(), 0.0);
    EXPECT_GT(r["ratio_tg"].get<double>(), 0.0);
  }
  EXPECT_EQ(j["options"]["backend"], "CPU");
  EXPECT_TRUE(j["host"].contains("libllama_cpu_variant"));
  const std::string header = batched_bench_header(true);
  EXPECT_EQ(header.rfind("|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |", 0), 0u);
}

TEST_F(BatchedBenchTest, bad_options_are_errors) {
  BatchedBenchOptions o;
  o.model = model_;
  o.n_pp = {64};
  o.n_tg = {64};
  o.n_pl = {4};
  o.n_kv_max = 100;  // no test fits
  EXPECT_THROW(run_batched_bench(o, "test", "test", {}), Error);
  o.n_kv_max = 0;
  o.n_pl = {0};
  EXPECT_THROW(run_batched_bench(o, "test", "test", {}), Error);
  o.n_pl = {1};
  o.model = (dir_ / "missing.gguf").string();
  EXPECT_ANY_THROW(run_batched_bench(o, "test", "test", {}));
}

}  // namespace
}  // namespace strix
