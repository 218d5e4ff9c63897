// Checks that our binding of the reference libllama (src/ref/libllama.h) drives
// the pinned library correctly: struct layouts, model load, tokenizer, decode
// with several sequences, samplers and quantization. The expected story text is
// libllama's own well-known greedy output for stories260K, not something Strix
// produced.
#include "ref/libllama.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/source_dir.h"

namespace strix::ref {
namespace {

const std::string kModel = std::string(STRIX_SOURCE_DIR) + "/../shared/data/stories260K.gguf";

bool have_model() { return std::filesystem::exists(kModel); }

#define REQUIRE_MODEL() \
  if (!have_model()) GTEST_SKIP() << kModel << " is absent"

float max_abs_diff(std::span<const float> a, std::span<const float> b) {
  float m = 0.0f;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

int32_t argmax(std::span<const float> v) {
  size_t best = 0;
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] > v[best]) best = i;
  return static_cast<int32_t>(best);
}

// A temporary file path removed at scope exit.
struct TempPath {
  std::string path;
  explicit TempPath(const std::string& stem)
      : path((std::filesystem::temp_directory_path() / (stem + "-" + std::to_string(::getpid()) + ".gguf")).string()) {}
  ~TempPath() { std::remove(path.c_str()); }
};

// Whether every flag is on the first "flags" line of /proc/cpuinfo.
bool cpuinfo_has(std::initializer_list<const char*> flags) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> have{std::istream_iterator<std::string>(words), std::istream_iterator<std::string>()};
    for (const char* f : flags) {
      if (!have.count(f)) return false;
    }
    return true;
  }
  return false;
}

// The reference's CPU build: STRIX_REF_CPU_VARIANT names one ("best": libggml's pick); unset,
// zen4 on a CPU whose flags run that build (libggml would pick its sapphirerapids build on Intel
// ones, which sums in another order), else libggml's pick; and the mapped libggml-cpu is that build.
TEST(LibLlama, cpu_variant_follows_the_environment) {
  const char* old = std::getenv("STRIX_REF_CPU_VARIANT");
  const std::string saved = old ? old : "";
  ::setenv("STRIX_REF_CPU_VARIANT", "haswell", 1);
  EXPECT_EQ(ref::reference_cpu_variant(), "haswell");
  ::setenv("STRIX_REF_CPU_VARIANT", "best", 1);
  EXPECT_EQ(ref::reference_cpu_variant(), "");
  ::unsetenv("STRIX_REF_CPU_VARIANT");
  const std::string pick = ref::reference_cpu_variant();
  // the kernel's word on the zen4 build's features (/proc/cpuinfo), not the compiler's
  const bool zen4 = cpuinfo_has({"avx512f", "avx512vbmi", "avx512_vnni", "avx512_bf16"});
  EXPECT_EQ(pick, zen4 ? "zen4" : "");
  // a speed comparison takes libggml's pick, but not over a variant the user named
  ref::use_libggml_cpu_pick();
  EXPECT_EQ(ref::reference_cpu_variant(), "");
  ::setenv("STRIX_REF_CPU_VARIANT", "haswell", 1);
  ref::use_libggml_cpu_pick();
  EXPECT_EQ(ref::reference_cpu_variant(), "haswell");
  ::unsetenv("STRIX_REF_CPU_VARIANT");
  if (old) ::setenv("STRIX_REF_CPU_VARIANT", saved.c_str(), 1);
  // and the loaded reference computes with that build
  (void)LibLlama::get();
  std::FILE* f = std::fopen("/proc/self/maps", "r");
  ASSERT_NE(f, nullptr);
  std::set<std::string> cpu_libs;
  char line[4096];
  while (std::fgets(line, sizeof line, f)) {
    const char* at = std::strstr(line, "libggml-cpu-");
    if (at) cpu_libs.insert(std::string(at, std::strcspn(at, "\n")));
  }
  std::fclose(f);
  ASSERT_EQ(cpu_libs.size(), 1u);
  if (!old && zen4) {
    EXPECT_EQ(*cpu_libs.begin(), "libggml-cpu-zen4.so");
  }
}

