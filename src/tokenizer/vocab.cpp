#include "tokenizer/vocab.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <set>

#include "core/error.h"
#include "tokenizer/unicode.h"

namespace strix::tok {

namespace {

// GGUF token types (tokenizer.ggml.token_type) -> attributes.
uint32_t attr_of_type(int64_t type) {
  switch (type) {
    case 1:
      return kAttrNormal;
    case 2:
      return kAttrUnknown;
    case 3:
      return kAttrControl;
    case 4:
      return kAttrUserDefined;
    case 5:
      return kAttrUnused;
    case 6:
      return kAttrByte;
    default:
      return kAttrUndefined;
  }
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  std::string out;
  size_t pos = 0;
  for (size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
    out.append(s, pos, hit - pos);
    out.append(to);
  }
  out.append(s, pos);
  s.swap(out);
}

// A byte-level BPE token's text back to bytes; characters outside the GPT-2
// table are spelled out the way libllama does it (including its habit of
// appending the whole token text).
std::string decode_byte_level(const std::string& text) {
  std::string out;
  for (const uint32_t cpt : decode_utf8_lenient(text)) {
    const int b = unicode_to_byte(cpt);
    if (b >= 0) {
      out.push_back(static_cast<char>(b));
      continue;
    }
    std::string utf8;
    append_utf8(utf8, cpt);
    out += "[UNK_BYTE_0x";
    for (const char c : utf8) {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%02x", static_cast<uint8_t>(c));
      out += hex;
    }
    out += text + "]";
  }
  return out;
}

bool contains_any(const std::string& s, std::initializer_list<const char*> subs) {
  return std::any_of(subs.begin(), subs.end(), [&](const char* x) { return s.find(x) != std::string::npos; });
}

}  // namespace

int32_t Vocab::merge_rank(const std::string& left, const std::string& right) const {
  std::string key;
  key.reserve(left.size() + right.size() + 1);
  key += left;
  key += ' ';
  key += right;
  const auto it = merge_ranks.find(key);
  return it == merge_ranks.end() ? -1 : it->second;
}

int32_t Vocab::byte_token(uint8_t byte) const {
  if (type == VocabType::kSpm || type == VocabType::kUgm) {
    static const char* const kHex = "0123456789ABCDEF";
    const std::string name = {'<', '0', 'x', kHex[byte >> 4], kHex[byte & 15], '>'};
    if (const int32_t id = find(name); id != kNoToken) return id;
    if (const int32_t id = find(std::string(1, static_cast<char>(byte))); id != kNoToken) return id;
  } else {
    if (const int32_t id = find(byte_to_unicode(byte)); id != kNoToken) return id;
  }
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02X", byte);
  throw Error(std::string("tokenizer: the vocabulary has no token for byte ") + hex);
}

bool Vocab::is_eog(int32_t id) const { return std::binary_search(eog.begin(), eog.end(), id); }

Vocab Vocab::load(const GgufFile& file) {
  Vocab v;
  v.model = file.get_string("tokenizer.ggml.model");
  if (v.model.empty()) throw Error("tokenizer: the file has no tokenizer.ggml.model");
  std::string pre_name = file.get_string("tokenizer.ggml.pre", "");

  bool need_merges = false;
  if (v.model == "llama") {
    v.type = VocabType::kSpm;
    v.bos = 1;
    v.eos = 2;
    v.unk = 0;
  } else if (v.model == "gpt2") {
    v.type = VocabType::kBpe;
    need_merges = true;
    v.bos = 11;
    v.eos = 11;
  } else if (v.model == "gemma4") {
    v.type = VocabType::kBpe;
    need_merges = true;
    pre_name = "gemma4";
  } else if (v.model == "bert") {
    v.type = VocabType::kWpm;
    v.bos = 101;
    v.unk = 100;
    v.sep = 102;
    v.pad = 0;
    v.mask = 103;
  } else if (v.model == "t5") {
    v.type = VocabType::kUgm;
    v.eos = 1;
    v.unk = 2;
    v.pad = 0;
    if (const GgufValue* cm = file.find("tokenizer.ggml.precompiled_charsmap")) {
      if (!cm->is_array() || (cm->elem_type() != GgufType::INT8 && cm->elem_type() != GgufType::UINT8))
        throw Error("tokenizer: tokenizer.ggml.precompiled_charsmap is not a byte array");
      for (const GgufValue& b : cm->items()) v.precompiled_charsmap.push_back(static_cast<char>(b.as_i64()));
      const std::string& m = v.precompiled_charsmap;
      if (m.size() < 4) throw Error("tokenizer: precompiled_charsmap is too small for its header");
      const uint32_t blob = uint32_t(uint8_t(m[0])) | uint32_t(uint8_t(m[1])) << 8 | uint32_t(uint8_t(m[2])) << 16 |
                            uint32_t(uint8_t(m[3])) << 24;
      if (uint64_t(blob) + 4 >= m.size()) throw Error("tokenizer: precompiled_charsmap blob size is out of bounds");
    }
  } else if (v.model == "rwkv") {
    v.type = VocabType::kRwkv;  // no default special tokens
  } else {
    throw Refusal("tokenizer: tokenizer.ggml.model '" + v.model +
                  "' is not implemented (Strix tokenizes 'llama' (SPM), 'gpt2' and 'gemma4' (BPE), 'bert' (WPM), "
                  "'t5' (UGM), 'rwkv')");
  }

  if (v.type == VocabType::kBpe) {
    v.pre = pre_config(pre_name);  // refuses unknown names
    v.add_space_prefix = false;
    v.escape_whitespaces = v.pre.escape_whitespaces;
    v.clean_spaces = v.pre.clean_spaces;
    v.ignore_merges = v.pre.ignore_merges;
    if (v.pre.add_bos) v.add_bos = *v.pre.add_bos;
    if (v.pre.name == "glm4" || v.pre.name == "chatglm-bpe") v.bos = kNoToken;
  } else if (v.type == VocabType::kUgm) {
    v.add_bos = false;
    v.add_eos = true;
  } else if (v.type == VocabType::kRwkv) {
    v.add_space_prefix = false;
    v.clean_spaces = false;
    v.add_bos = false;
    v.add_eos = false;
  } else if (v.type == VocabType::kWpm) {
    v.add_space_prefix = false;
    v.clean_spaces = true;
    v.add_bos = true;
    v.add_eos = false;
    v.add_sep = true;
  } else {
    v.add_space_prefix = true;
    v.clean_spaces = false;
    v.add_bos = true;
    v.add_eos = false;
  }
  v.add_space_prefix = file.get_bool("tokenizer.ggml.add_space_prefix", v.add_space_prefix);
  v.remove_extra_whitespaces = file.get_bool("tokenizer.ggml.remove_extra_whitespaces", v.remove_extra_whitespaces);

  v.lowercase = file.get_bool("tokenizer.ggml.normalizer.lowercase", v.lowercase);
  v.strip_accents = file.get_bool("tokenizer.ggml.normalizer.strip_accents", v.lowercase);

  // tokens, scores, types
  const GgufValue* list = file.find("tokenizer.ggml.tokens");
  if (list == nullptr || !list->is_array() || list->elem_type() != GgufType::STRING)
    throw Error("tokenizer: tokenizer.ggml.tokens is missing or not a string array");
  const auto& items = list->items();
  const size_t n = items.size();
  const GgufValue* scores = file.find("tokenizer.ggml.scores");
  if (scores != nullptr && (!scores->is_array() || scores->items().size() < n))
    throw Error("tokenizer: tokenizer.ggml.scores is shorter than the token list");
  const GgufValue* types = file.find("tokenizer.ggml.token_type");
  if (types != nullptr && (!types->is_array() || types->items().size() < n))
    throw Error("tokenizer: tokenizer.ggml.token_type is shorter than the token list");
  v.tokens.resize(n);
  v.ids.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) {
    TokenInfo& t = v.tokens[i];
    t.text = items[i].as_string();
    if (t.text.empty()) t.text = "[EMPTY_" + std::to_string(i) + "]";  // as libllama renames them
    if (!v.ids.emplace(t.text, static_cast<int32_t>(i)).second)
      throw Error("tokenizer: duplicate token in vocabulary: '" + t.text + "'");
    v.max_token_len = std::max(v.max_token_len, t.text.size());
    if (scores != nullptr) t.score = static_cast<float>(scores->items()[i].as_f64());
    t.attr = types != nullptr ? attr_of_type(types->items()[i].as_i64()) : kAttrNormal;
  }

