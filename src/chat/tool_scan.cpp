#include "chat/tool_scan.h"

#include <random>

namespace strix::chat::detail {

namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// A string starting at s[i] == '"'.
JsonScan scan_string(std::string_view s, size_t i, size_t* end) {
  for (++i; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"') {
      *end = i + 1;
      return JsonScan::kComplete;
    }
    if (c < 0x20) return JsonScan::kInvalid;
    if (c != '\\') continue;
    if (++i >= s.size()) return JsonScan::kIncomplete;
    const char e = s[i];
    if (e == 'u') {
      for (int k = 0; k < 4; ++k) {
        if (++i >= s.size()) return JsonScan::kIncomplete;
        if (!is_hex(s[i])) return JsonScan::kInvalid;
      }
    } else if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos) {
      return JsonScan::kInvalid;
    }
  }
  return JsonScan::kIncomplete;
}

// A number starting at s[i]; reaching the end of the text is kIncomplete
// (more digits may follow).
JsonScan scan_number(std::string_view s, size_t i, size_t* end) {
  auto digits = [&](bool need) -> JsonScan {
    const size_t from = i;
    while (i < s.size() && is_digit(s[i])) ++i;
    if (i >= s.size()) return JsonScan::kIncomplete;
    return need && i == from ? JsonScan::kInvalid : JsonScan::kComplete;
  };
  if (s[i] == '-' && ++i >= s.size()) return JsonScan::kIncomplete;
  if (s[i] == '0') {
    if (++i >= s.size()) return JsonScan::kIncomplete;
  } else if (JsonScan r = digits(true); r != JsonScan::kComplete) {
    return r;
  }
  if (s[i] == '.') {
    ++i;
    if (JsonScan r = digits(true); r != JsonScan::kComplete) return r;
  }
  if (s[i] == 'e' || s[i] == 'E') {
    if (++i >= s.size()) return JsonScan::kIncomplete;
    if ((s[i] == '+' || s[i] == '-') && ++i >= s.size()) return JsonScan::kIncomplete;
    if (JsonScan r = digits(true); r != JsonScan::kComplete) return r;
  }
  *end = i;
  return JsonScan::kComplete;
}

}  // namespace

// Deeper values are refused: nlohmann's dump() recurses once per level.
constexpr size_t kMaxJsonDepth = 512;

JsonScan scan_json(std::string_view s, size_t pos, size_t* end, std::string* out) {
  // out set: also write the canonical text (canonical_json): punctuation here,
  // strings, numbers and literals through canonical_token
  auto put = [out](char c) {
    if (out) *out += c;
  };
  enum class Expect { kValue, kValueOrClose, kKeyOrClose, kKey, kColon, kCommaOrClose };
  std::string stack;  // '{' / '[' of the open containers
  Expect e = Expect::kValue;
  size_t i = pos;
  while (true) {
    i = skip_ws(s, i);
    if (i >= s.size()) return JsonScan::kIncomplete;
    const char c = s[i];
    bool value_done = false;
    switch (e) {
      case Expect::kValueOrClose:
        if (c == ']') {
          stack.pop_back();
          put(']');
          ++i;
          value_done = true;
          break;
        }
        [[fallthrough]];
      case Expect::kValue:
        if ((c == '{' || c == '[') && stack.size() >= kMaxJsonDepth) {
          return JsonScan::kInvalid;
        } else if (c == '{') {
          stack.push_back('{');
          put('{');
          e = Expect::kKeyOrClose;
          ++i;
        } else if (c == '[') {
          stack.push_back('[');
          put('[');
          e = Expect::kValueOrClose;
          ++i;
        } else if (out) {
          size_t j = 0;
          const JsonScan r = canonical_token(s, i, out, &j);
          if (r != JsonScan::kComplete) return r;
          i = j;
          value_done = true;
        } else if (c == '"' || c == '-' || is_digit(c)) {
          size_t j = 0;
          const JsonScan r = c == '"' ? scan_string(s, i, &j) : scan_number(s, i, &j);
          if (r != JsonScan::kComplete) return r;
          i = j;
          value_done = true;
        } else {
          bool matched = false;
          for (std::string_view lit : {"true", "false", "null"}) {
            if (lit[0] != c) continue;
            const std::string_view have = s.substr(i, lit.size());
            if (have.size() < lit.size())
              return lit.substr(0, have.size()) == have ? JsonScan::kIncomplete : JsonScan::kInvalid;
            if (have != lit) return JsonScan::kInvalid;
            i += lit.size();
            matched = value_done = true;
          }
          if (!matched) return JsonScan::kInvalid;
        }
        break;
      case Expect::kKeyOrClose:
        if (c == '}') {
          stack.pop_back();
          put('}');
          ++i;
          value_done = true;
          break;
        }
        [[fallthrough]];
      case Expect::kKey: {
        if (c != '"') return JsonScan::kInvalid;
        size_t j = 0;
        if (JsonScan r = out ? canonical_token(s, i, out, &j) : scan_string(s, i, &j); r != JsonScan::kComplete) {
          return r;
        }
        i = j;
        e = Expect::kColon;
        break;
      }
      case Expect::kColon:
        if (c != ':') return JsonScan::kInvalid;
        put(':');
        ++i;
        e = Expect::kValue;
        break;
      case Expect::kCommaOrClose:
        if (c == ',') {
          put(',');
          e = stack.back() == '{' ? Expect::kKey : Expect::kValue;
          ++i;
        } else if ((c == '}' && stack.back() == '{') || (c == ']' && stack.back() == '[')) {
          stack.pop_back();
          put(c);
          ++i;
          value_done = true;
        } else {
          return JsonScan::kInvalid;
        }
        break;
    }
    if (value_done) {
      if (stack.empty()) {
        *end = i;
        return JsonScan::kComplete;
      }
      e = Expect::kCommaOrClose;
    }
  }
}

