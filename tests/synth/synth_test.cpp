// strix synth against the reference: every architecture and weight type is
// written by our generator, loaded by libllama (ref/libllama.h) and decoded;
// logits must be finite and peaked (std over the vocabulary >= 2) at every
// position. Negative controls show that the load and the std check can fail:
// a file missing a tensor, one with an extra tensor and one with a flattened lm
// head are each caught.
#include "core/source_dir.h"
#include "synth/synth.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "quant/types.h"
#include "ref/libllama.h"

namespace fs = std::filesystem;
using strix::synth::SynthOptions;

namespace {

const std::string kStories = std::string(STRIX_SOURCE_DIR) + "/../shared/data/stories260K.gguf";

fs::path temp_dir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("strix_synth_test_" + std::to_string(getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

class RemoveTempDir : public testing::Environment {
 public:
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(fs::temp_directory_path() / ("strix_synth_test_" + std::to_string(getpid())), ec);
  }
};
const testing::Environment* const kCleanup = testing::AddGlobalTestEnvironment(new RemoveTempDir);

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// stories260K's vocabulary plus "<|endoftext|>" (CONTROL), the shape of Phi-3's
// own vocabulary (llama2 + added tokens): the pinned libllama's phi3 loader
// needs that token whenever "</s>" is present.
std::string phi3_vocab() {
  static const std::string path = [] {
    auto f = strix::GgufFile::open(kStories);
    strix::GgufWriter w;
    w.set_str("general.architecture", "llama");
    for (const auto& kv : f->kvs()) {
      if (kv.key.rfind("tokenizer.", 0) != 0) continue;
      if (kv.key == "tokenizer.ggml.tokens") {
        auto toks = kv.value.as_str_array();
        toks.push_back("<|endoftext|>");
        w.set(kv.key, strix::GgufValue::str_array(toks));
      } else if (kv.key == "tokenizer.ggml.scores") {
        std::vector<float> sc;
        for (double d : kv.value.as_f64_array()) sc.push_back(static_cast<float>(d));
        sc.push_back(0.0f);
        w.set(kv.key, strix::GgufValue::f32_array(sc));
      } else if (kv.key == "tokenizer.ggml.token_type") {
        std::vector<int32_t> tt;
        for (int64_t t : kv.value.as_i64_array()) tt.push_back(static_cast<int32_t>(t));
        tt.push_back(3);
        w.set(kv.key, strix::GgufValue::i32_array(tt));
      } else {
        w.set(kv.key, kv.value);
      }
    }
    const std::string out = (temp_dir() / "phi3_vocab.gguf").string();
    w.write(out);
    return out;
  }();
  return path;
}

SynthOptions base_options(const std::string& arch, const std::string& type, const std::string& name) {
  SynthOptions o;
  o.arch = arch;
  o.type = type;
  o.seed = 42;
  o.vocab = arch == "phi3" ? phi3_vocab() : std::string(kStories);
  o.out = (temp_dir() / (name + ".gguf")).string();
  return o;
}

struct LogitStats {
  float min_std = 1e30f;
  bool finite = true;
};

// Decodes 16 tokens in two batches (8 + 8, so the second batch attends to the
// KV cache) and measures every position's logits.
LogitStats decode_and_measure(const std::string& path) {
  strix::ref::LlamaModel model(path);
  strix::ref::LlamaContext ctx(model, {.n_ctx = 64, .n_batch = 64, .n_ubatch = 64, .n_threads = 2});
  const int32_t n_vocab = model.n_vocab();
  std::vector<int32_t> tokens;
  uint32_t x = 12345;
  for (int i = 0; i < 16; ++i) {
    x = x * 1664525u + 1013904223u;
    tokens.push_back(static_cast<int32_t>((x >> 8) % static_cast<uint32_t>(n_vocab)));
  }
  LogitStats s;
  for (int half = 0; half < 2; ++half) {
    std::span<const int32_t> part(tokens.data() + half * 8, 8);
    ctx.decode_seq(part, half * 8);
    for (int i = 0; i < 8; ++i) {
      auto row = ctx.logits(i);
      double sum = 0, sum2 = 0;
      for (float v : row) {
        if (!std::isfinite(v)) s.finite = false;
        sum += v;
        sum2 += static_cast<double>(v) * v;
      }
      const double mean = sum / row.size();
      const float std = static_cast<float>(std::sqrt(std::max(0.0, sum2 / row.size() - mean * mean)));
      s.min_std = std::min(s.min_std, std);
    }
  }
  return s;
}

// Rewrites a GGUF through our reader and writer, letting `edit` drop or change tensors.
using TensorEdit = std::function<bool(const strix::GgufTensor& t, std::vector<uint8_t>& data)>;
void rewrite(const std::string& in, const std::string& out, const TensorEdit& edit,
             const std::vector<std::pair<std::string, std::vector<int64_t>>>& extra = {}) {
  auto f = strix::GgufFile::open(in);
  strix::GgufWriter w;
  for (const auto& kv : f->kvs()) w.set(kv.key, kv.value);
  for (const auto& t : f->tensors()) {
    std::vector<uint8_t> data(t.data, t.data + t.nbytes);
    if (!edit(t, data)) continue;
    w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims), data.data(), data.size());
  }
  for (const auto& [name, ne] : extra) {
    size_t n = 1;
    for (auto d : ne) n *= static_cast<size_t>(d);
    std::vector<float> zeros(n, 0.0f);
    w.add_tensor(name, 0, ne, zeros.data(), n * 4);
  }
  w.write(out);
}

