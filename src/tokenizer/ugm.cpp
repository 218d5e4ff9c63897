// Unigram (T5 / sentencepiece "unigram") as libllama runs it:
//  1. normalize: at each position take the longest user-defined-token prefix
//     (as a trie walk: the longest path, even if it ends between tokens), else
//     the longest match of the precompiled charsmap (an XOR-compressed double
//     array, XCDA) replaced by its string, else one UTF-8 character (a bad byte
//     becomes U+FFFD); spaces become U+2581, a space is prepended before the
//     first non-space (add_space_prefix) and runs of spaces collapse into one
//     before each word (remove_extra_whitespaces);
//  2. Viterbi over bytes: best score sum of tokens (normal, user-defined with
//     score 0, unused) ending at each position; a character no token covers
//     costs min_score - 10 as the unknown token; consecutive unknowns merge.
#include <algorithm>
#include <cfloat>
#include <map>

#include "core/error.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace strix::tok {

namespace {

class ByteTrie {
 public:
  ByteTrie() : nodes_(1) {}
  void insert(const std::string& key, int32_t value) {
    size_t n = 0;
    for (const char c : key) {
      auto it = nodes_[n].next.find(c);
      if (it == nodes_[n].next.end()) {
        nodes_.push_back({});
        it = nodes_[n].next.emplace(c, nodes_.size() - 1).first;
      }
      n = it->second;
    }
    nodes_[n].value = value;
  }
  // Child of node n by byte c, or -1.
  long child(size_t n, char c) const {
    const auto it = nodes_[n].next.find(c);
    return it == nodes_[n].next.end() ? -1 : static_cast<long>(it->second);
  }
  int32_t value(size_t n) const { return nodes_[n].value; }
  // Bytes of s[0, len) walked from the root before the path ends.
  size_t longest_path(const char* s, size_t len) const {
    size_t n = 0, i = 0;
    for (; i < len; ++i) {
      const long c = child(n, s[i]);
      if (c < 0) break;
      n = static_cast<size_t>(c);
    }
    return i;
  }

 private:
  struct Node {
    std::map<char, size_t> next;
    int32_t value = kNoToken;
  };
  std::vector<Node> nodes_;
};

uint32_t read_u32(const std::string& s, size_t at) {
  return uint32_t(uint8_t(s[at])) | uint32_t(uint8_t(s[at + 1])) << 8 | uint32_t(uint8_t(s[at + 2])) << 16 |
         uint32_t(uint8_t(s[at + 3])) << 24;
}

}  // namespace

struct Tokenizer::UgmTables {
  ByteTrie tokens;
  ByteTrie user_defined;
  double unknown_score = 0;
  // charsmap: XCDA nodes and the NUL-terminated replacement strings
  std::vector<uint32_t> xcda;
  std::string replacements;
};

std::shared_ptr<const Tokenizer::UgmTables> Tokenizer::build_ugm(const Vocab& v) {
  auto t = std::make_shared<UgmTables>();
  float min_score = FLT_MAX;
  for (int32_t id = 0; id < v.n_tokens(); ++id) {
    const TokenInfo& tok = v.tokens[id];
    if (tok.attr & kAttrNormal) min_score = std::min(min_score, tok.score);
    if (tok.attr & (kAttrNormal | kAttrUserDefined | kAttrUnused)) t->tokens.insert(tok.text, id);
    if (tok.attr & kAttrUserDefined) t->user_defined.insert(tok.text, 0);
  }
  t->unknown_score = static_cast<double>(min_score - 10.0f);
  const std::string& m = v.precompiled_charsmap;
  if (!m.empty()) {
    const uint32_t blob = read_u32(m, 0);
    for (size_t i = 0; i + 4 <= blob; i += 4) t->xcda.push_back(read_u32(m, 4 + i));
    t->replacements = m.substr(4 + blob);
  }
  return t;
}

namespace {

struct NormPiece {
  std::string_view text;
  size_t consumed;
};

NormPiece normalize_prefix(const Tokenizer::UgmTables& t, std::string_view in, size_t at);

}  // namespace

