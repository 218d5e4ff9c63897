// `strix bench-serve`: the server engine under load, in-process, next to
// libllama driven by the same load (same model file, same token ids).
//
// Methodology:
//   decode @ cN   N streams at once (N slots, N sequences), each a distinct
//                 prompt of n_prompt random ids (BOS first) and n_gen greedy
//                 tokens (end of generation ignored). The clock starts once
//                 every prompt is in (every stream has its first token) and
//                 stops when all are done: aggregate decode t/s = tokens
//                 sampled in that time / seconds. Strix: server::Engine
//                 (continuous batching, one step per token of every stream;
//                 the requests are queued together, so they are admitted in
//                 one step while the batch holds their prompts, and the
//                 prefill is not in the window). libllama: all
//                 prompts in one batch, then N * (n_gen - 1) tokens; one
//                 llama_decode per step with one token of each of its N
//                 sequences (n_seq_max = N), argmax sampling.
//   shared prefix a system prompt of n_system random ids plus a distinct
//                 suffix of n_suffix ids per request; time to first token
//                 (submit to first sampled token) of a first request and then
//                 of a second one with the same system prompt. Strix reuses
//                 the prefix through the engine's prefix cache; libllama keeps
//                 the system prompt in its sequence and decodes only the new
//                 suffix (what llama-server's cache_prompt does for one slot).
//                 The bar: the second request >= 2x faster than the first,
//                 >= 90% of its prompt cached.
// One short untimed run of each side first (warmup). Each measurement is
// repeated `reps` times (mean reported, samples kept). With -ngl 99 the
// engine runs on the CUDA backend (no libllama side: the pinned libllama is a
// CPU build).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace strix {

struct BenchServeOptions {
  std::string model;
  std::vector<int> streams = {1, 4, 16, 64};
  int n_prompt = 32;  // per stream, decode test
  int n_gen = 64;
  int n_system = 700;  // shared-prefix test
  int n_suffix = 16;
  int reps = 3;
  int n_threads = 0;  // 0: all hardware threads
  int n_batch = 2048;
  int n_ubatch = 512;
  bool compare = true;    // also run libllama (on the CPU: not with a GPU)
  std::string ngl = "0";  // -ngl: 99 / all runs the engine on the CUDA backend
  uint64_t seed = 1;
};

// Runs both tests; the JSON receipt (tool, options, host, results). Progress
// lines go to stderr.
nlohmann::json run_bench_serve(const BenchServeOptions& opts, const std::string& command,
                               const std::string& strix_version);

}  // namespace strix