struct Case {
  std::string arch;
  std::string type;
};

std::string case_name(const testing::TestParamInfo<Case>& info) {
  std::string n = info.param.arch + "_" + info.param.type;
  for (auto& c : n) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return n;
}

std::vector<Case> all_cases() {
  // f32, f16, q8_0 and q4_K for every architecture; every other type with a
  // reference quantizer on one dense and two MoE architectures.
  const char* everywhere[] = {"f32", "f16", "q8_0", "q4_K"};
  const char* others[] = {"bf16",   "q4_0",  "q4_1",  "q5_0",  "q5_1",    "q2_K",  "q3_K",  "q5_K",  "q6_K", "iq4_nl",
                          "iq4_xs", "mxfp4", "iq3_s", "iq2_s", "iq3_xxs", "tq1_0", "tq2_0", "nvfp4", "q1_0", "q2_0"};
  std::vector<Case> cases;
  for (const auto& arch : strix::synth::synth_arch_names()) {
    for (const char* t : everywhere) cases.push_back({arch, t});
    if (arch == "llama" || arch == "qwen3moe" || arch == "gpt-oss") {
      for (const char* t : others) cases.push_back({arch, t});
    }
  }
  return cases;
}

class SynthArchTest : public testing::TestWithParam<Case> {};

TEST_P(SynthArchTest, libllama_loads_and_logits_are_peaked) {
  if (!fs::exists(kStories)) GTEST_SKIP() << "no " << kStories;
  const Case& c = GetParam();
  SynthOptions o = base_options(c.arch, c.type, "arch_" + c.arch + "_" + c.type);
  const auto r = strix::synth::synth_write(o);
  const int32_t n_vocab = c.arch == "phi3" ? 513 : 512;
  EXPECT_EQ(r.n_vocab, n_vocab);

  strix::ref::LlamaModel model(o.out);
  EXPECT_EQ(model.n_vocab(), n_vocab);
  // libllama must know the file type we wrote
  const auto ft = model.meta("general.file_type");
  ASSERT_TRUE(ft.has_value());
  EXPECT_EQ(std::stoul(*ft), r.file_type);
  EXPECT_NE(strix::ref::LibLlama::get().ftype_name(static_cast<int32_t>(r.file_type)), nullptr);
  EXPECT_EQ(model.meta("general.architecture").value_or(""), c.arch);

  const LogitStats s = decode_and_measure(o.out);
  std::printf("[ measured ] %s %s: file_type %u, min logit std over 16 positions %.2f\n", c.arch.c_str(),
              c.type.c_str(), r.file_type, s.min_std);
  EXPECT_TRUE(s.finite) << c.arch << " " << c.type;
  EXPECT_GE(s.min_std, 2.0f) << c.arch << " " << c.type;
  fs::remove(o.out);
}

