#include "tools/bench.h"

#include <sys/utsname.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <memory>
#include <numeric>
#include <span>
#include <thread>

#include "backend/cpu/kernels.h"
#include "backend/cuda/cuda_context.h"
#include "core/cpu_features.h"
#include "core/error.h"
#include "core/mmap.h"
#include "core/source_dir.h"
#include "gguf/reader.h"
#include "kv/kv_cache.h"
#include "models/model.h"
#include "quant/types.h"
#include "ref/libllama.h"
#include "runtime/context.h"
#include "runtime/offload.h"
#include "tokenizer/tokenizer.h"
#include "tools/ref_threadpool.h"

namespace strix {

// ---------------------------------------------------------------------------
// Statistics and names

int64_t bench_cache_cells(int64_t n_seq, int64_t tokens) {
  const int64_t bs = KvCache::Options{}.block_size;
  return n_seq * ((tokens + bs - 1) / bs) * bs;
}

double bench_mean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

uint64_t bench_step_bytes(const Model& model) {
  const Hparams& hp = model.hparams();
  uint64_t bytes = model.n_bytes();
  // the token embedding: one row a token, unless it is also the output head (tied)
  const Weight* embd = nullptr;
  bool untied = false;
  for (const Weight& w : model.weights()) {
    const std::string_view name(w.name);
    if (name == "token_embd.weight") embd = &w;
    if (name == "output.weight") untied = true;
  }
  if (embd != nullptr && untied) {
    const uint64_t row = row_size(embd->type, embd->ne[0]);
    bytes -= row * static_cast<uint64_t>(embd->ne[1] * embd->ne[2] * embd->ne[3]) - row;
  }
  if (hp.n_expert <= 0 || hp.n_expert_used >= hp.n_expert) return bytes;
  for (const Weight& w : model.weights()) {
    if (w.ne[2] <= 1 || std::string_view(w.name).find("_exps") == std::string_view::npos) continue;
    const uint64_t stack = row_size(w.type, w.ne[0]) * static_cast<uint64_t>(w.ne[1] * w.ne[2] * w.ne[3]);
    bytes -= stack - stack * static_cast<uint64_t>(hp.n_expert_used) / static_cast<uint64_t>(hp.n_expert);
  }
  return bytes;
}

double bench_stdev(const std::vector<double>& v) {
  if (v.size() <= 1) return 0;
  const double m = bench_mean(v);
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return std::sqrt(ss / static_cast<double>(v.size() - 1));
}

std::vector<double> BenchResult::to_ts(const std::vector<uint64_t>& ns) const {
  std::vector<double> ts;
  ts.reserve(ns.size());
  const double n_tokens = n_prompt + n_gen;
  for (uint64_t t : ns) ts.push_back(t > 0 ? 1e9 * n_tokens / static_cast<double>(t) : 0.0);
  return ts;
}

double BenchResult::ratio() const {
  const double r = bench_mean(ref_ts());
  return r > 0 ? bench_mean(ts()) / r : 0.0;
}

std::string BenchResult::test_name() const {
  std::string s;
  if (n_prompt > 0 && n_gen == 0) {
    s = "pp" + std::to_string(n_prompt);
  } else if (n_gen > 0 && n_prompt == 0) {
    s = "tg" + std::to_string(n_gen);
  } else {
    s = "pp" + std::to_string(n_prompt) + "+tg" + std::to_string(n_gen);
  }
  if (n_depth > 0) s += " @ d" + std::to_string(n_depth);
  return s;
}

const char* bench_ftype_name(int64_t ft) {
  // llama_ftype ids and the names llama.cpp prints for them (checked against
  // the pinned libllama's llama_ftype_name in tests/tools/bench_test.cpp).
  // one line per id
  // clang-format off
  switch (ft) {
    case 0: return "all F32";
    case 1: return "F16";
    case 2: return "Q4_0";
    case 3: return "Q4_1";
    case 7: return "Q8_0";
    case 8: return "Q5_0";
    case 9: return "Q5_1";
    case 10: return "Q2_K - Medium";
    case 11: return "Q3_K - Small";
    case 12: return "Q3_K - Medium";
    case 13: return "Q3_K - Large";
    case 14: return "Q4_K - Small";
    case 15: return "Q4_K - Medium";
    case 16: return "Q5_K - Small";
    case 17: return "Q5_K - Medium";
    case 18: return "Q6_K";
    case 19: return "IQ2_XXS - 2.0625 bpw";
    case 20: return "IQ2_XS - 2.3125 bpw";
    case 21: return "Q2_K - Small";
    case 22: return "IQ3_XS - 3.3 bpw";
    case 23: return "IQ3_XXS - 3.0625 bpw";
    case 24: return "IQ1_S - 1.5625 bpw";
    case 25: return "IQ4_NL - 4.5 bpw";
    case 26: return "IQ3_S - 3.4375 bpw";
    case 27: return "IQ3_S mix - 3.66 bpw";
    case 28: return "IQ2_S - 2.5 bpw";
    case 29: return "IQ2_M - 2.7 bpw";
    case 30: return "IQ4_XS - 4.25 bpw";
    case 31: return "IQ1_M - 1.75 bpw";
    case 32: return "BF16";
    case 36: return "TQ1_0 - 1.69 bpw ternary";
    case 37: return "TQ2_0 - 2.06 bpw ternary";
    case 38: return "MXFP4 MoE";
    case 39: return "NVFP4";
    case 40: return "Q1_0";
    case 41: return "Q2_0";
    default: return nullptr;
  }
  // clang-format on
}

namespace {

// llama.cpp names the size class per architecture from the layer count and
// widths (llama-model.cpp); Strix has no per-architecture table, so the class
// is the parameter count rounded to one significant digit (two for 10-19 B):
// 1.24 B -> "1B", 0.60 B -> "0.6B", 8.03 B -> "8B", 13.0 B -> "13B"; "?B"
// below 10 M, where llama.cpp has no class either. It is
// llama.cpp's name for the common sizes; `strix bench --compare` also records
// libllama's own description in the receipt.
std::string size_class(uint64_t n) {
  const double v = static_cast<double>(n);
  auto one_digit = [](double x) {
    const double p = std::pow(10.0, std::floor(std::log10(x)));
    return std::round(x / p) * p;
  };
  char buf[32];
  if (v >= 1e9) {
    const double b = v / 1e9;
    std::snprintf(buf, sizeof buf, "%gB", (b >= 10 && b < 20) ? std::round(b) : one_digit(b));
  } else if (v >= 1e8) {
    std::snprintf(buf, sizeof buf, "%gB", std::round(v / 1e8) / 10);
  } else if (v >= 1e7) {
    std::snprintf(buf, sizeof buf, "%gM", one_digit(v / 1e6));
  } else {
    return "?B";  // llama.cpp has no class below 14M (stories260K is "llama ?B")
  }
  return buf;
}

// The most common type of the 2-D+ tensors, as llama.cpp guesses a missing
// general.file_type (llama_model_loader: the type with the most tensors).
int64_t guess_file_type(const GgufFile& f) {
  std::vector<int> count(64, 0);
  for (const GgufTensor& t : f.tensors()) {
    if (t.n_dims >= 2 && t.type < count.size()) ++count[t.type];
  }
  const uint32_t ggml_type = static_cast<uint32_t>(std::max_element(count.begin(), count.end()) - count.begin());
  // ggml type -> llama_ftype for the common cases
  // one line per id
  // clang-format off
  switch (ggml_type) {
    case 0: return 0;    // F32
    case 1: return 1;    // F16
    case 2: return 2;    // Q4_0
    case 3: return 3;    // Q4_1
    case 6: return 8;    // Q5_0
    case 7: return 9;    // Q5_1
    case 8: return 7;    // Q8_0
    case 10: return 10;  // Q2_K
    case 11: return 12;  // Q3_K -> Q3_K_M
    case 12: return 15;  // Q4_K -> Q4_K_M
    case 13: return 17;  // Q5_K -> Q5_K_M
    case 14: return 18;  // Q6_K
    case 30: return 32;  // BF16
    case 39: return 38;  // MXFP4
    default: return -1;
  }
  // clang-format on
}

}  // namespace

std::string bench_model_type(const std::string& arch, uint64_t n_params, int64_t file_type, bool guessed) {
  const char* ft = bench_ftype_name(file_type);
  // where the file has no general.file_type libllama prints "llama ?B (guessed) all F32"
  return arch + " " + size_class(n_params) + (guessed ? " (guessed) " : " ") + (ft ? ft : "unknown, may not work");
}

// ---------------------------------------------------------------------------
// The two sides

namespace {

using Clock = std::chrono::steady_clock;

uint64_t now_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count());
}

