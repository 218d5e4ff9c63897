// The paged KV cache's prefix caching on its own (no model): block states and
// refcounts, the chained hash (a different token, salt or earlier block never
// matches), copy-on-write of shared and registered blocks, LRU eviction of
// cached blocks only when an empty one is needed, and clear().
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "core/error.h"
#include "kv/kv_cache.h"

namespace strix {
namespace {

constexpr int kBs = 4;

KvCache make(int64_t blocks, int seqs) {
  return KvCache({.n_layer = 2, .k_dim = 3, .v_dim = 2, .n_cells = blocks * kBs, .n_seq_max = seqs, .block_size = kBs});
}

// Writes tokens into a sequence as Context::decode does: reserve, rows, commit.
void feed(KvCache& kv, int seq, const std::vector<int32_t>& tokens, uint16_t mark = 0) {
  const int32_t p0 = kv.seq_len(seq);
  kv.reserve(seq, p0 + static_cast<int32_t>(tokens.size()));
  for (size_t i = 0; i < tokens.size(); ++i) {
    const int32_t p = p0 + static_cast<int32_t>(i);
    for (int il = 0; il < 2; ++il) {
      for (int d = 0; d < 3; ++d) kv.k_row(il, seq, p)[d] = static_cast<uint16_t>(tokens[i] * 7 + d + il + mark);
      for (int d = 0; d < 2; ++d) kv.v_row(il, seq, p)[d] = static_cast<uint16_t>(tokens[i] * 5 + d + il + mark);
    }
    kv.commit(seq, p, tokens[i]);
  }
}

std::vector<int32_t> iota(int n, int from = 1) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), from);
  return v;
}

TEST(KvPrefix, FullBlocksAreRegisteredAndSharedByRefcount) {
  KvCache kv = make(8, 3);
  const uint64_t salt = KvCache::salt_hash("");
  kv.seq_set_caching(0, true, salt);
  kv.seq_set_caching(1, true, salt);
  const auto a = iota(10);  // two full blocks and a partial one
  feed(kv, 0, a);
  EXPECT_EQ(kv.n_registered_blocks(), 2);
  EXPECT_EQ(kv.cached_prefix(a, salt), 8);
  EXPECT_EQ(kv.n_used_blocks(), 3);
  // a second sequence takes the two full blocks: no new block is used
  EXPECT_EQ(kv.attach_prefix(1, a), 8);
  EXPECT_EQ(kv.seq_len(1), 8);
  EXPECT_EQ(kv.n_used_blocks(), 3);
  EXPECT_EQ(kv.block_table(1)[0], kv.block_table(0)[0]);
  EXPECT_EQ(kv.block_refcount(kv.block_table(0)[0]), 2);
  EXPECT_EQ(kv.k_row(1, 1, 5)[2], kv.k_row(1, 0, 5)[2]);
  EXPECT_EQ(kv.n_prefix_hit_tokens(), 8u);
  // the owner goes away: the shared blocks stay in use, its partial block is empty again
  kv.truncate(0, 0);
  EXPECT_EQ(kv.n_used_blocks(), 2);
  EXPECT_EQ(kv.n_cached_blocks(), 0);
  // the last holder goes away: the registered blocks are cached (free to take, still found)
  kv.truncate(1, 0);
  EXPECT_EQ(kv.n_used_blocks(), 0);
  EXPECT_EQ(kv.n_cached_blocks(), 2);
  EXPECT_EQ(kv.n_free_blocks(), 8);
  EXPECT_EQ(kv.cached_prefix(a, salt), 8);
  EXPECT_EQ(kv.attach_prefix(0, a), 8);
  EXPECT_EQ(kv.n_cached_blocks(), 0);
  EXPECT_EQ(kv.n_used_blocks(), 2);
}

