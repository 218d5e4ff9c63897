// Strix's Sampler against libllama's sampler chain, token for token: for each
// setting both draw from thousands of the same random peaked logit rows and
// accept the same tokens; every draw must be identical (and, where n_probs is
// set, the reported probabilities bit for bit). Negative controls show that a
// one-off change to the chain is caught.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "sampling_test_util.h"

namespace strix::sampling::test {
namespace {

struct Setting {
  std::string name;
  std::function<void(Params&)> set;
  RowOptions rows;
  int steps = 2000;
};

Params base_params(uint32_t seed) {
  Params p;
  p.seed = seed;
  p.n_probs = 8;
  return p;
}

// Runs every setting on env; returns how many failed (each reported).
void expect_all_agree(const Env& env, const std::vector<Setting>& settings, uint32_t seed, int32_t n_ctx = 4096) {
  for (const Setting& s : settings) {
    SCOPED_TRACE(s.name + " (seed " + std::to_string(seed) + ")");
    Params p = base_params(seed);
    s.set(p);
    const RunResult r = run_side_by_side(env, p, s.steps, seed * 7919u + 17u, s.rows, n_ctx);
    EXPECT_EQ(r.first_mismatch, -1) << r.detail;
  }
}

RowOptions repeating() {
  RowOptions r;
  r.repeat_period = 6;
  return r;
}

RowOptions tied() {
  RowOptions r;
  r.tie_step = 0.5f;
  return r;
}

RowOptions masked() {
  RowOptions r;
  r.neg_inf_frac = 0.05f;
  return r;
}

std::vector<Setting> stage_settings() {
  using S = Stage;
  return {
      {"default chain", [](Params&) {}, {}},
      {"default chain, tied logits", [](Params&) {}, tied()},
      {"default chain, -inf entries", [](Params&) {}, masked()},
      {"greedy (temp 0)", [](Params& p) { p.temp = 0.0f; }, tied()},
      {"greedy (temp -1), top_k off",
       [](Params& p) {
         p.temp = -1.0f;
         p.top_k = 0;
       },
       {}},
      {"temperature 1 (stage disabled)", [](Params& p) { p.temp = 1.0f; }, {}},
      {"top_k 40 alone",
       [](Params& p) {
         p.stages = {S::kTopK};
         p.top_k = 40;
       },
       tied()},
      {"top_k 300 alone (bucket sort)",
       [](Params& p) {
         p.stages = {S::kTopK, S::kTemperature};
         p.top_k = 300;
       },
       tied()},
      {"top_p 0.8 alone",
       [](Params& p) {
         p.stages = {S::kTopP};
         p.top_p = 0.8f;
       },
       {}},
      {"top_p 0.5 min_keep 7",
       [](Params& p) {
         p.stages = {S::kTopP, S::kTemperature};
         p.top_p = 0.5f;
         p.min_keep = 7;
       },
       tied()},
      {"min_p 0.1 alone",
       [](Params& p) {
         p.stages = {S::kMinP};
         p.min_p = 0.1f;
       },
       {}},
      {"min_p 0.3 min_keep 5 after top_k",
       [](Params& p) {
         p.stages = {S::kTopK, S::kMinP};
         p.min_p = 0.3f;
         p.min_keep = 5;
       },
       tied()},
      {"typical 0.7 alone",
       [](Params& p) {
         p.stages = {S::kTypicalP};
         p.typ_p = 0.7f;
       },
       {}},
      {"typical 0.5 min_keep 3 with temp",
       [](Params& p) {
         p.stages = {S::kTypicalP, S::kTemperature};
         p.typ_p = 0.5f;
         p.min_keep = 3;
       },
       tied()},
      {"temperature 0.6 alone",
       [](Params& p) {
         p.stages = {S::kTemperature};
         p.temp = 0.6f;
       },
       {}},
      {"temperature 1.7 alone",
       [](Params& p) {
         p.stages = {S::kTemperature};
         p.temp = 1.7f;
       },
       {}},
      {"dynatemp 0.8 +- 0.5, exponent 1.5",
       [](Params& p) {
         p.temp = 0.8f;
         p.dynatemp_range = 0.5f;
         p.dynatemp_exponent = 1.5f;
       },
       {}},
      {"dynatemp alone 1.0 +- 0.7",
       [](Params& p) {
         p.stages = {S::kTemperature};
         p.temp = 1.0f;
         p.dynatemp_range = 0.7f;
       },
       masked()},
      {"xtc 0.5 / 0.1",
       [](Params& p) {
         p.xtc_probability = 0.5f;
         p.xtc_threshold = 0.1f;
       },
       {}},
      {"xtc alone 0.9 / 0.05 min_keep 2",
       [](Params& p) {
         p.stages = {S::kXtc};
         p.xtc_probability = 0.9f;
         p.xtc_threshold = 0.05f;
         p.min_keep = 2;
       },
       {}},
      {"xtc threshold > 0.5 (disabled)",
       [](Params& p) {
         p.xtc_probability = 0.5f;
         p.xtc_threshold = 0.6f;
       },
       {}},
      {"top_n_sigma 1.5", [](Params& p) { p.top_n_sigma = 1.5f; }, {}},
      {"top_n_sigma 0.7 alone, -inf entries",
       [](Params& p) {
         p.stages = {S::kTopNSigma};
         p.top_n_sigma = 0.7f;
       },
       masked()},
      {"penalties repeat 1.3 freq 0.2 present 0.3 last 32",
       [](Params& p) {
         p.penalty_repeat = 1.3f;
         p.penalty_freq = 0.2f;
         p.penalty_present = 0.3f;
         p.penalty_last_n = 32;
       },
       repeating()},
      {"penalties alone, window = context (-1)",
       [](Params& p) {
         p.stages = {S::kPenalties, S::kTemperature};
         p.penalty_repeat = 1.5f;
         p.penalty_last_n = -1;
       },
       repeating()},
      {"penalties window 3, freq only",
       [](Params& p) {
         p.stages = {S::kPenalties};
         p.penalty_freq = 1.0f;
         p.penalty_last_n = 3;
       },
       repeating()},
      {"logit bias",
       [](Params& p) {
         p.logit_bias = {{5, 4.0f}, {17, -2.5f}, {100, 8.0f}, {3, -INFINITY}};
       },
       {}},
      {"suppressed tokens",
       [](Params& p) {
         p.suppress_tokens = {4, 8, 15, 16, 23, 42};
         p.logit_bias = {{8, 3.0f}};
       },
       {}},
      {"logit bias, top_k first",
       [](Params& p) {
         p.stages = {S::kTopK, S::kTemperature};
         p.logit_bias = {{7, 10.0f}, {7, 1.0f}, {9, -INFINITY}};
       },
       {}},
      {"custom order: temperature first",
       [](Params& p) {
         p.stages = {S::kTemperature, S::kMinP, S::kTopP, S::kTopK};
         p.temp = 1.4f;
       },
       {}},
      {"mirostat v1", [](Params& p) { p.mirostat = 1; }, {}},
      {"mirostat v1, tau 3 eta 0.3 temp 1.2",
       [](Params& p) {
         p.mirostat = 1;
         p.mirostat_tau = 3.0f;
         p.mirostat_eta = 0.3f;
         p.temp = 1.2f;
       },
       tied()},
      {"mirostat v2", [](Params& p) { p.mirostat = 2; }, {}},
      {"mirostat v2, tau 2 eta 0.5, tied",
       [](Params& p) {
         p.mirostat = 2;
         p.mirostat_tau = 2.0f;
         p.mirostat_eta = 0.5f;
       },
       tied()},
      {"adaptive-p after the default chain, target 0.5",
       [](Params& p) {
         p.stages.push_back(S::kAdaptiveP);
         p.adaptive_target = 0.5f;
       },
       {}},
      {"adaptive-p alone, target 0.1 decay 0.5, tied and masked",
       [](Params& p) {
         p.stages = {S::kAdaptiveP};
         p.adaptive_target = 0.1f;
         p.adaptive_decay = 0.5f;
       },
       [] {
         RowOptions o;
         o.tie_step = 0.5f;
         o.neg_inf_frac = 0.3f;
         return o;
       }()},
      {"adaptive-p first in the list, min_p, temp 1.5, decay 1.5 (clamped)",
       [](Params& p) {
         p.stages = {S::kAdaptiveP, S::kMinP, S::kTemperature};
         p.adaptive_target = 0.9f;
         p.adaptive_decay = 1.5f;
         p.temp = 1.5f;
       },
       {}},
      {"adaptive-p with a negative target (plain draw)",
       [](Params& p) {
         p.stages = {S::kTopK, S::kAdaptiveP};
         p.adaptive_target = -1.0f;
       },
       {}},
      {"everything on",
       [](Params& p) {
         p.penalty_repeat = 1.1f;
         p.penalty_present = 0.2f;
         p.top_n_sigma = 2.0f;
         p.typ_p = 0.9f;
         p.xtc_probability = 0.3f;
         p.dynatemp_range = 0.3f;
         p.logit_bias = {{11, 2.0f}};
       },
       repeating()},
  };
}

TEST(SamplingParity, every_stage_matches_libllama_on_stories_vocab) {
  REQUIRE_SHARED();
  expect_all_agree(stories(), stage_settings(), 1234);
}

TEST(SamplingParity, several_seeds_default_and_mirostat) {
  REQUIRE_SHARED();
  std::vector<Setting> s = {
      {"default chain", [](Params&) {}, {}, 1000},
      {"xtc + dynatemp",
       [](Params& p) {
         p.xtc_probability = 0.6f;
         p.xtc_threshold = 0.08f;
         p.dynatemp_range = 0.4f;
       },
       {},
       1000},
      {"mirostat v1", [](Params& p) { p.mirostat = 1; }, {}, 1000},
      {"mirostat v2", [](Params& p) { p.mirostat = 2; }, {}, 1000},
  };
  for (uint32_t seed : {0u, 1u, 42u, 0x7fffffffu, 0xFFFFFFFEu}) expect_all_agree(stories(), s, seed);
}

TEST(SamplingParity, random_seed_is_reported_and_reproduces_the_draws) {
  REQUIRE_SHARED();
  Params p;  // seed = LLAMA_DEFAULT_SEED
  Sampler s(p, *stories().tokenizer, 512);
  EXPECT_NE(s.seed(), 0xFFFFFFFFu);
  // run_side_by_side gives libllama the seed Strix drew; the draws must agree.
  const RunResult r = run_side_by_side(stories(), p, 500, 99, {});
  EXPECT_EQ(r.first_mismatch, -1) << r.detail;
  Params fixed;
  fixed.seed = 777;
  EXPECT_EQ(Sampler(fixed, *stories().tokenizer, 512).seed(), 777u);
  fixed.mirostat = 2;
  EXPECT_EQ(Sampler(fixed, *stories().tokenizer, 512).seed(), 777u);
}

TEST(SamplingParity, dry_with_sequence_breakers) {
  REQUIRE_SHARED();
  Env& env = stories();
  std::vector<int32_t> favored;
  for (const char* b : {"\n", ":", "\"", "*", " once", "."}) {
    for (int32_t t : env.tokenizer->tokenize(b, false, false)) favored.push_back(t);
  }
  RowOptions loops = repeating();
  loops.favored = favored;
  RowOptions loops3 = loops;
  loops3.repeat_period = 3;
  using S = Stage;
  std::vector<Setting> s = {
      {"dry 0.8 / 1.75 / 2, window = context", [](Params& p) { p.dry_multiplier = 0.8f; }, loops},
      {"dry alone 1.5 / 2.0 / 3, window 40",
       [](Params& p) {
         p.stages = {S::kDry, S::kTemperature};
         p.dry_multiplier = 1.5f;
         p.dry_base = 2.0f;
         p.dry_allowed_length = 3;
         p.dry_penalty_last_n = 40;
       },
       loops3},
      {"dry with multi-token breakers",
       [](Params& p) {
         p.dry_multiplier = 1.0f;
         p.dry_sequence_breakers = {"\n", "Once upon", "a time", "\"Hi", "\xe2\x80\x9c", "", "."};
         p.dry_allowed_length = 1;
       },
       loops},
      {"dry huge base (exponent clamp)",
       [](Params& p) {
         p.stages = {S::kDry, S::kTopK};
         p.dry_multiplier = 0.5f;
         p.dry_base = 40.0f;
         p.dry_allowed_length = 0;
       },
       loops3},
      {"dry disabled by base < 1",
       [](Params& p) {
         p.dry_multiplier = 0.8f;
         p.dry_base = 0.9f;
       },
       loops},
      {"dry + penalties",
       [](Params& p) {
         p.dry_multiplier = 0.8f;
         p.penalty_repeat = 1.2f;
       },
       loops},
  };
  expect_all_agree(env, s, 4321, 256);
}

TEST(SamplingParity, ignore_eos_and_infill) {
  REQUIRE_SHARED();
  Env& env = stories();
  RowOptions eos_peaks;
  eos_peaks.favored = {env.tokenizer->vocab().eos};
  std::vector<Setting> s = {
      {"ignore_eos", [](Params& p) { p.ignore_eos = true; }, eos_peaks},
      {"ignore_eos greedy",
       [](Params& p) {
         p.ignore_eos = true;
         p.temp = 0.0f;
       },
       eos_peaks},
      {"infill after top_k/top_p",
       [](Params& p) {
         p.stages = {Stage::kTopK, Stage::kTopP, Stage::kInfill};
         p.top_k = 20;
       },
       eos_peaks, 1000},
  };
  expect_all_agree(env, s, 55, 512);
}

TEST(SamplingParity, reset_reseeds_and_clears_history) {
  REQUIRE_SHARED();
  Params p = base_params(2024);
  p.penalty_repeat = 1.4f;
  p.mirostat = 0;
  p.dry_multiplier = 0.7f;
  const RunResult r = run_side_by_side(stories(), p, 400, 3, repeating(), 512, nullptr, /*reset_halfway=*/true);
  EXPECT_EQ(r.first_mismatch, -1) << r.detail;
  Params m = base_params(2024);
  m.mirostat = 2;
  const RunResult r2 = run_side_by_side(stories(), m, 400, 4, {}, 512, nullptr, /*reset_halfway=*/true);
  EXPECT_EQ(r2.first_mismatch, -1) << r2.detail;
}

TEST(SamplingParity, grammar_constrained_sampling) {
  REQUIRE_SHARED();
  using S = Stage;
  std::vector<Setting> s = {
      {"grammar, default chain", [](Params& p) { p.grammar = "root ::= ([a-z]+ \" \")* [a-z]+ \".\"\n"; }, {}, 300},
      {"grammar, greedy",
       [](Params& p) {
         p.grammar = "root ::= (\"the\" | \"a\" | [a-z]+) (\" \" [a-z]+)*\n";
         p.temp = 0;
       },
       {},
       300},
      {"grammar, top_k only",
       [](Params& p) {
         p.grammar = "root ::= [A-Z] [a-z ]* \"!\"\n";
         p.stages = {S::kTopK};
         p.top_k = 5;
       },
       {},
       300},
  };
  expect_all_agree(stories(), s, 77, 512);
}

TEST(SamplingParity, prompt_tokens_feed_penalties_but_not_the_grammar) {
  REQUIRE_SHARED();
  Params p = base_params(19);
  p.grammar = "root ::= [a-z]+ (\" \" [a-z]+)* \".\"\n";
  p.penalty_repeat = 1.5f;
  p.dry_multiplier = 0.8f;
  // A prompt the grammar could not accept (capitals, punctuation).
  const std::vector<int32_t> prompt = stories().tokenizer->tokenize("Once upon a time, Tom said: \"Hi!\"", true, false);
  const RunResult r = run_side_by_side(stories(), p, 200, 21, repeating(), 512, nullptr, false, prompt);
  EXPECT_EQ(r.first_mismatch, -1) << r.detail;
}

TEST(SamplingParity, lazy_grammar_triggered_by_pattern_or_token) {
  REQUIRE_SHARED();
  const int32_t the = stories().tokenizer->tokenize(" the", false, false).front();
  RowOptions rows;
  rows.favored = {the};  // make the trigger come up
  // The grammar is fed the text from the trigger on (the pattern's capture
  // group, or the trigger token itself), so it starts with " the".
  const std::string gbnf = "root ::= \" the\" [a-z ]* \".\"\n";
  for (int variant = 0; variant < 2; ++variant) {
    SCOPED_TRACE(variant == 0 ? "trigger pattern" : "trigger token");
    Params p = base_params(31);
    p.grammar = gbnf;
    p.grammar_lazy = true;
    if (variant == 0) {
      p.grammar_trigger_patterns = {"[\\s\\S]*?( the)[\\s\\S]*"};
    } else {
      p.grammar_trigger_tokens = {the};
    }
    const RunResult r = run_side_by_side(stories(), p, 300, 13, rows, 512);
    EXPECT_EQ(r.first_mismatch, -1) << r.detail;
    EXPECT_NE(std::find(r.tokens.begin(), r.tokens.end(), the), r.tokens.end()) << "the trigger never came up";
  }
}

TEST(SamplingParity, large_vocab_sorts_and_nucleus_paths) {
  // 32,000 synthetic tokens: the bucket sort (top_k > 128), top-p's 256-entry
  // head and its widening to the full array, min-p's unsorted path.
  const Env env = synthetic(32000);
  using S = Stage;
  RowOptions flat;
  flat.sigma = 0.7f;
  flat.n_peaks = 0;
  RowOptions flat_tied = flat;
  flat_tied.tie_step = 0.125f;
  std::vector<Setting> s = {
      {"default chain", [](Params&) {}, {}, 200},
      {"top_k 5000",
       [](Params& p) {
         p.stages = {S::kTopK, S::kTemperature};
         p.top_k = 5000;
         p.temp = 1.3f;
       },
       flat_tied, 150},
      {"top_p 0.3 alone (head of 256 suffices)",
       [](Params& p) {
         p.stages = {S::kTopP};
         p.top_p = 0.3f;
       },
       {},
       200},
      {"top_p 0.9 alone, flat (head widened)",
       [](Params& p) {
         p.stages = {S::kTopP};
         p.top_p = 0.9f;
       },
       flat, 100},
      {"top_p 0.9, flat and tied",
       [](Params& p) {
         p.stages = {S::kTopP, S::kMinP};
         p.top_p = 0.9f;
         p.min_p = 0.01f;
       },
       flat_tied, 100},
      {"min_p 0.2 alone",
       [](Params& p) {
         p.stages = {S::kMinP};
         p.min_p = 0.2f;
       },
       flat, 150},
      {"typical 0.6 after top_k 1000",
       [](Params& p) {
         p.stages = {S::kTopK, S::kTypicalP};
         p.top_k = 1000;
         p.typ_p = 0.6f;
       },
       flat, 100},
      {"top_n_sigma 2 alone",
       [](Params& p) {
         p.stages = {S::kTopNSigma};
         p.top_n_sigma = 2.0f;
       },
       flat, 100},
      {"dynatemp alone",
       [](Params& p) {
         p.stages = {S::kTemperature};
         p.dynatemp_range = 0.5f;
       },
       flat, 100},
      {"mirostat v1", [](Params& p) { p.mirostat = 1; }, {}, 150},
      {"mirostat v2", [](Params& p) { p.mirostat = 2; }, flat, 150},
      {"penalties over the full vocabulary",
       [](Params& p) {
         p.stages = {S::kPenalties, S::kTopK};
         p.penalty_repeat = 2.0f;
       },
       repeating(), 150},
  };
  expect_all_agree(env, s, 31337);
}

TEST(SamplingParity, llama3_vocab_default_chain_with_dry) {
  REQUIRE_SHARED();  // the llama3 vocabulary comes from node_modules, the gate is the shared data like the rest
  Env& env = llama3();
  RowOptions loops = repeating();
  for (int32_t t : env.tokenizer->tokenize("\n", false, false)) loops.favored.push_back(t);
  std::vector<Setting> s = {
      {"default chain + dry + penalties",
       [](Params& p) {
         p.dry_multiplier = 0.8f;
         p.penalty_repeat = 1.1f;
       },
       loops, 120},
      {"ignore_eos", [](Params& p) { p.ignore_eos = true; }, {}, 60},
  };
  expect_all_agree(env, s, 8, 1024);
}

TEST(SamplingParity, describe_names_the_chain_as_libllama) {
  REQUIRE_SHARED();
  Env& env = stories();
  std::vector<std::function<void(Params&)>> variants = {
      [](Params&) {},
      [](Params& p) {
        p.top_k = 0;
        p.top_p = 1.0f;
        p.min_p = 0.0f;
        p.temp = 1.0f;
      },
      [](Params& p) {
        p.dry_multiplier = 0.5f;
        p.penalty_repeat = 1.1f;
        p.xtc_probability = 0.1f;
        p.top_n_sigma = 1.0f;
        p.typ_p = 0.5f;
        p.logit_bias = {{1, 1.0f}};
      },
      [](Params& p) { p.mirostat = 1; },
      [](Params& p) {
        p.mirostat = 2;
        p.temp = 1.0f;
      },
      [](Params& p) {
        p.stages = {Stage::kInfill, Stage::kTemperature};
        p.dynatemp_range = 0.2f;
      },
      [](Params& p) {
        p.stages = {Stage::kAdaptiveP, Stage::kTopK};
        p.adaptive_target = 0.4f;
      },
  };
  for (size_t i = 0; i < variants.size(); ++i) {
    SCOPED_TRACE("variant " + std::to_string(i));
    Params p = base_params(1);
    variants[i](p);
    const Sampler ours(p, *env.tokenizer, 512);
    EXPECT_EQ(ours.describe(), "sampler chain: " + reference_chain(p, env, 512).describe());
  }
}

// ---- negative controls: a deliberately different chain must diverge ----

TEST(SamplingParity, negative_control_top_k_41_vs_40_diverges) {
  REQUIRE_SHARED();
  Params p = base_params(5);
  p.stages = {Stage::kTopK, Stage::kTemperature};
  p.top_k = 40;
  p.temp = 1.5f;
  p.n_probs = 0;  // tokens alone must show the difference
  Params other = p;
  other.top_k = 41;
  RowOptions flat;
  flat.sigma = 0.5f;
  const RunResult r = run_side_by_side(stories(), p, 2000, 5, flat, 512, &other);
  EXPECT_GE(r.first_mismatch, 0) << "top_k 40 and 41 drew the same 2000 tokens";
}

TEST(SamplingParity, negative_control_other_seed_diverges) {
  REQUIRE_SHARED();
  Params p = base_params(100);
  p.n_probs = 0;  // tokens alone must show the difference
  Params other = p;
  other.seed = 101;
  const RunResult r = run_side_by_side(stories(), p, 500, 6, {}, 512, &other);
  EXPECT_GE(r.first_mismatch, 0);
}

TEST(SamplingParity, negative_control_stage_order_diverges) {
  REQUIRE_SHARED();
  Params p = base_params(9);
  p.stages = {Stage::kMinP, Stage::kTemperature};
  p.min_p = 0.2f;
  p.temp = 2.0f;
  p.n_probs = 0;  // tokens alone must show the difference
  Params other = p;
  other.stages = {Stage::kTemperature, Stage::kMinP};
  const RunResult r = run_side_by_side(stories(), p, 2000, 7, {}, 512, &other);
  EXPECT_GE(r.first_mismatch, 0);
}

TEST(SamplingParity, negative_control_penalty_window_diverges) {
  REQUIRE_SHARED();
  Params p = base_params(11);
  p.penalty_repeat = 1.5f;
  p.penalty_last_n = 16;
  p.n_probs = 0;  // tokens alone must show the difference
  Params other = p;
  other.penalty_last_n = 15;
  const RunResult r = run_side_by_side(stories(), p, 2000, 8, repeating(), 512, &other);
  EXPECT_GE(r.first_mismatch, 0);
}

TEST(SamplingParity, adaptive_p_thousands_of_steps_with_reset) {
  REQUIRE_SHARED();
  Params p = base_params(77);
  p.stages = {Stage::kTopK, Stage::kTemperature, Stage::kAdaptiveP};
  p.top_k = 0;
  p.adaptive_target = 0.3f;
  p.adaptive_decay = 0.95f;
  p.temp = 1.2f;
  RowOptions flat;
  flat.sigma = 1.0f;
  const RunResult r = run_side_by_side(stories(), p, 3000, 31, flat, 512, nullptr, /*reset_halfway=*/true);
  EXPECT_EQ(r.first_mismatch, -1) << r.detail;
  // the seed the chain reports (llama_sampler_get_seed) for a fixed seed
  EXPECT_EQ(Sampler(p, *stories().tokenizer, 512).seed(), reference_chain(p, stories(), 512).seed());
}

TEST(SamplingParity, negative_control_adaptive_p_target_diverges) {
  REQUIRE_SHARED();
  Params p = base_params(78);
  p.stages = {Stage::kTemperature, Stage::kAdaptiveP};
  p.adaptive_target = 0.3f;
  p.n_probs = 0;  // tokens alone must show the difference
  Params other = p;
  other.adaptive_target = 0.31f;
  RowOptions flat;
  flat.sigma = 1.0f;
  const RunResult r = run_side_by_side(stories(), p, 2000, 32, flat, 512, &other);
  EXPECT_GE(r.first_mismatch, 0) << "adaptive-p targets 0.3 and 0.31 drew the same 2000 tokens";
  Params plain = p;
  plain.stages = {Stage::kTemperature};  // dist instead of adaptive-p
  const RunResult d = run_side_by_side(stories(), p, 2000, 32, flat, 512, &plain);
  EXPECT_GE(d.first_mismatch, 0) << "adaptive-p drew what dist draws";
}

TEST(SamplingParity, negative_control_probabilities_are_compared) {
  // Same tokens can hide different probabilities: a temperature of 0.8 vs
  // 0.8000001 must show up in the reported top probabilities.
  REQUIRE_SHARED();
  Params p = base_params(12);
  Params other = p;
  other.temp = 0.8000001f;
  const RunResult r = run_side_by_side(stories(), p, 200, 9, {}, 512, &other);
  EXPECT_GE(r.first_mismatch, 0);
}

}  // namespace
}  // namespace strix::sampling::test