INSTANTIATE_TEST_SUITE_P(All, SynthArchTest, testing::ValuesIn(all_cases()), case_name);

// gpt-oss with dense experts (the default is MXFP4 experts, covered above).
TEST(Synth, gpt_oss_with_f16_experts_loads) {
  if (!fs::exists(kStories)) GTEST_SKIP() << "no " << kStories;
  SynthOptions o = base_options("gpt-oss", "f16", "gptoss_f16_experts");
  o.expert_type = "f16";
  const auto r = strix::synth::synth_write(o);
  EXPECT_EQ(r.file_type, 1u);
  const LogitStats s = decode_and_measure(o.out);
  EXPECT_TRUE(s.finite);
  EXPECT_GE(s.min_std, 2.0f);
}

// Real, big vocabularies (150k-200k tokens) with a small embedding width.
TEST(Synth, big_real_vocabularies_load) {
  struct Big {
    const char* arch;
    const char* vocab;
    int64_t n_vocab;
  };
  for (const Big& b : {Big{"qwen3", "qwen3", 151669}, Big{"gpt-oss", "gptoss", 200019}}) {
    SynthOptions o = base_options(b.arch, "q8_0", std::string("big_") + b.vocab);
    o.vocab = b.vocab;
    o.n_embd = 64;
    o.n_head = 2;
    o.n_head_kv = 1;
    o.head_dim = 32;
    o.n_ff = 128;
    const auto r = strix::synth::synth_write(o);
    EXPECT_EQ(r.n_vocab, b.n_vocab);
    const LogitStats s = decode_and_measure(o.out);
    EXPECT_TRUE(s.finite) << b.arch;
    EXPECT_GE(s.min_std, 2.0f) << b.arch;
    fs::remove(o.out);
  }
}

// Non-default sizes: GQA 8:1, explicit head_dim, more layers and experts.
TEST(Synth, custom_sizes_load) {
  if (!fs::exists(kStories)) GTEST_SKIP() << "no " << kStories;
  struct Sized {
    const char* arch;
    int64_t layers, embd, heads, kv, head_dim, ff, experts, used;
  };
  const Sized cases[] = {
      {"llama", 3, 128, 8, 1, 32, 256, 0, 0},   {"qwen3", 2, 128, 4, 2, 64, 256, 0, 0},  // q width 256 != n_embd 128
      {"qwen3moe", 2, 128, 4, 4, 32, 64, 8, 3}, {"gemma3", 7, 128, 2, 1, 32, 256, 0, 0},
      {"gpt-oss", 3, 128, 8, 2, 32, 64, 8, 4},  {"llama", 2, 128, 4, 2, 32, 64, 4, 2},  // Mixtral-style experts
      {"qwen2", 2, 128, 8, 2, 16, 256, 0, 0},   {"olmoe", 2, 128, 4, 4, 32, 64, 6, 2},
      {"phi3", 2, 128, 4, 1, 32, 192, 0, 0},
  };
  for (const auto& c : cases) {
    SynthOptions o = base_options(c.arch, "f32", std::string("sized_") + c.arch);
    o.n_layer = c.layers;
    o.n_embd = c.embd;
    o.n_head = c.heads;
    o.n_head_kv = c.kv;
    o.head_dim = c.head_dim;
    o.n_ff = c.ff;
    if (c.experts) {
      o.n_expert = c.experts;
      o.n_expert_used = c.used;
      o.expert_type = "f32";
    }
    strix::synth::synth_write(o);
    strix::ref::LlamaModel model(o.out);
    EXPECT_EQ(model.n_layer(), c.layers) << c.arch;
    EXPECT_EQ(model.n_embd(), c.embd) << c.arch;
    EXPECT_EQ(model.n_head(), c.heads) << c.arch;
    EXPECT_EQ(model.n_head_kv(), c.kv) << c.arch;
    const LogitStats s = decode_and_measure(o.out);
    EXPECT_TRUE(s.finite) << c.arch;
    EXPECT_GE(s.min_std, 2.0f) << c.arch;
  }
}

