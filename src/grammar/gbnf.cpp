// GBNF parser: llama.cpp's grammar syntax, rule numbering and rewrite of
// repetitions, written against the behaviour of the pinned libllama.
#include "grammar/gbnf.h"

#include <algorithm>
#include <map>
#include <string_view>

#include "core/error.h"
#include "tokenizer/tokenizer.h"

namespace strix::grammar {
namespace {

// Repetitions ({m,n}, and the product of nested ones) above this are refused,
// as llama.cpp's MAX_REPETITION_THRESHOLD.
constexpr uint64_t kMaxRepetitions = 2000;
constexpr uint64_t kNoMax = UINT64_MAX;

bool is_digit(char c) { return '0' <= c && c <= '9'; }
bool is_word_char(char c) { return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || c == '-' || is_digit(c); }

class Parser {
 public:
  Parser(std::string_view text, const tok::Tokenizer* tokenizer) : src_(text), tokenizer_(tokenizer) {}

  void parse() {
    size_t pos = skip_space(0, true);
    while (at(pos)) pos = parse_rule(pos);
    for (size_t id = 0; id < rules_.size(); ++id) {
      if (rules_[id].empty()) fail_plain("undefined rule '" + name_of(static_cast<uint32_t>(id)) + "'");
      for (const Element& e : rules_[id]) {
        if (e.type == ElementType::kRuleRef && (e.value >= rules_.size() || rules_[e.value].empty())) {
          fail_plain("undefined rule '" + name_of(e.value) + "' (used in rule '" + name_of(static_cast<uint32_t>(id)) +
                     "')");
        }
      }
    }
    if (rules_.empty()) fail_plain("the grammar defines no rules");
  }

  std::vector<Rule>& rules() { return rules_; }
  const std::map<std::string, uint32_t>& symbols() const { return symbol_ids_; }

  std::string name_of(uint32_t id) const {
    for (const auto& [name, sid] : symbol_ids_) {
      if (sid == id) return name;
    }
    std::string out = "#";
    out += std::to_string(id);
    return out;
  }

 private:
  // The text is read as libllama reads a C string: it ends at the first NUL.
  char at(size_t pos) const { return pos < src_.size() ? src_[pos] : '\0'; }