void Tokenizer::tokenize_ugm(std::string_view text, std::vector<int32_t>& out) const {
  const UgmTables& t = *ugm_;
  // 1. normalize
  const std::string space = vocab_.escape_whitespaces ? "\xe2\x96\x81" : " ";
  const bool prepend = !vocab_.treat_whitespace_as_suffix && vocab_.add_space_prefix;
  const bool append = vocab_.treat_whitespace_as_suffix && vocab_.add_space_prefix;
  const bool merge = vocab_.remove_extra_whitespaces;
  std::string norm;
  bool prepended = false, in_word = false;
  for (size_t at = 0; at < text.size();) {
    const NormPiece p = normalize_prefix(t, text, at);
    for (const char c : p.text) {
      if (c != ' ') {
        if (!in_word) {
          in_word = true;
          if ((prepend && !prepended) || merge) {
            norm += space;
            prepended = true;
          }
        }
        norm.push_back(c);
      } else {
        in_word = false;
        if (!merge) norm += space;
      }
    }
    at += p.consumed;
  }
  if (append) norm += space;
  const size_t n = norm.size();
  if (n == 0) return;

  // 2. Viterbi: best[i] = the best tokenization of norm[0, i)
  struct Best {
    int32_t token;
    size_t from;
    double score;
  };
  std::vector<Best> best(n + 1, {vocab_.unk, 0, -DBL_MAX});
  best[0] = {vocab_.unk, 0, 0.0};
  for (size_t i = 0; i < n;) {
    const size_t char_len = std::min(utf8_len(norm[i]), n - i);
    const double base = best[i].score;
    bool whole_char = false;
    long node = t.tokens.child(0, norm[i]);
    size_t j = i + 1;
    while (node >= 0 && j <= n) {
      const int32_t id = t.tokens.value(static_cast<size_t>(node));
      if (id != kNoToken) {
        if (j - i == char_len) whole_char = true;
        const double s = base + ((vocab_.tokens[id].attr & kAttrUserDefined) ? 0.0 : vocab_.tokens[id].score);
        if (s > best[j].score) best[j] = {id, i, s};
      }
      node = j < n ? t.tokens.child(static_cast<size_t>(node), norm[j]) : -1;
      ++j;
    }
    if (!whole_char) {
      const double s = base + t.unknown_score;
      if (s > best[i + char_len].score) best[i + char_len] = {vocab_.unk, i, s};
    }
    i += char_len;
  }
  // backtrack; runs of unknown tokens become one
  const size_t start = out.size();
  bool prev_unknown = false;
  for (size_t at = n;;) {
    const Best& b = best[at];
    const bool unknown = b.token == vocab_.unk;
    if (!(prev_unknown && unknown)) out.push_back(b.token);
    if (b.from == 0) break;
    prev_unknown = unknown;
    at = b.from;
  }
  std::reverse(out.begin() + static_cast<long>(start), out.end());
}

namespace {

NormPiece normalize_prefix(const Tokenizer::UgmTables& t, std::string_view in, size_t at) {
  if (at == in.size()) return {{}, 0};
  if (const size_t ud = t.user_defined.longest_path(in.data() + at, in.size() - at); ud > 0)
    return {in.substr(at, ud), ud};

  size_t match_len = 0, match_off = 0;
  if (!t.xcda.empty()) {
    auto node = [&](size_t i) {
      if (i >= t.xcda.size()) throw Error("tokenizer: precompiled_charsmap index out of bounds");
      return t.xcda[i];
    };
    auto base = [&](size_t i) {
      const uint32_t x = node(i);
      return (x >> 10) << ((x & (1u << 9)) >> 6);
    };
    size_t idx = base(0);
    for (size_t k = at; k < in.size(); ++k) {
      const auto c = static_cast<unsigned char>(in[k]);
      if (c == 0) break;
      idx ^= c;
      if ((node(idx) & ((1u << 31) | 0xFF)) != c) break;  // not a child
      const bool leaf = (node(idx) >> 8) & 1;
      idx ^= base(idx);
      if (leaf) {
        match_len = k - at + 1;
        match_off = node(idx) & ((1u << 31) - 1);
      }
    }
  }
  if (match_len > 0) {
    if (match_off >= t.replacements.size()) throw Error("tokenizer: precompiled_charsmap replacement out of bounds");
    const size_t end = t.replacements.find('\0', match_off);
    if (end == std::string::npos) throw Error("tokenizer: unterminated string in precompiled_charsmap");
    return {std::string_view(t.replacements).substr(match_off, end - match_off), match_len};
  }
  // one character, or U+FFFD for a byte that does not start a complete one
  size_t next = at;
  uint32_t cpt = 0;
  if (decode_utf8_one(in, next, cpt)) return {in.substr(at, next - at), next - at};
  return {"\xef\xbf\xbd", 1};
}

}  // namespace

}  // namespace strix::tok
