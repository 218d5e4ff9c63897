#include "tools/bench_serve.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>

#include "backend/cuda/cuda_context.h"
#include "core/error.h"
#include "core/mmap.h"
#include "models/model.h"
#include "ref/libllama.h"
#include "runtime/context.h"
#include "runtime/offload.h"
#include "sampling/sampler.h"
#include "server/engine.h"
#include "tokenizer/tokenizer.h"
#include "tools/bench.h"
#include "tools/parity.h"

namespace strix {

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

json samples(const std::vector<double>& v) { return {{"samples", v}, {"mean", mean(v)}}; }

struct Loaded {
  std::unique_ptr<Model> model;
  std::unique_ptr<tok::Tokenizer> tk;
  std::unique_ptr<ref::LlamaModel> ref;
  int32_t bos = -1;
  int64_t n_vocab = 0;
  Offload offload;  // the engine's context on the CPU, the CUDA backend or both (-ngl)
};

std::unique_ptr<BatchContext> make_context(const Loaded& m, const BenchServeOptions& o, int64_t cells, int n_seq) {
  const ContextOptions co{.n_ctx = cells, .n_ubatch = o.n_ubatch, .n_threads = o.n_threads, .n_seq_max = n_seq};
  return strix::make_context(*m.model, co, m.offload);
}

std::vector<int32_t> random_ids(const Loaded& m, int n, uint64_t seed, bool with_bos) {
  std::vector<int32_t> ids = parity_tokens(m.n_vocab, with_bos ? m.bos : -1, n, seed);
  return ids;
}

server::GenRequest request(const Loaded& m, std::vector<int32_t> prompt, int n_gen, bool cache) {
  server::GenRequest r;
  r.prompt = std::move(prompt);
  sampling::Params p;
  p.temp = 0.0f;
  p.ignore_eos = true;
  r.sampler = std::make_unique<sampling::Sampler>(p, *m.tk, 1 << 20);
  r.n_predict = n_gen;
  r.cache_prompt = cache;
  return r;
}

// Waits until every stream has its final event, asleep between the engine's
// pushes (a polling loop would take CPU from the engine on a small machine).
void drain(const std::vector<std::shared_ptr<server::GenStream>>& streams, std::vector<server::GenEvent>* finals) {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t pushes = 0;
  for (const auto& st : streams) {
    st->set_notify([&] {
      {
        std::lock_guard<std::mutex> lock(mu);
        ++pushes;
      }
      cv.notify_one();
    });
  }
  struct Unhook {  // the callbacks refer to this frame
    const std::vector<std::shared_ptr<server::GenStream>>& streams;
    ~Unhook() {
      for (const auto& st : streams) st->set_notify(nullptr);
    }
  } unhook{streams};
  std::vector<bool> done(streams.size(), false);
  size_t n_done = 0;
  uint64_t seen = 0;
  while (n_done < streams.size()) {
    for (size_t i = 0; i < streams.size(); ++i) {
      if (done[i]) continue;
      for (server::GenEvent& e : streams[i]->take()) {
        if (!e.done) continue;
        if (e.finish == server::Finish::kError) throw Error("bench-serve: a request failed: " + e.error);
        done[i] = true;
        ++n_done;
        if (finals) (*finals)[i] = e;
      }
    }
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return pushes != seen; });
    seen = pushes;
  }
}