bool parse_json(std::string_view s, ojson* out) {
  *out = ojson::parse(s.begin(), s.end(), nullptr, /*allow_exceptions=*/false);
  return !out->is_discarded();
}

size_t partial_marker_at_end(std::string_view text, std::string_view marker) {
  const size_t longest = std::min(text.size(), marker.empty() ? 0 : marker.size() - 1);
  for (size_t len = longest; len > 0; --len) {
    if (text.substr(text.size() - len) == marker.substr(0, len)) return text.size() - len;
  }
  return std::string_view::npos;
}

size_t skip_ws(std::string_view s, size_t pos) {
  while (pos < s.size() && is_ws(s[pos])) ++pos;
  return pos;
}

std::string_view rtrim(std::string_view s) {
  size_t n = s.size();
  while (n > 0 && is_ws(s[n - 1])) --n;
  return s.substr(0, n);
}

std::string_view trim(std::string_view s) {
  const size_t b = skip_ws(s, 0);
  return rtrim(s.substr(b));
}

bool starts_with_at(std::string_view s, size_t pos, std::string_view lit) {
  return pos <= s.size() && s.substr(pos, lit.size()) == lit;
}

std::string generate_tool_call_id(ToolFormat format) {
  static constexpr std::string_view kChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const bool mistral = format == ToolFormat::kMistral;
  std::string id = mistral ? "" : "call_";
  for (int i = 0; i < (mistral ? 9 : 24); ++i) id += kChars[rng() % kChars.size()];
  return id;
}

void MessageBuilder::add_content(std::string_view text) {
  // The markup's own line breaks around a call are not content.
  if (after_call_) {
    text = text.substr(skip_ws(text, 0));
    if (text.empty()) return;
    after_call_ = false;
  }
  content_ += text;
}

void MessageBuilder::add_tool_call(std::string name, std::string id, const ojson& arguments) {
  add_tool_call_text(std::move(name), std::move(id), arguments.dump());
}

void MessageBuilder::add_tool_call_text(std::string name, std::string id, std::string arguments) {
  calls_.push_back(ToolCall{std::move(id), std::move(name), std::move(arguments)});
  after_call_ = true;
}

ParsedMessage MessageBuilder::finish() {
  ParsedMessage m;
  // Both ends are trimmed in both modes; trimming the end of a prefix always
  // gives a prefix of the trimmed whole, which keeps streaming monotone.
  m.content = std::string(trim(content_));
  m.reasoning_content = std::string(trim(reasoning_));
  m.tool_calls = std::move(calls_);
  return m;
}

