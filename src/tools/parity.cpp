#include "tools/parity.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>

#include "backend/cuda/cuda_context.h"
#include "core/error.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "models/model.h"
#include "ref/libllama.h"
#include "runtime/context.h"
#include "runtime/offload.h"
#include "tokenizer/tokenizer.h"

namespace strix {

double kl_divergence(const float* ref, const float* ours, int64_t n) {
  double mr = -INFINITY, mo = -INFINITY;
  for (int64_t i = 0; i < n; ++i) {
    mr = std::max(mr, static_cast<double>(ref[i]));
    mo = std::max(mo, static_cast<double>(ours[i]));
  }
  double sr = 0, so = 0;
  for (int64_t i = 0; i < n; ++i) {
    sr += std::exp(ref[i] - mr);
    so += std::exp(ours[i] - mo);
  }
  const double lr = mr + std::log(sr), lo = mo + std::log(so);
  double kl = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double lp = ref[i] - lr, lq = ours[i] - lo;
    kl += std::exp(lp) * (lp - lq);
  }
  return std::max(0.0, kl);
}

std::vector<int32_t> parity_tokens(int64_t n_vocab, int32_t bos, int n, uint64_t seed) {
  std::vector<int32_t> ids;
  ids.reserve(n);
  if (bos >= 0 && n > 0) ids.push_back(bos);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 12345;
  while (static_cast<int>(ids.size()) < n) {
    x += 0x9E3779B97F4A7C15ull;
    uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    ids.push_back(static_cast<int32_t>(z % static_cast<uint64_t>(n_vocab)));
  }
  return ids;
}

std::string ParityReport::summary() const {
  char buf[512];
  if (backend == "cuda") {
    std::snprintf(buf, sizeof buf,
                  "%-7s %4d positions, weights %-6s [cuda%s%s] mean KL %.2e (bar %.0e)  max KL %.2e  at %d:%d  "
                  "max |dlogit| %.3g  top-1 %d/%d = %.2f%% (bar 99.5%%) -> %s",
                  mode.c_str(), n_positions, weight_types.c_str(), gpu_layers.empty() ? "" : " -ngl ",
                  gpu_layers.c_str(), mean_kl, cuda_mean_kl_bar(), max_kl, worst_seq, worst_pos, max_abs_dlogit,
                  top1_agree, n_positions, 100 * top1_rate(), cuda_pass() ? "PASS" : "FAIL");
    return buf;
  }
  std::snprintf(buf, sizeof buf,
                "%-7s %4d positions, weights %-6s mean KL %.2e (limit %.1e)  max KL %.2e (limit %.1e)  "
                "at %d:%d  max |dlogit| %.3g  top-1 %d/%d  [libllama's own prefill-vs-decode: mean %.1e max %.1e "
                "top-1 miss %.2f%%] -> %s",
                mode.c_str(), n_positions, weight_types.c_str(), mean_kl, mean_kl_limit(), max_kl, max_kl_limit(),
                worst_seq, worst_pos, max_abs_dlogit, top1_agree, n_positions, floor_mean_kl, floor_max_kl,
                100 * floor_top1_miss_rate, pass() ? "PASS" : "FAIL");
  return buf;
}