// Strix: aggregate decode t/s of n streams through the Engine.
double strix_decode(const Loaded& m, const BenchServeOptions& o, int n, uint64_t seed) {
  // room for every stream in whole cache blocks: no stream is ever preempted
  const int64_t cells = bench_cache_cells(n, o.n_prompt + o.n_gen + 1);
  const auto ctx = make_context(m, o, cells, n);
  server::Engine engine(*ctx, *m.tk, {.n_parallel = n, .n_batch = std::max(o.n_batch, n)});
  std::vector<server::GenRequest> reqs;
  for (int i = 0; i < n; ++i) reqs.push_back(request(m, random_ids(m, o.n_prompt, seed + i, true), o.n_gen, false));
  const std::vector<std::shared_ptr<server::GenStream>> streams = engine.submit_all(std::move(reqs));
  // The clock starts when every prompt is in (each stream has sampled its
  // first token then); the streams admitted first may be some tokens ahead,
  // so the count is of the tokens sampled after that moment.
  const uint64_t all_prompts = static_cast<uint64_t>(n) * static_cast<uint64_t>(o.n_prompt);
  uint64_t before = 0;
  for (;;) {
    const server::Engine::Metrics mt = engine.metrics();
    if (mt.prompt_tokens + mt.prefix_hit_tokens >= all_prompts) {
      before = mt.predicted_tokens;
      break;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  const Clock::time_point t0 = Clock::now();
  drain(streams, nullptr);
  const double s = seconds_since(t0);
  if (engine.metrics().preemptions > 0) throw Error("bench-serve: a stream was preempted (the cache is too small)");
  return static_cast<double>(static_cast<uint64_t>(n) * static_cast<uint64_t>(o.n_gen) - before) / s;
}

int32_t argmax(std::span<const float> l) {
  return static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
}

// libllama: the same load, one llama_decode per step over all sequences.
double ref_decode(const Loaded& m, const BenchServeOptions& o, int n, uint64_t seed) {
  const uint32_t per = static_cast<uint32_t>(o.n_prompt + o.n_gen + 1);
  ref::LlamaContext ctx(
      *m.ref, {.n_ctx = per * static_cast<uint32_t>(n) + 256,
               .n_batch = static_cast<uint32_t>(std::max(o.n_batch, n * o.n_prompt)),
               .n_ubatch = static_cast<uint32_t>(o.n_ubatch),
               .n_seq_max = static_cast<uint32_t>(n),
               .n_threads = o.n_threads > 0 ? o.n_threads : static_cast<int32_t>(std::thread::hardware_concurrency())});
  std::vector<int32_t> tok, pos, seq;
  std::vector<uint8_t> want;
  for (int i = 0; i < n; ++i) {
    const auto ids = random_ids(m, o.n_prompt, seed + i, true);
    for (size_t j = 0; j < ids.size(); ++j) {
      tok.push_back(ids[j]);
      pos.push_back(static_cast<int32_t>(j));
      seq.push_back(i);
      want.push_back(j + 1 == ids.size());
    }
  }
  ctx.decode(tok, pos, seq, want);
  std::vector<int32_t> next(n), p(n, o.n_prompt);
  for (int i = 0; i < n; ++i) next[i] = argmax(ctx.logits(static_cast<int32_t>((i + 1) * o.n_prompt - 1)));
  const Clock::time_point t0 = Clock::now();
  std::vector<int32_t> s(n);
  for (int i = 0; i < n; ++i) s[i] = i;
  for (int step = 1; step < o.n_gen; ++step) {
    ctx.decode(next, p, s, std::vector<uint8_t>(n, 1));
    for (int i = 0; i < n; ++i) {
      next[i] = argmax(ctx.logits(i));
      ++p[i];
    }
  }
  const double secs = seconds_since(t0);
  return static_cast<double>(n) * (o.n_gen - 1) / secs;
}

struct Ttft {
  double first = 0, second = 0;
  int32_t n_cached = 0, n_prompt = 0;
};

// Strix: TTFT of two requests sharing a system prompt, one after the other.
Ttft strix_ttft(const Loaded& m, const BenchServeOptions& o, uint64_t seed) {
  const int64_t cells = bench_cache_cells(2, o.n_system + o.n_suffix + 2);
  const auto ctx = make_context(m, o, cells, 2);
  server::Engine engine(*ctx, *m.tk, {.n_parallel = 2, .n_batch = o.n_batch});
  const auto system = random_ids(m, o.n_system, seed, true);
  Ttft t;
  for (int k = 0; k < 2; ++k) {
    auto prompt = system;
    for (int32_t id : random_ids(m, o.n_suffix, seed + 100 + k, false)) prompt.push_back(id);
    t.n_prompt = static_cast<int32_t>(prompt.size());
    const Clock::time_point t0 = Clock::now();
    std::vector<server::GenEvent> fin(1);
    drain({engine.submit(request(m, prompt, 1, true))}, &fin);  // one token: done = first token
    (k == 0 ? t.first : t.second) = seconds_since(t0);
    if (k == 1) t.n_cached = fin[0].n_cached;
  }
  return t;
}

// libllama: the system prompt stays in the sequence; the second request decodes its suffix only.
Ttft ref_ttft(const Loaded& m, const BenchServeOptions& o, uint64_t seed) {
  const uint32_t per = static_cast<uint32_t>(o.n_system + o.n_suffix + 2);
  ref::LlamaContext ctx(
      *m.ref, {.n_ctx = per + 256,
               .n_batch = static_cast<uint32_t>(o.n_batch),
               .n_ubatch = static_cast<uint32_t>(o.n_ubatch),
               .n_seq_max = 1,
               .n_threads = o.n_threads > 0 ? o.n_threads : static_cast<int32_t>(std::thread::hardware_concurrency())});
  const auto system = random_ids(m, o.n_system, seed, true);
  Ttft t;
  for (int k = 0; k < 2; ++k) {
    auto prompt = system;
    for (int32_t id : random_ids(m, o.n_suffix, seed + 100 + k, false)) prompt.push_back(id);
    const Clock::time_point t0 = Clock::now();
    if (k == 0) {
      ctx.decode_seq(prompt, 0);
      argmax(ctx.logits(-1));
      t.first = seconds_since(t0);
    } else {
      ctx.remove(0, o.n_system, -1);
      const std::vector<int32_t> suffix(prompt.begin() + o.n_system, prompt.end());
      ctx.decode_seq(suffix, o.n_system);
      argmax(ctx.logits(-1));
      t.second = seconds_since(t0);
      t.n_cached = o.n_system;
    }
    t.n_prompt = static_cast<int32_t>(prompt.size());
  }
  return t;
}

}  // namespace

json run_bench_serve(const BenchServeOptions& o, const std::string& command, const std::string& strix_version) {
  if (o.model.empty()) throw Error("bench-serve: -m FILE is required");
  if (o.n_prompt < 1 || o.n_gen < 2 || o.n_system < 1 || o.n_suffix < 1 || o.reps < 1) {
    throw Error("bench-serve: --n-prompt, --n-system, --n-suffix and -r must be >= 1, --n-gen >= 2");
  }
  for (int n : o.streams) {
    if (n < 1 || n > 256) throw Error("bench-serve: stream counts must be in [1, 256], got " + std::to_string(n));
  }
  Loaded m;
  // the weights as `strix serve` holds them by default (copied into huge pages when they fit; mapped
  // when they go to the GPU)
  set_weight_memory(o.ngl != "0" ? WeightMemory::kMap : WeightMemory::kAuto);
  m.model = Model::load(o.model);
  m.offload = cuda::parse_ngl(o.ngl, m.model->hparams().n_layer);
  if (m.offload.on_gpu()) {
    cuda::check_model(*m.model);
    if (o.compare) {
      throw Refusal("bench-serve: the libllama side runs on the CPU; with -ngl " + o.ngl + " use --no-compare");
    }
  }
  m.tk = std::make_unique<tok::Tokenizer>(tok::Vocab::load(m.model->file()));
  m.n_vocab = m.model->hparams().n_vocab;
  if (o.compare) {
    ref::use_libggml_cpu_pick();
    m.ref = std::make_unique<ref::LlamaModel>(o.model);
    m.bos = m.ref->add_bos() ? m.ref->bos() : -1;
  } else {
    const auto& v = m.tk->vocab();
    m.bos = v.bos != tok::kNoToken ? v.bos : -1;
  }
  {
    // warmup, as strix bench does: one short untimed run of each side (the first pass over freshly
    // loaded weights is slower)
    BenchServeOptions w = o;
    w.n_gen = 8;
    strix_decode(m, w, 1, o.seed ^ 0x5741524dull);
    if (o.compare) ref_decode(m, w, 1, o.seed ^ 0x5741524dull);
  }
  json rows = json::array();
  for (int n : o.streams) {
    std::vector<double> ours, theirs;
    for (int r = 0; r < o.reps; ++r) {
      // alternate the order per repetition so that drift hits both sides
      const uint64_t seed = o.seed + 1000 * r;
      if (o.compare && r % 2 == 1) theirs.push_back(ref_decode(m, o, n, seed));
      ours.push_back(strix_decode(m, o, n, seed));
      if (o.compare && r % 2 == 0) theirs.push_back(ref_decode(m, o, n, seed));
    }
    json row = {{"test", "decode @ c" + std::to_string(n)},
                {"streams", n},
                {"n_prompt", o.n_prompt},
                {"n_gen", o.n_gen},
                {"strix_ts", samples(ours)}};
    if (o.compare) {
      row["libllama_ts"] = samples(theirs);
      row["ratio"] = mean(theirs) > 0 ? mean(ours) / mean(theirs) : 0.0;
    }
    std::fprintf(stderr, "bench-serve: decode @ c%d: strix %.1f t/s%s\n", n, mean(ours),
                 o.compare ? (", libllama " + std::to_string(mean(theirs)) + " t/s").c_str() : "");
    rows.push_back(std::move(row));
  }
  std::vector<double> t1, t2, c_frac, r1, r2;
  int32_t n_cached = 0, n_prompt = 0;
  for (int r = 0; r < o.reps; ++r) {
    const Ttft t = strix_ttft(m, o, o.seed + 7 + r);
    t1.push_back(t.first * 1e3);
    t2.push_back(t.second * 1e3);
    n_cached = t.n_cached;
    n_prompt = t.n_prompt;
    c_frac.push_back(static_cast<double>(t.n_cached) / t.n_prompt);
    if (o.compare) {
      const Ttft u = ref_ttft(m, o, o.seed + 7 + r);
      r1.push_back(u.first * 1e3);
      r2.push_back(u.second * 1e3);
    }
  }
  const double speedup = mean(t2) > 0 ? mean(t1) / mean(t2) : 0;
  json prefix = {
      {"test", "shared prefix ttft"},
      {"n_system", o.n_system},
      {"n_suffix", o.n_suffix},
      {"n_prompt", n_prompt},
      {"strix_ttft_first_ms", samples(t1)},
      {"strix_ttft_second_ms", samples(t2)},
      {"strix_speedup", speedup},
      {"strix_n_cached", n_cached},
      {"strix_cached_fraction", mean(c_frac)},
      {"bar", {{"speedup_min", 2.0}, {"cached_fraction_min", 0.9}, {"pass", speedup >= 2.0 && mean(c_frac) >= 0.9}}}};
  if (o.compare) {
    prefix["libllama_ttft_first_ms"] = samples(r1);
    prefix["libllama_ttft_second_ms"] = samples(r2);
    prefix["ratio_second"] = mean(t2) > 0 ? mean(r2) / mean(t2) : 0.0;  // > 1: Strix's second request is faster
  }
  std::fprintf(stderr, "bench-serve: shared prefix: first %.2f ms, second %.2f ms (%.1fx), %d of %d cached\n", mean(t1),
               mean(t2), speedup, n_cached, n_prompt);
  return {{"tool", "strix bench-serve"},
          {"command", command},
          {"time", bench_utc_now()},
          {"host", bench_host_json(o.compare)},
          {"build", bench_build_json(strix_version)},
          {"options",
           {{"model", o.model},
            {"n_threads", o.n_threads},
            {"n_batch", o.n_batch},
            {"n_ubatch", o.n_ubatch},
            {"reps", o.reps},
            {"compare", o.compare},
            {"ngl", o.ngl},
            {"backend", m.offload.on_gpu() ? "CUDA" : "CPU"},
            {"n_gpu_layers", m.offload.n_gpu},
            {"gpu", m.offload.on_gpu() ? cuda::gpu_info(false).name : ""},
            {"seed", o.seed},
            {"kv_type", "f16"}}},
          {"results", rows},
          {"shared_prefix", prefix}};
}

}  // namespace strix