TEST(LibLlama, loads_and_passes_abi_self_check) {
  const LibLlama& lib = LibLlama::get();  // throws on any layout mismatch
  const auto c = lib.context_default_params();
  EXPECT_EQ(c.n_ctx, 512u);
  EXPECT_EQ(c.n_batch, 2048u);
  const auto m = lib.model_default_params();
  EXPECT_EQ(m.n_gpu_layers, -1);
  EXPECT_TRUE(m.use_extra_bufts);
  const auto q = lib.quantize_default_params();
  EXPECT_EQ(q.ftype, 7);
  EXPECT_STREQ(lib.ftype_name(7), "Q8_0");
  EXPECT_EQ(lib.ftype_name(5), nullptr);  // a removed ftype is not offered
}

// Negative control for the start-up self-check: the library's own defaults pass,
// the same bytes shifted by one int32 (a field inserted upstream) do not.
template <typename T, typename Check>
void expect_shift_detected(const T& good, Check check) {
  EXPECT_NO_THROW(check(good));
  for (size_t shift : {size_t{1}, size_t{4}, size_t{8}}) {
    T bad;
    std::memset(&bad, 0, sizeof bad);
    std::memcpy(reinterpret_cast<char*>(&bad) + shift, &good, sizeof good - shift);
    EXPECT_THROW(check(bad), Error) << "shift by " << shift;
  }
}

TEST(LibLlama, abi_check_catches_shifted_layouts) {
  const LibLlama& lib = LibLlama::get();
  expect_shift_detected(lib.model_default_params(), llama_abi::check_model_defaults);
  expect_shift_detected(lib.context_default_params(), llama_abi::check_context_defaults);
  expect_shift_detected(lib.quantize_default_params(), llama_abi::check_quantize_defaults);
  auto c = lib.context_default_params();
  c.n_batch = 4096;  // a changed default is reported by name
  try {
    llama_abi::check_context_defaults(c);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("n_batch is 4096, expected 2048"), std::string::npos) << e.what();
  }
}

// End-to-end check of the context fields we set: libllama logs the values it
// received, so distinctive values must come back at the same names.
TEST(LibLlama, context_fields_reach_libllama) {
  REQUIRE_MODEL();
  LlamaModel model(kModel);
  std::string log;
  {
    LlamaLogCapture capture;
    LlamaContext ctx(model, {.n_ctx = 256, .n_batch = 48, .n_ubatch = 16, .n_seq_max = 3, .n_threads = 1});
    log = capture.text();
    EXPECT_EQ(ctx.n_batch(), 48u);
  }
  for (const char* want :
       {"n_seq_max             = 3", "n_batch               = 48", "n_ubatch              = 16",
        "flash_attn            = disabled", "n_outputs_max         = 48", "n_outputs_max_per_seq = 48"}) {
    EXPECT_NE(log.find(want), std::string::npos) << want << "\n" << log;
  }
}

// The same for the model fields we set (load_mode, vocab_only).
TEST(LibLlama, model_fields_reach_libllama) {
  REQUIRE_MODEL();
  auto load_log = [](const LlamaModel::Options& options) {
    LlamaLogCapture capture;
    LlamaModel model(kModel, options);
    return capture.text();
  };
  const std::string mmap = load_log({});
  EXPECT_NE(mmap.find("(load_mode = mmap)"), std::string::npos) << mmap;
  EXPECT_NE(mmap.find("vocab_only            = 0"), std::string::npos) << mmap;
  const std::string read = load_log({.use_mmap = false});
  EXPECT_NE(read.find("(load_mode = none)"), std::string::npos) << read;
  const std::string vocab = load_log({.vocab_only = true});
  EXPECT_NE(vocab.find("vocab_only            = 1"), std::string::npos) << vocab;
  EXPECT_EQ(vocab.find("load_tensors"), std::string::npos) << vocab;
}

TEST(LibLlama, missing_symbol_is_an_error_naming_it) {
  try {
    (void)LibLlama::get().llama().symbol("llama_no_such_function");
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("llama_no_such_function"), std::string::npos) << e.what();
  }
}

