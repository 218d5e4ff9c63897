// Byte-level BPE as libllama runs it: the pre-tokenizer splits the text into
// pieces (already mapped through the GPT-2 byte table); in each piece, start
// from characters and repeatedly merge the adjacent pair with the lowest merge
// rank (ties: leftmost); a final symbol that is not a token falls back to its
// single-byte tokens (<0xNN> tokens for gemma4's raw UTF-8), silently dropping
// bytes that have none.
#include <queue>

#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace strix::tok {

namespace {

struct Symbol {
  int prev;
  int next;
  size_t begin;
  size_t n;
};

struct Candidate {
  int left;
  int right;
  int32_t rank;
  std::string text;  // left + right when queued; stale once either side changed
};

// Lowest rank first; among equal ranks the leftmost pair.
struct CandidateOrder {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

void bpe_piece(const Vocab& vocab, const std::string& word, std::vector<int32_t>& out) {
  std::vector<Symbol> symbols;
  if (vocab.ignore_merges && vocab.find(word) != kNoToken) {
    out.push_back(vocab.find(word));
    return;
  }
  // gemma4: a run of newlines that is itself a token is kept whole (libllama's
  // merge lookup must never see '\n')
  if (vocab.pre.name == "gemma4" || vocab.pre.name == "granite-embed-multi-311m") {
    if (word.find_first_not_of('\n') == std::string::npos && vocab.find(word) != kNoToken) {
      out.push_back(vocab.find(word));
      return;
    }
  }
  for (size_t off = 0; off < word.size();) {
    const size_t n = std::min(word.size() - off, utf8_len(word[off]));
    const int index = static_cast<int>(symbols.size());
    symbols.push_back({index - 1, off + n == word.size() ? -1 : index + 1, off, n});
    off += n;
  }
  std::priority_queue<Candidate, std::vector<Candidate>, CandidateOrder> queue;
  auto consider = [&](int left, int right) {
    if (left == -1 || right == -1) return;
    std::string l = word.substr(symbols[left].begin, symbols[left].n);
    std::string r = word.substr(symbols[right].begin, symbols[right].n);
    const int32_t rank = vocab.merge_rank(l, r);
    if (rank < 0) return;
    queue.push({left, right, rank, l + r});
  };
  for (int i = 1; i < static_cast<int>(symbols.size()); ++i) consider(i - 1, i);
  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& l = symbols[c.left];
    Symbol& r = symbols[c.right];
    if (l.n == 0 || r.n == 0) continue;
    if (l.n + r.n != c.text.size() || word.compare(l.begin, l.n + r.n, c.text) != 0 || r.begin != l.begin + l.n)
      continue;  // outdated
    l.n += r.n;
    r.n = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[r.next].prev = c.left;
    consider(l.prev, c.left);
    consider(c.left, l.next);
  }
  for (const Symbol& s : symbols) {
    if (s.n == 0) continue;
    const std::string t = word.substr(s.begin, s.n);
    if (const int32_t id = vocab.find(t); id != kNoToken) {
      out.push_back(id);
      continue;
    }
    for (const char ch : t) {
      // byte-level vocabularies: the byte's own one-character token; raw
      // UTF-8 ones (gemma4): its <0xNN> token
      int32_t id = kNoToken;
      if (vocab.pre.byte_encode) {
        id = vocab.find(std::string(1, ch));
      } else {
        static const char* const kHex = "0123456789ABCDEF";
        const auto b = static_cast<uint8_t>(ch);
        id = vocab.find(std::string{'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>'});
      }
      if (id != kNoToken) out.push_back(id);
    }
  }
}

}  // namespace

void Tokenizer::tokenize_bpe(std::string_view text, std::vector<int32_t>& out) const {
  std::string t(text);
  if (vocab_.escape_whitespaces) {
    std::string esc;
    for (const char ch : t) esc += ch == ' ' ? std::string("\xe2\x96\x81") : std::string(1, ch);
    t.swap(esc);
  }
  for (const std::string& word : pre_->split(t)) bpe_piece(vocab_, word, out);
}

}  // namespace strix::tok