// A row length that is not a whole number of blocks: q4_K falls back to q5_0 as
// llama-quantize does (embd 96: 96 % 256 != 0, 96 % 32 == 0), and q8_0 with a
// row of 80 is refused naming the tensor.
TEST(Synth, block_size_fallback_and_refusal) {
  if (!fs::exists(kStories)) GTEST_SKIP() << "no " << kStories;
  SynthOptions o = base_options("llama", "q4_K", "fallback_q4k");
  o.n_embd = 96;
  o.n_head = 2;
  o.n_head_kv = 1;
  o.n_ff = 256;
  strix::synth::synth_write(o);
  auto f = strix::GgufFile::open(o.out);
  EXPECT_EQ(f->find_tensor("blk.0.attn_q.weight")->type, static_cast<uint32_t>(strix::GgmlType::Q5_0));
  EXPECT_EQ(f->find_tensor("blk.0.ffn_down.weight")->type, static_cast<uint32_t>(strix::GgmlType::Q4_K));
  const LogitStats s = decode_and_measure(o.out);
  EXPECT_TRUE(s.finite);

  SynthOptions bad = base_options("llama", "q8_0", "refuse_q8");
  bad.n_embd = 80;
  bad.n_head = 2;
  bad.n_head_kv = 1;
  try {
    strix::synth::synth_write(bad);
    FAIL() << "expected an Error";
  } catch (const strix::Error& e) {
    EXPECT_NE(std::string(e.what()).find("token_embd.weight"), std::string::npos) << e.what();
  }
}

TEST(Synth, same_seed_same_bytes_different_seed_different_bytes) {
  if (!fs::exists(kStories)) GTEST_SKIP() << "no " << kStories;
  for (const char* arch : {"llama", "gpt-oss"}) {
    SynthOptions a = base_options(arch, "q8_0", std::string("det_a_") + arch);
    SynthOptions b = base_options(arch, "q8_0", std::string("det_b_") + arch);
    SynthOptions c = base_options(arch, "q8_0", std::string("det_c_") + arch);
    c.seed = 43;
    strix::synth::synth_write(a);
    strix::synth::synth_write(b);
    strix::synth::synth_write(c);
    const std::string ba = read_bytes(a.out), bb = read_bytes(b.out), bc = read_bytes(c.out);
    ASSERT_FALSE(ba.empty());
    EXPECT_EQ(ba, bb) << arch;
    EXPECT_NE(ba, bc) << arch;
    EXPECT_EQ(ba.size(), bc.size()) << arch;
  }
}

// ---- negative controls: the checks above can fail ---------------------------------

TEST(SynthNegativeControl, missing_tensor_is_refused_by_libllama) {
  if (!fs::exists(kStories)) GTEST_SKIP() << "no " << kStories;
  SynthOptions o = base_options("qwen3", "f32", "neg_missing");
  strix::synth::synth_write(o);
  const std::string bad = (temp_dir() / "neg_missing_bad.gguf").string();
  rewrite(o.out, bad,
          [](const strix::GgufTensor& t, std::vector<uint8_t>&) { return t.name != "blk.1.attn_k_norm.weight"; });
  EXPECT_NO_THROW(strix::ref::LlamaModel ok(o.out));
  EXPECT_THROW(strix::ref::LlamaModel m(bad), strix::Error);
}

