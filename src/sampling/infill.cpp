// The fill-in-the-middle stage (llama_sampler_init_infill): picks EOG when the
// end-of-generation tokens together are likely enough, merges the probability
// of tokens whose text is a prefix of another's into the likelier one, and
// drops unlikely non-EOG tokens (below 0.2, then below 1 / (n_non_eog + 1)).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "sampling/stages.h"
#include "tokenizer/tokenizer.h"

namespace strix::sampling {

namespace {

class Infill final : public Step {
 public:
  Infill(const tok::Tokenizer& tokenizer, Workspace& ws) : tokenizer_(tokenizer), ws_(ws) {}
  const char* name() const override { return "infill"; }

  void apply(Candidates& cur) override {
    if (cur.size == 0) return;
    softmax(cur, true, ws_.sort);
    const tok::Vocab& vocab = tokenizer_.vocab();
    float p_txt_sum = 0.0f;
    float p_eog_sum = 0.0f;
    for (size_t i = 0; i < cur.size; ++i) {
      if (vocab.is_eog(cur.data[i].id)) {
        p_eog_sum += cur.data[i].p;
      } else {
        p_txt_sum += cur.data[i].p;
      }
    }
    if (3 * p_eog_sum * static_cast<float>(cur.size) > p_txt_sum) {
      // Keep just the EOG tokens.
      const size_t size_org = cur.size;
      cur.size = 0;
      float p_sum = 0.0f;
      for (size_t i = 0; i < size_org; ++i) {
        if (vocab.is_eog(cur.data[i].id)) {
          p_sum += cur.data[i].p;
          cur.data[cur.size++] = cur.data[i];
        }
      }
      for (size_t i = 0; i < cur.size; ++i) cur.data[i].p /= p_sum;
      return;
    }

    // Combine tokens with a common prefix.
    pieces_.resize(cur.size);
    for (size_t i = 0; i < cur.size; ++i) pieces_[i] = tokenizer_.token_to_piece(cur.data[i].id, /*special=*/false);
    for (size_t i0 = 0; i0 < cur.size; ++i0) {
      for (size_t i1 = 0; i1 < cur.size; ++i1) {
        if (cur.data[i0].logit == -INFINITY) break;
        if (i0 == i1 || cur.data[i1].logit == -INFINITY) continue;
        const std::string& a = pieces_[i0];
        const std::string& b = pieces_[i1];
        if (!a.empty() && a.size() <= b.size() && b.compare(0, a.size(), a) == 0) {
          size_t dst = i0;
          size_t src = i1;
          if (cur.data[i1].p > cur.data[i0].p) std::swap(dst, src);
          cur.data[dst].p += cur.data[src].p;
          cur.data[src].logit = -INFINITY;
          cur.data[src].p = 0.0f;
        }
      }
    }

    size_t n_non_eog = 0;
    size_t size_org = cur.size;
    float p_sum = 0.0f;
    float thold = 0.2f;
    cur.size = 0;
    for (size_t i = 0; i < size_org; ++i) {
      const bool is_eog = vocab.is_eog(cur.data[i].id);
      if (cur.data[i].p < thold && !is_eog) continue;
      if (!is_eog) ++n_non_eog;
      p_sum += cur.data[i].p;
      cur.data[cur.size++] = cur.data[i];
    }
    // No text token left: a single EOT (or EOS).
    if (n_non_eog == 0) {
      cur.size = 1;
      cur.data[0].id = vocab.eot != tok::kNoToken ? vocab.eot : vocab.eos;
      cur.data[0].logit = 1.0f;
      return;
    }
    for (size_t i = 0; i < cur.size; ++i) cur.data[i].p /= p_sum;

    size_org = cur.size;
    p_sum = 0.0f;
    thold = static_cast<float>(1.0 / static_cast<double>(n_non_eog + 1));
    cur.size = 0;
    for (size_t i = 0; i < size_org; ++i) {
      const bool is_eog = vocab.is_eog(cur.data[i].id);
      if (cur.data[i].p < thold && !is_eog) continue;
      p_sum += cur.data[i].p;
      cur.data[cur.size++] = cur.data[i];
    }
    for (size_t i = 0; i < cur.size; ++i) cur.data[i].p /= p_sum;
  }

 private:
  const tok::Tokenizer& tokenizer_;
  Workspace& ws_;
  std::vector<std::string> pieces_;
};

}  // namespace

StepPtr make_infill(const tok::Tokenizer& tokenizer, Workspace& ws) { return std::make_unique<Infill>(tokenizer, ws); }

}  // namespace strix::sampling