TEST(LibLlama, missing_library_is_an_error_naming_it) {
  try {
    SharedLib lib("/nonexistent/libllama.v0.5.0.so");
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/libllama.v0.5.0.so"), std::string::npos) << e.what();
  }
}

TEST(LibLlama, missing_model_file_is_an_error) { EXPECT_THROW(LlamaModel("/nonexistent/model.gguf"), Error); }

TEST(LibLlama, model_reports_stories260k_dims) {
  REQUIRE_MODEL();
  LlamaModel model(kModel);
  EXPECT_EQ(model.n_vocab(), 512);
  EXPECT_EQ(model.n_embd(), 64);
  EXPECT_EQ(model.n_layer(), 5);
  EXPECT_EQ(model.n_head(), 8);
  EXPECT_EQ(model.n_head_kv(), 4);
  EXPECT_GT(model.n_params(), 200000u);
  EXPECT_EQ(model.bos(), 1);
  EXPECT_EQ(model.eos(), 2);
  EXPECT_TRUE(model.is_eog(model.eos()));
  EXPECT_FALSE(model.is_eog(100));
  EXPECT_EQ(model.meta("general.architecture"), std::optional<std::string>("llama"));
  EXPECT_EQ(model.meta("llama.embedding_length"), std::optional<std::string>("64"));
  EXPECT_EQ(model.meta("no.such.key"), std::nullopt);
  EXPECT_NE(model.desc().find("llama"), std::string::npos) << model.desc();
}

TEST(LibLlama, vocab_only_load_tokenizes) {
  REQUIRE_MODEL();
  LlamaModel vocab(kModel, {.vocab_only = true});
  EXPECT_EQ(vocab.n_vocab(), 512);
  const auto ids = vocab.tokenize("Once upon a time", true, false);
  ASSERT_GE(ids.size(), 2u);
  EXPECT_EQ(ids[0], vocab.bos());
}

TEST(LibLlama, tokenize_detokenize_round_trip) {
  REQUIRE_MODEL();
  LlamaModel vocab(kModel, {.vocab_only = true});
  const std::string text = "Once upon a time";
  const auto with_bos = vocab.tokenize(text, true, false);
  const auto without = vocab.tokenize(text, false, false);
  ASSERT_EQ(with_bos.size(), without.size() + 1);
  EXPECT_EQ(with_bos[0], vocab.bos());
  EXPECT_EQ(vocab.detokenize(without, false, false), text);
  // libllama's own behaviour: the SPM leading space is stripped from the first
  // token only, and with BOS first that token is BOS, so the space stays.
  EXPECT_EQ(vocab.detokenize(with_bos, true, false), " " + text);
  EXPECT_EQ(vocab.detokenize(with_bos, false, true), "<s> " + text);
  std::string pieces;
  for (int32_t id : without) pieces += vocab.token_to_piece(id, false);
  // SPM pieces carry the leading-space marker as a real space.
  EXPECT_EQ(pieces, " " + text);
  // Negative control: a different text gives different ids.
  EXPECT_NE(vocab.tokenize("Once upon a dime", false, false), without);
  // parse_special turns "<s>" into the BOS id only when asked.
  EXPECT_EQ(vocab.tokenize("<s>", false, true), std::vector<int32_t>{vocab.bos()});
  EXPECT_NE(vocab.tokenize("<s>", false, false), std::vector<int32_t>{vocab.bos()});
}

TEST(LibLlama, greedy_story_from_bos) {
  REQUIRE_MODEL();
  LlamaModel model(kModel);
  LlamaContext ctx(model, {.n_ctx = 128, .n_batch = 32, .n_threads = 1});
  LlamaSampler greedy = LlamaSampler::greedy();
  std::vector<int32_t> out;
  int32_t token = model.bos();
  for (int32_t pos = 0; pos < 30; ++pos) {
    const int32_t one[1] = {token};
    ctx.decode_seq(one, pos);
    token = greedy.sample(ctx, -1);
    EXPECT_EQ(token, argmax(ctx.logits(-1))) << "greedy must be the argmax at pos " << pos;
    out.push_back(token);
  }
  const std::string text = model.detokenize(out, true, false);
  EXPECT_EQ(text.rfind("Once upon a time, there was a little girl named Lily.", 0), 0u) << text;
}