// splitmix64: the token ids of one repetition, identical for both sides.
using TokenRng = BenchTokenRng;

// What one side must do; both follow llama-bench's test_prompt / test_gen.
class Side {
 public:
  virtual ~Side() = default;
  virtual void clear() = 0;
  virtual void truncate(int32_t n) = 0;  // keep positions [0, n)
  // decodes a batch continuing the sequence at `pos0`; logits for the last token
  virtual void decode(std::span<const int32_t> tokens, int32_t pos0) = 0;
  virtual void idle() {}  // after a timed run: let worker threads sleep

  int64_t n_vocab = 0;
  int32_t bos = -1;
  bool add_bos = false;
  int n_batch = 2048;

  // P tokens from position pos0 in batches of n_batch (BOS first when the
  // vocabulary adds one).
  void prompt(int n, int32_t pos0, TokenRng& rng) {
    std::vector<int32_t> tokens;
    for (int done = 0; done < n;) {
      const int m = std::min(n - done, n_batch);
      tokens.resize(m);
      for (int i = 0; i < m; ++i) tokens[i] = rng.next(n_vocab);
      if (done == 0 && add_bos && bos >= 0) tokens[0] = bos;  // as llama-bench, also after a depth prefix
      decode(tokens, pos0 + done);
      done += m;
    }
  }
  void gen(int n, int32_t pos0, TokenRng& rng) {
    int32_t token = add_bos && bos >= 0 ? bos : rng.next(n_vocab);
    for (int i = 0; i < n; ++i) {
      decode(std::span<const int32_t>(&token, 1), pos0 + i);
      token = rng.next(n_vocab);
    }
  }
};

