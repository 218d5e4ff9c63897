// adaptive-p (llama_sampler_init_adaptive_p of the pinned build): a final
// sampler, like dist, that favours tokens whose probability is near a target.
// It keeps an exponential moving average of the ORIGINAL probabilities of the
// tokens it picked and aims each step at 2 * target - average, so that the
// picks average out at the target. Each candidate's probability p becomes the
// logit 5 - 10 d^2 / (1 + d), d = |p - adapted| / 0.3 (quadratic near the
// aim, linear in the tails), then it draws from the softmax of those logits.
// A negative target disables the transform: it just draws from the softmax.
#include <algorithm>
#include <cmath>
#include <random>

#include "sampling/stages.h"

namespace strix::sampling {

namespace {

constexpr float kWidth = 0.3f;
constexpr float kPeakLogit = 5.0f;
constexpr float kSharpness = 10.0f;
constexpr float kInvWidth = 1.0f / kWidth;

class AdaptiveP final : public Step {
 public:
  AdaptiveP(float target, float decay, uint32_t seed, Workspace& ws)
      : target_(target),
        decay_(std::clamp(decay, 0.0f, 0.99f)),
        seed_(seed),
        seed_cur_(resolve_seed(seed)),
        rng_(seed_cur_),
        ws_(ws) {
    prime();
  }
  const char* name() const override { return "adaptive-p"; }
  // No seed() override: llama_sampler_get_seed of the pinned build does not
  // know adaptive-p and reports LLAMA_DEFAULT_SEED for it, so does Strix.

  void apply(Candidates& cur) override {
    softmax(cur, /*do_sort=*/false, ws_.sort);
    if (target_ < 0.0f) {
      cur.selected = discrete_draw(cur, rng_, ws_.cum);
      return;
    }
    original_.resize(cur.size);
    for (size_t i = 0; i < cur.size; ++i) original_[i] = cur.data[i].p;

    const float target = std::clamp(target_, 0.0f, 1.0f);
    const float adapted =
        std::clamp(total_weight_ == 0.0f ? target : 2.0f * target - (weighted_sum_ / total_weight_), 0.0f, 1.0f);
    for (size_t i = 0; i < cur.size; ++i) {
      if (cur.data[i].logit == -INFINITY) continue;  // masked candidates stay masked
      const float d = std::fabs((cur.data[i].p - adapted) * kInvWidth);
      cur.data[i].logit = kPeakLogit - kSharpness * d * d / (1.0f + d);
    }
    softmax(cur, /*do_sort=*/false, ws_.sort);
    const int idx = discrete_draw(cur, rng_, ws_.cum);
    cur.selected = idx;
    pending_id_ = cur.data[idx].id;
    pending_idx_ = idx;
  }

  // Only the token this sampler just picked updates the average (accepting
  // another token, e.g. one a grammar forced, just clears the pending pick).
  void accept(int32_t token) override {
    if (pending_idx_ >= 0 && pending_id_ == token) {
      weighted_sum_ = original_[static_cast<size_t>(pending_idx_)] + decay_ * weighted_sum_;
      total_weight_ = 1.0f + decay_ * total_weight_;
    }
    pending_id_ = -1;
    pending_idx_ = -1;
  }

  void reset() override {
    prime();
    pending_id_ = -1;
    pending_idx_ = -1;
    seed_cur_ = resolve_seed(seed_);
    rng_.seed(seed_cur_);
  }

 private:
  // The history starts as if every earlier pick had hit the target.
  void prime() {
    weighted_sum_ = target_ / (1.0f - decay_);
    total_weight_ = 1.0f / (1.0f - decay_);
  }

  const float target_;
  const float decay_;
  const uint32_t seed_;
  uint32_t seed_cur_;
  std::mt19937 rng_;
  float weighted_sum_ = 0.0f;
  float total_weight_ = 0.0f;
  std::vector<float> original_;
  int32_t pending_id_ = -1;
  int pending_idx_ = -1;
  Workspace& ws_;
};

}  // namespace

StepPtr make_adaptive_p(float target, float decay, uint32_t seed, Workspace& ws) {
  return std::make_unique<AdaptiveP>(target, decay, seed, ws);
}

}  // namespace strix::sampling
