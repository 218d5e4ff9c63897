// The reasoning budget (sampling/reasoning_budget.h) against libllama-common's
// common_reasoning_budget_* sampler of the pinned build, loaded with dlopen:
// both are driven with the same token stream over the Qwen3 vocabulary (where
// <think> and </think> are single special tokens), and after every apply()
// the logits each leaves (which tokens went to -inf), its state and its
// recorded end match must be the same. The stream takes the forced token
// whenever a side forces one, as sampling would. Then Sampler's wiring:
// generation-prompt priming, the budget before the chain, and the Params
// checks.
#include "sampling/reasoning_budget.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "ref/libllama_common.h"
#include "sampling_test_util.h"

namespace strix::sampling::test {
namespace {

Env& qwen3() {
  static Env e = strix::test::with_vocab_only_gguf("qwen3", [](const std::string& path) { return load_env(path); });
  return e;
}

// Tokens of `text` as both libraries tokenize it (special tokens parsed); they must agree.
TokenSeq toks(const std::string& text) {
  const Env& e = qwen3();
  const std::vector<int32_t> ours = e.tokenizer->tokenize(text, false, true);
  const std::vector<int32_t> ref = e.model->tokenize(text, false, true);
  EXPECT_EQ(ours, ref) << "tokenizers disagree on '" << text << "'";
  return ours;
}

struct Case {
  std::string name;
  std::vector<TokenSeq> start, end;
  TokenSeq forced;
  int32_t budget = 0;
  BudgetState initial = BudgetState::kIdle;
  std::vector<int32_t> script;  // tokens emitted when no token is forced (cycled)
  int steps = 40;
  int force_at = -1;       // step at which force() is called on both
  bool with_vocab = true;  // false: no UTF-8 check on either side
};

// libllama-common's sampler, freed with libllama.
struct RefSide {
  abi::Sampler* s = nullptr;
  ~RefSide() {
    if (s) ref::LibLlama::get().sampler_free(s);
  }
};

// Runs a case; returns "" when both agree at every step, else the first difference.
// make_ours builds Strix's side (a negative control passes a deliberately wrong one).
std::string run_case(const Case& c, const std::function<ReasoningBudget(const Case&)>& make_ours,
                     int* n_forced = nullptr) {
  const Env& e = qwen3();
  const ref::LibLlama& L = ref::LibLlama::get();
  const ref::LibLlamaCommon& C = ref::LibLlamaCommon::get();
  RefSide ref;
  ref.s = C.reasoning_budget_init(c.with_vocab ? e.model->vocab() : nullptr, c.start, c.end, c.forced, c.budget,
                                  static_cast<int32_t>(c.initial));
  if (ref.s == nullptr) return "libllama-common returned no sampler";
  ReasoningBudget ours = make_ours(c);

  // A few hundred candidates: every token the case uses plus random others,
  // with random logits (the apply of both touches only these).
  std::mt19937 rng(1234);
  std::vector<int32_t> ids;
  for (const auto* seqs : {&c.start, &c.end}) {
    for (const auto& s : *seqs) ids.insert(ids.end(), s.begin(), s.end());
  }
  ids.insert(ids.end(), c.forced.begin(), c.forced.end());
  ids.insert(ids.end(), c.script.begin(), c.script.end());
  std::uniform_int_distribution<int32_t> any(0, e.n_vocab - 1);
  while (ids.size() < 300) ids.push_back(any(rng));
  std::vector<int32_t> unique;  // each id once, so that forcing leaves exactly one entry
  for (int32_t id : ids) {
    if (std::find(unique.begin(), unique.end(), id) == unique.end()) unique.push_back(id);
  }
  ids.swap(unique);
  std::normal_distribution<float> noise(0.0f, 3.0f);

  size_t next = 0;
  int forced_steps = 0;
  for (int step = 0; step < c.steps; ++step) {
    const std::string at = c.name + ", step " + std::to_string(step) + ": ";
    if (step == c.force_at) {
      const bool r = C.reasoning_budget_force(ref.s);
      const bool o = ours.force();
      if (r != o) return at + "force() returned " + std::to_string(r) + " (libllama-common) vs " + std::to_string(o);
    }
    const int32_t rs = C.reasoning_budget_get_state(ref.s);
    if (rs != static_cast<int32_t>(ours.state())) {
      return at + "state " + std::to_string(rs) + " (libllama-common) vs " +
             std::to_string(static_cast<int32_t>(ours.state()));
    }
    const std::vector<int32_t>* rm = C.reasoning_budget_get_end_match(ref.s);
    const TokenSeq* om = ours.end_match();
    if ((rm == nullptr) != (om == nullptr) || (rm && *rm != *om)) return at + "end matches differ";

    std::vector<abi::TokenData> rc;
    for (int32_t id : ids) rc.push_back({id, noise(rng), 0.0f});
    std::vector<TokenData> oc(rc.size());
    for (size_t i = 0; i < rc.size(); ++i) oc[i] = {rc[i].id, rc[i].logit, 0.0f};
    abi::TokenDataArray ra{rc.data(), rc.size(), -1, false};
    Candidates oa{oc.data(), oc.size(), -1, false};
    L.sampler_apply(ref.s, &ra);
    ours.apply(oa);
    int32_t survivor = -1;
    int n_alive = 0;
    for (size_t i = 0; i < rc.size(); ++i) {
      if (std::memcmp(&rc[i].logit, &oc[i].logit, sizeof(float)) != 0) {
        return at + "token " + std::to_string(rc[i].id) + " has logit " + std::to_string(rc[i].logit) +
               " (libllama-common) vs " + std::to_string(oc[i].logit);
      }
      if (rc[i].logit != -INFINITY) {
        ++n_alive;
        survivor = rc[i].id;
      }
    }
    // Forcing leaves one token (the forced one is always among the candidates).
    int32_t token;
    if (n_alive == 1) {
      token = survivor;
      ++forced_steps;
    } else {
      token = c.script[next++ % c.script.size()];
    }
    L.sampler_accept(ref.s, token);
    ours.accept(token);
  }
  if (n_forced) *n_forced = forced_steps;
  return "";
}

ReasoningBudget faithful(const Case& c) {
  return ReasoningBudget(c.with_vocab ? qwen3().tokenizer.get() : nullptr, c.start, c.end, c.forced, c.budget,
                         c.initial);
}

struct Tokens {
  int32_t think, end_think;
  TokenSeq words;                   // ordinary one-token words
  TokenSeq msg;                     // a budget message
  int32_t partial = -1, cont = -1;  // a piece ending in a lead byte; one of only continuation bytes
};

const Tokens& tk() {
  static Tokens t = [] {
    Tokens r;
    const TokenSeq a = toks("<think>"), b = toks("</think>");
    EXPECT_EQ(a.size(), 1u);
    EXPECT_EQ(b.size(), 1u);
    r.think = a.at(0);
    r.end_think = b.at(0);
    for (const char* w : {"Hello", " world", " the", " cat", ".", "\n"}) {
      const TokenSeq s = toks(w);
      EXPECT_EQ(s.size(), 1u) << w;
      r.words.push_back(s.at(0));
    }
    r.msg = toks(" I have thought enough.");
    // Byte tokens of a byte-level BPE: find pieces that end mid-character.
    const tok::Tokenizer& T = *qwen3().tokenizer;
    for (int32_t id = 0; id < qwen3().n_vocab && (r.partial < 0 || r.cont < 0); ++id) {
      const std::string p = T.token_to_piece(id, false);
      if (p.size() != 1) continue;
      const auto c = static_cast<unsigned char>(p[0]);
      if (r.partial < 0 && c >= 0xE0 && c < 0xF0) r.partial = id;
      if (r.cont < 0 && (c & 0xC0) == 0x80) r.cont = id;
    }
    EXPECT_GE(r.partial, 0);
    EXPECT_GE(r.cont, 0);
    return r;
  }();
  return t;
}

// The cases: every budget and initial state over several streams.
std::vector<Case> cases() {
  const Tokens& t = tk();
  const TokenSeq w = t.words;
  std::vector<Case> out;
  for (int32_t budget : {0, 1, 3, 10}) {
    for (BudgetState init : {BudgetState::kIdle, BudgetState::kCounting, BudgetState::kDone}) {
      const std::string tag =
          "budget " + std::to_string(budget) + ", initial " + std::to_string(static_cast<int>(init));
      Case base;
      base.start = {{t.think}};
      base.end = {{t.end_think}};
      base.forced = {t.end_think};
      base.budget = budget;
      base.initial = init;

      Case c = base;  // thinks until forced
      c.name = tag + ", exhausted";
      c.script = {w[0], w[1], t.think, w[2], w[3], w[4], w[2], w[3], w[4], w[2], w[3], w[4], w[2], w[3], w[4]};
      out.push_back(c);

      c = base;  // ends naturally after two tokens, then a second block
      c.name = tag + ", natural end and a second block";
      c.script = {t.think, w[0], w[1], t.end_think, w[2], w[3], t.think, w[4], w[5], w[0], w[1], w[2], w[3], w[4]};
      out.push_back(c);

      c = base;  // a message before the end tag
      c.name = tag + ", forced message";
      c.forced = t.msg;
      c.forced.push_back(t.end_think);
      c.script = {t.think, w[0], w[1], w[2], w[3], w[4], w[5], w[0], w[1], w[2], w[3], w[4], w[5]};
      out.push_back(c);

      c = base;  // a multi-byte character cut by the budget
      c.name = tag + ", UTF-8 wait";
      c.script = {t.think, w[0], t.partial, t.cont, t.cont, w[1], t.partial, w[2], w[3], w[4], w[5]};
      out.push_back(c);
      c.name = tag + ", UTF-8 wait, no vocab";
      c.with_vocab = false;
      out.push_back(c);

      c = base;  // manual force while counting
      c.name = tag + ", force()";
      c.script = {t.think, w[0], w[1], w[2], w[3], w[4], w[5], w[0], w[1], w[2], w[3]};
      c.force_at = 3;
      out.push_back(c);
    }
  }
  // Multi-token tags, a start tag split over several tokens with a false start
  // that shares its prefix (a a a b must match a a b), several end sequences
  // of which one is a suffix of another.
  const int32_t a = w[2], b = w[3], x = w[4], y = w[5];
  for (int32_t budget : {0, 1, 3, 10}) {
    Case c;
    c.name = "multi-token tags, budget " + std::to_string(budget);
    c.start = {{a, a, b}};
    c.end = {{x, y}, {y}, {}, {x, y}};
    c.forced = {t.msg[0], x, y};
    c.budget = budget;
    c.script = {a, a, a, b, w[0], w[1], x, w[0], y, a, b, a, a, b, w[0], w[1], w[0], w[1], w[0], w[1], w[0]};
    c.steps = 50;
    out.push_back(c);
    c.name = "two start sequences, budget " + std::to_string(budget);
    c.start = {{a, b}, {t.think}};
    c.end = {{t.end_think}, {x, x}};
    c.forced = {t.end_think};
    c.script = {a, b, w[0], x, x, t.think, w[0], w[1], w[0], w[1], w[0], x, w[1]};
    out.push_back(c);
  }
  return out;
}

TEST(ReasoningBudgetParity, every_step_matches_libllama_common) {
  REQUIRE_SHARED();
  int checked = 0, forced = 0;
  for (const Case& c : cases()) {
    int n = 0;
    const std::string diff = run_case(c, faithful, &n);
    EXPECT_EQ(diff, "");
    ++checked;
    forced += n;
  }
  EXPECT_EQ(checked, 80);
  EXPECT_GT(forced, 50);  // the cases do force (not a vacuous agreement)
}

// Negative controls: a budget one too large, forcing without the message,
// and no UTF-8 wait are all seen to differ.
TEST(ReasoningBudgetParity, negative_controls_differ) {
  REQUIRE_SHARED();
  const Tokens& t = tk();
  Case c;
  c.name = "control";
  c.start = {{t.think}};
  c.end = {{t.end_think}};
  c.forced = t.msg;
  c.forced.push_back(t.end_think);
  c.budget = 3;
  c.script = {t.think, t.words[0], t.partial, t.cont, t.cont, t.words[1], t.words[2], t.words[3], t.words[4]};
  ASSERT_EQ(run_case(c, faithful), "");
  EXPECT_NE(run_case(c,
                     [](const Case& k) {
                       return ReasoningBudget(qwen3().tokenizer.get(), k.start, k.end, k.forced, k.budget + 1,
                                              k.initial);
                     }),
            "");
  EXPECT_NE(run_case(c,
                     [&](const Case& k) {
                       return ReasoningBudget(qwen3().tokenizer.get(), k.start, k.end, {t.end_think}, k.budget,
                                              k.initial);
                     }),
            "");
  EXPECT_NE(
      run_case(c,
               [](const Case& k) { return ReasoningBudget(nullptr, k.start, k.end, k.forced, k.budget, k.initial); }),
      "");
}

TEST(ReasoningBudget, utf8_piece_complete_cases) {
  EXPECT_TRUE(utf8_piece_complete(""));
  EXPECT_TRUE(utf8_piece_complete("abc"));
  EXPECT_TRUE(utf8_piece_complete("a\xC3\xA9"));         // é
  EXPECT_FALSE(utf8_piece_complete("a\xC3"));            // lead byte alone
  EXPECT_FALSE(utf8_piece_complete("\xE4\xB8"));         // 2 of 3
  EXPECT_TRUE(utf8_piece_complete("\xE4\xB8\xAD"));      // 中
  EXPECT_FALSE(utf8_piece_complete("\x80\x80"));         // continuation bytes only
  EXPECT_FALSE(utf8_piece_complete("\xF0\x9F\x98"));     // 3 of 4
  EXPECT_TRUE(utf8_piece_complete("\xF0\x9F\x98\x80"));  // an emoji
}

// ---- Sampler wiring ----

Params greedy_params() {
  Params p;
  p.temp = 0.0f;
  p.seed = 42;
  return p;
}

// With a generation prompt that opens the block, a Sampler with budget N draws
// its own greedy choice N - 1 times (the "\n" after <think> counts), then the
// end tag, then its own choice again.
TEST(ReasoningBudgetSampler, generation_prompt_primes_and_the_end_tag_is_forced) {
  REQUIRE_SHARED();
  const Env& e = qwen3();
  const Tokens& t = tk();
  for (int32_t budget : {1, 3, 10}) {
    Params p = greedy_params();
    p.reasoning_budget_tokens = budget;
    p.reasoning_budget_start = {t.think};
    p.reasoning_budget_end = {{t.end_think}};
    p.reasoning_budget_forced = {t.end_think};
    p.generation_prompt = "<|im_start|>assistant\n<think>\n";
    Sampler s(p, *e.tokenizer, 4096);
    ASSERT_TRUE(s.has_reasoning_budget());
    std::vector<float> row(static_cast<size_t>(e.n_vocab), 0.0f);
    row[static_cast<size_t>(t.words[0])] = 10.0f;  // the model's favourite
    std::vector<int32_t> drawn;
    for (int i = 0; i < budget + 3; ++i) {
      const int32_t id = s.sample(row);
      s.accept(id);
      drawn.push_back(id);
    }
    std::vector<int32_t> want(static_cast<size_t>(budget - 1), t.words[0]);
    want.push_back(t.end_think);
    while (want.size() < drawn.size()) want.push_back(t.words[0]);
    EXPECT_EQ(drawn, want) << "budget " << budget;

    // prime again (a new chat turn): the same again
    s.prime_reasoning_budget(p.generation_prompt);
    std::vector<int32_t> again;
    for (size_t i = 0; i < want.size(); ++i) {
      const int32_t id = s.sample(row);
      s.accept(id);
      again.push_back(id);
    }
    EXPECT_EQ(again, want) << "budget " << budget << " after priming";
  }
}

TEST(ReasoningBudgetSampler, off_without_tags_or_budget_and_prompt_tokens_do_not_count) {
  REQUIRE_SHARED();
  const Env& e = qwen3();
  const Tokens& t = tk();
  Params p = greedy_params();
  p.reasoning_budget_start = {t.think};
  p.reasoning_budget_end = {{t.end_think}};
  p.reasoning_budget_forced = {t.end_think};
  {
    Sampler s(p, *e.tokenizer, 4096);  // budget -1, no lazy grammar: none
    EXPECT_FALSE(s.has_reasoning_budget());
    EXPECT_FALSE(s.reasoning_budget_force());
  }
  p.reasoning_budget_tokens = 2;
  Sampler s(p, *e.tokenizer, 4096);
  ASSERT_TRUE(s.has_reasoning_budget());
  std::vector<float> row(static_cast<size_t>(e.n_vocab), 0.0f);
  row[static_cast<size_t>(t.words[0])] = 10.0f;
  // prompt tokens (accept_grammar = false) do not open the block
  s.accept(t.think, false);
  s.accept(t.words[1], false);
  EXPECT_EQ(s.sample(row), t.words[0]);
  EXPECT_FALSE(s.reasoning_budget_force());  // not counting
  // a generated <think> does; force() ends it at once
  s.accept(t.think);
  EXPECT_EQ(s.sample(row), t.words[0]);
  EXPECT_TRUE(s.reasoning_budget_force());
  EXPECT_EQ(s.sample(row), t.end_think);
}

TEST(ReasoningBudgetSampler, bad_tag_tokens_are_errors) {
  REQUIRE_SHARED();
  const Env& e = qwen3();
  Params p = greedy_params();
  p.reasoning_budget_tokens = 4;
  p.reasoning_budget_start = {1};
  p.reasoning_budget_end = {{2}};
  p.reasoning_budget_forced = {e.n_vocab};  // outside the vocabulary
  EXPECT_THROW(Sampler(p, *e.tokenizer, 4096), Error);
  p.reasoning_budget_forced = {2};
  p.reasoning_budget_end = {{-5}};
  EXPECT_THROW(Sampler(p, *e.tokenizer, 4096), Error);
}

}  // namespace
}  // namespace strix::sampling::test