// Strix on the CPU (Context), the GPU (cuda::CudaContext: the forward on one
// stream) or both (HybridContext, partial offload), as -ngl chose.
class StrixSide : public Side {
 public:
  StrixSide(const Model& model, const ContextOptions& co, const Offload& offload)
      : ctx_(make_context(model, co, offload)) {}
  void clear() override { ctx_->clear(); }
  void truncate(int32_t n) override { ctx_->seq_truncate(0, n); }
  void decode(std::span<const int32_t> tokens, int32_t pos0) override {
    pos_.resize(tokens.size());
    seq_.assign(tokens.size(), 0);
    for (size_t i = 0; i < tokens.size(); ++i) pos_[i] = pos0 + static_cast<int32_t>(i);
    ctx_->decode(tokens, pos_, seq_);  // empty want: the last token's logits only
    (void)ctx_->logits(-1);  // on the host, as llama_decode leaves them (the CUDA context copies them on demand)
  }

 private:
  std::unique_ptr<BatchContext> ctx_;
  std::vector<int32_t> pos_, seq_;
};

class RefSide : public Side {
 public:
  RefSide(const ref::LlamaModel& model, const ref::LlamaContext::Options& o, int n_threads)
      : tp_(n_threads), ctx_(model, o) {
    tp_.attach(ctx_);
  }
  void clear() override { ctx_.clear(); }
  void truncate(int32_t n) override { ctx_.remove(0, n, -1); }
  void decode(std::span<const int32_t> tokens, int32_t pos0) override {
    pos_.resize(tokens.size());
    seq_.assign(tokens.size(), 0);
    want_.assign(tokens.size(), 0);
    want_.back() = 1;  // llama_batch_get_one: the last token's logits only
    for (size_t i = 0; i < tokens.size(); ++i) pos_[i] = pos0 + static_cast<int32_t>(i);
    ctx_.decode(tokens, pos_, seq_, want_);
  }
  void idle() override { tp_.pause(); }

 private:
  RefThreadpool tp_;  // declared first: outlives the context it is attached to
  ref::LlamaContext ctx_;
  std::vector<int32_t> pos_, seq_;
  std::vector<uint8_t> want_;
};

