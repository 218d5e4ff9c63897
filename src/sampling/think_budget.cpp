#include "sampling/think_budget.h"

#include "tokenizer/tokenizer.h"

namespace strix::sampling {

bool template_thinks(const std::string& tmpl) { return tmpl.find(kThinkOpen) != std::string::npos; }

void set_think_budget(Params& p, const tok::Tokenizer& tk, int32_t budget, const std::string& message) {
  // Tags and message are tokenized as llama.cpp does: no BOS, special tokens parsed.
  p.reasoning_budget_tokens = budget;
  p.reasoning_budget_start = tk.tokenize(kThinkOpen, /*add_special=*/false, /*parse_special=*/true);
  p.reasoning_budget_end = {tk.tokenize(kThinkClose, false, true)};
  p.reasoning_budget_forced = tk.tokenize(message + kThinkClose, false, true);
}

}  // namespace strix::sampling
