// RWKV "world" vocabularies (tokenizer.ggml.model "rwkv"): each token is a
// byte string stored escaped (\t \n \r \xHH, \<c> for c), and text is cut by
// greedy longest match over a byte trie, as libllama does:
//  - at each position the longest token that is a prefix of the remaining
//    bytes wins (a later token with the same bytes replaces an earlier one);
//  - a byte that starts no token becomes the unknown token (one byte);
//  - no bos/eos are ever added.
#include <map>

#include "core/error.h"
#include "tokenizer/tokenizer.h"

namespace strix::tok {

std::string unescape_rwkv_token(std::string_view escaped) {
  std::string out;
  out.reserve(escaped.size());
  bool escaping = false;
  int hex_left = 0;
  uint8_t hex = 0;
  for (const char c : escaped) {
    if (hex_left > 0) {
      // libllama's digit rule: 'a'.. count from 10, anything else from '0'
      // (so upper-case hex digits do not mean what they say; kept as is)
      const auto digit = static_cast<uint8_t>(c >= 'a' ? c - 'a' + 10 : c - '0');
      hex = static_cast<uint8_t>((hex << 4) + digit);
      if (--hex_left == 0) {
        out.push_back(static_cast<char>(hex));
        hex = 0;
      }
      continue;
    }
    if (escaping) {
      escaping = false;
      switch (c) {
        case 't': out.push_back('\t'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 'x': hex_left = 2; break;
        default: out.push_back(c); break;
      }
      continue;
    }
    if (c == '\\') {
      escaping = true;
      continue;
    }
    out.push_back(c);
  }
  return out;
}

// A byte trie; node 0 is the root. value < 0: no token ends here.
struct Tokenizer::RwkvTrie {
  struct Node {
    std::map<uint8_t, uint32_t> next;
    int32_t value = -1;
  };
  std::vector<Node> nodes{1};
};

std::shared_ptr<const Tokenizer::RwkvTrie> Tokenizer::build_rwkv(const Vocab& vocab) {
  auto trie = std::make_shared<RwkvTrie>();
  for (int32_t id = 0; id < vocab.n_tokens(); ++id) {
    const std::string bytes = unescape_rwkv_token(vocab.tokens[id].text);
    uint32_t node = 0;
    for (const char ch : bytes) {
      const auto b = static_cast<uint8_t>(ch);
      auto it = trie->nodes[node].next.find(b);
      if (it == trie->nodes[node].next.end()) {
        trie->nodes.emplace_back();
        it = trie->nodes[node].next.emplace(b, static_cast<uint32_t>(trie->nodes.size() - 1)).first;
      }
      node = it->second;
    }
    trie->nodes[node].value = id;  // the empty token lands on the root, which is never matched
  }
  return trie;
}

void Tokenizer::tokenize_rwkv(std::string_view text, std::vector<int32_t>& out) const {
  const auto& nodes = rwkv_->nodes;
  size_t pos = 0;
  while (pos < text.size()) {
    int32_t best = -1;
    size_t best_end = pos;
    uint32_t node = 0;
    for (size_t p = pos; p < text.size(); ++p) {
      const auto it = nodes[node].next.find(static_cast<uint8_t>(text[p]));
      if (it == nodes[node].next.end()) break;
      node = it->second;
      if (nodes[node].value >= 0) {
        best = nodes[node].value;
        best_end = p + 1;
      }
    }
    if (best_end == pos && node == 0) {
      // no token starts with this byte: libllama emits the unknown token
      // (LLAMA_TOKEN_NULL when the vocabulary has none; we refuse that)
      if (vocab_.unk == kNoToken) {
        throw Error("tokenizer: rwkv vocabulary has no token for byte " +
                    std::to_string(static_cast<uint8_t>(text[pos])) + " and no unknown token");
      }
      out.push_back(vocab_.unk);
      ++pos;
      continue;
    }
    if (best < 0) {
      // a token prefix but no whole token on the path: libllama loops forever here
      throw Error("tokenizer: rwkv vocabulary has no token for the bytes at offset " + std::to_string(pos));
    }
    out.push_back(best);
    pos = best_end;
  }
}

}  // namespace strix::tok