// One timed repetition: the cache back to the depth prefix, then the test.
uint64_t timed_rep(Side& side, const BenchResult& t, uint64_t seed) {
  if (t.n_depth > 0) {
    side.truncate(t.n_depth);
  } else {
    side.clear();
  }
  TokenRng rng{seed};
  const uint64_t t0 = now_ns();
  if (t.n_prompt > 0) side.prompt(t.n_prompt, t.n_depth, rng);
  if (t.n_gen > 0) side.gen(t.n_gen, t.n_depth + t.n_prompt, rng);
  const uint64_t dt = now_ns() - t0;
  side.idle();
  return dt;
}

// Warmup, then the depth prefix (computed once; each repetition truncates to it).
void prepare(Side& side, const BenchResult& t, bool warmup, uint64_t seed) {
  side.clear();
  if (warmup) {
    TokenRng rng{seed ^ 0x5741524dull};
    if (t.n_prompt > 0) side.prompt(t.n_prompt, 0, rng);
    if (t.n_gen > 0) {
      side.clear();
      side.gen(1, 0, rng);
    }
    side.clear();
  }
  if (t.n_depth > 0) {
    TokenRng rng{seed ^ 0x44455054ull};
    side.prompt(t.n_depth, 0, rng);
  }
  side.idle();
}