  if (need_merges) {
    const GgufValue* merges = file.find("tokenizer.ggml.merges");
    if (merges == nullptr || !merges->is_array()) throw Error("tokenizer: tokenizer.ggml.merges is missing");
    const auto& m = merges->items();
    v.merge_ranks.reserve(m.size() * 2);
    for (size_t i = 0; i < m.size(); ++i) {
      const std::string& word = m[i].as_string();
      const size_t pos = word.find(' ', 1);
      std::string key = pos == std::string::npos ? std::string(" ") : word;  // "left right"
      v.merge_ranks.emplace(std::move(key), static_cast<int32_t>(i));
    }
  }

  // special ids: the default unless the key holds an id inside the vocabulary
  const struct {
    const char* key;
    int32_t* id;
  } special_keys[] = {
      {"tokenizer.ggml.bos_token_id", &v.bos},         {"tokenizer.ggml.eos_token_id", &v.eos},
      {"tokenizer.ggml.eot_token_id", &v.eot},         {"tokenizer.ggml.eom_token_id", &v.eom},
      {"tokenizer.ggml.unknown_token_id", &v.unk},     {"tokenizer.ggml.seperator_token_id", &v.sep},
      {"tokenizer.ggml.padding_token_id", &v.pad},     {"tokenizer.ggml.mask_token_id", &v.mask},
      {"tokenizer.ggml.fim_pre_token_id", &v.fim_pre}, {"tokenizer.ggml.fim_suf_token_id", &v.fim_suf},
      {"tokenizer.ggml.fim_mid_token_id", &v.fim_mid}, {"tokenizer.ggml.fim_pad_token_id", &v.fim_pad},
      {"tokenizer.ggml.fim_rep_token_id", &v.fim_rep}, {"tokenizer.ggml.fim_sep_token_id", &v.fim_sep},
      {"tokenizer.ggml.prefix_token_id", &v.fim_pre},  {"tokenizer.ggml.suffix_token_id", &v.fim_suf},
      {"tokenizer.ggml.middle_token_id", &v.fim_mid},
  };
  for (const auto& s : special_keys) {
    if (*s.id >= static_cast<int64_t>(n)) *s.id = kNoToken;
    const GgufValue* val = file.find(s.key);
    if (val == nullptr || !val->is_integer()) continue;
    const int64_t id = val->as_i64();
    if (id >= 0 && id < static_cast<int64_t>(n)) *s.id = static_cast<int32_t>(id);
  }
  v.add_bos = file.get_bool("tokenizer.ggml.add_bos_token", v.add_bos);
  v.add_eos = file.get_bool("tokenizer.ggml.add_eos_token", v.add_eos);
  v.add_sep = file.get_bool("tokenizer.ggml.add_sep_token", v.add_sep);
  if (v.type == VocabType::kBpe && v.pre.name == "gemma4") v.add_bos = true;
  if (v.add_bos && v.bos == kNoToken) throw Error("tokenizer: add_bos_token is true but there is no bos token");
  if (v.add_eos && v.eos == kNoToken) throw Error("tokenizer: add_eos_token is true but there is no eos token");
  if (v.add_sep && v.sep == kNoToken) throw Error("tokenizer: add_sep_token is true but there is no sep token");

