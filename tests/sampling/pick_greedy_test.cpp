// Sampler::pick_greedy (the greedy token from a row's largest logits alone,
// as the CUDA context finds them on the device) against libllama's sampler
// chain on the full row: whenever it answers, the token is the one libllama's
// chain draws. Greedy settings (with ties, -inf entries, banned EOG tokens,
// the default filters) must answer on most rows; any setting that can pass
// over or change the largest logit must never answer. Negative control: the
// same check catches a list whose first two entries are swapped.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "kv/kv_cache.h"
#include "runtime/batch_context.h"
#include "sampling_test_util.h"

namespace strix::sampling::test {
namespace {

constexpr int kTop = 8;  // as cuda::kTopLogits

// The row's kTop largest logits, largest first, equal values by the lower id first.
void top_of(const std::vector<float>& row, std::vector<float>& v, std::vector<int32_t>& id) {
  std::vector<int32_t> order(row.size());
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + kTop, order.end(), [&](int32_t a, int32_t b) {
    return row[static_cast<size_t>(a)] > row[static_cast<size_t>(b)] ||
           (row[static_cast<size_t>(a)] == row[static_cast<size_t>(b)] && a < b);
  });
  id.assign(order.begin(), order.begin() + kTop);
  v.clear();
  for (int32_t i : id) v.push_back(row[static_cast<size_t>(i)]);
}

struct Outcome {
  int answered = 0, wrong = 0, steps = 0;
  std::string detail;
};

// Both draw from `steps` rows; `tamper` may alter the list pick_greedy sees.
Outcome run(const Env& env, const Params& p, const RowOptions& ro, int steps,
            const std::function<void(std::vector<float>&, std::vector<int32_t>&)>& tamper = {}) {
  Sampler ours(p, *env.tokenizer, 4096);
  Params rp = p;
  if (rp.seed == 0xFFFFFFFFu) rp.seed = ours.seed();
  ref::LlamaSampler chain = reference_chain(rp, env, 4096);
  RowGen gen(env.n_vocab, 4242, ro);
  std::vector<abi::TokenData> cand(static_cast<size_t>(env.n_vocab));
  std::vector<int32_t> history;
  std::vector<float> tv;
  std::vector<int32_t> ti;
  Outcome o;
  for (int step = 0; step < steps; ++step, ++o.steps) {
    const std::vector<float>& row = gen.next(history);
    for (int32_t i = 0; i < env.n_vocab; ++i) cand[static_cast<size_t>(i)] = {i, row[static_cast<size_t>(i)], 0.0f};
    abi::TokenDataArray arr{cand.data(), cand.size(), -1, false};
    chain.apply(arr);
    const int32_t want = arr.data[arr.selected].id;
    top_of(row, tv, ti);
    if (tamper) tamper(tv, ti);
    if (const std::optional<int32_t> got = ours.pick_greedy(tv, ti)) {
      ++o.answered;
      if (*got != want && o.wrong++ == 0) {
        o.detail = "step " + std::to_string(step) + ": libllama drew " + std::to_string(want) + ", pick_greedy " +
                   std::to_string(*got);
      }
    }
    const int32_t drawn = ours.sample(row);  // keeps the RNGs and the history as the engine's path does
    EXPECT_EQ(drawn, want) << "step " << step;
    chain.accept(want);
    ours.accept(want);
    history.push_back(want);
  }
  return o;
}

Params greedy() {
  Params p;
  p.temp = 0.0f;
  p.seed = 7;
  return p;
}

TEST(PickGreedy, EqualsLibllamasChainWheneverItAnswers) {
  REQUIRE_SHARED();
  const Env& env = stories();
  struct Case {
    std::string name;
    std::function<void(Params&)> set;
    RowOptions rows;
  };
  RowOptions ties;
  ties.tie_step = 0.5f;
  RowOptions masked;
  masked.neg_inf_frac = 0.05f;
  const std::vector<Case> cases = {
      {"default filters, temp 0", [](Params&) {}, {}},
      {"ties", [](Params&) {}, ties},
      {"-inf entries", [](Params&) {}, masked},
      {"ignore_eos", [](Params& p) { p.ignore_eos = true; }, {}},
      {"banned biases", [](Params& p) { p.logit_bias = {{5, -INFINITY}, {9, -INFINITY}}; }, {}},
      {"no filters", [](Params& p) { p.top_k = 0, p.top_p = 1.0f, p.min_p = 0.0f; }, {}},
      {"neutral penalties and DRY", [](Params& p) { p.penalty_last_n = 0, p.penalty_repeat = 1.3f; }, {}},
      {"xtc threshold above 0.5", [](Params& p) { p.xtc_probability = 1.0f, p.xtc_threshold = 0.6f; }, {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Params p = greedy();
    c.set(p);
    const Outcome o = run(env, p, c.rows, 1500);
    EXPECT_EQ(o.wrong, 0) << o.detail;
    EXPECT_GT(o.answered, o.steps / 2) << "pick_greedy answered " << o.answered << " of " << o.steps;
  }
}

TEST(PickGreedy, BannedTopTokensAreSkipped) {
  REQUIRE_SHARED();
  const Env& env = stories();
  // ban the ids of the three largest peaks often enough: bias a fixed set and lift it
  RowOptions ro;
  ro.favored = {11, 12, 13};
  Params p = greedy();
  p.logit_bias = {{11, -INFINITY}, {12, -INFINITY}, {13, -INFINITY}};
  const Outcome o = run(env, p, ro, 1500);
  EXPECT_EQ(o.wrong, 0) << o.detail;
  EXPECT_GT(o.answered, o.steps / 2);
}

TEST(PickGreedy, NeverAnswersForAChainThatCanPassOverTheLargestLogit) {
  REQUIRE_SHARED();
  const Env& env = stories();
  const std::vector<std::pair<std::string, std::function<void(Params&)>>> cases = {
      {"temperature 0.8", [](Params& p) { p.temp = 0.8f; }},
      {"dynamic temperature", [](Params& p) { p.dynatemp_range = 0.5f; }},
      {"repeat penalty", [](Params& p) { p.penalty_repeat = 1.3f; }},
      {"presence penalty", [](Params& p) { p.penalty_present = 0.5f; }},
      {"DRY", [](Params& p) { p.dry_multiplier = 0.8f; }},
      {"typical-p", [](Params& p) { p.typ_p = 0.5f; }},
      {"XTC", [](Params& p) { p.xtc_probability = 1.0f, p.xtc_threshold = 0.1f; }},
      {"mirostat", [](Params& p) { p.mirostat = 2; }},
      {"n_probs", [](Params& p) { p.n_probs = 4; }},
      {"a finite logit bias", [](Params& p) { p.logit_bias = {{5, 2.0f}}; }},
      {"a grammar", [](Params& p) { p.grammar = "root ::= [a-z]+"; }},
  };
  for (const auto& [name, set] : cases) {
    SCOPED_TRACE(name);
    Params p = greedy();
    set(p);
    Sampler s(p, *env.tokenizer, 4096);
    const std::vector<float> v = {9, 8, 7, 6, 5, 4, 3, 2};
    const std::vector<int32_t> id = {40, 41, 42, 43, 44, 45, 46, 47};
    EXPECT_FALSE(s.pick_greedy(v, id).has_value());
  }
}

TEST(PickGreedy, TiesAndUnprovableListsFallBackToTheRow) {
  REQUIRE_SHARED();
  Params p = greedy();
  p.logit_bias = {{40, -INFINITY}, {41, -INFINITY}};
  Sampler s(p, *stories().tokenizer, 4096);
  const std::vector<int32_t> id = {40, 41, 42, 43, 44, 45, 46, 47};
  EXPECT_EQ(s.pick_greedy(std::vector<float>{9, 8, 7, 6, 5, 4, 3, 2}, id), 42);  // 40, 41 banned
  EXPECT_FALSE(s.pick_greedy(std::vector<float>{9, 8, 7, 7, 5, 4, 3, 2}, id));  // 42 ties 43
  EXPECT_EQ(s.pick_greedy(std::vector<float>{9, 9, 7, 6, 5, 4, 3, 2}, id), 42);  // ties among banned ones only
  Params all = greedy();
  for (int32_t t = 40; t < 47; ++t) all.logit_bias.emplace_back(t, -INFINITY);
  Sampler s2(all, *stories().tokenizer, 4096);
  EXPECT_FALSE(s2.pick_greedy(std::vector<float>{9, 8, 7, 6, 5, 4, 3, 2}, id));  // only the last is allowed
  EXPECT_FALSE(s.pick_greedy({}, {}));
}

// A backend's last decode of one row, with or without the row's largest logits
// (BatchContext::top_logits), counting how often the row itself is read.
class OneRow final : public BatchContext {
 public:
  OneRow(std::vector<float> row, bool with_top) : row_(std::move(row)), kv_(KvCache::Options{1, 1, 1, 32, 1}) {
    if (with_top) top_of(row_, tv_, ti_);
  }
  void decode(std::span<const int32_t>, std::span<const int32_t>, std::span<const int32_t>,
              std::span<const uint8_t>) override {}
  std::span<const float> logits(int32_t) const override {
    ++reads;
    return row_;
  }
  TopLogits top_logits(int32_t) const override { return {tv_, ti_}; }
  void seq_truncate(int, int32_t) override {}
  void clear() override {}
  void seq_cut(int, int32_t, int32_t) override {}
  bool can_cut() const override { return false; }
  int64_t n_ctx() const override { return 32; }
  int n_threads() const override { return 1; }
  const KvCache& kv() const override { return kv_; }
  KvCache& kv_cache() override { return kv_; }
  mutable int reads = 0;

 private:
  std::vector<float> row_, tv_;
  std::vector<int32_t> ti_;
  KvCache kv_;
};

// Sampler::sample(ctx, i), the engine's and the CLI's path: a greedy sampler takes the
// token from the backend's list without reading the row, and draws what sample(row)
// draws; without a list, or for a sampler that is not greedy, it reads the row.
TEST(PickGreedy, SampleFromAContextReadsTheRowOnlyWhenItMust) {
  REQUIRE_SHARED();
  const Env& env = stories();
  RowGen gen(env.n_vocab, 99, {});
  std::vector<int32_t> history;
  int unread = 0;
  for (int step = 0; step < 50; ++step) {
    const std::vector<float> row = gen.next(history);
    Sampler by_row(greedy(), *env.tokenizer, 4096), by_ctx(greedy(), *env.tokenizer, 4096);
    const int32_t want = by_row.sample(row);
    OneRow listed(row, true), bare(row, false);
    EXPECT_EQ(by_ctx.sample(listed, 0), want);
    EXPECT_EQ(by_ctx.sample(bare, 0), want);
    EXPECT_EQ(bare.reads, 1);
    Params warm = greedy();
    warm.temp = 0.8f;
    Sampler hot_row(warm, *env.tokenizer, 4096), hot_ctx(warm, *env.tokenizer, 4096);
    OneRow listed2(row, true);
    EXPECT_EQ(hot_ctx.sample(listed2, 0), hot_row.sample(row));
    EXPECT_EQ(listed2.reads, 1);  // a sampler that is not greedy always reads the row
    history.push_back(want);
    unread += listed.reads == 0;  // a tie in the list sends it to the row
  }
  EXPECT_GT(unread, 40);
}

TEST(PickGreedy, NegativeControlSwappedListIsCaught) {
  REQUIRE_SHARED();
  // the same comparison as above must see a wrong answer when the list lies
  const Outcome o = run(stories(), greedy(), {}, 400, [](std::vector<float>& v, std::vector<int32_t>& id) {
    std::swap(id[0], id[1]);
    (void)v;
  });
  EXPECT_GT(o.wrong, 0);
}

}  // namespace
}  // namespace strix::sampling::test