void pause_for(double s) {
  if (s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

}  // namespace

std::vector<BenchResult> run_bench(const BenchOptions& o, const std::function<void(const BenchResult&)>& on_result) {
  if (o.models.empty()) throw Error("bench: no model (-m FILE)");
  if (o.reps < 1 || o.n_batch < 1 || o.n_ubatch < 1) throw Error("bench: -r, -b and -ub must be >= 1");
  const int n_threads =
      o.n_threads > 0 ? o.n_threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  if (o.compare && !o.libllama_dir.empty()) {
    // ref::reference_dir() reads it; set before the first LibLlama::get()
    ::setenv("STRIX_LIBLLAMA_DIR", o.libllama_dir.c_str(), 1);
  }
  if (o.compare) ref::use_libggml_cpu_pick();
  std::vector<BenchResult> out;
  for (const std::string& path : o.models) {
    const bool offload = o.ngl != "0";
    set_weight_memory(o.mmap == 1 || (o.mmap < 0 && offload) ? WeightMemory::kMap
                      : o.mmap == 0                          ? WeightMemory::kCopy
                                                             : WeightMemory::kAuto);
    auto model = Model::load(path);
    const Offload layers = cuda::parse_ngl(o.ngl, model->hparams().n_layer);
    const bool on_gpu = layers.on_gpu();
    if (on_gpu) {
      if (o.compare) throw Refusal("bench: --compare runs libllama on the CPU; it is not offered with -ngl " + o.ngl);
      cuda::check_model(*model);
    }
    const GgufFile& f = model->file();
    int64_t ftype = f.find("general.file_type") ? static_cast<int64_t>(f.get_u64("general.file_type")) : -1;
    std::string type_suffix;  // non-empty: the file type was guessed
    if (ftype < 0) {
      ftype = guess_file_type(f);
      type_suffix = "guessed";
    }
    const tok::Tokenizer tk = tok::Tokenizer::from_file(path);
    std::unique_ptr<ref::LlamaModel> rmodel;
    if (o.compare) {
      rmodel = std::make_unique<ref::LlamaModel>(path);
      if (rmodel->n_vocab() != model->hparams().n_vocab)
        throw Error("bench: Strix and libllama read different vocabulary sizes");
    }

    // llama-bench's order: per depth, the pp tests then the tg tests
    std::vector<BenchResult> tests;
    for (int d : o.n_depth) {
      for (int p : o.n_prompt) {
        if (p > 0) tests.push_back({.n_prompt = p, .n_gen = 0, .n_depth = d});
      }
      for (int g : o.n_gen) {
        if (g > 0) tests.push_back({.n_prompt = 0, .n_gen = g, .n_depth = d});
      }
    }
    uint64_t test_index = 0;
    for (BenchResult& t : tests) {
      ++test_index;
      t.model_path = path;
      t.model_type = bench_model_type(f.architecture(), model->n_params(), ftype, !type_suffix.empty());
      t.model_size = model->n_bytes();
      t.step_bytes = bench_step_bytes(*model);
      t.model_n_params = model->n_params();
      t.n_threads = n_threads;
      t.n_batch = o.n_batch;
      t.n_ubatch = o.n_ubatch;
      const int64_t n_ctx = t.n_prompt + t.n_gen + t.n_depth;

      ContextOptions co;
      co.n_ctx = n_ctx;
      co.n_ubatch = o.n_ubatch;
      co.n_threads = n_threads;
      co.n_seq_max = 1;
      t.backend = on_gpu ? "CUDA" : "CPU";
      t.n_gpu_layers = static_cast<int>(layers.n_gpu);
      std::unique_ptr<Side> side_owner = std::make_unique<StrixSide>(*model, co, layers);
      Side& strix_side = *side_owner;
      strix_side.n_vocab = model->hparams().n_vocab;
      strix_side.bos = tk.vocab().bos;
      strix_side.add_bos = tk.vocab().add_bos;
      strix_side.n_batch = o.n_batch;

      std::unique_ptr<RefSide> ref_side;
      if (rmodel) {
        t.ref_model_type = rmodel->desc();
        ref_side = std::make_unique<RefSide>(*rmodel,
                                             ref::LlamaContext::Options{.n_ctx = static_cast<uint32_t>(n_ctx),
                                                                        .n_batch = static_cast<uint32_t>(o.n_batch),
                                                                        .n_ubatch = static_cast<uint32_t>(o.n_ubatch),
                                                                        .n_seq_max = 1,
                                                                        .n_threads = n_threads,
                                                                        .flash_attn = 0},
                                             n_threads);
        ref_side->n_vocab = rmodel->n_vocab();
        ref_side->bos = rmodel->bos();
        ref_side->add_bos = rmodel->add_bos();
        ref_side->n_batch = o.n_batch;
        // both sides must run the same tokens
        strix_side.bos = ref_side->bos;
        strix_side.add_bos = ref_side->add_bos;
      }

      const uint64_t seed = o.seed * 1000003ull + test_index;
      prepare(strix_side, t, o.warmup, seed);
      if (ref_side) {
        pause_for(o.pause_s);
        prepare(*ref_side, t, o.warmup, seed);
      }
      for (int rep = 0; rep < o.reps; ++rep) {
        const uint64_t rseed = seed * 7919ull + static_cast<uint64_t>(rep);
        if (!ref_side) {
          t.samples_ns.push_back(timed_rep(strix_side, t, rseed));
          continue;
        }
        // alternate, flipping the order every repetition
        const bool strix_first = rep % 2 == 0;
        for (int k = 0; k < 2; ++k) {
          pause_for(o.pause_s);
          if ((k == 0) == strix_first) {
            t.samples_ns.push_back(timed_rep(strix_side, t, rseed));
          } else {
            t.ref_samples_ns.push_back(timed_rep(*ref_side, t, rseed));
          }
        }
      }
      if (on_result) on_result(t);
      out.push_back(std::move(t));
    }
  }
  return out;
}

// ---------------------------------------------------------------------------
// Markdown, as llama-bench's markdown_printer

namespace {

struct Field {
  std::string name;
  int width;  // negative: left-aligned
};

std::vector<Field> fields(const BenchOptions& o) {
  std::vector<Field> f = {{"model", -30}, {"size", 10}, {"params", 10}, {"backend", -10}};
  if (o.ngl != "0") f.push_back({"ngl", 3});  // as llama-bench's GPU builds
  f.push_back({"threads", 7});
  if (o.n_batch != 2048) f.push_back({"n_batch", 7});
  if (o.n_ubatch != 512) f.push_back({"n_ubatch", 8});
  f.push_back({"test", 15});
  f.push_back({"t/s", 20});
  if (o.compare) {
    f.push_back({"libllama t/s", 20});
    f.push_back({"ratio", 6});
  }
  return f;
}

std::string mean_sd(const std::vector<double>& ts) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f ± %.2f", bench_mean(ts), bench_stdev(ts));
  return buf;
}

void cell(std::string& line, int width, const std::string& value) {
  char buf[256];
  std::snprintf(buf, sizeof buf, " %*s |", width, value.c_str());
  line += buf;
}

}  // namespace