TEST(LibLlama, two_sequences_in_one_batch_match) {
  REQUIRE_MODEL();
  LlamaModel model(kModel);
  LlamaContext ctx(model, {.n_ctx = 128, .n_batch = 64, .n_seq_max = 2, .n_threads = 1});
  const auto prompt = model.tokenize("Once upon a time", true, false);
  const size_t n = prompt.size();
  // Ragged batch: seq 0 then seq 1, the same tokens at the same positions.
  std::vector<int32_t> tok, pos, seq;
  for (int32_t s = 0; s < 2; ++s) {
    for (size_t i = 0; i < n; ++i) {
      tok.push_back(prompt[i]);
      pos.push_back(static_cast<int32_t>(i));
      seq.push_back(s);
    }
  }
  ctx.decode(tok, pos, seq);
  for (size_t i = 0; i < n; ++i) {
    const auto a = ctx.logits(static_cast<int32_t>(i));
    const auto b = ctx.logits(static_cast<int32_t>(n + i));
    ASSERT_EQ(a.size(), 512u);
    EXPECT_LT(max_abs_diff(a, b), 1e-4f) << "position " << i;
  }
  // The same prompt decoded alone in a fresh cache gives the same last row.
  const std::vector<float> last(ctx.logits(static_cast<int32_t>(n - 1)).begin(),
                                ctx.logits(static_cast<int32_t>(n - 1)).end());
  ctx.clear();
  ctx.decode_seq(prompt, 0, 0);
  EXPECT_LT(max_abs_diff(ctx.logits(-1), last), 1e-4f);

  // Negative control: a different last token gives clearly different logits.
  std::vector<int32_t> other = prompt;
  other.back() = other.back() == 100 ? 101 : 100;
  ctx.clear();
  ctx.decode_seq(other, 0, 0);
  EXPECT_GT(max_abs_diff(ctx.logits(-1), last), 0.1f);
}

TEST(LibLlama, only_requested_rows_have_logits) {
  REQUIRE_MODEL();
  LlamaModel model(kModel);
  LlamaContext ctx(model, {.n_ctx = 64, .n_batch = 16, .n_threads = 1});
  const auto prompt = model.tokenize("Once upon a time", true, false);
  std::vector<int32_t> pos(prompt.size()), seq(prompt.size(), 0);
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<int32_t>(i);
  std::vector<uint8_t> want(prompt.size(), 0);
  want.back() = 1;
  ctx.decode(prompt, pos, seq, want);
  EXPECT_NO_THROW(ctx.logits(static_cast<int32_t>(prompt.size() - 1)));
  EXPECT_THROW(ctx.logits(0), Error);
  EXPECT_THROW(ctx.decode(prompt, pos, std::vector<int32_t>{0}), Error);  // length mismatch
}

TEST(LibLlama, sampler_chains) {
  REQUIRE_MODEL();
  LlamaModel model(kModel);
  LlamaContext ctx(model, {.n_ctx = 64, .n_batch = 16, .n_threads = 1});
  ctx.decode_seq(model.tokenize("Once upon a time", true, false), 0);
  const std::vector<float> logits(ctx.logits(-1).begin(), ctx.logits(-1).end());
  const int32_t best = argmax(logits);

  EXPECT_EQ(LlamaSampler::greedy().sample_logits(logits), best);
  LlamaSampler k1;
  k1.top_k(1).dist(42);
  EXPECT_EQ(k1.sample_logits(logits), best);

  // The same seed draws the same sequence; through the context and without it.
  auto make = [] {
    LlamaSampler s;
    s.top_k(40).top_p(0.95f).temp(1.5f).dist(1234);
    return s;
  };
  LlamaSampler a = make(), b = make();
  std::vector<int32_t> da, db;
  for (int i = 0; i < 20; ++i) {
    da.push_back(a.sample_logits(logits));
    db.push_back(b.sample(ctx, -1));
  }
  EXPECT_EQ(da, db);
  // Flat logits: dist really draws, a seed fixes the draws, another seed changes them.
  const std::vector<float> flat(logits.size(), 0.0f);
  auto draws = [&](uint32_t seed) {
    LlamaSampler s;
    s.top_k(64).top_p(0.99f).temp(1.0f).dist(seed);
    std::vector<int32_t> d;
    for (int i = 0; i < 20; ++i) d.push_back(s.sample_logits(flat));
    return d;
  };
  const auto d7 = draws(7);
  EXPECT_EQ(d7, draws(7));
  EXPECT_NE(d7, draws(8));
  std::set<int32_t> distinct(d7.begin(), d7.end());
  EXPECT_GT(distinct.size(), 5u);

  // Penalties (5-argument form of this build) move the choice off a repeated token.
  LlamaSampler pen;
  pen.penalties(model.n_vocab(), 64, 1.0f, 0.0f, 1000.0f).greedy_stage();
  pen.accept(best);
  EXPECT_NE(pen.sample_logits(logits), best);
  pen.reset();
  EXPECT_EQ(pen.sample_logits(logits), best);
}