TEST(KvPrefix, TheChainedHashNeverMatchesOtherTokensSaltsOrParents) {
  KvCache kv = make(8, 2);
  const uint64_t salt = KvCache::salt_hash("alice");
  kv.seq_set_caching(0, true, salt);
  const auto a = iota(12);
  feed(kv, 0, a);
  EXPECT_EQ(kv.cached_prefix(a, salt), 12);
  EXPECT_EQ(kv.cached_prefix(a, KvCache::salt_hash("bob")), 0);
  EXPECT_EQ(kv.cached_prefix(a, KvCache::salt_hash("")), 0);
  auto b = a;
  b[9] = 99;  // third block differs
  EXPECT_EQ(kv.cached_prefix(b, salt), 8);
  b = a;
  b[0] = 99;  // first block differs: later blocks with equal tokens hang from another parent
  EXPECT_EQ(kv.cached_prefix(b, salt), 0);
  // a prompt shorter than one block has nothing to share
  EXPECT_EQ(kv.cached_prefix(std::vector<int32_t>{1, 2, 3}, salt), 0);
  // a sequence that does not cache never attaches and never registers
  kv.seq_set_caching(1, false, salt);
  EXPECT_EQ(kv.attach_prefix(1, a), 0);
  feed(kv, 1, iota(8, 50));
  EXPECT_EQ(kv.n_registered_blocks(), 3);
  EXPECT_THROW(kv.seq_set_caching(1, true, salt), Error);  // only on an empty sequence
}

TEST(KvPrefix, WritingIntoASharedOrRegisteredBlockCopiesItFirst) {
  KvCache kv = make(8, 3);
  const uint64_t salt = KvCache::salt_hash("");
  for (int s = 0; s < 3; ++s) kv.seq_set_caching(s, true, salt);
  const auto a = iota(8);
  feed(kv, 0, a);
  const int32_t b1 = kv.block_table(0)[1];
  // the whole prompt is cached: take it, then drop the last cell to decode it again
  ASSERT_EQ(kv.attach_prefix(1, a), 8);
  kv.truncate(1, 7);
  EXPECT_EQ(kv.block_table(1)[1], b1);  // still shared until written
  feed(kv, 1, {8}, /*mark=*/1000);      // the same token, written again: into a copy
  EXPECT_NE(kv.block_table(1)[1], b1);
  EXPECT_EQ(kv.block_refcount(b1), 1);
  EXPECT_EQ(kv.k_row(0, 1, 4)[0], kv.k_row(0, 0, 4)[0]);  // copied cells
  EXPECT_NE(kv.k_row(0, 1, 7)[0], kv.k_row(0, 0, 7)[0]);  // the rewritten cell, not the original's
  EXPECT_EQ(kv.n_registered_blocks(), 2);                 // the copy duplicates a registered hash: private
  // a registered block held by one sequence only is copied too (the index still serves it)
  kv.truncate(0, 6);
  kv.truncate(1, 0);
  const int32_t before = kv.block_table(0)[1];
  feed(kv, 0, {70, 80});
  EXPECT_NE(kv.block_table(0)[1], before);
  EXPECT_EQ(kv.cached_prefix(a, salt), 8);  // the original block still serves `a`
  auto c = a;
  c[6] = 70;
  c[7] = 80;
  EXPECT_EQ(kv.cached_prefix(c, salt), 8);  // and the new contents are registered as well
}

// A cache whose cells live elsewhere (a GPU's memory) keeps the bookkeeping
// only: copy-on-write goes through the block copier, with the block ids the
// tables then hold; without a copier a copy is refused by name.
TEST(KvPrefix, ACacheWithoutHostStorageCopiesThroughItsCopier) {
  KvCache kv({.n_layer = 2,
              .k_dim = 3,
              .v_dim = 2,
              .n_cells = 8 * kBs,
              .n_seq_max = 2,
              .block_size = kBs,
              .host_storage = false});
  EXPECT_FALSE(kv.host_storage());
  EXPECT_EQ(kv.bytes(), 0u);
  const uint64_t salt = KvCache::salt_hash("");
  for (int s = 0; s < 2; ++s) kv.seq_set_caching(s, true, salt);
  const auto a = iota(8);
  kv.reserve(0, 8);
  for (int32_t p = 0; p < 8; ++p) kv.commit(0, p, a[static_cast<size_t>(p)]);
  ASSERT_EQ(kv.attach_prefix(1, a), 8);
  kv.truncate(1, 7);
  const int32_t shared = kv.block_table(1)[1];
  EXPECT_THROW(kv.reserve(1, 8), Error);  // no copier yet
  std::vector<std::pair<int32_t, int32_t>> copies;
  kv.set_block_copier(
      [](void* user, int32_t from, int32_t to) {
        static_cast<std::vector<std::pair<int32_t, int32_t>>*>(user)->emplace_back(from, to);
      },
      &copies);
  kv.reserve(1, 8);
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].first, shared);
  EXPECT_EQ(copies[0].second, kv.block_table(1)[1]);
  EXPECT_NE(kv.block_table(1)[1], shared);
  EXPECT_THROW(kv.cut(1, 0, 2, [](int64_t, const uint16_t*, uint16_t*) {}), Error);
}

