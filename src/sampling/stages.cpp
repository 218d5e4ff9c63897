// The arithmetic of each stage follows libllama's llama-sampler.cpp statement
// by statement (float where it is float, double where it is double), so that
// the same logits give the same candidates and the same draws.
#include "sampling/stages.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <numeric>

#include "sampling/token_ring.h"

namespace strix::sampling {

namespace {

// What libllama returns for a stage whose parameters make it a no-op.
class Empty final : public Step {
 public:
  explicit Empty(const char* name) : name_(name) {}
  const char* name() const override { return name_; }
  void apply(Candidates&) override {}

 private:
  const char* name_;
};

class Dist final : public Step {
 public:
  explicit Dist(uint32_t seed) : seed_(seed), seed_cur_(resolve_seed(seed)), rng_(seed_cur_) {}
  const char* name() const override { return "dist"; }
  uint32_t seed() const override { return seed_cur_; }
  void reset() override {
    seed_cur_ = resolve_seed(seed_);
    rng_.seed(seed_cur_);
  }
  void apply(Candidates& cur) override {
    if (cur.size == 0) {
      cur.selected = -1;
      return;
    }
    cur.selected = 0;
    if (cur.size == 1) {
      // The pinned build still draws (and discards) a uniform here, so the
      // stream stays in step with the multi-candidate case.
      (void)canonical_double(rng_);
      cur.data[0].p = 1.0f;
      return;
    }
    float max_l = cur.data[0].logit;
    if (!cur.sorted) {
      for (size_t i = 1; i < cur.size; ++i) max_l = std::max(max_l, cur.data[i].logit);
    }
    // Unnormalized float probabilities, summed in double.
    double sum_cum = 0.0;
    for (size_t i = 0; i < cur.size; ++i) {
      const float p = std::exp(cur.data[i].logit - max_l);
      cur.data[i].p = p;
      sum_cum += p;
    }
    // One uniform double; the first index whose running sum reaches it (one
    // pass that also normalizes, as libllama).
    const double rnd = canonical_double(rng_);
    double sum_run = 0.0;
    const double sum_tgt = sum_cum * rnd;
    bool found = false;
    for (size_t i = 0; i < cur.size; ++i) {
      if (!found) {
        sum_run += cur.data[i].p;
        if (sum_run >= sum_tgt) {
          cur.selected = static_cast<int64_t>(i);
          found = true;
        }
      }
      cur.data[i].p = static_cast<float>(cur.data[i].p / sum_cum);
    }
    if (!found) cur.selected = static_cast<int64_t>(cur.size) - 1;
  }

 private:
  uint32_t seed_;
  uint32_t seed_cur_;
  std::mt19937 rng_;
};

class TopK final : public Step {
 public:
  TopK(int32_t k, Workspace& ws) : k_(k), ws_(ws) {}
  const char* name() const override { return "top-k"; }
  void apply(Candidates& cur) override { top_k(cur, k_, ws_.sort); }

 private:
  int32_t k_;
  Workspace& ws_;
};

class TopP final : public Step {
 public:
  TopP(float p, size_t min_keep, Workspace& ws) : p_(p), min_keep_(min_keep), ws_(ws) {}
  const char* name() const override { return "top-p"; }
  void apply(Candidates& cur) override {
    if (p_ >= 1.0f || cur.size == 0) return;
    softmax(cur, false, ws_.sort);
    size_t k = cur.size;
    const TokenData* pdata = cur.data;
    // Large unsorted arrays: sort only a 256-entry head first and widen to the
    // full array if the nucleus turns out to be longer.
    if (!cur.sorted && cur.size > 1024) {
      k = std::min<size_t>(256, cur.size);
      bucket_partial_sort(cur, static_cast<int>(k), ws_.top, ws_.sort);
      pdata = ws_.top.data();
    } else if (!cur.sorted) {
      partial_sort_inplace(cur, static_cast<int>(k), ws_.sort);
    }
    float cum_sum = 0.0f;
    size_t last_idx = cur.size;
    for (size_t i = 0; i < cur.size; ++i) {
      cum_sum += pdata[i].p;
      if (cum_sum >= p_ && i + 1 >= min_keep_) {
        last_idx = i + 1;
        break;
      }
      if (!cur.sorted && i == k - 1) {
        k = cur.size;
        bucket_partial_sort(cur, static_cast<int>(k), ws_.top, ws_.sort);
        pdata = ws_.top.data();
      }
    }
    if (!cur.sorted) {
      std::copy(ws_.top.data(), ws_.top.data() + last_idx, cur.data);
      cur.sorted = true;
    }
    cur.size = last_idx;
  }

