// Jinja2 lexer with the whitespace rules of jinja2.lexer (3.1):
//  - `{%-`, `{{-`, `{#-` strip all whitespace before the tag (Python rstrip);
//  - lstrip_blocks strips spaces/tabs between a line start and `{%`/`{#` (not
//    `{{`, not `{%+`); "line start" includes right after a tag that ended in '\n';
//  - `-%}`, `-}}`, `-#}` strip all whitespace after the tag;
//  - trim_blocks drops one '\n' right after `%}` / `#}` (not after `{% raw %}`).
// Inside tags, the end marker only counts when brackets are balanced.
#include <cctype>
#include <cstring>

#include "chat/jinja_ast.h"
#include "core/error.h"

namespace strix::jinja {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::string rstrip_ws(const std::string& s) {
  size_t e = s.size();
  while (e > 0 && is_space(s[e - 1])) --e;
  return s.substr(0, e);
}

struct Lexer {
  const std::string& src;
  LexOptions opt;
  size_t p = 0;
  int line = 1;
  std::vector<Token> out;
  bool line_starting = true;

  [[noreturn]] void fail(const std::string& what) { throw Error("template syntax error (line " + std::to_string(line) + "): " + what); }

  void advance_to(size_t q) {
    for (size_t k = p; k < q && k < src.size(); ++k)
      if (src[k] == '\n') ++line;
    p = q;
  }

  void emit_text(std::string text, int at_line) {
    if (!text.empty()) out.push_back({TokKind::kText, std::move(text), at_line});
  }

  // Applies the "before the tag" whitespace rules to text preceding a tag.
  std::string strip_before(std::string text, char sign, bool is_var) {
    if (sign == '-') return rstrip_ws(text);
    if (sign != '+' && opt.lstrip_blocks && !is_var) {
      size_t l_pos = text.rfind('\n');
      l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
      if (l_pos > 0 || line_starting) {
        bool all_ws = l_pos < text.size();
        for (size_t k = l_pos; k < text.size(); ++k)
          if (!is_space(text[k])) all_ws = false;
        if (all_ws) text.resize(l_pos);
      }
    }
    return text;
  }

  // After a block/comment end at p (just past the marker): trailing rules.
  void after_end(bool minus, bool plus, bool trim) {
    size_t q = p;
    if (minus) {
      while (q < src.size() && is_space(src[q])) ++q;
    } else if (!plus && trim && opt.trim_blocks && q < src.size() && src[q] == '\n') {
      ++q;
    }
    advance_to(q);
    line_starting = p > 0 && src[p - 1] == '\n';
  }

  bool raw_begin_at(size_t q, size_t* body_start) {
    // {%[-+]?\s*raw\s*(-%}\s*|%})
    size_t k = q + 2;
    if (k < src.size() && (src[k] == '-' || src[k] == '+')) ++k;
    while (k < src.size() && is_space(src[k])) ++k;
    if (src.compare(k, 3, "raw") != 0) return false;
    k += 3;
    if (k < src.size() && (std::isalnum((unsigned char)src[k]) || src[k] == '_')) return false;
    while (k < src.size() && is_space(src[k])) ++k;
    if (src.compare(k, 3, "-%}") == 0) {
      k += 3;
      while (k < src.size() && is_space(src[k])) ++k;
    } else if (src.compare(k, 2, "%}") == 0) {
      k += 2;
    } else {
      return false;
    }
    *body_start = k;
    return true;
  }