namespace {

// One batch of the plan: which (sequence, index) tokens go together.
struct PlanTok {
  int seq;
  int idx;  // position in that sequence
};

std::vector<std::vector<PlanTok>> make_plan(const std::string& mode, int n_seq, int per_seq, int n_ubatch) {
  std::vector<std::vector<PlanTok>> plan;
  if (mode == "prefill") {
    for (int i = 0; i < per_seq; i += n_ubatch) {
      std::vector<PlanTok> b;
      for (int j = i; j < std::min(per_seq, i + n_ubatch); ++j) b.push_back({0, j});
      plan.push_back(std::move(b));
    }
  } else if (mode == "decode") {
    for (int i = 0; i < per_seq; ++i) plan.push_back({{0, i}});
  } else if (mode == "mixed") {
    // Sequence s joins at step s, so each batch holds sequences at different
    // positions (a prompt next to decoding streams). Every sequence in a batch
    // advances by the same chunk: libllama (non-unified KV, one stream per
    // sequence) splits a batch into micro-batches of equal per-sequence counts,
    // and the count decides its matmul path (tinyBLAS for >= 2 tokens,
    // vec_dot for 1), so equal chunks keep both sides on the same path.
    std::vector<int> at(n_seq, 0);
    int step = 0;
    for (bool more = true; more; ++step) {
      more = false;
      std::vector<PlanTok> b;
      int chunk = (step % 4 == 0) ? 8 : (step % 3 == 0 ? 5 : 1);
      for (int s = 0; s < n_seq; ++s) {
        if (step >= s && at[s] < per_seq) chunk = std::min(chunk, per_seq - at[s]);  // equal counts to the end
      }
      for (int s = 0; s < n_seq; ++s) {
        if (step >= s) {
          for (int c = 0; c < chunk && at[s] < per_seq; ++c) b.push_back({s, at[s]++});
        }
        if (at[s] < per_seq) more = true;
      }
      if (!b.empty()) plan.push_back(std::move(b));
    }
  } else {
    throw Error("parity: unknown mode '" + mode + "' (prefill, decode, mixed)");
  }
  return plan;
}

std::string main_weight_type(const Model& m, double& bar, std::vector<std::string>& all) {
  std::map<std::string, uint64_t> count;
  bool all_exact = true;
  for (const Weight& w : m.weights()) {
    if (w.ne[1] <= 1) continue;  // vectors
    const std::string name = type_name(static_cast<uint32_t>(w.type));
    count[name] += static_cast<uint64_t>(w.ne[0] * w.ne[1] * w.ne[2]);
    if (w.type != GgmlType::F32 && w.type != GgmlType::F16 && w.type != GgmlType::Q8_0) all_exact = false;
  }
  bar = all_exact ? 1e-6 : 1e-4;
  for (const auto& [k, v] : count) all.push_back(k);
  std::string best;
  uint64_t n = 0;
  for (const auto& [k, v] : count) {
    if (v > n) {
      n = v;
      best = k;
    }
  }
  return best;
}

}  // namespace

