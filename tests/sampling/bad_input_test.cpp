// Bad input to the sampler: clear errors, no crash, no silent garbage.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"
#include "sampling/sampler.h"
#include "sampling_test_util.h"
#include "tokenizer/tokenizer.h"

namespace strix::sampling::test {
namespace {

const std::vector<Stage> kDefaultStages = Params{}.stages;

TEST(SamplingStages, parses_names_aliases_and_letters_like_llama_cpp) {
  EXPECT_EQ(parse_stages("penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature", false), kDefaultStages);
  EXPECT_EQ(parse_stages("edskypmxt", true), kDefaultStages);
  EXPECT_EQ(parse_stages("top-k;nucleus;typical;min-p;temp;top-n-sigma;typ;typ-p;typical-p;top-p;infill", false),
            (std::vector<Stage>{Stage::kTopK, Stage::kTopP, Stage::kTypicalP, Stage::kMinP, Stage::kTemperature,
                                Stage::kTopNSigma, Stage::kTypicalP, Stage::kTypicalP, Stage::kTypicalP, Stage::kTopP,
                                Stage::kInfill}));
  EXPECT_EQ(parse_stages("top_k;;temperature;", false), (std::vector<Stage>{Stage::kTopK, Stage::kTemperature}));
  EXPECT_EQ(parse_stages("", false), std::vector<Stage>{});
  EXPECT_EQ(parse_stages("ki", true), (std::vector<Stage>{Stage::kTopK, Stage::kInfill}));
  EXPECT_EQ(parse_stages("top_k;adaptive_p", false), (std::vector<Stage>{Stage::kTopK, Stage::kAdaptiveP}));
  EXPECT_EQ(parse_stages("ka", true), (std::vector<Stage>{Stage::kTopK, Stage::kAdaptiveP}));
}

TEST(SamplingStages, refuses_unknown_names_and_letters) {
  try {
    parse_stages("top_k;bogus;temperature", false);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bogus"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_stages("kq", true), Error);
  EXPECT_THROW(parse_stages("Top_K", false), Error);  // names are case-sensitive in llama.cpp
  EXPECT_THROW(parse_stages("adaptive", false), Error);
  EXPECT_THROW(parse_stages("kA", true), Error);
}

TEST(SamplingBadInput, refuses_nan_and_positive_infinity_logits) {
  const Env env = synthetic(100);
  Params p;
  p.seed = 1;
  Sampler s(p, *env.tokenizer, 64);
  std::vector<float> row(100, 0.5f);
  row[42] = std::numeric_limits<float>::quiet_NaN();
  try {
    s.sample(row);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("42"), std::string::npos) << e.what();
  }
  row[42] = INFINITY;
  EXPECT_THROW(s.sample(row), Error);
  row[42] = -INFINITY;  // a masked token is fine
  EXPECT_NO_THROW(s.sample(row));
}

TEST(SamplingBadInput, refuses_a_row_of_the_wrong_size) {
  const Env env = synthetic(100);
  Sampler s(Params{}, *env.tokenizer, 64);
  EXPECT_THROW(s.sample(std::vector<float>(99, 0.0f)), Error);
  EXPECT_THROW(s.sample(std::vector<float>(101, 0.0f)), Error);
  EXPECT_THROW(s.sample({}), Error);
}

TEST(SamplingBadInput, refuses_an_empty_vocabulary) {
  tok::Vocab v;
  v.model = "llama";
  const tok::Tokenizer t(std::move(v));
  EXPECT_THROW(Sampler(Params{}, t, 64), Error);
}

TEST(SamplingBadInput, refuses_bad_parameters_and_tokens) {
  const Env env = synthetic(100);
  Params p;
  p.mirostat = 3;
  EXPECT_THROW(Sampler(p, *env.tokenizer, 64), Error);
  p = Params{};
  p.logit_bias = {{100, 1.0f}};
  EXPECT_THROW(Sampler(p, *env.tokenizer, 64), Error);
  p.logit_bias = {{-1, 1.0f}};
  EXPECT_THROW(Sampler(p, *env.tokenizer, 64), Error);
  p = Params{};
  EXPECT_THROW(Sampler(p, *env.tokenizer, 0), Error);  // penalty_last_n -1 needs a context size
  p.penalty_last_n = 64;
  p.dry_penalty_last_n = 64;
  Sampler s(p, *env.tokenizer, 0);
  EXPECT_THROW(s.accept(100), Error);
  EXPECT_THROW(s.accept(-5), Error);
  EXPECT_NO_THROW(s.accept(99));
}

TEST(SamplingBadInput, all_masked_row_still_draws_like_libllama) {
  // Every logit -inf: libllama's arithmetic gives NaN probabilities and dist
  // falls back to the last candidate; Strix must do the same, not crash.
  REQUIRE_SHARED();
  Env& env = stories();
  Params p;
  p.seed = 3;
  p.stages = {};
  Sampler ours(p, *env.tokenizer, 64);
  ref::LlamaSampler ref = reference_chain(p, env, 64);
  std::vector<float> row(static_cast<size_t>(env.n_vocab), -INFINITY);
  std::vector<abi::TokenData> cand(row.size());
  for (int32_t i = 0; i < env.n_vocab; ++i) cand[static_cast<size_t>(i)] = {i, -INFINITY, 0.0f};
  abi::TokenDataArray arr{cand.data(), cand.size(), -1, false};
  ref.apply(arr);
  ASSERT_GE(arr.selected, 0);
  EXPECT_EQ(ours.sample(row), arr.data[arr.selected].id);
}

TEST(SamplingBadInput, grammar_that_does_not_parse_is_an_error) {
  const Env env = synthetic(100);
  Params p;
  p.grammar = "root ::= (";
  EXPECT_THROW(Sampler(p, *env.tokenizer, 64), Error);
}

}  // namespace
}  // namespace strix::sampling::test
