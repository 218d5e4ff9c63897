#include "sampling/suppress_tokens.h"

#include <string>

#include "core/error.h"
#include "gguf/reader.h"

namespace strix::sampling {

namespace {
constexpr const char* kKey = "tokenizer.ggml.suppress_tokens";
}

std::vector<int32_t> load_suppress_tokens(const GgufFile& file, int32_t n_vocab) {
  const GgufValue* v = file.find(kKey);
  if (v == nullptr) return {};
  if (!v->is_array() || v->elem_type() != GgufType::INT32) {
    throw Error(std::string(kKey) + " must be an array of int32 token ids, got " + v->to_display(4));
  }
  std::vector<int32_t> out;
  for (const GgufValue& item : v->items()) {
    const int64_t id = item.as_i64();
    if (id >= 0 && id < n_vocab) out.push_back(static_cast<int32_t>(id));  // libllama skips the others silently
  }
  return out;
}

}  // namespace strix::sampling