TEST(SynthNegativeControl, extra_tensor_is_refused_by_libllama) {
  if (!fs::exists(kStories)) GTEST_SKIP() << "no " << kStories;
  SynthOptions o = base_options("gemma3", "f32", "neg_extra");
  strix::synth::synth_write(o);
  const std::string bad = (temp_dir() / "neg_extra_bad.gguf").string();
  // a tensor no loader creates: one tensor too many
  rewrite(o.out, bad, [](const strix::GgufTensor&, std::vector<uint8_t>&) { return true; },
          {{"blk.0.ffn_bogus.weight", {256}}});
  EXPECT_NO_THROW(strix::ref::LlamaModel ok(o.out));
  EXPECT_THROW(strix::ref::LlamaModel m(bad), strix::Error);
}

TEST(SynthNegativeControl, flat_lm_head_fails_the_std_check) {
  if (!fs::exists(kStories)) GTEST_SKIP() << "no " << kStories;
  SynthOptions o = base_options("llama", "f32", "neg_flat");
  strix::synth::synth_write(o);
  const std::string bad = (temp_dir() / "neg_flat_bad.gguf").string();
  rewrite(o.out, bad, [](const strix::GgufTensor& t, std::vector<uint8_t>& data) {
    if (t.name == "output.weight") {
      auto* f = reinterpret_cast<float*>(data.data());
      for (size_t i = 0; i < data.size() / 4; ++i) f[i] *= 0.01f;
    }
    return true;
  });
  EXPECT_GE(decode_and_measure(o.out).min_std, 2.0f);
  EXPECT_LT(decode_and_measure(bad).min_std, 2.0f);
}

// ---- the command line ------------------------------------------------------------

struct CliRun {
  int status;
  std::string output;
};

CliRun run_strix(const std::string& args) {
  const std::string cmd = std::string(STRIX_BINARY_PATH) + " synth " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) throw strix::Error("popen failed");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

TEST(SynthCli, bad_arguments_name_the_flag) {
  const std::string out = (temp_dir() / "cli.gguf").string();
  struct Bad {
    std::string args;
    std::string mentions;
  };
  const Bad cases[] = {
      {"--arch mamba -o " + out, "--arch"},
      {"--arch llama --type q9_9 -o " + out, "--type"},
      {"--arch llama", "-o"},
      {"--arch llama --layers two -o " + out, "--layers"},
      {"--arch llama --layers 0 -o " + out, "--layers"},
      {"--arch llama --seed -1 -o " + out, "--seed"},
      {"--arch llama --kv-heads 3 -o " + out, "--kv-heads"},
      {"--arch llama --experts 4 -o " + out + " --vocab " + kStories + " --sliding-window 4", "--sliding-window"},
      {"--arch olmoe --kv-heads 2 -o " + out, "--kv-heads"},
      {"--arch qwen2 --head-dim 48 -o " + out, "--head-dim"},
      {"--arch llama --bogus 1 -o " + out, "--bogus"},
      {"--arch llama --vocab /nonexistent/x.gguf -o " + out, "--vocab"},
      {"--arch llama --embd", "--embd"},
      {"--arch phi3 --vocab " + std::string(kStories) + " -o " + out, "<|endoftext|>"},
  };
  for (const auto& c : cases) {
    const CliRun r = run_strix(c.args);
    EXPECT_EQ(r.status, 1) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find("error:"), std::string::npos) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.mentions), std::string::npos) << c.args << "\n" << r.output;
  }
  EXPECT_FALSE(fs::exists(out));
}

TEST(SynthCli, help_and_a_good_run) {
  CliRun h = run_strix("-h");
  EXPECT_EQ(h.status, 0);
  EXPECT_NE(h.output.find("--arch"), std::string::npos);
  if (!fs::exists(kStories)) GTEST_SKIP() << "no " << kStories;
  const std::string out = (temp_dir() / "cli_ok.gguf").string();
  CliRun r = run_strix("--arch qwen2 --type f16 --seed 7 -o " + out);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("vocab: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("stories260K.gguf"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(out));
}

}  // namespace