  // Ids found by their text when no key names them; such a token becomes control.
  auto detect = [&](int32_t& id, std::initializer_list<const char*> names) {
    if (id != kNoToken) return;
    for (size_t i = 0; i < n && id == kNoToken; ++i) {
      for (const char* name : names) {
        if (v.tokens[i].text == name) {
          id = static_cast<int32_t>(i);
          v.tokens[i].attr |= kAttrControl;
          break;
        }
      }
    }
  };
  detect(v.eot, {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<EOT>",
                 "_<EOT>", "[EOT]",
                 "<\xef\xbd\x9c"
                 "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
                 "<end_of_utterance>"});
  detect(v.eom, {"<|eom_id|>"});
  detect(v.fim_pre, {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",
                     "<\xef\xbd\x9c"
                     "fim\xe2\x96\x81"
                     "begin\xef\xbd\x9c>",
                     "<PRE>", "\xe2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>"});
  detect(v.fim_suf, {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
                     "<\xef\xbd\x9c"
                     "fim\xe2\x96\x81hole\xef\xbd\x9c>",
                     "<SUF>", "\xe2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>"});
  detect(v.fim_mid, {"<|fim_middle|>", "<fim-middle>", "<fim_middle>",
                     "<\xef\xbd\x9c"
                     "fim\xe2\x96\x81"
                     "end\xef\xbd\x9c>",
                     "<MID>", "\xe2\x96\x81<MID>", "<|code_middle|>", "<|middle|>"});
  detect(v.fim_pad, {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"});
  detect(v.fim_rep, {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"});
  detect(v.fim_sep, {"<|file_sep|>"});

  for (TokenInfo& t : v.tokens) {
    if ((t.attr & kAttrControl) && t.text.find("unused") != std::string::npos) t.attr |= kAttrUnused;
  }

  // end-of-generation tokens
  std::set<int32_t> eog;
  for (const int32_t id : {v.fim_pad, v.fim_rep, v.fim_sep}) {
    if (id != kNoToken) eog.insert(id);
  }
  static const char* const kEogNames[] = {"<|eot_id|>",
                                          "<|im_end|>",
                                          "<|end|>",
                                          "<|return|>",
                                          "<|call|>",
                                          "<|flush|>",
                                          "<|calls|>",
                                          "<end_of_turn>",
                                          "<|endoftext|>",
                                          "</s>",
                                          "<|eom_id|>",
                                          "<EOT>",
                                          "_<EOT>",
                                          "[EOT]",
                                          "[EOS]",
                                          "<|end_of_text|>",
                                          "<end_of_utterance>",
                                          "<eos>",
                                          "<turn|>",
                                          "<|tool_response>",
                                          "<\xef\xbd\x9c"
                                          "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
                                          "[e~["};
  for (size_t i = 0; i < n; ++i) {
    TokenInfo& t = v.tokens[i];
    if (std::find(std::begin(kEogNames), std::end(kEogNames), t.text) != std::end(kEogNames)) {
      eog.insert(static_cast<int32_t>(i));
      t.attr |= kAttrControl;
    }
    // gpt-oss: these always render (libllama forces them user-defined)
    if (t.text == "<|channel|>" || t.text == "<|message|>" || t.text == "<|start|>" || t.text == "<|constrain|>")
      t.attr = kAttrUserDefined;
  }
  for (const int32_t id : {v.eos, v.eot, v.eom}) {
    if (id != kNoToken) eog.insert(id);
  }
  {
    bool has_return = false, has_call = false, has_flush = false;
    int32_t end_id = kNoToken, s_id = kNoToken;
    bool has_tool_response = false;
    for (const int32_t id : eog) {
      const std::string& text = v.tokens[id].text;
      if (text == "<|return|>")
        has_return = true;
      else if (text == "<|call|>" || text == "<|calls|>")
        has_call = true;
      else if (text == "<|flush|>")
        has_flush = true;
      else if (text == "<|end|>")
        end_id = id;
      else if (text == "<|tool_response>")
        has_tool_response = true;
      else if (text == "</s>")
        s_id = id;
    }
    if (end_id != kNoToken && ((has_return && has_call) || (has_call && has_flush))) {
      eog.erase(end_id);
      v.tokens[end_id].attr = kAttrUserDefined;
    }
    if (has_tool_response && s_id != kNoToken) {
      eog.erase(s_id);
      v.tokens[s_id].attr = kAttrNormal;
    }
  }
  v.eog.assign(eog.begin(), eog.end());

  // special tokens, longest first (same comparator and input order as libllama,
  // so ties come out the same with the same std::sort)
  for (size_t i = 0; i < n; ++i) {
    if (v.tokens[i].attr & (kAttrControl | kAttrUserDefined | kAttrUnknown))
      v.special_tokens.push_back(static_cast<int32_t>(i));
  }
  std::sort(v.special_tokens.begin(), v.special_tokens.end(),
            [&](int32_t a, int32_t b) { return v.tokens[a].text.size() > v.tokens[b].text.size(); });

  // pieces (token_to_piece with special = true)
  v.pieces.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const TokenInfo& t = v.tokens[i];
    std::string& p = v.pieces[i];
    if (v.type == VocabType::kRwkv) {
      p = unescape_rwkv_token(t.text);  // every token, whatever its type
    } else if (t.attr & (kAttrUnknown | kAttrControl | kAttrUserDefined)) {
      p = t.text;
    } else if (t.attr & kAttrNormal) {
      p = t.text;
      if (v.type != VocabType::kBpe || v.escape_whitespaces) {
        replace_all(p, "\xe2\x96\x81", " ");
      } else {
        p = decode_byte_level(t.text);
      }
    } else if (t.attr & kAttrByte) {
      p = std::string(1, static_cast<char>(std::strtol(t.text.substr(3, 2).c_str(), nullptr, 16)));
    }
  }

  // per-model attributes libllama sets by name
  std::string name = file.get_string("general.name", "");
  std::transform(name.begin(), name.end(), name.begin(), [](char c) { return static_cast<char>(std::tolower(c)); });
  const std::string arch = file.get_string("general.architecture", "");
  const std::string pre_key = file.get_string("tokenizer.ggml.pre", "");
  auto set_attr = [&](const char* text, uint32_t attr, bool on) {
    const int32_t id = v.find(text);
    if (id == kNoToken) return;
    v.tokens[id].attr = on ? (v.tokens[id].attr | attr) : (v.tokens[id].attr & ~attr);
  };
  if (contains_any(pre_key, {"jina-v2-de", "jina-v2-es", "jina-v2-code"}) ||
      contains_any(arch, {"nomic-bert-moe", "jina-bert-v3"})) {
    set_attr("<mask>", kAttrLstrip, true);
  } else if (contains_any(name, {"phi-3", "phi3"})) {
    for (const int32_t id : v.special_tokens) v.tokens[id].attr |= kAttrRstrip;
    set_attr("</s>", kAttrRstrip, true);
    for (const char* t : {"<unk>", "<s>", "<|endoftext|>"}) set_attr(t, kAttrRstrip, false);
  } else if (contains_any(name, {"modern-bert"})) {
    set_attr("[MASK]", kAttrLstrip, true);
  }
  return v;
}

}  // namespace strix::tok