  void lex_raw(size_t body_start) {
    int start_line = line;
    advance_to(body_start);
    size_t k = p;
    while (true) {
      k = src.find("{%", k);
      if (k == std::string::npos) fail("missing endraw");
      size_t j = k + 2;
      char sign = 0;
      if (j < src.size() && (src[j] == '-' || src[j] == '+')) sign = src[j++];
      while (j < src.size() && is_space(src[j])) ++j;
      if (src.compare(j, 6, "endraw") != 0) { k += 2; continue; }
      j += 6;
      while (j < src.size() && is_space(src[j])) ++j;
      bool minus = false, plus = false;
      if (j < src.size() && src[j] == '-') { minus = true; ++j; }
      else if (j < src.size() && src[j] == '+') { plus = true; ++j; }
      if (src.compare(j, 2, "%}") != 0) { k += 2; continue; }
      std::string text = src.substr(p, k - p);
      line_starting = false;  // the raw begin tag never ends in '\n' as matched
      emit_text(strip_before(text, sign, false), start_line);
      advance_to(j + 2);
      after_end(minus, plus, true);
      return;
    }
  }

  void lex_tag(bool is_var) {
    // p points just past "{{" / "{%" and an optional sign.
    const char* close = is_var ? "}}" : "%}";
    int depth = 0;
    while (true) {
      while (p < src.size() && is_space(src[p])) advance_to(p + 1);
      if (p >= src.size()) fail(std::string("missing '") + close + "'");
      if (depth == 0) {
        bool minus = src.compare(p, 3, std::string("-") + close) == 0;
        bool plus = !is_var && src.compare(p, 3, std::string("+") + close) == 0;
        if (minus || plus || src.compare(p, 2, close) == 0) {
          out.push_back({is_var ? TokKind::kVarEnd : TokKind::kBlockEnd, "", line});
          advance_to(p + (minus || plus ? 3 : 2));
          after_end(minus, plus, !is_var);
          return;
        }
      }
      char c = src[p];
      if (std::isalpha((unsigned char)c) || c == '_') {
        size_t q = p;
        while (q < src.size() && (std::isalnum((unsigned char)src[q]) || src[q] == '_')) ++q;
        out.push_back({TokKind::kName, src.substr(p, q - p), line});
        advance_to(q);
      } else if (std::isdigit((unsigned char)c)) {
        size_t q = p;
        while (q < src.size() && (std::isdigit((unsigned char)src[q]) || src[q] == '_')) ++q;
        bool is_float = false;
        if (q + 1 < src.size() && src[q] == '.' && std::isdigit((unsigned char)src[q + 1])) {
          is_float = true;
          ++q;
          while (q < src.size() && (std::isdigit((unsigned char)src[q]) || src[q] == '_')) ++q;
        }
        if (q < src.size() && (src[q] == 'e' || src[q] == 'E')) {
          size_t r = q + 1;
          if (r < src.size() && (src[r] == '+' || src[r] == '-')) ++r;
          if (r < src.size() && std::isdigit((unsigned char)src[r])) {
            is_float = true;
            q = r;
            while (q < src.size() && std::isdigit((unsigned char)src[q])) ++q;
          }
        }
        std::string num;
        for (size_t k = p; k < q; ++k)
          if (src[k] != '_') num += src[k];
        out.push_back({is_float ? TokKind::kFloat : TokKind::kInt, num, line});
        advance_to(q);
      } else if (c == '\'' || c == '"') {
        lex_string(c);
      } else {
        static const char* const kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<", ">",
                                           "=", ".", ",", ":", "|", "(", ")", "[", "]", "{", "}"};
        const char* hit = nullptr;
        for (const char* op : kOps)
          if (src.compare(p, std::strlen(op), op) == 0) { hit = op; break; }
        if (!hit) fail(std::string("unexpected character '") + c + "'");
        std::string op = hit;
        if (op == "(" || op == "[" || op == "{") ++depth;
        if (op == ")" || op == "]" || op == "}") {
          if (depth == 0) fail("unbalanced '" + op + "'");
          --depth;
        }
        out.push_back({TokKind::kOp, op, line});
        advance_to(p + op.size());
      }
    }
  }

