#include "runtime/batch_context.h"

namespace strix {

void BatchContext::decode_seq(std::span<const int32_t> tokens, int seq, bool all_logits) {
  const int32_t p0 = seq_len(seq);
  one_pos_.resize(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) one_pos_[i] = p0 + static_cast<int32_t>(i);
  one_seq_.assign(tokens.size(), seq);
  one_want_.assign(all_logits ? tokens.size() : 0, 1);
  decode(tokens, one_pos_, one_seq_, one_want_);
}

}  // namespace strix
