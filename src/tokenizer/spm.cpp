// SentencePiece-style BPE as libllama runs it for "llama" vocabularies: start
// from UTF-8 characters, repeatedly merge the adjacent pair whose concatenation
// is the vocabulary token with the highest score (ties: leftmost), then emit
// each final symbol as its token, or re-split it along the merges that built
// it, or as <0xNN> byte tokens.
#include <map>
#include <queue>
#include <unordered_map>

#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace strix::tok {

namespace {

struct Symbol {
  int prev;
  int next;
  size_t begin;  // into the session text
  size_t n;      // bytes; 0 once merged into the left neighbour
};

struct Candidate {
  int left;
  int right;
  float score;
  size_t size;
};

// Highest score first; among equal scores the leftmost pair.
struct CandidateOrder {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

class SpmSession {
 public:
  SpmSession(const Vocab& vocab, const std::string& text) : vocab_(vocab), text_(text) {}

  void run(std::vector<int32_t>& out) {
    for (size_t off = 0; off < text_.size();) {
      const size_t n = std::min(utf8_len(text_[off]), text_.size() - off);
      const int index = static_cast<int>(symbols_.size());
      symbols_.push_back({index - 1, off + n == text_.size() ? -1 : index + 1, off, n});
      off += n;
    }
    for (int i = 1; i < static_cast<int>(symbols_.size()); ++i) consider(i - 1, i);
    while (!queue_.empty()) {
      const Candidate c = queue_.top();
      queue_.pop();
      Symbol& l = symbols_[c.left];
      Symbol& r = symbols_[c.right];
      if (l.n == 0 || r.n == 0 || l.n + r.n != c.size) continue;  // stale
      l.n += r.n;
      r.n = 0;
      l.next = r.next;
      if (r.next >= 0) symbols_[r.next].prev = c.left;
      consider(l.prev, c.left);
      consider(c.left, l.next);
    }
    if (symbols_.empty()) return;
    for (int i = 0; i != -1; i = symbols_[i].next) emit(symbols_[i], out);
  }

 private:
  std::string text_of(int left, int right) const {
    return text_.substr(symbols_[left].begin, symbols_[left].n + symbols_[right].n);
  }

  void consider(int left, int right) {
    if (left == -1 || right == -1) return;
    std::string t = text_of(left, right);
    const int32_t id = vocab_.find(t);
    if (id == kNoToken) return;
    queue_.push({left, right, vocab_.tokens[id].score, t.size()});
    built_from_[std::move(t)] = {left, right};  // the latest pair that builds this text
  }

  void emit(const Symbol& s, std::vector<int32_t>& out) const {
    const std::string t = text_.substr(s.begin, s.n);
    if (const int32_t id = vocab_.find(t); id != kNoToken) {
      out.push_back(id);
      return;
    }
    const auto it = built_from_.find(t);
    if (it == built_from_.end()) {
      for (const char ch : t) out.push_back(vocab_.byte_token(static_cast<uint8_t>(ch)));
      return;
    }
    emit(symbols_[it->second.first], out);
    emit(symbols_[it->second.second], out);
  }

  const Vocab& vocab_;
  const std::string& text_;
  std::vector<Symbol> symbols_;
  std::priority_queue<Candidate, std::vector<Candidate>, CandidateOrder> queue_;
  std::unordered_map<std::string, std::pair<int, int>> built_from_;
};

void escape_spaces(std::string& s) {
  std::string out;
  out.reserve(s.size() + s.size() / 2);
  for (const char ch : s) {
    if (ch == ' ') {
      out += "\xe2\x96\x81";
    } else {
      out += ch;
    }
  }
  s.swap(out);
}

}  // namespace

void Tokenizer::tokenize_spm(std::string text, std::vector<int32_t>& out) const {
  if (vocab_.escape_whitespaces) escape_spaces(text);
  SpmSession(vocab_, text).run(out);
}

}  // namespace strix::tok
