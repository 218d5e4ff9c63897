#include "runtime/context.h"

#include <algorithm>
#include <string>
#include <thread>

#include "core/error.h"
#include "graph/moe.h"
#include "models/hparams.h"
#include "ops/cpu_ops.h"

namespace strix {

namespace {

int default_threads(int n) {
  if (n > 0) return n;
  const unsigned hc = std::thread::hardware_concurrency();
  return hc == 0 ? 1 : static_cast<int>(hc);
}

KvCache::Options kv_options(const Model& m, const ContextOptions& o) {
  const Hparams& hp = m.hparams();
  KvCache::Options k;
  k.n_layer = o.layer_end > 0 ? o.layer_end : hp.n_layer;
  k.k_dim = hp.k_dim();
  k.v_dim = hp.v_dim();
  k.n_cells = o.n_ctx;
  k.n_seq_max = o.n_seq_max;
  return k;
}

}  // namespace

Context::Context(const Model& model, const ContextOptions& opts)
    : model_(model),
      opts_(opts),
      pool_(default_threads(opts.n_threads)),
      kv_(kv_options(model, opts)),
      kernels_(cpu::cpu_kernels()) {
  const Hparams& hp = model.hparams();
  if (opts_.n_ubatch <= 0) throw Error("n_ubatch must be positive");
  if (opts_.layer_end < 0 || opts_.layer_end > hp.n_layer) {
    throw Error("CPU context: layers [0, " + std::to_string(opts_.layer_end) + ") are not within the model's " +
                std::to_string(hp.n_layer));
  }
  const int64_t ub = opts_.n_ubatch;

  // widest activation rows any matmul produces or reads (the lm head excluded)
  int64_t max_rows = std::max({hp.n_embd, hp.q_dim() + hp.k_dim() + hp.v_dim(), hp.n_head * hp.head_dim_v});
  size_t act_row = 0;
  for (const Weight& w : model.weights()) {
    const GgmlType vdt = kernels_.vec_dot_type[static_cast<uint32_t>(w.type)];
    if (w.ne[1] != hp.n_vocab) max_rows = std::max(max_rows, w.ne[1]);
    if (kernels_.vec_dot[static_cast<uint32_t>(w.type)] && vdt != GgmlType::F32) {
      act_row = std::max(act_row, row_size(vdt, w.ne[0]));
    }
  }
  const int64_t wide = max_rows;
  const int64_t att = hp.n_head * hp.head_dim_v;
  const int64_t qkv = hp.q_dim() + hp.k_dim() + hp.v_dim();
  const int64_t moe =
      hp.n_expert > 0 ? graph::moe_scratch_width(hp.n_embd, hp.n_expert, hp.n_expert_used, hp.n_ff_exp) : 0;
  ws_.n_tokens_max = ub;
  // attention: 16 lane accumulators of head_dim_v, q in f16, a score per cell; rope: n_rot
  ws_.thread_scratch_floats = static_cast<size_t>(opts_.n_ctx + 64 * hp.head_dim_v + hp.head_dim_k +
                                                  std::max(hp.head_dim_k, hp.head_dim_v) + 256);
  const size_t total =
      static_cast<size_t>(ub) * (hp.n_embd + wide + qkv + hp.k_dim() + hp.v_dim() + att + 2 * wide + moe) +
      ws_.thread_scratch_floats * pool_.size();
  buffers_.assign(total, 0.0f);
  float* p = buffers_.data();
  auto take = [&](int64_t width) {
    float* r = p;
    p += static_cast<size_t>(ub) * width;
    return r;
  };
  ws_.x = take(hp.n_embd);
  ws_.cur = take(wide);
  ws_.q = take(qkv);
  ws_.k = take(hp.k_dim());
  ws_.v = take(hp.v_dim());
  ws_.att = take(att);
  ws_.ff_a = take(wide);
  ws_.ff_b = take(wide);
  ws_.moe = moe ? take(moe) : nullptr;
  ws_.thread_scratch = p;
  act_.assign(static_cast<size_t>(ub) * act_row + 64, 0);
  ws_.act = act_.data();
  ws_.act_size = act_.size();
  out_ids_.reserve(ub);
  // llama.cpp (llama_context, kv_unified off as in llama_context_default_params):
  // n_ctx is padded to 256, then each sequence's share is padded to 256 again.
  const auto pad256 = [](int64_t x) { return (x + 255) / 256 * 256; };
  n_ctx_seq_ = pad256(pad256(opts_.n_ctx) / std::max(1, opts_.n_seq_max));
}

Context::~Context() = default;

void Context::decode(std::span<const int32_t> tokens, std::span<const int32_t> pos, std::span<const int32_t> seq,
                     std::span<const uint8_t> want) {
  const size_t n = tokens.size();
  if (opts_.layer_end > 0) throw Error("decode: this CPU context runs part of the model (HybridContext drives it)");
  if (n == 0) throw Error("decode: empty batch");
  if (pos.size() != n || seq.size() != n || (!want.empty() && want.size() != n)) {
    throw Error("decode: tokens, positions, sequence ids and logit flags differ in length");
  }
  const int64_t n_vocab = model_.hparams().n_vocab;
  // validate everything before touching the cache
  kv_.reserve_batch(tokens, pos, seq, n_vocab, opts_.n_ctx, " (raise -c)");

  // outputs
  output_of_.assign(n, -1);
  out_rows_.clear();
  for (size_t i = 0; i < n; ++i) {
    const bool w = want.empty() ? (i + 1 == n) : want[i] != 0;
    if (w) {
      output_of_[i] = static_cast<int32_t>(out_rows_.size());
      out_rows_.push_back(static_cast<int32_t>(i));
    }
  }
  n_outputs_ = static_cast<int32_t>(out_rows_.size());
  const size_t need = static_cast<size_t>(n_outputs_) * n_vocab;
  if (logits_.size() < need) logits_.resize(need);

  tokens_ = tokens;
  pos_ = pos;
  seq_ = seq;
  for (size_t first = 0; first < n; first += opts_.n_ubatch) {
    const int32_t count = static_cast<int32_t>(std::min<size_t>(opts_.n_ubatch, n - first));
    run_ubatch(static_cast<int32_t>(first), count);
  }
}

void Context::run_ubatch(int32_t first, int32_t count) {
  const Hparams& hp = model_.hparams();
  out_ids_.clear();
  int32_t first_out = -1;
  for (int32_t i = 0; i < count; ++i) {
    if (output_of_[first + i] >= 0) {
      if (first_out < 0) first_out = output_of_[first + i];
      out_ids_.push_back(i);
    }
  }
  Step step;
  step.n_tokens = count;
  step.tokens = tokens_.data() + first;
  step.pos = pos_.data() + first;
  step.seq = seq_.data() + first;
  step.n_outputs = static_cast<int>(out_ids_.size());
  step.out_ids = out_ids_.data();
  step.logits = logits_.data() + (first_out < 0 ? 0 : static_cast<size_t>(first_out) * hp.n_vocab);
  step.kv = &kv_;
  step.ws = &ws_;
  step.hp = &hp;
  step.n_ctx_seq = n_ctx_seq_;
  const Arch& arch = model_.arch();
  // a ubatch without outputs still runs every layer (its KV is needed)
  pool_.run([&](int ith, int nth) {
    Exec e(pool_, ith, nth, kernels_, ws_);
    Step s = step;  // per-thread copy: the forward may narrow n_tokens for the last layer
    arch.forward(e, s);
  });
  // the token ids go with the cells: full blocks of a caching sequence are registered for reuse
  for (int32_t i = 0; i < count; ++i) kv_.commit(seq_[first + i], pos_[first + i], tokens_[first + i]);
}

int Context::forward_part(std::span<const int32_t> tokens, std::span<const int32_t> pos, std::span<const int32_t> seq,
                          std::span<const int32_t> out_ids, float* hidden) {
  const Hparams& hp = model_.hparams();
  const int32_t count = static_cast<int32_t>(tokens.size());
  if (opts_.layer_end <= 0) throw Error("forward_part: this CPU context runs the whole model");
  if (count == 0 || count > opts_.n_ubatch || pos.size() != tokens.size() || seq.size() != tokens.size() ||
      out_ids.size() > tokens.size()) {
    throw Error("forward_part: a micro-batch of " + std::to_string(count) + " tokens (at most " +
                std::to_string(opts_.n_ubatch) + "), its positions, sequence ids and output ids disagree");
  }
  Step step;
  step.n_tokens = count;
  step.tokens = tokens.data();
  step.pos = pos.data();
  step.seq = seq.data();
  step.n_outputs = static_cast<int>(out_ids.size());
  step.out_ids = out_ids.data();
  step.logits = nullptr;  // no output head here
  step.kv = &kv_;
  step.ws = &ws_;
  step.hp = &hp;
  step.n_ctx_seq = n_ctx_seq_;
  step.layer_end = opts_.layer_end;
  const Arch& arch = model_.arch();
  pool_.run([&](int ith, int nth) {
    Exec e(pool_, ith, nth, kernels_, ws_);
    Step s = step;
    arch.forward(e, s);
  });
  const int rows = opts_.layer_end == hp.n_layer ? step.n_outputs : count;
  std::copy_n(ws_.x, static_cast<size_t>(rows) * hp.n_embd, hidden);
  return rows;
}

bool Context::can_cut() const {
  const Hparams& hp = model_.hparams();
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    if (model_.arch().key_rope(hp, il, n_ctx_seq_).rope == nullptr) return false;
  }
  return true;
}

