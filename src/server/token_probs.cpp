#include "server/token_probs.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

namespace strix::server {

TokenLogprobs token_logprobs(std::span<const float> logits, int32_t sampled, int32_t n, const tok::Tokenizer& tk) {
  // log p_i = l_i - (max + log sum exp(l - max)), the sum in double
  float mx = -std::numeric_limits<float>::infinity();
  for (float l : logits) mx = std::max(mx, l);
  double sum = 0;
  for (float l : logits) sum += std::exp(static_cast<double>(l) - mx);
  const double log_z = static_cast<double>(mx) + std::log(sum);
  auto entry = [&](int32_t id) {
    TokenProb p;
    p.id = id;
    p.piece = tk.token_to_piece(id, /*special=*/true);
    p.logprob = static_cast<float>(static_cast<double>(logits[id]) - log_z);
    return p;
  };
  TokenLogprobs out;
  out.sampled = entry(sampled);
  const size_t k = std::min(static_cast<size_t>(std::max(n, 0)), logits.size());
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(),
                    [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  out.top.reserve(k);
  for (size_t i = 0; i < k; ++i) out.top.push_back(entry(ids[i]));
  return out;
}

}  // namespace strix::server