ParityReport run_parity(const std::string& path, const ParityOptions& o) {
  auto model = Model::load(o.strix_path.empty() ? path : o.strix_path);
  const Hparams& hp = model->hparams();
  ref::LlamaModel rmodel(path);
  if (rmodel.n_vocab() != hp.n_vocab) throw Error("parity: vocabulary sizes differ");
  const int n_seq = o.mode == "mixed" ? o.n_seq : 1;
  const int per_seq = o.n_tokens;

  ParityReport rep;
  rep.mode = o.mode;
  rep.weight_types = main_weight_type(*model, rep.kl_bar, rep.all_weight_types);

  ContextOptions co;
  co.n_ctx = static_cast<int64_t>(per_seq) * n_seq + 64;
  co.n_ubatch = o.n_ubatch;
  co.n_threads = o.n_threads;
  co.n_seq_max = n_seq;
  co.exact_numerics = o.exact;
  // Strix's side: the CPU Context, the CUDA one with -ngl 99, or both with a partial count
  const Offload offload = cuda::parse_ngl(o.ngl, hp.n_layer);
  if (offload.on_gpu()) rep.backend = "cuda";
  if (offload.partial()) rep.gpu_layers = std::to_string(offload.n_gpu) + "/" + std::to_string(hp.n_layer + 1);
  const std::unique_ptr<BatchContext> strix_ctx = make_context(*model, co, offload);
  auto strix_decode = [&](std::span<const int32_t> t, std::span<const int32_t> p, std::span<const int32_t> s,
                          std::span<const uint8_t> w) { strix_ctx->decode(t, p, s, w); };
  auto strix_logits = [&](int32_t i) { return strix_ctx->logits(i); };
  ref::LlamaContext rctx(rmodel, {.n_ctx = static_cast<uint32_t>(co.n_ctx),
                                  .n_batch = static_cast<uint32_t>(std::max(per_seq * n_seq, 1)),
                                  .n_ubatch = static_cast<uint32_t>(o.n_ubatch),
                                  .n_seq_max = static_cast<uint32_t>(n_seq),
                                  .n_threads = 1});

  std::vector<std::vector<int32_t>> ids(n_seq);
  for (int s = 0; s < n_seq; ++s)
    ids[s] = parity_tokens(hp.n_vocab, rmodel.add_bos() ? rmodel.bos() : -1, per_seq, o.seed + s);

  const auto plan = make_plan(o.mode, n_seq, per_seq, o.n_ubatch);
  std::vector<int32_t> tok, pos, seq;
  std::vector<uint8_t> want;
  double kl_sum = 0;
  for (const auto& batch : plan) {
    tok.clear();
    pos.clear();
    seq.clear();
    for (const PlanTok& t : batch) {
      tok.push_back(ids[t.seq][t.idx]);
      pos.push_back(t.idx);
      seq.push_back(t.seq);
    }
    want.assign(tok.size(), 1);
    rctx.decode(tok, pos, seq, want);
    strix_decode(tok, pos, seq, want);
    for (size_t i = 0; i < tok.size(); ++i) {
      const auto r = rctx.logits(static_cast<int32_t>(i));
      const auto s = strix_logits(static_cast<int32_t>(i));
      const double kl = kl_divergence(r.data(), s.data(), hp.n_vocab);
      kl_sum += kl;
      if (o.trace && kl != 0)
        std::fprintf(stderr, "  trace: seq %d pos %d batch of %zu: KL %.3e\n", seq[i], pos[i], tok.size(), kl);
      if (kl > rep.max_kl) {
        rep.max_kl = kl;
        rep.worst_seq = seq[i];
        rep.worst_pos = pos[i];
      }
      int64_t ar = 0, as = 0;
      for (int64_t v = 0; v < hp.n_vocab; ++v) {
        rep.max_abs_dlogit = std::max(rep.max_abs_dlogit, static_cast<double>(std::fabs(r[v] - s[v])));
        if (r[v] > r[ar]) ar = v;
        if (s[v] > s[as]) as = v;
      }
      rep.top1_agree += (ar == as);
      ++rep.n_positions;
    }
  }
  rep.mean_kl = rep.n_positions ? kl_sum / rep.n_positions : 0;

  // the reference's own noise floor on sequence 0's tokens
  {
    ref::LlamaContext a(rmodel, {.n_ctx = static_cast<uint32_t>(per_seq + 64),
                                 .n_batch = static_cast<uint32_t>(per_seq),
                                 .n_ubatch = static_cast<uint32_t>(o.n_ubatch),
                                 .n_threads = 1});
    ref::LlamaContext b(rmodel,
                        {.n_ctx = static_cast<uint32_t>(per_seq + 64), .n_batch = 1, .n_ubatch = 1, .n_threads = 1});
    std::vector<int32_t> p(per_seq), sq(per_seq, 0);
    for (int i = 0; i < per_seq; ++i) p[i] = i;
    want.assign(per_seq, 1);
    a.decode(ids[0], p, sq, want);
    double fsum = 0;
    int miss = 0;
    for (int i = 0; i < per_seq; ++i) {
      b.decode(std::span(&ids[0][i], 1), std::span(&p[i], 1), std::span(&sq[i], 1), std::span(&want[i], 1));
      const auto r = a.logits(i), d = b.logits(0);
      const double kl = kl_divergence(r.data(), d.data(), hp.n_vocab);
      fsum += kl;
      rep.floor_max_kl = std::max(rep.floor_max_kl, kl);
      miss += std::max_element(r.begin(), r.end()) - r.begin() != std::max_element(d.begin(), d.end()) - d.begin();
    }
    rep.floor_mean_kl = fsum / per_seq;
    rep.floor_top1_miss_rate = static_cast<double>(miss) / per_seq;
  }
  return rep;
}

