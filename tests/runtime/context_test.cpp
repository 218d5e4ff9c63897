// The engine's batch contract and failure modes: bad token ids, positions that
// do not continue a sequence, a full cache, logits of tokens without output;
// nothing of a rejected batch may stay in the cache. Also the paged KV cache's
// block accounting and a model refused by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "kv/kv_cache.h"
#include "models/model.h"
#include "runtime/context.h"
#include "synth/synth.h"
#include "tools/parity.h"

namespace strix {
namespace {

std::string tiny_model() {
  static const std::string path = [] {
    const auto p = std::filesystem::temp_directory_path() / ("strix-rt-" + std::to_string(::getpid()) + ".gguf");
    synth::SynthOptions o;
    o.arch = "llama";
    o.n_layer = 1;
    o.out = p.string();
    synth::synth_write(o);
    return p.string();
  }();
  return path;
}

TEST(KvCache, BlocksComeAndGo) {
  KvCache kv({.n_layer = 2, .k_dim = 8, .v_dim = 8, .n_cells = 100, .n_seq_max = 2, .block_size = 32});
  EXPECT_EQ(kv.n_blocks(), 4);
  kv.reserve(0, 33);
  EXPECT_EQ(kv.n_free_blocks(), 2);
  kv.reserve(1, 64);
  EXPECT_EQ(kv.n_free_blocks(), 0);
  EXPECT_THROW(kv.reserve(0, 65), Error);
  kv.set_len(0, 33);
  kv.truncate(0, 10);
  EXPECT_EQ(kv.seq_len(0), 10);
  EXPECT_EQ(kv.n_free_blocks(), 1);
  kv.clear();
  EXPECT_EQ(kv.n_free_blocks(), 4);
  // rows of different sequences never alias
  kv.reserve(0, 1);
  kv.reserve(1, 1);
  EXPECT_NE(kv.k_row(0, 0, 0), kv.k_row(0, 1, 0));
  EXPECT_NE(kv.k_row(0, 0, 0), kv.k_row(1, 0, 0));
}

TEST(Context, RejectsBadBatchesAndKeepsNothing) {
  auto model = Model::load(tiny_model());
  Context ctx(*model, {.n_ctx = 64, .n_ubatch = 16, .n_threads = 2, .n_seq_max = 2});
  const int32_t nv = static_cast<int32_t>(model->hparams().n_vocab);
  std::vector<int32_t> t{1, 2, 3}, p{0, 1, 2}, s{0, 0, 0};
  // token outside the vocabulary
  std::vector<int32_t> bad_t{1, nv, 3};
  EXPECT_THROW(ctx.decode(bad_t, p, s), Error);
  EXPECT_THROW(ctx.decode(std::vector<int32_t>{1, -1, 3}, p, s), Error);
  // a gap in positions
  EXPECT_THROW(ctx.decode(t, std::vector<int32_t>{0, 2, 3}, s), Error);
  // unknown sequence
  EXPECT_THROW(ctx.decode(t, p, std::vector<int32_t>{0, 0, 5}), Error);
  // mismatched lengths, empty batch
  EXPECT_THROW(ctx.decode(t, std::vector<int32_t>{0, 1}, s), Error);
  EXPECT_THROW(ctx.decode(std::vector<int32_t>{}, std::vector<int32_t>{}, std::vector<int32_t>{}), Error);
  EXPECT_EQ(ctx.seq_len(0), 0);
  // too long for the context
  std::vector<int32_t> many(65, 1), mp(65), ms(65, 0);
  for (int i = 0; i < 65; ++i) mp[i] = i;
  EXPECT_THROW(ctx.decode(many, mp, ms), Error);
  EXPECT_EQ(ctx.seq_len(0), 0);
  EXPECT_EQ(ctx.kv().n_free_blocks(), ctx.kv().n_blocks());
  // a good batch works; only the last token has logits by default
  ctx.decode(t, p, s);
  EXPECT_EQ(ctx.seq_len(0), 3);
  EXPECT_EQ(ctx.logits(2).size(), static_cast<size_t>(nv));
  EXPECT_EQ(ctx.logits(-1).data(), ctx.logits(2).data());
  EXPECT_THROW(ctx.logits(0), Error);
  EXPECT_THROW(ctx.logits(7), Error);
  // positions must continue where the sequence is
  EXPECT_THROW(ctx.decode(std::vector<int32_t>{4}, std::vector<int32_t>{0}, std::vector<int32_t>{0}), Error);
  ctx.decode(std::vector<int32_t>{4}, std::vector<int32_t>{3}, std::vector<int32_t>{0});
  EXPECT_EQ(ctx.seq_len(0), 4);
  ctx.seq_truncate(0, 1);
  EXPECT_EQ(ctx.seq_len(0), 1);
}

TEST(Context, ThreadCountNeverChangesLogitsAndBatchingOnlyRoundoff) {
  // The same tokens with 1, 2 and 3 threads give bit-identical logits; as one
  // batch or through small micro-batches they differ only by float summation
  // order (GEMM tiles vs single rows), far below the parity bars.
  auto model = Model::load(tiny_model());
  const int64_t nv = model->hparams().n_vocab;
  const auto ids = parity_tokens(nv, 1, 40, 3);
  auto run = [&](int threads, int64_t ubatch) {
    Context c(*model, {.n_ctx = 64, .n_ubatch = ubatch, .n_threads = threads});
    c.decode_seq(ids, 0, true);
    std::vector<std::vector<float>> out;
    for (size_t i = 0; i < ids.size(); ++i) {
      const auto l = c.logits(static_cast<int32_t>(i));
      out.emplace_back(l.begin(), l.end());
    }
    return out;
  };
  for (int64_t ub : {64, 7}) {
    const auto ref = run(1, ub);
    for (int threads : {2, 3}) EXPECT_EQ(run(threads, ub), ref) << "threads " << threads << " ubatch " << ub;
  }
  const auto a = run(2, 64), b = run(2, 7);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_LT(kl_divergence(a[i].data(), b[i].data(), nv), 1e-6) << "token " << i;
    EXPECT_EQ(std::max_element(a[i].begin(), a[i].end()) - a[i].begin(),
              std::max_element(b[i].begin(), b[i].end()) - b[i].begin());
  }
}

TEST(Model, RefusesUnknownKeysAndTensorsByName) {
  const std::string path = tiny_model();
  const std::string v1 = path + ".key.gguf";
  write_variant(path, v1, {.set_u32 = {{"llama.attention.sliding_window", 16}}});
  try {
    Model::load(v1);
    FAIL() << "loaded";
  } catch (const Refusal& e) {
    EXPECT_NE(std::string(e.what()).find("llama.attention.sliding_window"), std::string::npos) << e.what();
  }
  const std::string v2 = path + ".key2.gguf";
  write_variant(path, v2, {.set_f32 = {{"llama.some_future_knob", 1.0}}});
  try {
    Model::load(v2);
    FAIL() << "loaded";
  } catch (const Refusal& e) {
    EXPECT_NE(std::string(e.what()).find("llama.some_future_knob"), std::string::npos) << e.what();
  }
  const std::string v3 = path + ".arch.gguf";
  write_variant(path, v3, {.set_u32 = {}, .remove = {}});
  EXPECT_NO_THROW(Model::load(v3));
}

}  // namespace
}  // namespace strix