  [[noreturn]] void fail(const std::string& what, size_t pos) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos && i < src_.size(); ++i) {
      if (src_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw Error("grammar: " + what + " at line " + std::to_string(line) + ", column " + std::to_string(col));
  }
  [[noreturn]] void fail_plain(const std::string& what) const { throw Error("grammar: " + what); }

  size_t skip_space(size_t pos, bool newline_ok) const {
    for (;;) {
      const char c = at(pos);
      if (c == '#') {
        while (at(pos) && at(pos) != '\r' && at(pos) != '\n') ++pos;
      } else if (c == ' ' || c == '\t' || (newline_ok && (c == '\r' || c == '\n'))) {
        ++pos;
      } else {
        return pos;
      }
    }
  }

  size_t parse_name(size_t pos) const {
    size_t end = pos;
    while (is_word_char(at(end))) ++end;
    if (end == pos) fail("expecting a rule name", pos);
    return end;
  }

  size_t parse_int(size_t pos) const {
    size_t end = pos;
    while (is_digit(at(end))) ++end;
    if (end == pos) fail("expecting an integer", pos);
    return end;
  }

  uint64_t int_value(size_t begin, size_t end) const {
    uint64_t v = 0;
    for (size_t i = begin; i < end; ++i) {
      const uint64_t d = static_cast<uint64_t>(src_[i] - '0');
      if (v > (UINT64_MAX - d) / 10) fail("integer out of range", begin);
      v = v * 10 + d;
    }
    return v;
  }

  std::pair<uint32_t, size_t> parse_hex(size_t pos, int size) const {
    uint32_t value = 0;
    for (int i = 0; i < size; ++i) {
      const char c = at(pos + i);
      uint32_t d;
      if ('a' <= c && c <= 'f') {
        d = static_cast<uint32_t>(c - 'a' + 10);
      } else if ('A' <= c && c <= 'F') {
        d = static_cast<uint32_t>(c - 'A' + 10);
      } else if (is_digit(c)) {
        d = static_cast<uint32_t>(c - '0');
      } else {
        fail("expecting " + std::to_string(size) + " hex digits", pos);
      }
      value = (value << 4) + d;
    }
    return {value, pos + static_cast<size_t>(size)};
  }

  // One code point of the grammar text, lenient as libllama: a stray
  // continuation byte reads as a one-byte character.
  std::pair<uint32_t, size_t> decode_one(size_t pos) const {
    static constexpr int kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    const auto first = static_cast<uint8_t>(at(pos));
    const int len = kLen[first >> 4];
    uint32_t value = first & ((1u << (8 - len)) - 1);
    size_t p = pos + 1;
    for (; p < pos + static_cast<size_t>(len) && at(p); ++p)
      value = (value << 6) + (static_cast<uint8_t>(at(p)) & 0x3F);
    return {value, p};
  }

  std::pair<uint32_t, size_t> parse_char(size_t pos) const {
    if (at(pos) == '\\') {
      switch (at(pos + 1)) {
        case 'x':
          return parse_hex(pos + 2, 2);
        case 'u':
          return parse_hex(pos + 2, 4);
        case 'U':
          return parse_hex(pos + 2, 8);
        case 't':
          return {'\t', pos + 2};
        case 'r':
          return {'\r', pos + 2};
        case 'n':
          return {'\n', pos + 2};
        case '\\':
        case '"':
        case '[':
        case ']':
        case '-':
          return {static_cast<uint8_t>(at(pos + 1)), pos + 2};
        default:
          fail("unknown escape", pos);
      }
    }
    if (at(pos)) return decode_one(pos);
    fail("unexpected end of input", pos);
  }

  // <[id]> or <token-text>; returns the id and the end.
  std::pair<uint32_t, size_t> parse_token(size_t pos) const {
    const size_t start = pos;
    if (at(pos) != '<') fail("expecting '<'", pos);
    ++pos;
    if (at(pos) == '[') {
      ++pos;
      const size_t end = parse_int(pos);
      // libllama converts with stoul and keeps the low 32 bits.
      const auto id = static_cast<uint32_t>(int_value(pos, end));
      pos = end;
      if (at(pos) != ']') fail("expecting ']'", pos);
      ++pos;
      if (at(pos) != '>') fail("expecting '>'", pos);
      return {id, pos + 1};
    }
    if (tokenizer_ == nullptr) fail("a token given by its text needs a tokenizer", start);
    while (at(pos) && at(pos) != '>') ++pos;
    if (at(pos) != '>') fail("expecting '>'", pos);
    ++pos;
    const std::vector<int32_t> ids =
        tokenizer_->tokenize(src_.substr(start, pos - start), /*add_special=*/false, /*parse_special=*/true);
    if (ids.size() != 1) fail("'" + std::string(src_.substr(start, pos - start)) + "' is not a single token", start);
    return {static_cast<uint32_t>(ids[0]), pos};
  }

  uint32_t symbol_id(const std::string& name) {
    const auto next = static_cast<uint32_t>(symbol_ids_.size());
    return symbol_ids_.emplace(name, next).first->second;
  }
  uint32_t generate_symbol_id(const std::string& base) {
    const auto next = static_cast<uint32_t>(symbol_ids_.size());
    symbol_ids_[base + '_' + std::to_string(next)] = next;
    return next;
  }
  void add_rule(uint32_t id, Rule rule) {
    if (rules_.size() <= id) rules_.resize(id + 1);
    rules_[id] = std::move(rule);
  }

  size_t parse_rule(size_t pos) {
    const size_t name_end = parse_name(pos);
    const std::string name(src_.substr(pos, name_end - pos));
    size_t p = skip_space(name_end, false);
    const uint32_t id = symbol_id(name);
    if (!(at(p) == ':' && at(p + 1) == ':' && at(p + 2) == '=')) fail("expecting '::='", p);
    p = skip_space(p + 3, true);
    p = parse_alternates(p, name, id, false);
    if (at(p) == '\r') {
      p += at(p + 1) == '\n' ? 2 : 1;
    } else if (at(p) == '\n') {
      ++p;
    } else if (at(p)) {
      fail(std::string(at(p) == ')' ? "unbalanced ')'" : "expecting newline or end"), p);
    }
    return skip_space(p, true);
  }

  size_t parse_alternates(size_t pos, const std::string& rule_name, uint32_t rule_id, bool nested) {
    Rule rule;
    pos = parse_sequence(pos, rule_name, rule, nested);
    while (at(pos) == '|') {
      rule.push_back({ElementType::kAlt, 0});
      pos = skip_space(pos + 1, true);
      pos = parse_sequence(pos, rule_name, rule, nested);
    }
    rule.push_back({ElementType::kEnd, 0});
    add_rule(rule_id, std::move(rule));
    return pos;
  }

  // S{m,n} -> S repeated m times, then n-m nested optional rules
  // (S'(x) ::= S S'(x-1) | ... S'(1) ::= S |); S{m,} -> m times S then
  // S' ::= S S' | ; * + ? are {0,} {1,} {0,1}. Same rule ids as libllama.
  void repeat(Rule& rule, size_t last_sym_start, uint64_t& n_prev_rules, const std::string& rule_name,
              uint64_t min_times, uint64_t max_times, size_t pos) {
    const bool no_max = max_times == kNoMax;
    if (last_sym_start == rule.size()) fail("expecting an item before */+/?/{", pos);
    if (!no_max && max_times < min_times) fail("repetition maximum below its minimum", pos);
    const Rule prev(rule.begin() + static_cast<ptrdiff_t>(last_sym_start), rule.end());
    uint64_t total = 1;
    if (!no_max && max_times > 0) {
      total = max_times;
    } else if (min_times > 0) {
      total = min_times;
    }
    if (n_prev_rules * total >= kMaxRepetitions) {
      fail("too many repetitions (nested repetitions multiply; at most " + std::to_string(kMaxRepetitions) + ")", pos);
    }
    if (min_times == 0) {
      rule.resize(last_sym_start);
    } else {
      for (uint64_t i = 1; i < min_times; ++i) rule.insert(rule.end(), prev.begin(), prev.end());
    }
    uint32_t last_rec_id = 0;
    const uint64_t n_opt = no_max ? 1 : max_times - min_times;
    for (uint64_t i = 0; i < n_opt; ++i) {
      Rule rec(prev);
      const uint32_t rec_id = generate_symbol_id(rule_name);
      if (i > 0 || no_max) rec.push_back({ElementType::kRuleRef, no_max ? rec_id : last_rec_id});
      rec.push_back({ElementType::kAlt, 0});
      rec.push_back({ElementType::kEnd, 0});
      add_rule(rec_id, std::move(rec));
      last_rec_id = rec_id;
    }
    if (n_opt > 0) rule.push_back({ElementType::kRuleRef, last_rec_id});
    n_prev_rules *= total;
  }

  size_t parse_sequence(size_t pos, const std::string& rule_name, Rule& rule, bool nested) {
    size_t last_sym_start = rule.size();
    uint64_t n_prev_rules = 1;
    while (at(pos)) {
      const char c = at(pos);
      if (c == '"') {
        const size_t open = pos++;
        last_sym_start = rule.size();
        n_prev_rules = 1;
        while (at(pos) != '"') {
          if (!at(pos)) fail("unterminated string literal", open);
          const auto [cp, next] = parse_char(pos);
          pos = next;
          rule.push_back({ElementType::kChar, cp});
        }
        pos = skip_space(pos + 1, nested);
      } else if (c == '[') {
        const size_t open = pos++;
        ElementType start_type = ElementType::kChar;
        if (at(pos) == '^') {
          ++pos;
          start_type = ElementType::kCharNot;
        }
        last_sym_start = rule.size();
        n_prev_rules = 1;
        while (at(pos) != ']') {
          if (!at(pos)) fail("unterminated character class", open);
          const auto [cp, next] = parse_char(pos);
          pos = next;
          rule.push_back({last_sym_start < rule.size() ? ElementType::kCharAlt : start_type, cp});
          if (at(pos) == '-' && at(pos + 1) != ']') {
            if (!at(pos + 1)) fail("unterminated character class", open);
            const auto [upper, after] = parse_char(pos + 1);
            pos = after;
            rule.push_back({ElementType::kCharRngUpper, upper});
          }
        }
        pos = skip_space(pos + 1, nested);
      } else if (c == '<' || c == '!') {
        ElementType type = ElementType::kToken;
        if (c == '!') {
          type = ElementType::kTokenNot;
          ++pos;
        }
        const auto [id, end] = parse_token(pos);
        last_sym_start = rule.size();
        n_prev_rules = 1;
        rule.push_back({type, id});
        pos = skip_space(end, nested);
      } else if (is_word_char(c)) {
        const size_t end = parse_name(pos);
        const uint32_t ref = symbol_id(std::string(src_.substr(pos, end - pos)));
        pos = skip_space(end, nested);
        last_sym_start = rule.size();
        n_prev_rules = 1;
        rule.push_back({ElementType::kRuleRef, ref});
      } else if (c == '(') {
        const size_t open = pos;
        pos = skip_space(pos + 1, true);
        const auto n_before = static_cast<uint32_t>(symbol_ids_.size());
        const uint32_t sub_id = generate_symbol_id(rule_name);
        pos = parse_alternates(pos, rule_name, sub_id, true);
        n_prev_rules = std::max<uint64_t>(1, static_cast<uint32_t>(symbol_ids_.size()) - n_before);
        last_sym_start = rule.size();
        rule.push_back({ElementType::kRuleRef, sub_id});
        if (at(pos) != ')') fail(at(pos) ? "expecting ')'" : "unbalanced '(' (no matching ')')", at(pos) ? pos : open);
        pos = skip_space(pos + 1, nested);
      } else if (c == '.') {
        last_sym_start = rule.size();
        n_prev_rules = 1;
        rule.push_back({ElementType::kCharAny, 0});
        pos = skip_space(pos + 1, nested);
      } else if (c == '*' || c == '+' || c == '?') {
        const size_t op = pos;
        pos = skip_space(pos + 1, nested);
        repeat(rule, last_sym_start, n_prev_rules, rule_name, c == '+' ? 1 : 0, c == '?' ? 1 : kNoMax, op);
      } else if (c == '{') {
        const size_t op = pos;
        pos = skip_space(pos + 1, nested);
        if (!is_digit(at(pos))) fail("expecting an integer", pos);
        size_t end = parse_int(pos);
        const uint64_t min_times = int_value(pos, end);
        pos = skip_space(end, nested);
        uint64_t max_times = kNoMax;
        if (at(pos) == '}') {
          max_times = min_times;
          pos = skip_space(pos + 1, nested);
        } else if (at(pos) == ',') {
          pos = skip_space(pos + 1, nested);
          if (is_digit(at(pos))) {
            end = parse_int(pos);
            max_times = int_value(pos, end);
            pos = skip_space(end, nested);
          }
          if (at(pos) != '}') fail("expecting '}'", pos);
          pos = skip_space(pos + 1, nested);
        } else {
          fail("expecting ',' or '}'", pos);
        }
        if (min_times > kMaxRepetitions) fail("too many repetitions (at most 2000)", op);
        // libllama reads a maximum above the limit as "no maximum".
        if (max_times != kNoMax && max_times > kMaxRepetitions) max_times = kNoMax;
        repeat(rule, last_sym_start, n_prev_rules, rule_name, min_times, max_times, op);
      } else {
        break;
      }
    }
    return pos;
  }

  std::string_view src_;
  const tok::Tokenizer* tokenizer_;
  std::map<std::string, uint32_t> symbol_ids_;
  std::vector<Rule> rules_;
};

bool is_end_of_sequence(const Element& e) { return e.type == ElementType::kEnd || e.type == ElementType::kAlt; }

// libllama's left-recursion check, including which rules count as possibly
// empty (only alternatives that are empty outright).
bool detect_left_recursion(const std::vector<Rule>& rules, size_t index, std::vector<bool>& visited,
                           std::vector<bool>& in_progress, std::vector<bool>& may_be_empty) {
  if (in_progress[index]) return true;
  in_progress[index] = true;
  const Rule& rule = rules[index];
  bool at_start = true;
  for (const Element& e : rule) {
    if (is_end_of_sequence(e)) {
      if (at_start) {
        may_be_empty[index] = true;
        break;
      }
      at_start = true;
    } else {
      at_start = false;
    }
  }
  bool recurse = true;
  for (const Element& e : rule) {
    if (e.type == ElementType::kRuleRef && recurse) {
      if (detect_left_recursion(rules, e.value, visited, in_progress, may_be_empty)) return true;
      if (!may_be_empty[e.value]) recurse = false;
    } else if (is_end_of_sequence(e)) {
      recurse = true;
    } else {
      recurse = false;
    }
  }
  in_progress[index] = false;
  visited[index] = true;
  return false;
}

std::string char_text(uint32_t c) {
  if (0x20 <= c && c <= 0x7f) return std::string(1, static_cast<char>(c));
  char buf[16];
  snprintf(buf, sizeof(buf), "<U+%04X>", c);
  return buf;
}

bool is_char_element(const Element& e) {
  switch (e.type) {
    case ElementType::kChar:
    case ElementType::kCharNot:
    case ElementType::kCharAlt:
    case ElementType::kCharRngUpper:
    case ElementType::kCharAny:
      return true;
    default:
      return false;
  }
}

}  // namespace

std::unique_ptr<Grammar> Grammar::parse(const std::string& gbnf, const std::string& root,
                                        const tok::Tokenizer* tokenizer) {
  const std::string_view text(gbnf.c_str());  // up to the first NUL, as libllama reads it
  Parser parser(text, tokenizer);
  parser.parse();
  const auto it = parser.symbols().find(root);
  if (it == parser.symbols().end()) throw Error("grammar: no rule named '" + root + "' (the start rule)");

  std::unique_ptr<Grammar> g(new Grammar());
  g->rules_ = std::move(parser.rules());
  g->root_ = it->second;
  g->names_.resize(g->rules_.size());
  for (const auto& [name, id] : parser.symbols()) {
    if (id < g->names_.size()) g->names_[id] = name;
  }
  const size_t n = g->rules_.size();
  std::vector<bool> visited(n), in_progress(n), may_be_empty(n);
  for (size_t i = 0; i < n; ++i) {
    if (visited[i]) continue;
    if (detect_left_recursion(g->rules_, i, visited, in_progress, may_be_empty)) {
      throw Refusal("grammar: left recursion (rule '" + g->names_[i] +
                    "' can reach itself without consuming input), which llama.cpp's grammar engine does not support");
    }
  }
  return g;
}

std::string Grammar::to_string() const {
  std::string out;
  for (size_t id = 0; id < rules_.size(); ++id) {
    const Rule& rule = rules_[id];
    out += names_[id] + " ::= ";
    for (size_t i = 0; i + 1 < rule.size(); ++i) {
      const Element& e = rule[i];
      switch (e.type) {
        case ElementType::kEnd:
          break;
        case ElementType::kAlt:
          out += "| ";
          break;
        case ElementType::kRuleRef:
          out += names_.at(e.value) + " ";
          break;
        case ElementType::kChar:
          out += '[';
          out += char_text(e.value);
          break;
        case ElementType::kCharNot:
          out += "[^";
          out += char_text(e.value);
          break;
        case ElementType::kCharRngUpper:
          out += '-';
          out += char_text(e.value);
          break;
        case ElementType::kCharAlt:
          out += char_text(e.value);
          break;
        case ElementType::kCharAny:
          out += ".";
          break;
        case ElementType::kToken:
          out += "<[" + std::to_string(e.value) + "]> ";
          break;
        case ElementType::kTokenNot:
          out += "!<[" + std::to_string(e.value) + "]> ";
          break;
      }
      if (is_char_element(e)) {
        const ElementType next = rule[i + 1].type;
        if (next != ElementType::kCharAlt && next != ElementType::kCharRngUpper && next != ElementType::kCharAny) {
          out += "] ";
        }
      }
    }
    out += "\n";
  }
  return out;
}

}  // namespace strix::grammar
