#include "tools/batched_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <span>
#include <thread>
#include <utility>

#include "backend/cuda/cuda_context.h"
#include "core/error.h"
#include "core/mmap.h"
#include "models/model.h"
#include "ref/libllama.h"
#include "runtime/context.h"
#include "runtime/offload.h"
#include "tools/bench.h"
#include "tools/ref_threadpool.h"

namespace strix {

namespace {

uint64_t now_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

using Rng = BenchTokenRng;  // both sides decode the same tokens

class Side {
 public:
  virtual ~Side() = default;
  virtual void clear() = 0;
  virtual void decode(std::span<const int32_t> tok, std::span<const int32_t> pos, std::span<const int32_t> seq,
                      std::span<const uint8_t> want) = 0;
  virtual void idle() {}
};

// Strix's CPU Context, the CUDA context or both (partial offload): the same decode contract.
class StrixSide : public Side {
 public:
  StrixSide(const Model& model, const ContextOptions& co, const Offload& offload)
      : ctx_(make_context(model, co, offload)) {}
  void clear() override { ctx_->clear(); }
  void decode(std::span<const int32_t> tok, std::span<const int32_t> pos, std::span<const int32_t> seq,
              std::span<const uint8_t> want) override {
    ctx_->decode(tok, pos, seq, want);
    (void)ctx_->logits(-1);  // on the host, as llama_decode leaves them (the CUDA context copies them on demand)
  }

 private:
  std::unique_ptr<BatchContext> ctx_;
};

class RefSide : public Side {
 public:
  RefSide(const ref::LlamaModel& model, const ref::LlamaContext::Options& o) : tp_(o.n_threads), ctx_(model, o) {
    tp_.attach(ctx_);
  }
  void clear() override { ctx_.clear(); }
  void decode(std::span<const int32_t> tok, std::span<const int32_t> pos, std::span<const int32_t> seq,
              std::span<const uint8_t> want) override {
    ctx_.decode(tok, pos, seq, want);
  }
  void idle() override { tp_.pause(); }