 private:
  float p_;
  size_t min_keep_;
  Workspace& ws_;
};

class MinP final : public Step {
 public:
  MinP(float p, size_t min_keep, Workspace& ws) : p_(p), min_keep_(min_keep), ws_(ws) {}
  const char* name() const override { return "min-p"; }
  void apply(Candidates& cur) override {
    if (p_ <= 0.0f || cur.size == 0) return;
    bool applied = false;
    if (!cur.sorted) {
      // Unsorted: keep logit >= max + log(p) in the current order.
      ws_.kept.clear();
      float max_logit = -FLT_MAX;
      for (size_t i = 0; i < cur.size; ++i) max_logit = std::max(max_logit, cur.data[i].logit);
      const float min_logit = max_logit + std::log(p_);
      for (size_t i = 0; i < cur.size; ++i) {
        if (cur.data[i].logit >= min_logit) ws_.kept.push_back(cur.data[i]);
      }
      if (!ws_.kept.empty() && ws_.kept.size() >= min_keep_) {
        std::copy(ws_.kept.begin(), ws_.kept.end(), cur.data);
        cur.size = ws_.kept.size();
        applied = true;
      }
    }
    if (!applied) {
      if (!cur.sorted) partial_sort_inplace(cur, static_cast<int>(cur.size), ws_.sort);
      const float min_logit = cur.data[0].logit + std::log(p_);
      size_t i = 1;  // the first token always stays
      for (; i < cur.size; ++i) {
        if (cur.data[i].logit < min_logit && i >= min_keep_) break;
      }
      cur.size = i;
    }
  }

 private:
  float p_;
  size_t min_keep_;
  Workspace& ws_;
};

class Typical final : public Step {
 public:
  Typical(float p, size_t min_keep, Workspace& ws) : p_(p), min_keep_(min_keep), ws_(ws) {}
  const char* name() const override { return "typical"; }
  void apply(Candidates& cur) override {
    if (p_ >= 1.0f || cur.size == 0) return;
    softmax(cur, true, ws_.sort);
    float entropy = 0.0f;
    for (size_t i = 0; i < cur.size; ++i) entropy += -cur.data[i].p * std::log(cur.data[i].p);
    ws_.scores.resize(cur.size);
    for (size_t i = 0; i < cur.size; ++i) ws_.scores[i] = std::fabs(-std::log(cur.data[i].p) - entropy);
    ws_.order.resize(cur.size);
    std::iota(ws_.order.begin(), ws_.order.end(), size_t{0});
    const std::vector<float>& scores = ws_.scores;
    std::sort(ws_.order.begin(), ws_.order.end(), [&](size_t a, size_t b) { return scores[a] < scores[b]; });
    float cum_sum = 0.0f;
    size_t last_idx = ws_.order.size();
    for (size_t i = 0; i < ws_.order.size(); ++i) {
      cum_sum += cur.data[ws_.order[i]].p;
      if (cum_sum > p_ && (min_keep_ == 0 || i >= min_keep_ - 1)) {
        last_idx = i + 1;
        break;
      }
    }
    ws_.kept.clear();
    for (size_t i = 0; i < last_idx; ++i) ws_.kept.push_back(cur.data[ws_.order[i]]);
    std::copy(ws_.kept.begin(), ws_.kept.end(), cur.data);
    cur.size = ws_.kept.size();
    cur.sorted = false;
  }

 private:
  float p_;
  size_t min_keep_;
  Workspace& ws_;
};

class Temp final : public Step {
 public:
  explicit Temp(float t) : t_(t) {}
  const char* name() const override { return "temp"; }
  void apply(Candidates& cur) override { scale_temperature(cur, t_); }