size_t parse_think_block(std::string_view text, const ParseOptions& opts, MessageBuilder& out) {
  static constexpr std::string_view kOpen = "<think>", kClose = "</think>";
  if (!opts.extract_reasoning) return 0;
  size_t start = skip_ws(text, 0);
  const std::string_view rest = text.substr(start);
  if (starts_with_at(text, start, kOpen)) {
    start += kOpen.size();
  } else if (out.partial() && !rest.empty() && kOpen.substr(0, rest.size()) == rest) {
    return text.size();  // "<thi" may still become "<think>": decide later
  } else if (!opts.thinking_forced_open) {
    return 0;
  } else {
    start = 0;
  }
  const size_t close = text.find(kClose, start);
  if (close == std::string_view::npos) {
    std::string_view body = text.substr(start);
    if (out.partial()) body = body.substr(0, partial_marker_at_end(body, kClose));
    // An unclosed block at the end of the reply is all reasoning (as llama.cpp).
    out.add_reasoning(body);
    return text.size();
  }
  out.add_reasoning(text.substr(start, close - start));
  return close + kClose.size();
}

OpenerHit find_opener(std::string_view text, size_t from, const std::vector<std::string_view>& openers) {
  OpenerHit hit;
  for (size_t k = 0; k < openers.size(); ++k) {
    const size_t p = text.find(openers[k], from);
    if (p != std::string_view::npos && (hit.index < 0 || p < hit.pos)) {
      hit.index = static_cast<int>(k);
      hit.pos = p;
    }
  }
  return hit;
}

size_t held_tail(std::string_view text, size_t from, const std::vector<std::string_view>& openers) {
  size_t held = std::string_view::npos;
  const std::string_view rest = text.substr(from);
  for (std::string_view o : openers) {
    const size_t p = partial_marker_at_end(rest, o);
    if (p != std::string_view::npos) held = std::min(held, from + p);
  }
  return held;
}

}  // namespace strix::chat::detail

namespace strix::chat::detail {

Lit expect_lit(std::string_view s, size_t* pos, std::string_view lit) {
  const std::string_view have = s.substr(std::min(*pos, s.size()), lit.size());
  if (have == lit) {
    *pos += lit.size();
    return Lit::kOk;
  }
  return have.size() < lit.size() && lit.substr(0, have.size()) == have ? Lit::kIncomplete : Lit::kMismatch;
}

Block take_json(std::string_view s, size_t* pos, ojson* out) {
  size_t end = 0;
  switch (scan_json(s, *pos, &end)) {
    case JsonScan::kIncomplete:
      return Block::kIncomplete;
    case JsonScan::kInvalid:
      return Block::kInvalid;
    case JsonScan::kComplete:
      break;
  }
  if (!parse_json(s.substr(*pos, end - *pos), out)) return Block::kInvalid;
  *pos = end;
  return Block::kComplete;
}

void parse_blocks(std::string_view text, const std::vector<std::string_view>& openers, BlockParser block,
                  MessageBuilder& out) {
  size_t pos = 0;
  while (true) {
    const OpenerHit hit = find_opener(text, pos, openers);
    if (hit.index < 0) {
      const size_t stop = out.partial() ? held_tail(text, pos, openers) : std::string_view::npos;
      out.add_content(text.substr(pos, stop == std::string_view::npos ? std::string_view::npos : stop - pos));
      return;
    }
    out.add_content(text.substr(pos, hit.pos - pos));
    size_t end = 0;
    std::vector<FoundCall> calls;
    const Block r = block(text, hit.pos, hit.index, out.partial(), &end, &calls);
    if (r == Block::kComplete) {
      add_calls(calls, out);
      pos = end;
    } else if (r == Block::kIncomplete) {
      if (out.partial()) {
        add_calls(calls, out);  // the calls so far stream before the block closes
      } else {
        out.add_content(text.substr(hit.pos));
      }
      return;
    } else {
      const size_t after = hit.pos + openers[hit.index].size();
      out.add_content(text.substr(hit.pos, after - hit.pos));
      pos = after;
    }
  }
}

}  // namespace strix::chat::detail
