// Context::seq_cut (drop cells [p0, p1), move the later ones down, their keys
// re-rotated) against libllama doing the same to its cache with
// llama_memory_seq_rm + llama_memory_seq_add, as llama-server's --cache-reuse
// does: the logits of the tokens decoded after the cut (within 1e-2, the same
// argmax). Architectures: llama (RoPE NORM), qwen3 (NEOX) and gemma3
// (sliding-window layers with their own RoPE base). Negative control: the same
// move without the re-rotation is off by 2-4.
// Copy-on-write: a sequence sharing the cut one's prefix blocks is untouched.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
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

std::string model_path(const std::string& arch) { return kv_test_model(arch); }

Rows rows_of(Context& ctx, size_t n) {
  Rows out;
  for (size_t i = 0; i < n; ++i) {
    const auto l = ctx.logits(static_cast<int32_t>(i));
    out.emplace_back(l.begin(), l.end());
  }
  return out;
}

// The largest |difference| between two sets of logit rows.
double max_diff(const Rows& a, const Rows& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    for (size_t j = 0; j < a[i].size(); ++j) m = std::fmax(m, std::fabs(static_cast<double>(a[i][j]) - b[i][j]));
  }
  return m;
}

size_t argmax(const std::vector<float>& v) {
  size_t b = 0;
  for (size_t i = 1; i < v.size(); ++i) b = v[i] > v[b] ? i : b;
  return b;
}

struct Case {
  std::vector<int32_t> first, next;
  int32_t p0, p1;
};

Case make_case(const ref::LlamaModel& rm, int64_t nv) {
  Case c;
  c.first = parity_tokens(nv, rm.add_bos() ? rm.bos() : -1, 70, 11);
  c.next = parity_tokens(nv, -1, 9, 12);
  c.p0 = 21;
  c.p1 = 37;
  return c;
}

// libllama: decode `first`, drop [p0, p1), move the rest down, decode `next`.
Rows reference(const ref::LlamaModel& rm, const Case& c) {
  ref::LlamaContext ctx(rm, {.n_ctx = 256, .n_batch = 256, .n_ubatch = 256, .n_threads = 1});
  ctx.decode_seq(c.first, 0);
  const int32_t len = static_cast<int32_t>(c.first.size());
  ctx.remove(0, c.p0, c.p1);
  ctx.shift(0, c.p1, len, c.p0 - c.p1);
  const int32_t at = len - (c.p1 - c.p0);
  ctx.decode_seq(c.next, at);  // logits of every token
  Rows out;
  for (size_t i = 0; i < c.next.size(); ++i) {
    const auto l = ctx.logits(static_cast<int32_t>(i));
    out.emplace_back(l.begin(), l.end());
  }
  return out;
}

class CutParity : public ::testing::TestWithParam<std::string> {};

TEST_P(CutParity, MovedCellsGiveLibllamasLogits) {
  const std::string path = model_path(GetParam());
  const auto model = Model::load(path);
  const ref::LlamaModel rm(path);
  const Case c = make_case(rm, model->hparams().n_vocab);
  const Rows want = reference(rm, c);

  Context ctx(*model, {.n_ctx = 256, .n_ubatch = 512, .n_threads = 2});
  ctx.decode_seq(c.first, 0);
  ctx.seq_cut(0, c.p0, c.p1);
  ASSERT_EQ(ctx.seq_len(0), static_cast<int32_t>(c.first.size()) - (c.p1 - c.p0));
  ctx.decode_seq(c.next, 0, /*all_logits=*/true);
  const Rows got = rows_of(ctx, c.next.size());
  // Not bit for bit: libllama puts the next tokens into the cells the cut freed,
  // so its attention sums the cells in another order (max |dlogit| 2e-6..1e-3 here).
  EXPECT_LT(max_diff(got, want), 1e-2) << GetParam() << ": logits after the cut differ from libllama's";
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(argmax(got[i]), argmax(want[i])) << GetParam() << " token " << i;

  // negative control: the cells moved without rotating their keys
  Context bad(*model, {.n_ctx = 256, .n_ubatch = 512, .n_threads = 2});
  bad.decode_seq(c.first, 0);
  const size_t k_bytes = sizeof(uint16_t) * static_cast<size_t>(bad.kv().k_dim());
  bad.kv_cache().cut(0, c.p0, c.p1,
                     [&](int64_t, const uint16_t* src, uint16_t* dst) { std::memcpy(dst, src, k_bytes); });
  bad.decode_seq(c.next, 0, /*all_logits=*/true);
  EXPECT_GT(max_diff(rows_of(bad, c.next.size()), want), 0.5) << GetParam() << ": the control must differ";
}