 private:
  float t_;
};

class TempExt final : public Step {
 public:
  TempExt(float t, float delta, float exponent, Workspace& ws) : t_(t), delta_(delta), exponent_(exponent), ws_(ws) {}
  const char* name() const override { return "temp-ext"; }
  void apply(Candidates& cur) override {
    if (!(delta_ > 0)) {
      scale_temperature(cur, t_);
      return;
    }
    // Dynamic temperature: from the normalized entropy of the distribution.
    const float min_temp = std::max(0.0f, t_ - delta_);
    const float max_temp = t_ + delta_;
    if (cur.size <= 1) return;
    const float max_entropy = -std::log(1.0f / static_cast<float>(cur.size));
    softmax(cur, true, ws_.sort);
    float entropy = 0.0f;
    for (size_t i = 0; i < cur.size; ++i) {
      const float prob = cur.data[i].p;
      if (prob > 0.0f) entropy -= prob * std::log(prob);
    }
    const float normalized_entropy = entropy / max_entropy;
    const float dyn_temp = min_temp + (max_temp - min_temp) * std::pow(normalized_entropy, exponent_);
    scale_temperature(cur, dyn_temp);
    // Re-normalized in double here (libllama's choice for this stage).
    const double max_l = cur.data[0].logit;
    double cum_sum = 0.0;
    for (size_t i = 0; i < cur.size; ++i) {
      const double p = std::exp(cur.data[i].logit - max_l);
      cur.data[i].p = static_cast<float>(p);
      cum_sum += p;
    }
    for (size_t i = 0; i < cur.size; ++i) cur.data[i].p = static_cast<float>(cur.data[i].p / cum_sum);
  }

 private:
  float t_, delta_, exponent_;
  Workspace& ws_;
};

class Xtc final : public Step {
 public:
  Xtc(float p, float t, size_t min_keep, uint32_t seed, Workspace& ws)
      : probability_(p), threshold_(t), min_keep_(min_keep), seed_(seed), rng_(resolve_seed(seed)), ws_(ws) {}
  const char* name() const override { return "xtc"; }
  void reset() override { rng_.seed(resolve_seed(seed_)); }
  void apply(Candidates& cur) override {
    if (probability_ <= 0.0f || threshold_ > 0.5f || cur.size < 2) return;
    const float chance = canonical_float(rng_);
    if (chance > probability_) return;
    softmax(cur, true, ws_.sort);
    // Drop every token above the threshold except the least probable of them.
    int pos_last = 0;
    for (size_t i = 0; i < cur.size; ++i) {
      if (cur.data[i].p >= threshold_) {
        pos_last = static_cast<int>(i);
      } else {
        break;
      }
    }
    if (cur.size - static_cast<size_t>(pos_last) >= min_keep_ && pos_last > 0) {
      cur.data += pos_last;
      cur.size -= static_cast<size_t>(pos_last);
    }
  }

 private:
  float probability_, threshold_;
  size_t min_keep_;
  uint32_t seed_;
  std::mt19937 rng_;
  Workspace& ws_;
};

class TopNSigma final : public Step {
 public:
  explicit TopNSigma(float n) : n_(n) {}
  const char* name() const override { return "top-n-sigma"; }
  void apply(Candidates& cur) override {
    if (n_ <= 0.0f || cur.size <= 1) return;
    float max = cur.data[0].logit;
    float logits_sum = 0;
    size_t valid_count = 0;
    for (size_t i = 0; i < cur.size; ++i) {
      if (cur.data[i].logit != -INFINITY) {
        max = std::max(max, cur.data[i].logit);
        logits_sum += cur.data[i].logit;
        valid_count++;
      }
    }
    const float mean = valid_count > 0 ? logits_sum / static_cast<float>(valid_count) : 0;
    float acc = 0;
    for (size_t i = 0; i < cur.size; ++i) {
      if (cur.data[i].logit != -INFINITY) {
        // pow(float, 2) is a double pow; the float accumulator takes the double sum.
        acc = static_cast<float>(acc + std::pow(static_cast<double>(cur.data[i].logit - mean), 2.0));
      }
    }
    const float sd = valid_count > 0 ? std::sqrt(acc / static_cast<float>(valid_count)) : 0;
    for (size_t i = 0; i < cur.size; ++i) {
      if (cur.data[i].logit < max - (n_ * sd)) cur.data[i].logit = -INFINITY;
    }
    // The pinned build only masks: no softmax, no sort (older sources sorted here).
  }