std::string bench_markdown_header(const BenchOptions& o) {
  std::string a = "|", b = "|";
  for (const Field& f : fields(o)) {
    cell(a, f.width, f.name);
    b += " " + std::string(static_cast<size_t>(std::abs(f.width) - 1), '-') + (f.width > 0 ? ":" : "-") + " |";
  }
  return a + "\n" + b + "\n";
}

std::string bench_markdown_row(const BenchResult& r, const BenchOptions& o) {
  std::string line = "|";
  char buf[64];
  for (const Field& f : fields(o)) {
    std::string v;
    int width = f.width;
    if (f.name == "model") {
      v = r.model_type;
    } else if (f.name == "size") {
      if (r.model_size < 1024ull * 1024 * 1024) {
        std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(r.model_size) / 1024.0 / 1024.0);
      } else {
        std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(r.model_size) / 1024.0 / 1024.0 / 1024.0);
      }
      v = buf;
    } else if (f.name == "params") {
      if (r.model_n_params < 1000ull * 1000 * 1000) {
        std::snprintf(buf, sizeof buf, "%.2f M", static_cast<double>(r.model_n_params) / 1e6);
      } else {
        std::snprintf(buf, sizeof buf, "%.2f B", static_cast<double>(r.model_n_params) / 1e9);
      }
      v = buf;
    } else if (f.name == "backend") {
      v = r.backend;
    } else if (f.name == "ngl") {
      v = std::to_string(r.n_gpu_layers);
    } else if (f.name == "threads") {
      v = std::to_string(r.n_threads);
    } else if (f.name == "n_batch") {
      v = std::to_string(r.n_batch);
    } else if (f.name == "n_ubatch") {
      v = std::to_string(r.n_ubatch);
    } else if (f.name == "test") {
      v = r.test_name();
    } else if (f.name == "t/s") {
      v = mean_sd(r.ts());
      width += 1;  // "±" is two bytes in UTF-8
    } else if (f.name == "libllama t/s") {
      v = mean_sd(r.ref_ts());
      width += 1;
    } else if (f.name == "ratio") {
      std::snprintf(buf, sizeof buf, "%.2f", r.ratio());
      v = buf;
    }
    cell(line, width, v);
  }
  return line + "\n";
}

// ---------------------------------------------------------------------------
// The receipt

namespace {

std::string first_line_of(const std::string& cmd) {
  std::string s;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[256];
    if (std::fgets(buf, sizeof buf, p) != nullptr) s = buf;
    ::pclose(p);
  }
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t c = line.find(':');
      if (c != std::string::npos) return line.substr(line.find_first_not_of(' ', c + 1));
    }
  }
  return "unknown";
}

std::string read_file_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

nlohmann::json stats(const std::vector<uint64_t>& ns, const std::vector<double>& ts) {
  return {{"samples_ns", ns}, {"samples_ts", ts}, {"avg_ts", bench_mean(ts)}, {"stddev_ts", bench_stdev(ts)}};
}

}  // namespace

BenchGpu bench_gpu_info() {
  const cuda::GpuInfo g = cuda::gpu_info(true);
  return {g.name, g.copy_bytes_per_s};
}

namespace {
// weight bytes read per second by a tg row, as a fraction of the copy bandwidth
// (of a mixture of experts, the used experts' share of the expert stacks: bench_step_bytes)
double tg_fraction(const BenchResult& r, const BenchGpu& gpu) {
  return gpu.copy_bytes_per_s > 0 ? bench_mean(r.ts()) * static_cast<double>(r.step_bytes) / gpu.copy_bytes_per_s : 0;
}
}  // namespace

std::string bench_gpu_summary(const BenchGpu& gpu, const std::vector<BenchResult>& results) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "GPU %s: device-to-device copy bandwidth %.0f GB/s (read + write)\n", gpu.name.c_str(),
                gpu.copy_bytes_per_s / 1e9);
  std::string s = buf;
  for (const BenchResult& r : results) {
    if (r.n_gen == 0 || r.n_prompt != 0) continue;
    const double ts = bench_mean(r.ts());
    std::snprintf(buf, sizeof buf,
                  "  %s %s: %.1f t/s x %.2f GB of weights = %.0f GB/s = %.1f%% of the copy bandwidth\n",
                  r.model_type.c_str(), r.test_name().c_str(), ts, static_cast<double>(r.step_bytes) / 1e9,
                  ts * static_cast<double>(r.step_bytes) / 1e9, 100 * tg_fraction(r, gpu));
    s += buf;
  }
  return s;
}