TEST(LibLlama, quantize_q8_0_loads_again) {
  REQUIRE_MODEL();
  EXPECT_EQ(llama_ftype_from_name("Q8_0"), 7);
  EXPECT_EQ(llama_ftype_from_name("Q4_K_M"), 15);
  EXPECT_EQ(llama_ftype_from_name("F16"), 1);
  EXPECT_EQ(llama_ftype_from_name("Q4_K - Medium"), 15);
  EXPECT_EQ(llama_ftype_from_name("F32"), 0);
  EXPECT_EQ(llama_ftype_from_name("Q2_K"), 10);
  EXPECT_EQ(llama_ftype_from_name("IQ2_XXS"), 19);
  EXPECT_EQ(llama_ftype_from_name("7"), 7);
  EXPECT_THROW(llama_ftype_from_name("Q9_9"), Error);
  EXPECT_THROW(llama_ftype_from_name("5"), Error);  // removed Q4_2

  TempPath out("strix-ref-q8");
  quantize_model(kModel, out.path, "Q8_0", 2);
  LlamaModel q8(out.path);
  EXPECT_EQ(q8.n_vocab(), 512);
  EXPECT_EQ(q8.n_embd(), 64);
  EXPECT_NE(q8.desc().find("Q8_0"), std::string::npos) << q8.desc();
  EXPECT_EQ(q8.meta("general.file_type"), std::optional<std::string>("7"));

  // Q8_0 logits are close to F32, but not bit-equal (the weights really changed).
  LlamaModel f32(kModel);
  const auto prompt = f32.tokenize("Once upon a time", true, false);
  LlamaContext cf(f32, {.n_ctx = 64, .n_batch = 16, .n_threads = 1});
  LlamaContext cq(q8, {.n_ctx = 64, .n_batch = 16, .n_threads = 1});
  cf.decode_seq(prompt, 0);
  cq.decode_seq(prompt, 0);
  const float d = max_abs_diff(cf.logits(-1), cq.logits(-1));
  EXPECT_GT(d, 0.0f);
  EXPECT_LT(d, 0.5f);
}

// ftype really reaches libllama (Q8_0 is also the default, so try others too).
TEST(LibLlama, quantize_other_ftypes) {
  REQUIRE_MODEL();
  for (const char* name : {"F16", "Q4_0"}) {
    TempPath out(std::string("strix-ref-") + name);
    quantize_model(kModel, out.path, name, 1);
    LlamaModel m(out.path);
    EXPECT_EQ(m.meta("general.file_type"), std::optional<std::string>(std::to_string(llama_ftype_from_name(name))))
        << name;
    EXPECT_NE(m.desc().find(name), std::string::npos) << m.desc();
  }
}

TEST(LibLlama, quantize_refuses_unknown_input) {
  TempPath out("strix-ref-bad");
  EXPECT_THROW(quantize_model("/nonexistent/in.gguf", out.path, "Q8_0", 1), Error);
}

}  // namespace
}  // namespace strix::ref