 private:
  float n_;
};

class Mirostat final : public Step {
 public:
  Mirostat(int32_t n_vocab, uint32_t seed, float tau, float eta, int32_t m, Workspace& ws)
      : n_vocab_(n_vocab),
        seed_(seed),
        seed_cur_(resolve_seed(seed)),
        tau_(tau),
        eta_(eta),
        m_(m),
        mu_(2.0f * tau),
        rng_(seed_cur_),
        ws_(ws) {}
  const char* name() const override { return "mirostat"; }
  uint32_t seed() const override { return seed_cur_; }
  void reset() override {
    mu_ = 2.0f * tau_;
    seed_cur_ = resolve_seed(seed_);
    rng_.seed(seed_cur_);
  }
  void apply(Candidates& cur) override {
    if (cur.size == 0) return;
    softmax(cur, true, ws_.sort);
    // Zipf exponent estimate from the m most probable tokens.
    float sum_ti_bi = 0.0;
    float sum_ti_sq = 0.0;
    for (size_t i = 0; i < static_cast<size_t>(m_ - 1) && i < cur.size - 1; ++i) {
      const float t_i = std::log(static_cast<float>(i + 2) / static_cast<float>(i + 1));
      const float b_i = std::log(cur.data[i].p / cur.data[i + 1].p);
      sum_ti_bi += t_i * b_i;
      sum_ti_sq += t_i * t_i;
    }
    const float s_hat = sum_ti_bi / sum_ti_sq;
    const float epsilon_hat = s_hat - 1;
    const float k = std::pow(
        (epsilon_hat * std::pow(2.0f, mu_)) / (1 - std::pow(static_cast<float>(n_vocab_), -epsilon_hat)), 1 / s_hat);
    top_k(cur, std::max(truncate_like_x86(k), 1), ws_.sort);
    softmax(cur, true, ws_.sort);
    const int idx = discrete_draw(cur, rng_, ws_.cum);
    cur.selected = idx;
    const float observed_surprise = -std::log2(cur.data[idx].p);
    const float e = observed_surprise - tau_;
    mu_ = mu_ - eta_ * e;
  }

 private:
  int32_t n_vocab_;
  uint32_t seed_, seed_cur_;
  float tau_, eta_;
  int32_t m_;
  float mu_;
  std::mt19937 rng_;
  Workspace& ws_;
};

class MirostatV2 final : public Step {
 public:
  MirostatV2(uint32_t seed, float tau, float eta, Workspace& ws)
      : seed_(seed), seed_cur_(resolve_seed(seed)), tau_(tau), eta_(eta), mu_(2.0f * tau), rng_(seed_cur_), ws_(ws) {}
  const char* name() const override { return "mirostat-v2"; }
  uint32_t seed() const override { return seed_cur_; }
  void reset() override {
    mu_ = 2.0f * tau_;
    seed_cur_ = resolve_seed(seed_);
    rng_.seed(seed_cur_);
  }
  void apply(Candidates& cur) override {
    if (cur.size == 0) return;
    softmax(cur, true, ws_.sort);
    // Truncate at the first token whose surprise exceeds mu.
    const float mu = mu_;
    cur.size = static_cast<size_t>(
        std::find_if(cur.data, cur.data + cur.size, [mu](const TokenData& c) { return -std::log2(c.p) > mu; }) -
        cur.data);
    if (cur.size == 0) cur.size = 1;
    softmax(cur, true, ws_.sort);
    const int idx = discrete_draw(cur, rng_, ws_.cum);
    cur.selected = idx;
    const float observed_surprise = -std::log2(cur.data[idx].p);
    const float e = observed_surprise - tau_;
    mu_ = mu_ - eta_ * e;
  }

 private:
  uint32_t seed_, seed_cur_;
  float tau_, eta_;
  float mu_;
  std::mt19937 rng_;
  Workspace& ws_;
};

class Penalties final : public Step {
 public:
  Penalties(int32_t n_vocab, int32_t last_n, float repeat, float freq, float present)
      : last_n_(last_n),
        repeat_(repeat),
        freq_(freq),
        present_(present),
        prev_(static_cast<size_t>(last_n)),
        count_(static_cast<size_t>(std::max(n_vocab, 0)), 0) {}
  const char* name() const override { return "penalties"; }
  void accept(int32_t token) override {
    if (token < 0 || static_cast<size_t>(token) >= count_.size()) return;  // Sampler validates ids first
    ++count_[token];
    if (prev_.size() >= static_cast<size_t>(last_n_)) --count_[prev_.front()];
    prev_.push_back(token);
  }
  void reset() override {
    prev_.clear();
    std::fill(count_.begin(), count_.end(), 0);
  }
  void apply(Candidates& cur) override {
    for (size_t i = 0; i < cur.size; ++i) {
      const int32_t id = cur.data[i].id;
      if (id < 0 || static_cast<size_t>(id) >= count_.size() || count_[id] == 0) continue;
      const int count = count_[id];
      // Multiply non-positive logits instead of dividing them, so that the
      // penalty always makes the token less likely.
      if (cur.data[i].logit <= 0) {
        cur.data[i].logit *= repeat_;
      } else {
        cur.data[i].logit /= repeat_;
      }
      cur.data[i].logit -= static_cast<float>(count) * freq_ + static_cast<float>(count > 0) * present_;
    }
    cur.sorted = false;
  }

