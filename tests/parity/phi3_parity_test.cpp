// phi3 vs libllama: synthetic models (fused qkv and gate+up, NEOX RoPE, q
// scaled before attention) of two shapes and eight weight types; the same with
// separate q/k/v projections; LongRoPE (rope_factors_long/short chosen by the
// context size, attn_factor, partial rotary, an ignored sliding window) on
// both sides of the long/short switch; negative controls that must fail.
#include "core/source_dir.h"
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "gguf/writer.h"
#include "models/model.h"
#include "parity/parity_util.h"
#include "parity/qkv_variants.h"
#include "ref/libllama.h"
#include "runtime/context.h"

namespace strix::test {
namespace {

// stories260K's vocabulary plus "<|endoftext|>" (CONTROL), the shape of Phi-3's
// own vocabulary (llama2 + added tokens): the pinned libllama's phi3 loader
// needs that token whenever "</s>" is present.
std::string phi3_vocab() {
  static const std::string path = [] {
    auto f = GgufFile::open(std::string(STRIX_SOURCE_DIR) + "/../shared/data/stories260K.gguf");
    GgufWriter w;
    w.set_str("general.architecture", "llama");
    for (const auto& kv : f->kvs()) {
      if (kv.key.rfind("tokenizer.", 0) != 0) continue;
      if (kv.key == "tokenizer.ggml.tokens") {
        auto toks = kv.value.as_str_array();
        toks.push_back("<|endoftext|>");
        w.set(kv.key, GgufValue::str_array(toks));
      } else if (kv.key == "tokenizer.ggml.scores") {
        std::vector<float> sc;
        for (double d : kv.value.as_f64_array()) sc.push_back(static_cast<float>(d));
        sc.push_back(0.0f);
        w.set(kv.key, GgufValue::f32_array(sc));
      } else if (kv.key == "tokenizer.ggml.token_type") {
        std::vector<int32_t> tt;
        for (int64_t t : kv.value.as_i64_array()) tt.push_back(static_cast<int32_t>(t));
        tt.push_back(3);
        w.set(kv.key, GgufValue::i32_array(tt));
      } else {
        w.set(kv.key, kv.value);
      }
    }
    const std::string out = parity_dir() + "/phi3_vocab.gguf";
    w.write(out);
    return out;
  }();
  return path;
}

synth::SynthOptions phi3_shape(const std::string& type, int shape) {
  synth::SynthOptions o;
  o.arch = "phi3";
  o.type = type;
  o.seed = 41 + shape;
  o.vocab = phi3_vocab();
  if (shape == 1) {  // GQA 3:1, odd head count, deeper
    o.n_layer = 3;
    o.n_head = 6;
    o.n_head_kv = 2;
    o.n_embd = 192;
    o.n_ff = 320;
  }
  return o;
}

class Phi3Parity : public ::testing::TestWithParam<std::string> {};

TEST_P(Phi3Parity, DefaultShape) {
  const std::string type = GetParam();
  expect_parity(synth_model(phi3_shape(type, 0), "phi3_0_" + type), 256);
}

TEST_P(Phi3Parity, GqaOddHeads) {
  const std::string type = GetParam();
  expect_parity(synth_model(phi3_shape(type, 1), "phi3_1_" + type), 128, {"prefill", "mixed"});
}

INSTANTIATE_TEST_SUITE_P(Types, Phi3Parity,
                         ::testing::Values("f32", "f16", "q8_0", "q4_0", "q4_K", "q5_K", "q6_K", "iq4_xs"));

// Separate attn_q/k/v tensors (llama.cpp's loader takes either form).
TEST(Phi3SeparateQkv, Parity) {
  for (const std::string type : {"f32", "q4_K"}) {
    const std::string path = synth_model(phi3_shape(type, 1), "phi3_1_" + type);
    const std::string split = parity_dir() + "/phi3_1_" + type + "_split.gguf";
    write_rewrite(path, split, {.split_qkv = true, .q_rows = 192});
    ASSERT_TRUE(Model::load(split)->file().find_tensor("blk.0.attn_q.weight"));
    expect_parity(split, 128, {"prefill", "decode"});
  }
}

// ---- LongRoPE ------------------------------------------------------------------
// A Phi-3-mini-128k-like file scaled down: original context 256, trained 8192
// (scale 32), long factors growing to 8 over the low frequencies, short ones
// near 1, attn_factor = sqrt(1 + ln 32 / ln 256) as convert_hf_to_gguf writes
// it, rotary over 48 of 64 dims (Phi-4-mini's 0.75), and a sliding window of
// 32 that llama.cpp reads and does not apply.
constexpr int kOrigCtx = 256;
constexpr int kRot = 48;

std::vector<float> factors(bool long_ones) {
  std::vector<float> f(kRot / 2);
  for (size_t i = 0; i < f.size(); ++i) {
    const float t = static_cast<float>(i) / static_cast<float>(f.size() - 1);
    f[i] = long_ones ? 1.0f + 7.0f * t * t : 1.0f + 0.25f * t;
  }
  return f;
}

GgufRewrite longrope_edit(bool swapped) {
  GgufRewrite e;
  e.set_u32 = {{"phi3.context_length", 32 * kOrigCtx},
               {"phi3.rope.scaling.original_context_length", kOrigCtx},
               {"phi3.rope.dimension_count", kRot},
               {"phi3.attention.sliding_window", 32}};
  e.set_f32 = {{"phi3.rope.scaling.attn_factor", std::sqrt(1.0f + std::log(32.0f) / std::log(256.0f))}};
  e.add = {{"rope_factors_long.weight", factors(!swapped)}, {"rope_factors_short.weight", factors(swapped)}};
  return e;
}

std::string longrope_model(const std::string& type) {
  const std::string path = synth_model(phi3_shape(type, 0), "phi3_0_" + type);
  const std::string lr = parity_dir() + "/phi3_0_" + type + "_longrope.gguf";
  write_rewrite(path, lr, longrope_edit(false));
  return lr;
}

// The per-sequence context run_parity gives both sides (n_tokens * n_seq + 64).
int64_t parity_ctx_seq(const std::string& path, int n_tokens, int n_seq) {
  const auto m = Model::load(path);
  Context ctx(*m, {.n_ctx = static_cast<int64_t>(n_tokens) * n_seq + 64, .n_threads = 1, .n_seq_max = n_seq});
  return ctx.n_ctx_seq();
}

// Strix's n_ctx_seq (what picks the factors) is libllama's: its context holds
// n_ctx_seq * n_seq_max cells after both paddings to 256.
TEST(Phi3LongRope, ContextSeqMatchesLibllama) {
  const std::string lr = longrope_model("f32");
  const auto m = Model::load(lr);
  ref::LlamaModel rm(lr);
  for (const auto& [n_ctx, n_seq] : std::vector<std::pair<int, int>>{{192, 1}, {320, 1}, {448, 3}, {832, 3}, {4000, 2}}) {
    Context ctx(*m, {.n_ctx = n_ctx, .n_threads = 1, .n_seq_max = n_seq});
    ref::LlamaContext rc(rm, {.n_ctx = static_cast<uint32_t>(n_ctx), .n_seq_max = static_cast<uint32_t>(n_seq)});
    EXPECT_EQ(static_cast<int64_t>(rc.n_ctx()), ctx.n_ctx_seq() * n_seq) << "n_ctx " << n_ctx << ", n_seq " << n_seq;
  }
}

TEST(Phi3LongRope, ShortFactorsBelowOriginalContext) {
  for (const std::string type : {"f32", "q4_K"}) {
    const std::string lr = longrope_model(type);
    ASSERT_LE(parity_ctx_seq(lr, 128, 1), kOrigCtx);  // 192 -> 256: short factors
    ASSERT_LE(parity_ctx_seq(lr, 128, 3), kOrigCtx);  // 448 -> 512 / 3 -> 256
    expect_parity(lr, 128);
  }
}

TEST(Phi3LongRope, LongFactorsAboveOriginalContext) {
  for (const std::string type : {"f32", "q4_K"}) {
    const std::string lr = longrope_model(type);
    ASSERT_GT(parity_ctx_seq(lr, 256, 1), kOrigCtx);  // 320 -> 512: long factors
    expect_parity(lr, 256, {"prefill", "decode"});
  }
}

// ---- negative controls -------------------------------------------------------------

TEST(Phi3ParityControl, RopeBaseChangedFails) {
  const std::string path = synth_model(phi3_shape("f32", 0), "phi3_0_f32");
  const std::string variant = parity_dir() + "/phi3_0_f32_rope.gguf";
  write_variant(path, variant, {.set_f32 = {{"phi3.rope.freq_base", 500000.0}}});
  expect_parity_fails(path, variant, 64);
}

// Strix given the long factors as short and vice versa: wrong on both sides of the switch.
TEST(Phi3ParityControl, LongShortSwappedFails) {
  const std::string lr = longrope_model("f32");
  const std::string swapped = parity_dir() + "/phi3_0_f32_longrope_swapped.gguf";
  write_rewrite(synth_model(phi3_shape("f32", 0), "phi3_0_f32"), swapped, longrope_edit(true));
  expect_parity_fails(lr, swapped, 128);
  expect_parity_fails(lr, swapped, 256);
}

TEST(Phi3ParityControl, AttnFactorDroppedFails) {
  const std::string lr = longrope_model("q4_K");
  const std::string variant = parity_dir() + "/phi3_0_q4_K_longrope_noattn.gguf";
  write_variant(lr, variant, {.set_f32 = {{"phi3.rope.scaling.attn_factor", 1.0}}});
  expect_parity_fails(lr, variant, 128);
}

}  // namespace
}  // namespace strix::test
