// `strix batched-bench`: llama-batched-bench's measurement and table for
// Strix, optionally side by side with the pinned libllama in the same process.
//
// Methodology (as llama-batched-bench, tools/batched-bench in llama.cpp):
// for every PP in npp, TG in ntg and B in npl, with N_KV = B * (PP + TG)
// cache cells (a test that needs more than -c is skipped):
//   prompt  B sequences of PP pseudo-random tokens each, decoded as batches
//           of at most n_batch tokens (each split into n_ubatch micro-batches),
//           logits for each sequence's last token; S_PP = B * PP / T_PP;
//   decode  TG steps, each one batch of B tokens, one per sequence, every one
//           with logits; S_TG = B * TG / T_TG (the aggregate decode speed of
//           B concurrent sequences);
//   S = N_KV / (T_PP + T_TG).
// One warmup batch before the first test; the cache is emptied before each
// repetition. With compare, Strix and libllama alternate per repetition (the
// order flips every repetition) with a short pause between them; libllama gets
// its own persistent ggml threadpool, flash attention off, F16 KV, and a
// cache of one n_ctx / n_seq_max slice per sequence (its default, not unified).
// On the GPU (-ngl 99) each sequence gets PP + TG cells of its own (the CUDA
// context's cache is not paged yet) and there is no libllama side: the pinned
// libllama is a CPU build.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace strix {

struct BatchedBenchOptions {
  std::string model;
  std::vector<int> n_pp = {128, 256, 512};  // llama-batched-bench's defaults
  std::vector<int> n_tg = {128, 256};
  std::vector<int> n_pl = {1, 2, 4, 8, 16, 32};
  int n_kv_max = 0;  // -c: most cache cells a test may use; 0: as many as the largest test needs
  int n_batch = 2048;
  int n_ubatch = 512;
  int n_threads = 0;  // 0: all hardware threads
  int reps = 1;
  bool compare = false;
  std::string ngl = "0";  // "0": CPU; "99" / "all": the CUDA backend
  int mmap = -1;          // as strix bench's -mmp
  uint64_t seed = 1;
  double pause_s = 0.05;
};

struct BatchedBenchRow {
  int pp = 0, tg = 0, pl = 0;
  int64_t n_kv = 0;
  std::vector<uint64_t> pp_ns = {}, tg_ns = {};          // Strix, one per repetition
  std::vector<uint64_t> ref_pp_ns = {}, ref_tg_ns = {};  // libllama (compare only)
};

// llama-batched-bench's table header and one row (S_PP / S_TG from the mean
// times; with compare, libllama's S_PP / S_TG and the ratios).
std::string batched_bench_header(bool compare);
std::string batched_bench_row(const BatchedBenchRow& r, bool compare);

// Runs every test; on_row is called as each finishes. Returns the receipt
// (host, build, options, every row with its samples). Throws Error / Refusal
// when the model does not load or a flag is out of range.
nlohmann::json run_batched_bench(const BatchedBenchOptions& o, const std::string& command,
                                 const std::string& strix_version,
                                 const std::function<void(const BatchedBenchRow&)>& on_row);

}  // namespace strix