GreedyReport run_greedy(const std::string& path, int n_gen, const ParityOptions& o) {
  auto model = Model::load(o.strix_path.empty() ? path : o.strix_path);
  ref::LlamaModel rm(path);
  const uint32_t n_ctx = static_cast<uint32_t>(n_gen + 8);
  ref::LlamaContext rc(rm, {.n_ctx = n_ctx, .n_batch = n_ctx, .n_ubatch = n_ctx, .n_threads = 1});
  ContextOptions co;
  co.n_ctx = n_ctx;
  co.n_threads = o.n_threads;
  co.exact_numerics = o.exact;
  GreedyReport g;
  const Offload offload = cuda::parse_ngl(o.ngl, model->hparams().n_layer);
  if (offload.on_gpu()) g.backend = "cuda";
  const std::unique_ptr<BatchContext> ctx = make_context(*model, co, offload);
  auto argmax = [](std::span<const float> l) {
    return static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
  };
  std::vector<int32_t> ref_ids{rm.bos()}, our_ids{rm.bos()};
  rc.decode_seq(ref_ids, 0);
  ctx->decode_seq(our_ids);
  for (int i = 0; i < n_gen; ++i) {
    const int32_t rt = argmax(rc.logits(-1));
    const int32_t st = argmax(ctx->logits(-1));
    g.ref.push_back(rt);
    g.ours.push_back(st);
    if (rt != st && g.first_diff < 0) g.first_diff = i;
    ref_ids.push_back(rt);
    our_ids.push_back(st);
    if (i + 1 == n_gen) break;
    rc.decode_seq(std::vector<int32_t>{rt}, static_cast<int32_t>(ref_ids.size() - 1));
    ctx->decode_seq(std::vector<int32_t>{st});
  }
  g.text = rm.detokenize(ref_ids, true, false);
  return g;
}

void write_variant(const std::string& src, const std::string& dst, const VariantEdit& edit) {
  auto f = GgufFile::open(src);
  GgufWriter w;
  w.set_alignment(static_cast<uint32_t>(f->alignment()));
  for (const GgufKV& kv : f->kvs()) {
    if (kv.key == "general.alignment") continue;
    w.set(kv.key, kv.value);
  }
  for (const auto& [k, v] : edit.set_f32) w.set_f32(k, static_cast<float>(v));
  for (const auto& [k, v] : edit.set_u32) w.set_u32(k, static_cast<uint32_t>(v));
  for (const auto& [k, v] : edit.set_str) w.set_str(k, v);
  for (const std::string& k : edit.remove) w.remove(k);
  std::vector<std::vector<float>> scaled;  // keeps scaled copies alive until write
  scaled.reserve(edit.scale_tensor.size());
  for (const GgufTensor& t : f->tensors()) {
    std::vector<int64_t> ne(t.ne, t.ne + t.n_dims);
    const auto it = std::find_if(edit.scale_tensor.begin(), edit.scale_tensor.end(),
                                 [&](const auto& e) { return e.first == t.name; });
    if (it != edit.scale_tensor.end()) {
      if (t.type != 0) throw Error("write_variant: " + t.name + " is not F32");
      const auto* src_f = reinterpret_cast<const float*>(t.data);
      scaled.emplace_back(src_f, src_f + t.n_elements());
      for (float& x : scaled.back()) x *= it->second;
      w.add_tensor(t.name, t.type, ne, scaled.back().data(), t.nbytes);
    } else {
      w.add_tensor(t.name, t.type, ne, t.data, t.nbytes);
    }
  }
  for (const auto& [name, data] : edit.add_tensor) {
    w.add_tensor(name, 0, {static_cast<int64_t>(data.size())}, data.data(), data.size() * sizeof(float));
  }
  w.write(dst);
}

}  // namespace strix
