#include "runtime/batch_context.h"

#include <vector>

namespace strix {

void BatchContext::decode_seq(std::span<const int32_t> tokens, int seq, bool all_logits) {
  std::vector<int32_t> pos(tokens.size()), seqs(tokens.size(), seq);
  const int32_t p0 = seq_len(seq);
  for (size_t i = 0; i < tokens.size(); ++i) pos[i] = p0 + static_cast<int32_t>(i);
  std::vector<uint8_t> want;
  if (all_logits) want.assign(tokens.size(), 1);
  decode(tokens, pos, seqs, want);
}

}  // namespace strix
