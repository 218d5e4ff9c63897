// strix bench: names and table format as llama-bench prints them, the ftype
// names against the pinned libllama, and one tiny end-to-end run with --compare.
// No speed is asserted here (timing belongs in benchmarks/).
#include "tools/bench.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>

#include "gguf/reader.h"
#include "models/model.h"
#include "ref/libllama.h"
#include "synth/synth.h"

namespace strix {
namespace {

// How many llama_ftype ids in 0..63 name() spells differently from libllama's
// llama_ftype_name (which says "unknown, may not work" where we say nullptr).
int ftype_mismatches(const std::function<const char*(int64_t)>& name) {
  const ref::LibLlama& lib = ref::LibLlama::get();
  int bad = 0;
  for (int32_t id = 0; id < 64; ++id) {
    const char* theirs = lib.ftype_name(id);
    const std::string ref = theirs ? theirs : "unknown, may not work";
    const char* ours = name(id);
    if (ref != (ours ? ours : "unknown, may not work")) {
      ++bad;
      std::printf("    ftype %d: libllama '%s', ours '%s'\n", id, ref.c_str(), ours ? ours : "(none)");
    }
  }
  return bad;
}

TEST(Bench, ftype_names_match_libllama) { EXPECT_EQ(ftype_mismatches(bench_ftype_name), 0); }

TEST(Bench, ftype_check_catches_a_wrong_name) {
  // negative control: one misspelt entry must be seen
  auto wrong = [](int64_t id) -> const char* { return id == 15 ? "Q4_K_M" : bench_ftype_name(id); };
  EXPECT_EQ(ftype_mismatches(wrong), 1);
}

TEST(Bench, test_names_as_llama_bench) {
  BenchResult r;
  r.n_prompt = 512;
  EXPECT_EQ(r.test_name(), "pp512");
  r.n_depth = 4096;
  EXPECT_EQ(r.test_name(), "pp512 @ d4096");
  r.n_prompt = 0;
  r.n_gen = 128;
  r.n_depth = 0;
  EXPECT_EQ(r.test_name(), "tg128");
  r.n_prompt = 512;
  EXPECT_EQ(r.test_name(), "pp512+tg128");
}

TEST(Bench, model_type_names_size_class_and_ftype) {
  EXPECT_EQ(bench_model_type("llama", 1235814400ull, 15), "llama 1B Q4_K - Medium");
  EXPECT_EQ(bench_model_type("qwen3", 596049920ull, 7), "qwen3 0.6B Q8_0");
  EXPECT_EQ(bench_model_type("llama", 8030261248ull, 2), "llama 8B Q4_0");
  EXPECT_EQ(bench_model_type("llama", 13015864320ull, 1), "llama 13B F16");
  EXPECT_EQ(bench_model_type("llama", 292800ull, 0, /*guessed=*/true), "llama ?B (guessed) all F32");
}

TEST(Bench, mean_and_sample_stdev) {
  EXPECT_DOUBLE_EQ(bench_mean({1, 2, 3, 4}), 2.5);
  EXPECT_NEAR(bench_stdev({1, 2, 3, 4}), 1.2909944487358056, 1e-12);  // Bessel-corrected
  EXPECT_EQ(bench_stdev({5}), 0.0);
}

TEST(Bench, markdown_is_llama_bench_table) {
  BenchOptions o;
  const std::string h = bench_markdown_header(o);
  EXPECT_EQ(h,
            "| model                          |       size |     params | backend    | threads |            test |"
            "                  t/s |\n"
            "| ------------------------------ | ---------: | ---------: | ---------- | ------: | --------------: |"
            " -------------------: |\n");
  BenchResult r;
  r.model_type = "llama 1B Q4_K - Medium";
  r.model_size = 807690240ull;  // < 1 GiB: MiB
  r.model_n_params = 1235814400ull;
  r.n_threads = 2;
  r.n_prompt = 512;
  r.samples_ns = {1000000000ull, 1000000000ull};  // 512 t/s, sd 0
  EXPECT_EQ(bench_markdown_row(r, o),
            "| llama 1B Q4_K - Medium         | 770.27 MiB |     1.24 B | CPU        |       2 |           pp512 |"
            "        512.00 ± 0.00 |\n");
}

// The bytes a decode step reads (the tg rows' fraction of the copy bandwidth): the whole file
// but the token embedding's other rows when the output head is its own tensor (a tied
// embedding is the head, read whole); of a mixture of experts, the experts' stacks at
// n_expert_used / n_expert. Counted here from the file's own tensor list.
TEST(Bench, step_bytes_count_only_the_used_experts) {
  const auto dir = std::filesystem::temp_directory_path() / ("strix-bench-step-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (const char* arch : {"llama", "qwen3moe"}) {
    for (const bool tied : {false, true}) {
      SCOPED_TRACE(std::string(arch) + (tied ? " tied" : " untied"));
      synth::SynthOptions so;
      so.arch = arch;
      so.type = "q8_0";
      so.tied_output = tied;
      const bool moe = std::string(arch) == "qwen3moe";
      if (moe) so.n_expert = 8, so.n_expert_used = 2;
      so.out = (dir / (std::string(arch) + (tied ? "-tied" : "") + ".gguf")).string();
      synth::synth_write(so);
      uint64_t all = 0, experts = 0, embd_rest = 0;
      bool has_output = false;
      const auto file = GgufFile::open(so.out);
      for (const GgufTensor& t : file->tensors()) {
        all += t.nbytes;
        if (t.name.find("_exps") != std::string::npos) experts += t.nbytes;
        if (t.name == "token_embd.weight") embd_rest = t.nbytes - t.nbytes / static_cast<uint64_t>(t.ne[1]);
        if (t.name == "output.weight") has_output = true;
      }
      ASSERT_EQ(has_output, !tied);
      ASSERT_GT(embd_rest, 0u);
      const auto model = Model::load(so.out);
      EXPECT_EQ(model->n_bytes(), all);
      const uint64_t dense = tied ? all : all - embd_rest;
      if (!moe) {
        EXPECT_EQ(experts, 0u);
        EXPECT_EQ(bench_step_bytes(*model), dense);
      } else {
        ASSERT_GT(experts, 0u);
        EXPECT_EQ(bench_step_bytes(*model), dense - experts / 4 * 3);
      }
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(Bench, compare_runs_both_sides_alternating) {
  const auto dir = std::filesystem::temp_directory_path() / ("strix-bench-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  synth::SynthOptions so;
  so.arch = "llama";
  so.type = "f32";
  so.seed = 3;
  so.out = (dir / "tiny.gguf").string();
  synth::synth_write(so);

  BenchOptions o;
  o.models = {so.out};
  o.n_prompt = {32};
  o.n_gen = {4};
  o.n_depth = {0, 16};
  o.reps = 2;
  o.n_threads = 1;
  o.compare = true;
  o.pause_s = 0;
  int seen = 0;
  const auto rows = run_bench(o, [&](const BenchResult&) { ++seen; });
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(seen, 4);
  EXPECT_EQ(rows[0].test_name(), "pp32");
  EXPECT_EQ(rows[1].test_name(), "tg4");
  EXPECT_EQ(rows[2].test_name(), "pp32 @ d16");
  EXPECT_EQ(rows[3].test_name(), "tg4 @ d16");
  for (const BenchResult& r : rows) {
    EXPECT_EQ(r.samples_ns.size(), 2u);
    EXPECT_EQ(r.ref_samples_ns.size(), 2u);
    EXPECT_GT(r.ratio(), 0.0);
    EXPECT_EQ(r.model_type, r.ref_model_type);  // the model column as llama-bench prints it
  }
  const nlohmann::json j = bench_receipt(o, rows, {.strix_version = "test"});
  EXPECT_EQ(j["results"].size(), 4u);
  EXPECT_EQ(j["results"][0]["libllama"]["samples_ns"].size(), 2u);
  EXPECT_TRUE(j["host"].contains("strix_isa"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace strix