 private:
  RefThreadpool tp_;  // declared first: outlives the context it is attached to
  ref::LlamaContext ctx_;
};

struct Times {
  uint64_t pp = 0, tg = 0;
};

// One repetition of llama-batched-bench's test: B prompts of PP tokens in
// batches of n_batch, then TG steps of one token per sequence.
Times timed(Side& side, int pp, int tg, int pl, int n_batch, int64_t n_vocab, uint64_t seed) {
  side.clear();
  Rng rng{seed};
  std::vector<int32_t> tok, pos, seq;
  std::vector<uint8_t> want;
  for (int j = 0; j < pl; ++j) {
    for (int i = 0; i < pp; ++i) {
      tok.push_back(rng.next(n_vocab));
      pos.push_back(i);
      seq.push_back(j);
      want.push_back(i == pp - 1 ? 1 : 0);
    }
  }
  Times t;
  const uint64_t t0 = now_ns();
  for (size_t first = 0; first < tok.size(); first += static_cast<size_t>(n_batch)) {
    const size_t m = std::min(tok.size() - first, static_cast<size_t>(n_batch));
    side.decode(std::span(tok).subspan(first, m), std::span(pos).subspan(first, m), std::span(seq).subspan(first, m),
                std::span(want).subspan(first, m));
  }
  const uint64_t t1 = now_ns();
  tok.resize(pl);
  pos.resize(pl);
  seq.resize(pl);
  want.assign(pl, 1);
  for (int i = 0; i < tg; ++i) {
    for (int j = 0; j < pl; ++j) {
      tok[j] = rng.next(n_vocab);
      pos[j] = pp + i;
      seq[j] = j;
    }
    side.decode(tok, pos, seq, want);
  }
  t.pp = t1 - t0;
  t.tg = now_ns() - t1;
  side.idle();
  return t;
}

double mean_s(const std::vector<uint64_t>& ns) {
  if (ns.empty()) return 0;
  double s = 0;
  for (uint64_t x : ns) s += static_cast<double>(x);
  return s / static_cast<double>(ns.size()) * 1e-9;
}

double rate(double tokens, double s) { return s > 0 ? tokens / s : 0; }

void pause_for(double s) {
  if (s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

nlohmann::json side_json(const std::vector<uint64_t>& pp_ns, const std::vector<uint64_t>& tg_ns,
                         const BatchedBenchRow& r) {
  return {{"pp_ns", pp_ns},          {"tg_ns", tg_ns},
          {"t_pp_s", mean_s(pp_ns)}, {"s_pp", rate(static_cast<double>(r.pl) * r.pp, mean_s(pp_ns))},
          {"t_tg_s", mean_s(tg_ns)}, {"s_tg", rate(static_cast<double>(r.pl) * r.tg, mean_s(tg_ns))}};
}

}  // namespace

std::string batched_bench_header(bool compare) {
  std::string h =
      "|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |";
  std::string sep =
      "|-------|--------|------|--------|----------|----------|----------|----------|----------|----------|";
  if (compare) {
    h += " libllama S_PP | ratio | libllama S_TG | ratio |";
    sep += "--------------|-------|---------------|-------|";
  }
  return h + "\n" + sep;
}

std::string batched_bench_row(const BatchedBenchRow& r, bool compare) {
  const double tpp = mean_s(r.pp_ns), ttg = mean_s(r.tg_ns);
  const double spp = rate(static_cast<double>(r.pl) * r.pp, tpp), stg = rate(static_cast<double>(r.pl) * r.tg, ttg);
  char buf[256];
  std::snprintf(buf, sizeof buf, "| %5d | %6d | %4d | %6lld | %8.3f | %8.2f | %8.3f | %8.2f | %8.3f | %8.2f |", r.pp,
                r.tg, r.pl, static_cast<long long>(r.n_kv), tpp, spp, ttg, stg, tpp + ttg,
                rate(static_cast<double>(r.n_kv), tpp + ttg));
  std::string s = buf;
  if (compare) {
    const double rpp = rate(static_cast<double>(r.pl) * r.pp, mean_s(r.ref_pp_ns));
    const double rtg = rate(static_cast<double>(r.pl) * r.tg, mean_s(r.ref_tg_ns));
    std::snprintf(buf, sizeof buf, " %12.2f | %5.2f | %13.2f | %5.2f |", rpp, rpp > 0 ? spp / rpp : 0, rtg,
                  rtg > 0 ? stg / rtg : 0);
    s += buf;
  }
  return s;
}

nlohmann::json run_batched_bench(const BatchedBenchOptions& o, const std::string& command,
                                 const std::string& strix_version,
                                 const std::function<void(const BatchedBenchRow&)>& on_row) {
  if (o.model.empty()) throw Error("batched-bench: -m FILE is required");
  if (o.n_pp.empty() || o.n_tg.empty() || o.n_pl.empty()) throw Error("batched-bench: -npp, -ntg and -npl need values");
  for (int v : o.n_pp) {
    if (v < 1) throw Error("batched-bench: -npp values must be >= 1");
  }
  for (int v : o.n_tg) {
    if (v < 0) throw Error("batched-bench: -ntg values must be >= 0");
  }
  for (int v : o.n_pl) {
    if (v < 1 || v > 256) throw Error("batched-bench: -npl values must be in [1, 256]");
  }
  if (o.reps < 1 || o.n_batch < 1 || o.n_ubatch < 1 || o.n_kv_max < 0) {
    throw Error("batched-bench: -r, -b and -ub must be >= 1 and -c >= 0");
  }
  const int n_threads =
      o.n_threads > 0 ? o.n_threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));

  // the tests, in llama-batched-bench's order (pp, then tg, then pl), that fit in -c
  std::vector<BatchedBenchRow> tests;
  int64_t kv_cells = 0, kv_seq = 0;
  int pl_max = 1;
  for (int pp : o.n_pp) {
    for (int tg : o.n_tg) {
      for (int pl : o.n_pl) {
        const int64_t n_kv = static_cast<int64_t>(pl) * (pp + tg);
        if (o.n_kv_max > 0 && n_kv > o.n_kv_max) continue;  // as llama-batched-bench: skipped
        tests.push_back({.pp = pp, .tg = tg, .pl = pl, .n_kv = n_kv});
        kv_cells = std::max(kv_cells, bench_cache_cells(pl, pp + tg));
        kv_seq = std::max<int64_t>(kv_seq, pp + tg);
        pl_max = std::max(pl_max, pl);
      }
    }
  }
  if (tests.empty()) throw Error("batched-bench: no test fits in -c " + std::to_string(o.n_kv_max) + " cells");

  const bool offload = o.ngl != "0";
  set_weight_memory(o.mmap == 1 || (o.mmap < 0 && offload) ? WeightMemory::kMap
                    : o.mmap == 0                          ? WeightMemory::kCopy
                                                           : WeightMemory::kAuto);
  auto model = Model::load(o.model);
  const Offload layers = cuda::parse_ngl(o.ngl, model->hparams().n_layer);
  const bool on_gpu = layers.on_gpu();
  if (on_gpu) {
    if (o.compare) {
      throw Refusal("batched-bench: --compare runs libllama on the CPU; it is not offered with -ngl " + o.ngl);
    }
    cuda::check_model(*model);
  }
  if (o.compare) ref::use_libggml_cpu_pick();
  const int64_t n_vocab = model->hparams().n_vocab;