namespace {

// Each cached layer's key rotation by `delta` positions (seq_cut).
std::vector<ops::RopeShift> key_shifts(const Model& m, int64_t n_layer, int64_t n_ctx_seq, int32_t delta) {
  const Hparams& hp = m.hparams();
  std::vector<ops::RopeShift> shifts;
  for (int64_t il = 0; il < n_layer; ++il) {
    const KeyRope kr = m.arch().key_rope(hp, il, n_ctx_seq);
    if (kr.rope == nullptr) throw Refusal("moving cached cells: this architecture's keys have no RoPE to shift");
    shifts.push_back(ops::rope_shift(delta, *kr.rope, kr.freq_factors));
  }
  return shifts;
}

}  // namespace

void Context::seq_cut(int seq, int32_t p0, int32_t p1) {
  if (p0 == p1) return;
  const Hparams& hp = model_.hparams();
  const std::vector<ops::RopeShift> shifts = key_shifts(model_, kv_.n_layer(), n_ctx_seq_, p0 - p1);
  std::vector<float> tmp(static_cast<size_t>(kv_.k_dim()));
  kv_.cut(seq, p0, p1, [&](int64_t il, const uint16_t* src, uint16_t* dst) {
    ops::rope_shift_row_f16(shifts[static_cast<size_t>(il)], src, dst, hp.n_head_kv, hp.head_dim_k, tmp.data());
  });
}

