// Logit parity against libllama: the same token ids through the pinned
// libllama (ref::LlamaContext) and Strix (Context), compared at every position.
// Used by `strix parity` and the per-architecture parity tests.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace strix {

struct ParityOptions {
  int n_tokens = 128;
  int n_threads = 1;             // Strix threads (libllama always runs with one: it spins)
  uint64_t seed = 1;             // picks the token ids (after BOS)
  std::string mode = "prefill";  // prefill | decode | mixed
  int n_seq = 3;                 // sequences in mixed mode
  int n_ubatch = 512;
  bool trace = false;  // print every position whose KL is not 0 (stderr)
  // Negative controls: Strix loads this file instead (a deliberately altered
  // copy, see write_variant) while libllama loads the original.
  std::string strix_path;
  // -ngl: "0" runs Strix on the CPU (Context); "99" / "all" on the GPU
  // (cuda::CudaContext, full offload); a count in between partially
  // (HybridContext: the output layer and the last N-1 repeating layers on the
  // GPU). Any GPU share is judged by ParityReport::cuda_pass().
  std::string ngl = "0";
  bool exact = false;  // CUDA: ContextOptions::exact_numerics
};

struct ParityReport {
  int n_positions = 0;
  double mean_kl = 0, max_kl = 0;  // KL(libllama || strix), nats
  double max_abs_dlogit = 0;
  int worst_seq = 0, worst_pos = 0;  // where max KL occurred
  int top1_agree = 0;
  std::string mode;
  std::string weight_types;                   // e.g. "q4_K" (the most common matmul type)
  std::vector<std::string> all_weight_types;  // every matmul weight type in the file, sorted
  double kl_bar = 1e-4;                       // the bar for those types (1e-6 for F32/F16/Q8_0)
  // The reference's own noise on the same tokens: libllama prefill (one batch)
  // against libllama decode (token by token). Quantized activations make rare
  // rounding flips that libllama itself shows between its own two paths; a
  // bar below that floor could not be met by libllama either.
  double floor_mean_kl = 0, floor_max_kl = 0;
  double floor_top1_miss_rate = 0;
  double top1_rate() const { return n_positions ? static_cast<double>(top1_agree) / n_positions : 0; }
  // max KL <= max(bar, 2 x floor), mean KL <= max(bar, 2 x floor mean), and
  // top-1 misses at most twice the reference's own rate (none when it has none).
  double max_kl_limit() const { return kl_bar > 2 * floor_max_kl ? kl_bar : 2 * floor_max_kl; }
  double mean_kl_limit() const { return kl_bar > 2 * floor_mean_kl ? kl_bar : 2 * floor_mean_kl; }
  // The bar itself, without the floor: top-1 agreement on every
  // position and max KL <= kl_bar (1e-6 for F32/F16/Q8_0, 1e-4 otherwise).
  // The test suite enforces it (and pass()); negative controls must fail it.
  bool meets_bar() const { return n_positions > 0 && top1_agree == n_positions && max_kl <= kl_bar; }
  // The looser bar the suite keeps for weight types whose kernels do not yet
  // sum in libllama's order (tests/parity/parity_util.h): mean KL <= 1e-6 and
  // top-1 >= 99% for F32/F16; mean KL <= 1e-3 and top-1 >= 95% otherwise.
  bool sane() const {
    const bool fp = weight_types == "f32" || weight_types == "f16";
    const double mean_bar = fp ? 1e-6 : 1e-3;
    const double top1_bar = fp ? 0.99 : 0.95;
    return mean_kl <= std::max(mean_bar, mean_kl_limit()) && top1_rate() >= top1_bar;
  }
  bool pass() const {
    const double miss = n_positions ? 1.0 - top1_rate() : 0.0;
    return max_kl <= max_kl_limit() && mean_kl <= mean_kl_limit() && miss <= 2 * floor_top1_miss_rate + 1e-12;
  }
  // The CUDA backend's bar (issue 7). Its GEMV sums f32 activations and its
  // prefill GEMM f16 ones (libllama's CPU path quantizes activations and sums
  // in its own order), so the bar is statistical: top-1 agreement >= 99.5% and
  // mean KL <= 1e-4 when every matmul weight is F32/F16/Q8_0, else <= 1e-3.
  std::string backend = "cpu";  // "cuda" with -ngl 99 or a partial count
  std::string gpu_layers;       // partial offload: e.g. "3/5" (-ngl 3 of a 4-layer model)
  double cuda_mean_kl_bar() const { return kl_bar <= 1e-6 ? 1e-4 : 1e-3; }
  bool cuda_pass() const { return n_positions > 0 && top1_rate() >= 0.995 && mean_kl <= cuda_mean_kl_bar(); }
  // pass() on the CPU, cuda_pass() on the GPU
  bool verdict() const { return backend == "cuda" ? cuda_pass() : pass(); }
  std::string summary() const;  // one line
};

// The token ids both sides run: BOS (when the vocabulary adds one) then
// seeded pseudo-random ids from the vocabulary.
std::vector<int32_t> parity_tokens(int64_t n_vocab, int32_t bos, int n, uint64_t seed);

// Throws Error/Refusal when either side cannot load the file.
ParityReport run_parity(const std::string& path, const ParityOptions& opts);

// Greedy generation on both sides from BOS: each side feeds back its own
// argmax for n_gen tokens (libllama one token per decode, Strix on the CPU or,
// with opts.ngl, the GPU). first_diff: index of the first differing generated
// token, -1 when all agree; text: libllama's detokenized output.
struct GreedyReport {
  std::vector<int32_t> ref, ours;  // generated ids (BOS excluded)
  int first_diff = -1;
  std::string text;
  std::string backend = "cpu";  // "cuda" with -ngl 99 or a partial count
  bool pass() const { return first_diff < 0 && !ref.empty(); }
};
GreedyReport run_greedy(const std::string& path, int n_gen, const ParityOptions& opts);

// Copies a GGUF with some metadata changed (set: key -> value, replacing or
// adding; remove: keys dropped), tensors scaled (name -> factor, F32 only) and
// 1-D F32 tensors added (e.g. rope_freqs.weight),
// for the negative controls of parity tests.
struct VariantEdit {
  std::vector<std::pair<std::string, double>> set_f32 = {};   // float keys
  std::vector<std::pair<std::string, int64_t>> set_u32 = {};  // integer keys
  std::vector<std::string> remove = {};
  std::vector<std::pair<std::string, float>> scale_tensor = {};             // F32 tensors multiplied by a factor
  std::vector<std::pair<std::string, std::string>> set_str = {};            // string keys
  std::vector<std::pair<std::string, std::vector<float>>> add_tensor = {};  // new 1-D F32 tensors
};
void write_variant(const std::string& src, const std::string& dst, const VariantEdit& edit);

// KL(p || q) of two logit rows in double, with p = softmax(ref), q = softmax(ours).
double kl_divergence(const float* ref, const float* ours, int64_t n);

}  // namespace strix
