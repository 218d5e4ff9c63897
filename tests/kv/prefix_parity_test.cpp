// Prefix reuse through a real Context: logits computed on an attached prefix
// are bit-identical to a fresh Strix computation of the same ids with the same
// micro-batches, and to libllama's (src/ref, the independent reference) on the
// same ids and batches. Negative controls: a deliberately wrong reuse (blocks of
// another prompt shared without the hash check) changes the logits, and the
// hash never offers those blocks in the first place.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "kv/kv_cache.h"
#include "kv/kv_test_model.h"
#include "models/model.h"
#include "ref/libllama.h"
#include "runtime/context.h"
#include "synth/synth.h"
#include "tools/parity.h"

namespace strix {
namespace {

using Rows = std::vector<std::vector<float>>;

std::string model_path() { return kv_test_model("llama"); }

struct Fixture {
  std::unique_ptr<Model> model = Model::load(model_path());
  ref::LlamaModel rmodel{model_path()};
  int64_t nv = model->hparams().n_vocab;
  std::vector<int32_t> ids(int n, uint64_t seed) const {
    return parity_tokens(nv, rmodel.add_bos() ? rmodel.bos() : -1, n, seed);
  }
};

Fixture& fx() {
  static Fixture* f = new Fixture();
  return *f;
}

// Decodes `chunk` on `seq` (continuing at its length); the logits of every token.
Rows decode_rows(Context& ctx, const std::vector<int32_t>& chunk, int seq) {
  ctx.decode_seq(chunk, seq, /*all_logits=*/true);
  Rows out;
  for (size_t i = 0; i < chunk.size(); ++i) {
    const auto l = ctx.logits(static_cast<int32_t>(i));
    out.emplace_back(l.begin(), l.end());
  }
  return out;
}

std::vector<int32_t> slice(const std::vector<int32_t>& v, size_t a, size_t b) {
  return std::vector<int32_t>(v.begin() + a, v.begin() + b);
}

// Fresh Strix: the chunks in order on an empty sequence; the last chunk's logits.
Rows fresh(const std::vector<std::vector<int32_t>>& chunks) {
  Context ctx(*fx().model, {.n_ctx = 256, .n_ubatch = 512, .n_threads = 2});
  Rows r;
  for (const auto& c : chunks) r = decode_rows(ctx, c, 0);
  return r;
}

// libllama: the same chunks; the last chunk's logits.
Rows reference(const std::vector<std::vector<int32_t>>& chunks) {
  ref::LlamaContext ctx(fx().rmodel, {.n_ctx = 256, .n_batch = 256, .n_ubatch = 256, .n_threads = 1});
  Rows r;
  int32_t pos = 0;
  for (const auto& c : chunks) {
    ctx.decode_seq(c, pos);
    pos += static_cast<int32_t>(c.size());
    r.clear();
    for (size_t i = 0; i < c.size(); ++i) {
      const auto l = ctx.logits(static_cast<int32_t>(i));
      r.emplace_back(l.begin(), l.end());
    }
  }
  return r;
}

TEST(PrefixReuse, AttachedPrefixGivesFreshAndLibllamaLogits) {
  Fixture& f = fx();
  Context ctx(*f.model, {.n_ctx = 512, .n_ubatch = 512, .n_threads = 2, .n_seq_max = 4});
  KvCache& kv = ctx.kv_cache();
  const int bs = kv.block_size();
  const uint64_t salt = KvCache::salt_hash("s");
  for (int s = 0; s < 4; ++s) kv.seq_set_caching(s, true, salt);
  // A: two full blocks computed as one chunk, then a tail
  const auto a = f.ids(2 * bs + 17, 1);
  decode_rows(ctx, slice(a, 0, 2 * bs), 0);
  decode_rows(ctx, slice(a, 2 * bs, a.size()), 0);
  // B shares A's two blocks and continues differently
  auto b = slice(a, 0, 2 * bs);
  for (int32_t t : f.ids(21, 7)) b.push_back(t);
  ASSERT_EQ(kv.cached_prefix(b, salt), 2 * bs);
  ASSERT_EQ(kv.attach_prefix(1, b), 2 * bs);
  const Rows reused = decode_rows(ctx, slice(b, 2 * bs, b.size()), 1);
  const std::vector<std::vector<int32_t>> chunks = {slice(b, 0, 2 * bs), slice(b, 2 * bs, b.size())};
  EXPECT_TRUE(reused == fresh(chunks)) << "reused prefix differs from a fresh computation";
  EXPECT_TRUE(reused == reference(chunks)) << "reused prefix differs from libllama";
  // A is untouched by B: its blocks are shared, B wrote only its own
  EXPECT_EQ(kv.block_table(0)[1], kv.block_table(1)[1]);
  EXPECT_NE(kv.block_table(0)[2], kv.block_table(1)[2]);

  // The whole prompt cached (C = A's two blocks): its last token is decoded
  // again (into a copy of the shared block) to get the logits.
  const auto c = slice(a, 0, 2 * bs);
  ASSERT_EQ(kv.attach_prefix(2, c), 2 * bs);
  ctx.seq_truncate(2, 2 * bs - 1);
  const int32_t shared = kv.block_table(0)[1];
  const Rows last = decode_rows(ctx, slice(c, 2 * bs - 1, 2 * bs), 2);
  EXPECT_NE(kv.block_table(2)[1], shared);  // copy-on-write
  EXPECT_EQ(kv.block_table(0)[1], shared);
  const std::vector<std::vector<int32_t>> c_chunks = {slice(c, 0, 2 * bs), slice(c, 2 * bs - 1, 2 * bs)};
  // the fresh equivalent: the prefix as one chunk, then its last cell rewritten alone
  Context fctx(*f.model, {.n_ctx = 256, .n_ubatch = 512, .n_threads = 2});
  decode_rows(fctx, c_chunks[0], 0);
  fctx.seq_truncate(0, 2 * bs - 1);
  EXPECT_TRUE(last == decode_rows(fctx, c_chunks[1], 0)) << "whole-prompt reuse differs from a fresh computation";
  ref::LlamaContext rctx(f.rmodel, {.n_ctx = 256, .n_batch = 256, .n_ubatch = 256, .n_threads = 1});
  rctx.decode_seq(c_chunks[0], 0);
  rctx.remove(0, 2 * bs - 1, -1);
  rctx.decode_seq(c_chunks[1], 2 * bs - 1);
  const auto rl = rctx.logits(0);
  EXPECT_TRUE(last[0] == std::vector<float>(rl.begin(), rl.end())) << "whole-prompt reuse differs from libllama";

  // The cached blocks still hold A: a new sequence reusing them again gets B's logits again.
  ctx.seq_truncate(1, 0);
  ASSERT_EQ(kv.attach_prefix(1, b), 2 * bs);
  EXPECT_TRUE(decode_rows(ctx, slice(b, 2 * bs, b.size()), 1) == reused);
}

TEST(PrefixReuse, WrongReuseChangesTheLogits) {
  Fixture& f = fx();
  Context ctx(*f.model, {.n_ctx = 512, .n_ubatch = 512, .n_threads = 2, .n_seq_max = 3});
  KvCache& kv = ctx.kv_cache();
  const int bs = kv.block_size();
  kv.seq_set_caching(0, true, KvCache::salt_hash("one"));
  kv.seq_set_caching(1, true, KvCache::salt_hash("two"));
  const auto a = f.ids(2 * bs + 9, 3);
  decode_rows(ctx, slice(a, 0, 2 * bs), 0);
  // D differs from A in one token of the first block; same continuation
  auto d = a;
  d[5] = d[5] == 10 ? 11 : 10;
  const std::vector<std::vector<int32_t>> d_chunks = {slice(d, 0, 2 * bs), slice(d, 2 * bs, d.size())};
  const Rows right = fresh(d_chunks);
  ASSERT_TRUE(right == reference(d_chunks));
  EXPECT_EQ(kv.cached_prefix(d, KvCache::salt_hash("one")), 0);  // the hash does not offer A's blocks
  kv.share_blocks(0, 2, 2 * bs);                                 // forced: the wrong reuse
  const Rows wrong = decode_rows(ctx, d_chunks[1], 2);
  EXPECT_FALSE(wrong == right) << "sharing another prompt's blocks must change the output";
  double max_kl = 0;
  for (size_t i = 0; i < wrong.size(); ++i)
    max_kl = std::max(max_kl, kl_divergence(right[i].data(), wrong[i].data(), f.nv));
  EXPECT_GT(max_kl, 1e-6);
  // A's own prompt under another salt is not offered either
  EXPECT_EQ(kv.cached_prefix(a, KvCache::salt_hash("two")), 0);
  EXPECT_EQ(kv.attach_prefix(1, a), 0);
}

}  // namespace
}  // namespace strix