TEST(KvPrefix, CachedBlocksAreEvictedLeastRecentlyReleasedFirstAndOnlyWhenNeeded) {
  KvCache kv = make(4, 2);
  const uint64_t salt = KvCache::salt_hash("");
  kv.seq_set_caching(0, true, salt);
  kv.seq_set_caching(1, true, salt);
  const auto a = iota(8), b = iota(8, 100);
  feed(kv, 0, a);
  kv.truncate(0, 0);
  feed(kv, 1, b);
  kv.truncate(1, 0);
  EXPECT_EQ(kv.n_cached_blocks(), 4);
  EXPECT_EQ(kv.n_empty_blocks(), 0);
  // one new block evicts the oldest release: a's tail (released before its head)
  kv.seq_set_caching(0, false, 0);
  kv.reserve(0, 1);
  EXPECT_EQ(kv.cached_prefix(a, salt), 4);
  EXPECT_EQ(kv.cached_prefix(b, salt), 8);
  kv.reserve(0, 5);
  EXPECT_EQ(kv.cached_prefix(a, salt), 0);
  EXPECT_EQ(kv.cached_prefix(b, salt), 8);
  // attaching moves b's blocks out of the LRU list: they cannot be evicted then
  EXPECT_EQ(kv.attach_prefix(1, b), 8);
  EXPECT_EQ(kv.n_free_blocks(), 0);
  EXPECT_THROW(kv.reserve(0, 9), Error);
  EXPECT_EQ(kv.cached_prefix(b, salt), 8);
  kv.clear();
  EXPECT_EQ(kv.n_empty_blocks(), 4);
  EXPECT_EQ(kv.n_registered_blocks(), 0);
}

TEST(KvPrefix, ShareBlocksIsUncheckedAndRefcounted) {
  KvCache kv = make(6, 2);
  feed(kv, 0, iota(9));
  kv.share_blocks(0, 1, 9);  // whole blocks only
  EXPECT_EQ(kv.seq_len(1), 8);
  EXPECT_EQ(kv.block_refcount(kv.block_table(0)[0]), 2);
  EXPECT_THROW(kv.share_blocks(0, 1, 4), Error);  // not empty
  EXPECT_THROW(kv.share_blocks(0, 0, 4), Error);
  kv.truncate(0, 0);
  kv.truncate(1, 0);
  EXPECT_EQ(kv.n_empty_blocks(), 6);  // nothing registered: every block is empty again
}

TEST(KvPrefix, SharePrefixTakesAPartlyFilledBlockThatTheNextWriterCopies) {
  KvCache kv = make(6, 2);
  const uint64_t salt = KvCache::salt_hash("");
  kv.seq_set_caching(0, true, salt);
  kv.seq_set_caching(1, true, salt);
  feed(kv, 0, iota(10));
  kv.share_prefix(0, 1, 9);
  EXPECT_EQ(kv.seq_len(1), 9);
  EXPECT_EQ(kv.n_used_blocks(), 3);
  const int32_t tail = kv.block_table(0)[2];
  EXPECT_EQ(kv.block_refcount(tail), 2);
  EXPECT_EQ(kv.blocks_needed(0, 11), 1);  // the owner's next write copies the shared block
  feed(kv, 0, {11});
  EXPECT_NE(kv.block_table(0)[2], tail);
  EXPECT_EQ(kv.block_table(1)[2], tail);
  EXPECT_EQ(kv.k_row(0, 1, 8)[0], kv.k_row(0, 0, 8)[0]);
  feed(kv, 1, {42});  // now the only holder of `tail`, unregistered: written in place
  EXPECT_EQ(kv.block_table(1)[2], tail);
  feed(kv, 1, {43, 44, 45});  // completes block 3 of seq 1: registered under its own chain
  EXPECT_EQ(kv.cached_prefix(std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 42, 43, 44}, salt), 12);
  kv.clear();
  EXPECT_EQ(kv.n_empty_blocks(), 6);
}

}  // namespace
}  // namespace strix