void Context::move_cells(int seq, int32_t p0, int32_t p1, int32_t n) {
  if (p0 == p1 || n == 0) return;
  const Hparams& hp = model_.hparams();
  const std::vector<ops::RopeShift> shifts = key_shifts(model_, kv_.n_layer(), n_ctx_seq_, p0 - p1);
  std::vector<float> tmp(static_cast<size_t>(kv_.k_dim()));
  kv_.move_host_cells(seq, p0, p1, n, [&](int64_t il, const uint16_t* src, uint16_t* dst) {
    ops::rope_shift_row_f16(shifts[static_cast<size_t>(il)], src, dst, hp.n_head_kv, hp.head_dim_k, tmp.data());
  });
}

std::span<const float> Context::logits(int32_t i) const {
  const int64_t n_vocab = model_.hparams().n_vocab;
  int32_t row = -1;
  if (i < 0) {
    row = n_outputs_ + i;
  } else if (static_cast<size_t>(i) < output_of_.size()) {
    row = output_of_[i];
  }
  if (row < 0 || row >= n_outputs_) throw Error("logits: batch index " + std::to_string(i) + " has no output");
  return {logits_.data() + static_cast<size_t>(row) * n_vocab, static_cast<size_t>(n_vocab)};
}

}  // namespace strix