nlohmann::json bench_host_json(bool compare, const BenchGpu* gpu) {
  using nlohmann::json;
  utsname u{};
  ::uname(&u);
  json host = {
      {"cpu_model", cpu_model_name()},
      {"hardware_threads", std::thread::hardware_concurrency()},
      {"cpu_flags", cpu_features().to_string()},
      {"strix_isa", cpu::cpu_isa_name(cpu::cpu_kernels().isa)},
      {"kernel", std::string(u.sysname) + " " + u.release + " " + u.machine},
      {"loadavg_at_end", read_file_line("/proc/loadavg")},
  };
  if (gpu) {
    host["gpu"] = gpu->name;
    host["gpu_copy_bytes_per_s"] = gpu->copy_bytes_per_s;
  }
  if (compare) {
    const std::string lib = loaded_ggml_cpu_lib();
    host["libllama_cpu_variant"] = lib.substr(lib.find_last_of('/') + 1);
    host["libllama_dir"] = ref::reference_dir();
  }
  return host;
}

nlohmann::json bench_build_json(const std::string& strix_version) {
  const std::string src = strix::source_dir();
  const std::string commit = first_line_of("git -C '" + src + "' rev-parse HEAD 2>/dev/null");
  // receipts being rewritten in benchmarks/ do not make the measured code dirty
  const std::string dirty =
      first_line_of("git -C '" + src + "' status --porcelain --untracked-files=no -- . ':!benchmarks' 2>/dev/null");
#ifdef NDEBUG
  const bool asserts = false;
#else
  const bool asserts = true;
#endif
  return {
      {"strix_version", strix_version},
      {"compiler", __VERSION__},
      {"asserts", asserts},
      {"git_commit", commit.empty() ? "unknown" : commit},
      {"git_dirty", !dirty.empty()},
  };
}

std::string bench_utc_now() { return utc_now(); }

nlohmann::json bench_receipt(const BenchOptions& o, const std::vector<BenchResult>& results,
                             const BenchBuildInfo& build, const BenchGpu* gpu) {
  using nlohmann::json;
  const json host = bench_host_json(o.compare, gpu);
  const json jbuild = bench_build_json(build.strix_version);
  json jopts = {{"n_threads", results.empty() ? o.n_threads : results.front().n_threads},
                {"n_batch", o.n_batch},
                {"n_ubatch", o.n_ubatch},
                {"reps", o.reps},
                {"warmup", o.warmup},
                {"compare", o.compare},
                {"libllama_flash_attn", o.compare ? json(0) : json(nullptr)},
                {"kv_type", "f16"},
                {"seed", o.seed}};
  json rows = json::array();
  for (const BenchResult& r : results) {
    json row = {{"model_filename", r.model_path},
                {"model_type", r.model_type},
                {"model_size", r.model_size},
                {"step_bytes", r.step_bytes},
                {"model_n_params", r.model_n_params},
                {"test", r.test_name()},
                {"n_prompt", r.n_prompt},
                {"n_gen", r.n_gen},
                {"n_depth", r.n_depth},
                {"n_threads", r.n_threads},
                {"backend", r.backend},
                {"n_gpu_layers", r.n_gpu_layers},
                {"strix", stats(r.samples_ns, r.ts())}};
    if (gpu && r.n_gen > 0 && r.n_prompt == 0) row["weight_bytes_per_s_fraction_of_copy_bw"] = tg_fraction(r, *gpu);
    if (!r.ref_samples_ns.empty()) {
      row["libllama_model_type"] = r.ref_model_type;
      row["libllama"] = stats(r.ref_samples_ns, r.ref_ts());
      row["ratio"] = r.ratio();
    }
    rows.push_back(std::move(row));
  }
  return {{"tool", "strix bench"}, {"command", build.command}, {"time", utc_now()}, {"host", host},
          {"build", jbuild},       {"options", jopts},         {"results", rows}};
}

}  // namespace strix