 private:
  int32_t last_n_;
  float repeat_, freq_, present_;
  TokenRing prev_;
  std::vector<int32_t> count_;  // [n_vocab] occurrences in prev_
};

class LogitBias final : public Step {
 public:
  explicit LogitBias(std::vector<std::pair<int32_t, float>> biases) : biases_(std::move(biases)) {
    to_search_.reserve(biases_.size());
  }
  const char* name() const override { return "logit-bias"; }
  void apply(Candidates& cur) override {
    if (biases_.empty()) return;
    to_search_.clear();
    // Entries still at their vocabulary index are updated directly.
    for (const auto& [token, bias] : biases_) {
      if (token >= 0 && cur.size > static_cast<size_t>(token) && cur.data[token].id == token) {
        cur.data[token].logit += bias;
      } else {
        to_search_.emplace_back(token, bias);
      }
    }
    if (to_search_.empty()) return;
    for (size_t i = 0; i < cur.size; ++i) {
      for (const auto& [token, bias] : to_search_) {
        if (cur.data[i].id == token) {
          cur.data[i].logit += bias;
          break;
        }
      }
    }
  }

 private:
  std::vector<std::pair<int32_t, float>> biases_;
  std::vector<std::pair<int32_t, float>> to_search_;
};

}  // namespace

StepPtr make_dist(uint32_t seed) { return std::make_unique<Dist>(seed); }

StepPtr make_top_k(int32_t k, Workspace& ws) {
  if (k <= 0) return std::make_unique<Empty>("?top-k");
  return std::make_unique<TopK>(k, ws);
}

StepPtr make_top_p(float p, size_t min_keep, Workspace& ws) {
  if (p >= 1.0f) return std::make_unique<Empty>("?top-p");
  return std::make_unique<TopP>(p, min_keep, ws);
}

StepPtr make_min_p(float p, size_t min_keep, Workspace& ws) {
  if (p <= 0.0f) return std::make_unique<Empty>("?min-p");
  return std::make_unique<MinP>(p, min_keep, ws);
}

StepPtr make_typical(float p, size_t min_keep, Workspace& ws) {
  if (p >= 1.0f) return std::make_unique<Empty>("?typical");
  return std::make_unique<Typical>(p, min_keep, ws);
}

StepPtr make_temp(float t) {
  if (t == 1.0f) return std::make_unique<Empty>("?temp");
  return std::make_unique<Temp>(t);
}

StepPtr make_temp_ext(float t, float delta, float exponent, Workspace& ws) {
  if (t == 1.0f && delta <= 0.0f) return std::make_unique<Empty>("?temp-ext");
  return std::make_unique<TempExt>(t, delta, exponent, ws);
}

StepPtr make_xtc(float p, float t, size_t min_keep, uint32_t seed, Workspace& ws) {
  if (p <= 0.0f || t > 0.5f) return std::make_unique<Empty>("?xtc");
  return std::make_unique<Xtc>(p, t, min_keep, seed, ws);
}

StepPtr make_top_n_sigma(float n, Workspace& /*ws*/) {
  if (n <= 0.0f) return std::make_unique<Empty>("?top-n-sigma");
  return std::make_unique<TopNSigma>(n);
}

StepPtr make_mirostat(int32_t n_vocab, uint32_t seed, float tau, float eta, int32_t m, Workspace& ws) {
  return std::make_unique<Mirostat>(n_vocab, seed, tau, eta, m, ws);
}

StepPtr make_mirostat_v2(uint32_t seed, float tau, float eta, Workspace& ws) {
  return std::make_unique<MirostatV2>(seed, tau, eta, ws);
}

StepPtr make_penalties(int32_t n_vocab, int32_t last_n, float repeat, float freq, float present) {
  last_n = std::max(last_n, 0);
  if (last_n == 0 || (repeat == 1.0f && freq == 0.0f && present == 0.0f)) return std::make_unique<Empty>("?penalties");
  return std::make_unique<Penalties>(n_vocab, last_n, repeat, freq, present);
}

StepPtr make_logit_bias(int32_t /*n_vocab*/, std::vector<std::pair<int32_t, float>> biases) {
  if (biases.empty()) return std::make_unique<Empty>("?logit-bias");
  return std::make_unique<LogitBias>(std::move(biases));
}

}  // namespace strix::sampling