INSTANTIATE_TEST_SUITE_P(Archs, CutParity, ::testing::Values("llama", "qwen3", "gemma3"));

// A cut in a sequence that shares prefix blocks (attached from the cache)
// copies them first: the owner's next logits equal those of a run where
// nothing was shared, and so do the cut sequence's.
TEST(CutParity, SharedBlocksAreCopiedFirst) {
  const std::string path = model_path("llama");
  const auto model = Model::load(path);
  const ref::LlamaModel rm(path);
  const Case c = make_case(rm, model->hparams().n_vocab);
  auto run = [&](bool share) {
    Context ctx(*model, {.n_ctx = 512, .n_ubatch = 512, .n_threads = 2, .n_seq_max = 2});
    KvCache& kv = ctx.kv_cache();
    const uint64_t salt = KvCache::salt_hash("");
    kv.seq_set_caching(0, true, salt);
    kv.seq_set_caching(1, true, salt);
    ctx.decode_seq(c.first, 0);
    if (share) {
      EXPECT_EQ(kv.attach_prefix(1, c.first), 64);  // two full blocks of 32
      ctx.decode_seq(std::vector<int32_t>(c.first.begin() + 64, c.first.end()), 1);
    } else {
      ctx.decode_seq(c.first, 1);
    }
    const int32_t shared = kv.block_table(0)[0];
    ctx.seq_cut(1, c.p0, c.p1);
    EXPECT_EQ(kv.block_table(0)[0], shared);
    EXPECT_NE(kv.block_table(1)[0], shared);
    ctx.decode_seq(c.next, 0, true);
    const Rows owner = rows_of(ctx, c.next.size());
    ctx.decode_seq(c.next, 1, true);
    return std::make_pair(owner, rows_of(ctx, c.next.size()));
  };
  const auto [owner_shared, cut_shared] = run(true);
  const auto [owner_alone, cut_alone] = run(false);
  EXPECT_EQ(max_diff(owner_shared, owner_alone), 0.0);
  EXPECT_EQ(max_diff(cut_shared, cut_alone), 0.0);
  // and the cut sequence agrees with libllama doing the same (as the test above)
  const Rows want = reference(rm, c);
  EXPECT_LT(max_diff(cut_shared, want), 1e-2);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(argmax(cut_shared[i]), argmax(want[i])) << "token " << i;
}

TEST(CutParity, BadRangesAreRefused) {
  const auto model = Model::load(model_path("llama"));
  Context ctx(*model, {.n_ctx = 128, .n_ubatch = 512, .n_threads = 1});
  ctx.decode_seq(std::vector<int32_t>{1, 2, 3, 4}, 0);
  EXPECT_THROW(ctx.seq_cut(0, 3, 2), Error);
  EXPECT_THROW(ctx.seq_cut(0, 1, 9), Error);
  EXPECT_THROW(ctx.seq_cut(0, -1, 2), Error);
  ctx.seq_cut(0, 1, 1);  // nothing to drop
  EXPECT_EQ(ctx.seq_len(0), 4);
}

}  // namespace
}  // namespace strix
