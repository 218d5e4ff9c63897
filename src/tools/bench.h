// `strix bench`: llama-bench's measurements and table, for Strix, optionally
// side by side with the pinned libllama on the same file in the same process.
//
// Methodology (as llama-bench, tools/llama-bench in llama.cpp):
//   pp<P>      P pseudo-random tokens (BOS first when the vocabulary adds one)
//              decoded as batches of at most n_batch tokens (each split into
//              n_ubatch micro-batches), logits for the last token only.
//   tg<N>      N single-token decodes (BOS first, then random tokens).
//   @ d<D>     the test runs after D tokens already in the cache; the D-token
//              prefix is computed once per test and each repetition truncates
//              the cache back to it (llama-bench restores a saved state).
//   One warmup (the full prompt for pp, one token for tg) before the
//   repetitions; the cache is emptied (or truncated to D) before each one.
//   t/s = (P + N) / seconds of one repetition; reported as mean ± sample sd.
// With compare, Strix and libllama alternate per repetition (the order flips
// every repetition so that drift hits both) with a short pause between the
// two so that neither side's idle spinning threads steal the other's cores.
// libllama gets its own persistent ggml threadpool, as llama-bench attaches
// one, flash attention off (Strix's attention is the non-flash path), F16 KV.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace strix {

struct BenchOptions {
  std::vector<std::string> models;
  std::vector<int> n_prompt = {512};  // 0 drops the pp tests
  std::vector<int> n_gen = {128};     // 0 drops the tg tests
  std::vector<int> n_depth = {0};
  int reps = 5;
  int n_threads = 0;  // 0: all hardware threads
  int n_batch = 2048;
  int n_ubatch = 512;
  bool warmup = true;
  bool compare = false;      // also run libllama
  std::string libllama_dir;  // empty: ref::reference_dir() (the pinned npm package)
  double pause_s = 0.05;     // between the two sides of one repetition (compare only)
  uint64_t seed = 1;         // picks the random token ids
  // -ngl: "0" runs on the CPU; "99" / "all" on the GPU (backend/cuda, full
  // offload only). With the GPU the receipt and table also give the device's
  // copy bandwidth and each tg test's weight bytes per second as a fraction of it.
  std::string ngl = "0";
  // -mmp 0|1 (llama-bench's): 1 maps the file in place, 0 reads it into
  // huge-page memory; -1 (default) decides as WeightMemory::kAuto on the CPU
  // and maps in place when offloading.
  int mmap = -1;
};

class Model;

// Bytes one decode step of one token reads: every tensor of the file, but of a mixture of
// experts' stacks (3-D "_exps" weights) only the n_expert_used of n_expert share.
uint64_t bench_step_bytes(const Model& model);

// One row of the table.
struct BenchResult {
  // the model
  std::string model_path = {};
  std::string model_type = {};      // "llama 1B Q4_K - Medium" (arch, size class, file type)
  std::string ref_model_type = {};  // libllama's llama_model_desc (compare only)
  uint64_t model_size = 0;          // bytes of tensor data
  uint64_t step_bytes = 0;          // bytes one decode step reads: all but the unused experts' share
  uint64_t model_n_params = 0;
  // the test
  int n_prompt = 0, n_gen = 0, n_depth = 0;
  int n_threads = 0, n_batch = 0, n_ubatch = 0;
  std::string backend = "CPU";                // "CUDA" with -ngl 99 or a partial count
  int n_gpu_layers = 0;                       // llama.cpp's count: 0 .. n_layer + 1
  std::vector<uint64_t> samples_ns = {};      // Strix, one per repetition
  std::vector<uint64_t> ref_samples_ns = {};  // libllama (compare only)

  std::string test_name() const;  // "pp512", "tg128", "pp512 @ d4096"
  std::vector<double> ts() const { return to_ts(samples_ns); }
  std::vector<double> ref_ts() const { return to_ts(ref_samples_ns); }
  // Strix t/s mean over libllama t/s mean (0 without compare).
  double ratio() const;

 private:
  std::vector<double> to_ts(const std::vector<uint64_t>& ns) const;
};

// The benchmarks' pseudo-random token ids (splitmix64): both sides of a
// comparison decode the same tokens.
struct BenchTokenRng {
  uint64_t state;
  int32_t next(int64_t n_vocab) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return static_cast<int32_t>(z % static_cast<uint64_t>(n_vocab));
  }
};

// The cache size (n_ctx) of a Strix context that holds n_seq sequences of up
// to `tokens` cells each: the paged cache gives every sequence whole blocks,
// so a size counted in tokens alone runs out of blocks first.
int64_t bench_cache_cells(int64_t n_seq, int64_t tokens);

// Mean and sample standard deviation (Bessel-corrected; 0 for one sample).
double bench_mean(const std::vector<double>& v);
double bench_stdev(const std::vector<double>& v);

// "arch size-class ftype" from a GGUF's metadata and parameter count, in
// llama_model_desc's shape (see bench.cpp for how the size class is chosen).
// guessed: the file has no general.file_type (it was guessed from the tensors).
std::string bench_model_type(const std::string& arch, uint64_t n_params, int64_t file_type, bool guessed = false);
// llama_ftype's name as llama.cpp prints it ("Q4_K - Medium", "all F32"), or
// nullptr for an id it does not have.
const char* bench_ftype_name(int64_t file_type);

// Runs every test of every model in llama-bench's order (per model and depth:
// the pp tests, then the tg tests); on_result is called as each row finishes.
// Throws Error/Refusal when a model does not load (on either side).
std::vector<BenchResult> run_bench(const BenchOptions& opts, const std::function<void(const BenchResult&)>& on_result);

// With -ngl 99: the GPU's name and device-to-device copy bandwidth (bytes read
// + written per second), measured once; a tg test's weight bytes per second
// over it is the fraction of the memory-bandwidth limit decode reaches.
struct BenchGpu {
  std::string name;
  double copy_bytes_per_s = 0;
};
BenchGpu bench_gpu_info();
// "GPU <name>: copy bandwidth X GB/s" and one line per tg row: t/s x weight
// bytes = GB/s = fraction of the copy bandwidth.
std::string bench_gpu_summary(const BenchGpu& gpu, const std::vector<BenchResult>& results);

// The markdown table of llama-bench (| model | size | params | backend |
// threads | test | t/s |; n_batch / n_ubatch columns when not the defaults),
// plus | libllama t/s | ratio | with compare.
std::string bench_markdown_header(const BenchOptions& opts);
std::string bench_markdown_row(const BenchResult& r, const BenchOptions& opts);

// The receipt: host (CPU model, cores, flags, ISA level used, libllama's CPU
// variant), build (compiler, strix version, git commit), options and every
// row with its samples, mean, sd, libllama's samples and the ratio.
struct BenchBuildInfo {
  std::string strix_version;
  std::string command = {};  // the command line that made the receipt
};
nlohmann::json bench_receipt(const BenchOptions& opts, const std::vector<BenchResult>& results,
                             const BenchBuildInfo& build, const BenchGpu* gpu = nullptr);
// Its "host" and "build" objects and timestamp, for the other receipts (strix bench-serve).
nlohmann::json bench_host_json(bool compare, const BenchGpu* gpu = nullptr);
nlohmann::json bench_build_json(const std::string& strix_version);
std::string bench_utc_now();

}  // namespace strix