  void lex_string(char quote) {
    int at = line;
    size_t q = p + 1;
    std::string s;
    while (true) {
      if (q >= src.size()) fail("unterminated string");
      char c = src[q];
      if (c == quote) break;
      if (c == '\\' && q + 1 < src.size()) {
        char e = src[q + 1];
        q += 2;
        switch (e) {
          case 'n': s += '\n'; break;
          case 't': s += '\t'; break;
          case 'r': s += '\r'; break;
          case '\\': s += '\\'; break;
          case '\'': s += '\''; break;
          case '"': s += '"'; break;
          case '0': s += '\0'; break;
          case '\n': break;
          case 'u': case 'x': case 'U': {
            size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
            if (q + n > src.size()) fail("bad escape");
            uint32_t cp = uint32_t(std::stoul(src.substr(q, n), nullptr, 16));
            q += n;
            if (cp < 0x80) s += char(cp);
            else if (cp < 0x800) { s += char(0xC0 | (cp >> 6)); s += char(0x80 | (cp & 0x3F)); }
            else if (cp < 0x10000) { s += char(0xE0 | (cp >> 12)); s += char(0x80 | ((cp >> 6) & 0x3F)); s += char(0x80 | (cp & 0x3F)); }
            else { s += char(0xF0 | (cp >> 18)); s += char(0x80 | ((cp >> 12) & 0x3F)); s += char(0x80 | ((cp >> 6) & 0x3F)); s += char(0x80 | (cp & 0x3F)); }
            break;
          }
          default: s += '\\'; s += e; break;  // Python keeps unknown escapes verbatim
        }
        continue;
      }
      s += c;
      ++q;
    }
    out.push_back({TokKind::kString, s, at});
    advance_to(q + 1);
  }

  void run() {
    while (p < src.size()) {
      size_t q = p;
      size_t tag = std::string::npos;
      while ((q = src.find('{', q)) != std::string::npos) {
        if (q + 1 < src.size() && (src[q + 1] == '{' || src[q + 1] == '%' || src[q + 1] == '#')) { tag = q; break; }
        ++q;
      }
      int text_line = line;
      if (tag == std::string::npos) {
        emit_text(src.substr(p), text_line);
        advance_to(src.size());
        break;
      }
      char type = src[tag + 1];
      char sign = tag + 2 < src.size() ? src[tag + 2] : 0;
      std::string text = strip_before(src.substr(p, tag - p), sign, type == '{');
      emit_text(text, text_line);
      advance_to(tag);
      size_t raw_body = 0;
      if (type == '%' && raw_begin_at(tag, &raw_body)) {
        lex_raw(raw_body);
        continue;
      }
      if (type == '#') {
        size_t e = src.find("#}", tag + 2);
        if (e == std::string::npos) fail("missing end of comment tag");
        bool minus = e > tag + 2 && src[e - 1] == '-';
        bool plus = e > tag + 2 && src[e - 1] == '+';
        advance_to(e + 2);
        after_end(minus, plus, true);
        continue;
      }
      out.push_back({type == '{' ? TokKind::kVarBegin : TokKind::kBlockBegin, "", line});
      advance_to(tag + 2 + ((sign == '-' || sign == '+') ? 1 : 0));
      lex_tag(type == '{');
    }
    out.push_back({TokKind::kEof, "", line});
  }
};

}  // namespace

std::vector<Token> lex_template(const std::string& raw, const LexOptions& opt) {
  // Like jinja2's tokeniter: newlines (\r\n, \r, \n) become '\n' and, since
  // keep_trailing_newline is off, one trailing newline is dropped.
  std::string src;
  src.reserve(raw.size());
  for (size_t k = 0; k < raw.size(); ++k) {
    if (raw[k] == '\r') {
      src += '\n';
      if (k + 1 < raw.size() && raw[k + 1] == '\n') ++k;
    } else {
      src += raw[k];
    }
  }
  if (!src.empty() && src.back() == '\n') src.pop_back();
  Lexer lx{src, opt, 0, 1, {}, true};
  lx.run();
  return std::move(lx.out);
}

}  // namespace strix::jinja
