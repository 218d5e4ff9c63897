// Each Strix stage against the same libllama sampler alone: after one apply on
// the same candidates, the arrays must be identical entry for entry (id, logit
// and probability bit for bit), with the same size, sorted flag and selection.
// This pins the arithmetic and the sort order of every stage separately.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "sampling/stages.h"
#include "sampling_test_util.h"

namespace strix::sampling::test {
namespace {

struct StageCase {
  std::string name;
  std::function<void(ref::LlamaSampler&)> make_ref;
  std::function<StepPtr(Workspace&)> make_ours;
  bool presorted = false;  // feed a sorted array (as after top-k)
};

std::string compare(const abi::TokenDataArray& a, const Candidates& b) {
  if (a.size != b.size) return "size " + std::to_string(a.size) + " vs " + std::to_string(b.size);
  if (a.selected != b.selected) return "selected " + std::to_string(a.selected) + " vs " + std::to_string(b.selected);
  if (a.sorted != b.sorted) return "sorted flag differs";
  for (size_t i = 0; i < a.size; ++i) {
    const abi::TokenData& x = a.data[i];
    const TokenData& y = b.data[i];
    if (x.id != y.id || std::memcmp(&x.logit, &y.logit, 4) != 0 || std::memcmp(&x.p, &y.p, 4) != 0) {
      return "entry " + std::to_string(i) + ": libllama {" + std::to_string(x.id) + ", " + std::to_string(x.logit) +
             ", " + std::to_string(x.p) + "} Strix {" + std::to_string(y.id) + ", " + std::to_string(y.logit) + ", " +
             std::to_string(y.p) + "}";
    }
  }
  return {};
}

void check_cases(int32_t n_vocab, const std::vector<StageCase>& cases, const RowOptions& ro, int rows) {
  for (const StageCase& c : cases) {
    SCOPED_TRACE(c.name);
    ref::LlamaSampler ref;
    c.make_ref(ref);
    Workspace ws;
    StepPtr ours = c.make_ours(ws);
    RowGen gen(n_vocab, 12345, ro);
    std::vector<int32_t> history;
    std::vector<abi::TokenData> a(static_cast<size_t>(n_vocab));
    std::vector<TokenData> b(static_cast<size_t>(n_vocab));
    for (int r = 0; r < rows; ++r) {
      const std::vector<float>& row = gen.next(history);
      for (int32_t i = 0; i < n_vocab; ++i) {
        a[static_cast<size_t>(i)] = {i, row[static_cast<size_t>(i)], 0.0f};
        b[static_cast<size_t>(i)] = {i, row[static_cast<size_t>(i)], 0.0f};
      }
      abi::TokenDataArray aa{a.data(), a.size(), -1, false};
      Candidates bb{b.data(), b.size(), -1, false};
      if (c.presorted) {
        ref::LlamaSampler k;
        k.top_k(n_vocab);
        k.apply(aa);
        Workspace w2;
        make_top_k(n_vocab, w2)->apply(bb);
      }
      ref.apply(aa);
      ours->apply(bb);
      const std::string diff = compare(aa, bb);
      ASSERT_TRUE(diff.empty()) << "row " << r << ": " << diff;
      const int32_t tok = aa.data[aa.selected >= 0 ? aa.selected : 0].id;
      ref.accept(tok);
      ours->accept(tok);
      history.push_back(tok);
    }
  }
}

std::vector<StageCase> cases(int32_t n_vocab) {
  return {
      {"dist", [](ref::LlamaSampler& r) { r.dist(7); }, [](Workspace&) { return make_dist(7); }},
      {"dist sorted", [](ref::LlamaSampler& r) { r.dist(7); }, [](Workspace&) { return make_dist(7); }, true},
      {"top_k 40", [](ref::LlamaSampler& r) { r.top_k(40); }, [](Workspace& w) { return make_top_k(40, w); }},
      {"top_k 300", [](ref::LlamaSampler& r) { r.top_k(300); }, [](Workspace& w) { return make_top_k(300, w); }},
      {"top_p 0.8", [](ref::LlamaSampler& r) { r.top_p(0.8f, 1); },
       [](Workspace& w) { return make_top_p(0.8f, 1, w); }},
      {"top_p 0.99 sorted", [](ref::LlamaSampler& r) { r.top_p(0.99f, 1); },
       [](Workspace& w) { return make_top_p(0.99f, 1, w); }, true},
      {"min_p 0.1", [](ref::LlamaSampler& r) { r.min_p(0.1f, 1); },
       [](Workspace& w) { return make_min_p(0.1f, 1, w); }},
      {"min_p 0.05 sorted", [](ref::LlamaSampler& r) { r.min_p(0.05f, 3); },
       [](Workspace& w) { return make_min_p(0.05f, 3, w); }, true},
      {"typical 0.7", [](ref::LlamaSampler& r) { r.typical(0.7f, 1); },
       [](Workspace& w) { return make_typical(0.7f, 1, w); }},
      {"temp 0.7", [](ref::LlamaSampler& r) { r.temp(0.7f); }, [](Workspace&) { return make_temp(0.7f); }},
      {"temp 0", [](ref::LlamaSampler& r) { r.temp(0.0f); }, [](Workspace&) { return make_temp(0.0f); }},
      {"temp_ext 0.8", [](ref::LlamaSampler& r) { r.temp_ext(0.8f, 0.0f, 1.0f); },
       [](Workspace& w) { return make_temp_ext(0.8f, 0.0f, 1.0f, w); }},
      {"dynatemp", [](ref::LlamaSampler& r) { r.temp_ext(0.8f, 0.5f, 1.5f); },
       [](Workspace& w) { return make_temp_ext(0.8f, 0.5f, 1.5f, w); }},
      {"xtc", [](ref::LlamaSampler& r) { r.xtc(0.7f, 0.1f, 1, 3); },
       [](Workspace& w) { return make_xtc(0.7f, 0.1f, 1, 3, w); }},
      {"top_n_sigma", [](ref::LlamaSampler& r) { r.top_n_sigma(1.5f); },
       [](Workspace& w) { return make_top_n_sigma(1.5f, w); }},
      {"penalties", [n_vocab](ref::LlamaSampler& r) { r.penalties(n_vocab, 16, 1.3f, 0.2f, 0.3f); },
       [n_vocab](Workspace&) { return make_penalties(n_vocab, 16, 1.3f, 0.2f, 0.3f); }},
      {"mirostat", [n_vocab](ref::LlamaSampler& r) { r.mirostat(n_vocab, 5, 5.0f, 0.1f, 100); },
       [n_vocab](Workspace& w) { return make_mirostat(n_vocab, 5, 5.0f, 0.1f, 100, w); }},
      {"mirostat_v2", [](ref::LlamaSampler& r) { r.mirostat_v2(5, 5.0f, 0.1f); },
       [](Workspace& w) { return make_mirostat_v2(5, 5.0f, 0.1f, w); }},
  };
}

TEST(SamplingStage, each_stage_leaves_the_same_array_small_vocab) {
  RowOptions ro;
  ro.repeat_period = 5;
  check_cases(512, cases(512), ro, 300);
}

TEST(SamplingStage, each_stage_leaves_the_same_array_tied_logits) {
  RowOptions ro;
  ro.tie_step = 0.5f;
  check_cases(512, cases(512), ro, 200);
}

TEST(SamplingStage, each_stage_leaves_the_same_array_masked_logits) {
  RowOptions ro;
  ro.neg_inf_frac = 0.05f;
  check_cases(512, cases(512), ro, 200);
}

TEST(SamplingStage, each_stage_leaves_the_same_array_large_vocab) {
  RowOptions ro;
  ro.sigma = 0.8f;
  check_cases(32000, cases(32000), ro, 20);
}

}  // namespace
}  // namespace strix::sampling::test
