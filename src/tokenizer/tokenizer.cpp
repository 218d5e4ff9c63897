#include "tokenizer/tokenizer.h"

#include <cctype>

#include "core/error.h"
#include "tokenizer/unicode.h"

namespace strix::tok {

Tokenizer::Tokenizer(Vocab vocab) : vocab_(std::move(vocab)) {
  if (vocab_.type == VocabType::kBpe) pre_ = std::make_unique<PreTokenizer>(vocab_.pre.regexes, vocab_.pre.byte_encode);
  if (vocab_.type == VocabType::kUgm) ugm_ = build_ugm(vocab_);
  if (vocab_.type == VocabType::kRwkv) rwkv_ = build_rwkv(vocab_);
}

Tokenizer Tokenizer::from_file(const std::string& path) {
  const auto file = GgufFile::open(path);
  return Tokenizer(Vocab::load(*file));
}

// Cuts special tokens out of the raw text. Each special token (longest first)
// splits every raw fragment at each of its occurrences, left to right; lstrip /
// rstrip tokens also swallow the ASCII whitespace next to them.
std::vector<Tokenizer::Fragment> Tokenizer::partition(std::string_view text, bool parse_special) const {
  std::vector<Fragment> frags;
  if (text.empty()) return frags;
  frags.push_back({kNoToken, 0, text.size()});
  std::vector<Fragment> next;
  for (const int32_t id : vocab_.special_tokens) {
    const TokenInfo& tok = vocab_.tokens[id];
    if (!parse_special && (tok.attr & (kAttrControl | kAttrUnknown))) continue;
    const std::string& needle = tok.text;
    bool any = false;
    for (const Fragment& f : frags) {
      if (f.token != kNoToken || text.substr(f.offset, f.length).find(needle) == std::string_view::npos) continue;
      any = true;
      break;
    }
    if (!any) continue;
    next.clear();
    for (const Fragment& f : frags) {
      if (f.token != kNoToken) {
        next.push_back(f);
        continue;
      }
      size_t base = f.offset, len = f.length;
      while (true) {
        const size_t hit = text.substr(0, base + len).find(needle, base);
        if (hit == std::string_view::npos) {
          if (len > 0) next.push_back({kNoToken, base, len});
          break;
        }
        size_t left_len = hit - base;
        if (tok.attr & kAttrLstrip) {
          while (left_len > 0 && std::isspace(static_cast<unsigned char>(text[base + left_len - 1]))) --left_len;
        }
        if (left_len > 0) next.push_back({kNoToken, base, left_len});
        next.push_back({id, 0, 0});
        size_t right = hit + needle.size();
        size_t right_len = base + len - right;
        if (tok.attr & kAttrRstrip) {
          while (right_len > 0 && std::isspace(static_cast<unsigned char>(text[right]))) {
            ++right;
            --right_len;
          }
        }
        base = right;
        len = right_len;
        if (len == 0) break;
      }
    }
    frags.swap(next);
  }
  return frags;
}

std::vector<int32_t> Tokenizer::tokenize(std::string_view text, bool add_special, bool parse_special) const {
  std::vector<int32_t> out;
  const std::vector<Fragment> frags = partition(text, parse_special);
  if (vocab_.type == VocabType::kWpm) {
    // libllama: [CLS] ... [SEP] whenever add_special, whatever add_bos says
    if (add_special) out.push_back(vocab_.bos);
    for (const Fragment& f : frags) {
      if (f.token != kNoToken) {
        out.push_back(f.token);
      } else {
        tokenize_wpm(text.substr(f.offset, f.length), out);
      }
    }
    if (add_special) out.push_back(vocab_.sep);
    return out;
  }
  if (vocab_.type == VocabType::kRwkv) {
    // libllama adds no bos/eos to RWKV text, whatever add_special says
    for (const Fragment& f : frags) {
      if (f.token != kNoToken) {
        out.push_back(f.token);
      } else {
        tokenize_rwkv(text.substr(f.offset, f.length), out);
      }
    }
    return out;
  }
  if (add_special && vocab_.add_bos) out.push_back(vocab_.bos);
  if (vocab_.type == VocabType::kSpm) {
    bool prev_special = true;  // the text start counts as "after a special token"
    for (const Fragment& f : frags) {
      if (f.token != kNoToken) {
        out.push_back(f.token);
        prev_special = true;
        continue;
      }
      std::string piece;
      if (vocab_.add_space_prefix && prev_special) piece = " ";
      piece.append(text.substr(f.offset, f.length));
      tokenize_spm(std::move(piece), out);
      prev_special = false;
    }
  } else {
    for (const Fragment& f : frags) {
      if (f.token != kNoToken) {
        out.push_back(f.token);
      } else if (vocab_.type == VocabType::kUgm) {
        tokenize_ugm(text.substr(f.offset, f.length), out);
      } else {
        tokenize_bpe(text.substr(f.offset, f.length), out);
      }
    }
  }
  if (add_special && vocab_.add_eos) out.push_back(vocab_.eos);
  return out;
}

std::string Tokenizer::token_to_piece(int32_t token, bool special, bool lstrip) const {
  if (token < 0 || token >= vocab_.n_tokens())
    throw Error("tokenizer: token id " + std::to_string(token) + " is out of range");
  if (!special && (vocab_.tokens[token].attr & (kAttrUnknown | kAttrControl))) return {};
  const std::string& p = vocab_.pieces[token];
  if (lstrip && !p.empty() && p[0] == ' ') return p.substr(1);
  return p;
}

namespace {

// libllama's three clean-up passes over detokenized BPE text.
void clean_spaces(std::string& t) {
  auto pass = [&](auto&& keep_space) {
    if (t.empty()) return;
    std::string out(1, t[0]);
    for (size_t i = 1; i < t.size(); ++i) {
      if (!keep_space(i)) out.pop_back();
      out.push_back(t[i]);
    }
    t.swap(out);
  };
  // " ?" " !" " ." " ,"
  pass([&](size_t i) {
    const char x = t[i];
    return !(t[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ','));
  });
  // " ' " -> "'"
  if (!t.empty()) {
    std::string src = t;  // libllama blanks the dropped space in place (it reads as NUL later)
    std::string out(1, src[0]);
    for (size_t i = 1; i < src.size(); ++i) {
      const char x = src[i];
      if (x == '\'' && i + 1 < src.size() && src[i - 1] == ' ' && src[i + 1] == ' ') {
        out.pop_back();
        src[++i] = '\0';
      }
      out.push_back(x);
    }
    t.swap(out);
  }
  // " 's" " 'm" " 're" " 've" -> no space
  pass([&](size_t i) {
    if (t[i - 1] != ' ' || t[i] != '\'' || i + 1 >= t.size()) return true;
    const char x1 = t[i + 1];
    if (x1 == 's' || x1 == 'm') return false;
    if (x1 == 't' || x1 == 'd') return true;
    if (i + 2 >= t.size()) return true;
    const char x2 = t[i + 2];
    return !((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e'));
  });
}

}  // namespace

std::string Tokenizer::detokenize(std::span<const int32_t> tokens, bool remove_special, bool unparse_special) const {
  bool remove_space = vocab_.add_space_prefix;
  if (remove_special && vocab_.add_bos && !tokens.empty() && tokens.front() == vocab_.bos) {
    remove_space = false;
    tokens = tokens.subspan(1);
  }
  if (remove_special && vocab_.add_eos && !tokens.empty() && tokens.back() == vocab_.eos) {
    tokens = tokens.first(tokens.size() - 1);
  }
  std::string text;
  for (const int32_t id : tokens) {
    text += token_to_piece(id, unparse_special, remove_space);
    remove_space = false;
  }
  if (vocab_.clean_spaces) clean_spaces(text);
  return text;
}

std::string StreamDetokenizer::push(int32_t token) {
  pending_ += tokenizer_.token_to_piece(token, special_, first_ && tokenizer_.vocab().add_space_prefix);
  first_ = false;
  // Hold back a trailing lead byte whose sequence is not complete yet.
  size_t keep = pending_.size();
  for (size_t back = 1; back <= 3 && back <= pending_.size(); ++back) {
    const auto b = static_cast<uint8_t>(pending_[pending_.size() - back]);
    if ((b & 0xC0) == 0x80) continue;  // continuation: look further back
    if (b >= 0xC0 && utf8_len(static_cast<char>(b)) > back) keep = pending_.size() - back;
    break;
  }
  std::string out = pending_.substr(0, keep);
  pending_.erase(0, keep);
  return out;
}

std::string StreamDetokenizer::flush() {
  std::string out;
  out.swap(pending_);
  return out;
}

}  // namespace strix::tok