  std::unique_ptr<Side> strix_side;
  ContextOptions co;
  co.n_ubatch = o.n_ubatch;
  co.n_threads = n_threads;
  co.n_seq_max = pl_max;
  co.n_ctx = kv_cells;  // one paged cache shared by the sequences
  strix_side = std::make_unique<StrixSide>(*model, co, layers);
  std::unique_ptr<ref::LlamaModel> rmodel;
  std::unique_ptr<RefSide> ref_side;
  if (o.compare) {
    rmodel = std::make_unique<ref::LlamaModel>(o.model);
    if (rmodel->n_vocab() != n_vocab) throw Error("batched-bench: Strix and libllama read different vocabulary sizes");
    // libllama's default cache: one n_ctx / n_seq_max slice per sequence
    const int64_t slice = (kv_seq + 255) / 256 * 256;
    ref_side =
        std::make_unique<RefSide>(*rmodel, ref::LlamaContext::Options{.n_ctx = static_cast<uint32_t>(slice * pl_max),
                                                                      .n_batch = static_cast<uint32_t>(o.n_batch),
                                                                      .n_ubatch = static_cast<uint32_t>(o.n_ubatch),
                                                                      .n_seq_max = static_cast<uint32_t>(pl_max),
                                                                      .n_threads = n_threads,
                                                                      .flash_attn = 0});
  }

  // warmup: one short batch on each side
  timed(*strix_side, std::min(16, tests.front().pp), 1, 1, o.n_batch, n_vocab, o.seed ^ 0x5741524dull);
  if (ref_side) timed(*ref_side, std::min(16, tests.front().pp), 1, 1, o.n_batch, n_vocab, o.seed ^ 0x5741524dull);

  nlohmann::json rows = nlohmann::json::array();
  uint64_t index = 0;
  for (BatchedBenchRow& r : tests) {
    ++index;
    for (int rep = 0; rep < o.reps; ++rep) {
      const uint64_t seed = (o.seed * 1000003ull + index) * 7919ull + static_cast<uint64_t>(rep);
      const bool strix_first = rep % 2 == 0;
      for (int k = 0; k < (ref_side ? 2 : 1); ++k) {
        if (ref_side) pause_for(o.pause_s);
        if (!ref_side || (k == 0) == strix_first) {
          const Times t = timed(*strix_side, r.pp, r.tg, r.pl, o.n_batch, n_vocab, seed);
          r.pp_ns.push_back(t.pp);
          r.tg_ns.push_back(t.tg);
        } else {
          const Times t = timed(*ref_side, r.pp, r.tg, r.pl, o.n_batch, n_vocab, seed);
          r.ref_pp_ns.push_back(t.pp);
          r.ref_tg_ns.push_back(t.tg);
        }
      }
    }
    if (on_row) on_row(r);
    nlohmann::json row = {
        {"pp", r.pp}, {"tg", r.tg}, {"b", r.pl}, {"n_kv", r.n_kv}, {"strix", side_json(r.pp_ns, r.tg_ns, r)}};
    if (ref_side) {
      row["libllama"] = side_json(r.ref_pp_ns, r.ref_tg_ns, r);
      const double spp = row["strix"]["s_pp"], stg = row["strix"]["s_tg"];
      const double rpp = row["libllama"]["s_pp"], rtg = row["libllama"]["s_tg"];
      row["ratio_pp"] = rpp > 0 ? spp / rpp : 0;
      row["ratio_tg"] = rtg > 0 ? stg / rtg : 0;
    }
    rows.push_back(row);
  }

  BenchGpu gpu;
  if (on_gpu) gpu = bench_gpu_info();
  return {{"tool", "strix batched-bench"},
          {"command", command},
          {"timestamp", bench_utc_now()},
          {"host", bench_host_json(o.compare, on_gpu ? &gpu : nullptr)},
          {"build", bench_build_json(strix_version)},
          {"model",
           {{"path", o.model},
            {"n_params", model->n_params()},
            {"size_bytes", model->n_bytes()},
            {"arch", model->file().architecture()}}},
          {"options",
           {{"n_threads", n_threads},
            {"n_batch", o.n_batch},
            {"n_ubatch", o.n_ubatch},
            {"n_kv_max", o.n_kv_max},
            {"reps", o.reps},
            {"backend", on_gpu ? "CUDA" : "CPU"},
            {"n_gpu_layers", layers.n_gpu},
            {"compare", o.compare},
            {"seed", o.seed}}},
          {"rows", rows}};
}

}  // namespace strix
