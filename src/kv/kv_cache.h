// Paged KV cache: a pool of fixed-size blocks shared by all sequences, and one
// block table per sequence. Cell `p` of a sequence (its token at position p)
// lives in block table[p / block_size], slot p % block_size. K and V are stored
// as f16 (llama.cpp's default cache type), one row of n_head_kv * head_dim per
// cell and layer.
//
// Prefix caching (vLLM's automatic prefix caching), per sequence and off by
// default: a full block of a caching sequence is registered under a chained
// hash of (the previous block's hash, its token ids, the sequence's salt), so a
// later sequence whose tokens start the same way attaches those blocks instead
// of recomputing them (attach_prefix). Invariants:
//   - every block is in exactly one state: empty (on the free stack), in use
//     (refcount > 0, in one or more block tables) or cached (refcount 0 but
//     still registered, on the LRU list; taken back by attach or evicted, least
//     recently released first, when an empty block is needed);
//   - a registered block is never written: a write into a block that is shared
//     or registered copies it first (copy-on-write, in reserve()), so an
//     attached prefix holds exactly the cells a fresh computation wrote;
//   - registration needs the block's token ids: Context::decode stores them
//     with commit(). Rows written through set_len() are never registered.
//
// All KV memory is allocated once at construction; growing a sequence only
// takes blocks from the pool, so the decode loop never allocates KV memory (the
// hash index may allocate its nodes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace strix {

class KvCache {
 public:
  struct Options {
    int64_t n_layer = 0;
    int64_t k_dim = 0;  // n_head_kv * head_dim_k
    int64_t v_dim = 0;
    int64_t n_cells = 0;  // total token capacity (rounded up to whole blocks)
    int n_seq_max = 1;
    int block_size = 32;
    // false: the cells live elsewhere (a GPU's memory), this object keeps the
    // block bookkeeping only; k_row / v_row / cut are not for such a cache,
    // and copy-on-write goes through set_block_copier.
    bool host_storage = true;
  };
  explicit KvCache(const Options& opts);
  // Copies block `from`'s cells of every layer into block `to` where the cells
  // live (a cache without host storage must have one before any write). A
  // cache with host storage and a copier copies both: its host layers, then
  // the copier's (partial offload: the CPU's layers here, the GPU's there).
  using BlockCopier = void (*)(void* user, int32_t from, int32_t to);
  void set_block_copier(BlockCopier copier, void* user) {
    copier_ = copier;
    copier_user_ = user;
  }
  bool host_storage() const { return k_ != nullptr; }

  int block_size() const { return block_size_; }
  int64_t n_layer() const { return n_layer_; }  // layers whose cells this cache holds (or sizes)
  int n_seq_max() const { return static_cast<int>(seqs_.size()); }
  int64_t n_blocks() const { return n_blocks_; }
  // Blocks a sequence can take now: empty ones plus cached ones nobody uses.
  int64_t n_free_blocks() const { return static_cast<int64_t>(free_.size()) + n_lru_; }
  int64_t n_empty_blocks() const { return static_cast<int64_t>(free_.size()); }
  int64_t n_cached_blocks() const { return n_lru_; }  // refcount 0, still registered (evictable)
  int64_t n_used_blocks() const { return n_blocks_ - n_free_blocks(); }
  int64_t k_dim() const { return k_dim_; }
  int64_t v_dim() const { return v_dim_; }
  size_t bytes() const { return storage_size_ * sizeof(uint16_t); }

  // Tokens stored for a sequence (its next position).
  int32_t seq_len(int seq) const { return seqs_[seq].len; }
  // Makes room for cells [0, new_len) of `seq`, copying a shared or registered
  // block that the new cells would write into; throws Error when the cache is full.
  void reserve(int seq, int32_t new_len);
  // A decode batch checked and its cells reserved, all or nothing (a
  // context's decode): token ids below n_vocab, sequence ids in range, each
  // token at its sequence's next position, at most max_len cells a sequence
  // (the error then ends with full_hint). Throws Error naming the first problem.
  void reserve_batch(std::span<const int32_t> tokens, std::span<const int32_t> pos, std::span<const int32_t> seq,
                     int64_t n_vocab, int64_t max_len, std::string_view full_hint);
  // Sets the length of a sequence after its cells were written (<= reserved).
  void set_len(int seq, int32_t len) { seqs_[seq].len = len; }
  // Records the token written at cell `pos` (the sequence's length becomes pos + 1)
  // and registers the block it completes when the sequence caches prefixes.
  void commit(int seq, int32_t pos, int32_t token);
  // Blocks reserve(seq, new_len) would take from the pool (new ones and copies).
  int64_t blocks_needed(int seq, int32_t new_len) const;
  // Drops cells [p0, len) of a sequence, releasing whole blocks.
  void truncate(int seq, int32_t p0);
  // Drops cells [p0, p1) of a sequence and moves the cells after them down by
  // p1 - p0 (llama_memory_seq_rm + llama_memory_seq_add): V rows are copied,
  // K rows go through move_k(il, src, dst). The blocks the moved cells land
  // in are copied first when shared or registered (a registered block only
  // this sequence holds leaves the index instead when the pool has no room
  // for the copies), and the sequence stops
  // registering blocks (its cells from p0 on were computed at other positions).
  template <class MoveK>
  void cut(int seq, int32_t p0, int32_t p1, MoveK&& move_k) {
    if (!host_storage()) throw_no_host_storage("cut");
    const int32_t n = prepare_cut(seq, p0, p1);
    move_host_cells(seq, p0, p1, n, move_k);
    finish_cut(seq, p0, p1, n);
  }
  // cut's moves of the host cells: [p1, p1 + n) to [p0, p0 + n) in every host
  // layer (inside cut_cells' move, for a cache whose cells live in two places).
  template <class MoveK>
  void move_host_cells(int seq, int32_t p0, int32_t p1, int32_t n, MoveK&& move_k) {
    if (!host_storage()) throw_no_host_storage("moving cells");
    for (int64_t il = 0; il < n_layer_; ++il) {
      for (int32_t i = 0; i < n; ++i) {
        move_k(il, k_row(il, seq, p1 + i), k_row(il, seq, p0 + i));
        std::memcpy(v_row(il, seq, p0 + i), v_row(il, seq, p1 + i), sizeof(uint16_t) * static_cast<size_t>(v_dim_));
      }
    }
  }
  // The same cut for a cache whose cells live elsewhere: the checks and
  // copies, then move(n) moves the n cells [p1, p1 + n) to [p0, p0 + n)
  // (block_table already final), then the bookkeeping.
  template <class Move>
  void cut_cells(int seq, int32_t p0, int32_t p1, Move&& move) {
    const int32_t n = prepare_cut(seq, p0, p1);
    move(n);
    finish_cut(seq, p0, p1, n);
  }
  void clear();

  // Prefix caching for `seq` (must be empty): on, with the hash of its salt.
  void seq_set_caching(int seq, bool on, uint64_t salt);
  bool seq_caching(int seq) const { return seqs_[seq].caching; }
  static uint64_t salt_hash(std::string_view salt);
  // Tokens of the longest cached prefix of `tokens` under `salt` (whole blocks).
  int32_t cached_prefix(std::span<const int32_t> tokens, uint64_t salt) const;
  // Attaches that prefix to `seq` (empty, caching on): its blocks' refcounts
  // rise, the sequence's length becomes the returned token count.
  int32_t attach_prefix(int seq, std::span<const int32_t> tokens);
  // Shares the first n_tokens / block_size whole blocks of `src` with `dst`
  // (empty) without any check of tokens or salt (llama.cpp's seq_cp for whole
  // blocks; tests use it as the deliberately wrong reuse).
  void share_blocks(int src, int dst, int32_t n_tokens);
  // Shares cells [0, n_tokens) of `src` with `dst` (empty), a partly filled
  // last block included (whichever sequence writes into it next copies it):
  // for a prefix the caller has checked equal, e.g. n identical prompts whose
  // last block is not full. Full-block hashes go along when both sequences
  // cache under one salt.
  void share_prefix(int src, int dst, int32_t n_tokens);
  // Registered blocks (cached or in use) and tokens reused by attach_prefix so far.
  int64_t n_registered_blocks() const { return static_cast<int64_t>(index_.size()); }
  uint64_t n_prefix_hit_tokens() const { return prefix_hits_; }

  // Cell rows (f16) of layer `il` for position p of `seq` (p must be reserved).
  uint16_t* k_row(int64_t il, int seq, int32_t p) { return k_ + offset(il, seq, p, k_dim_); }
  uint16_t* v_row(int64_t il, int seq, int32_t p) { return v_ + offset(il, seq, p, v_dim_); }
  const uint16_t* k_row(int64_t il, int seq, int32_t p) const { return k_ + offset(il, seq, p, k_dim_); }
  const uint16_t* v_row(int64_t il, int seq, int32_t p) const { return v_ + offset(il, seq, p, v_dim_); }
  // The block of cells starting at position p (a multiple of block_size): up
  // to block_size consecutive rows.
  const int32_t* block_table(int seq) const { return seqs_[seq].blocks.data(); }
  int32_t n_seq_blocks(int seq) const { return static_cast<int32_t>(seqs_[seq].blocks.size()); }
  int32_t block_refcount(int32_t blk) const { return ref_[blk]; }
  size_t layer_stride_k() const { return static_cast<size_t>(n_blocks_) * block_size_ * k_dim_; }
  size_t layer_stride_v() const { return static_cast<size_t>(n_blocks_) * block_size_ * v_dim_; }

 private:
  size_t offset(int64_t il, int seq, int32_t p, int64_t dim) const {
    const int32_t blk = seqs_[seq].blocks[p / block_size_];
    return (static_cast<size_t>(il) * n_blocks_ + blk) * block_size_ * dim + static_cast<size_t>(p % block_size_) * dim;
  }
  struct Seq;
  bool shared(int32_t blk) const;  // held by another table or registered: written only after a copy
  int64_t count_shared(const Seq& s, size_t b0, size_t b1) const;
  void copy_shared(Seq& s, size_t b0, size_t b1);        // blocks [b0, b1) of s that are shared, copied
  int32_t prepare_cut(int seq, int32_t p0, int32_t p1);  // checks, copies; returns the cells to move
  void finish_cut(int seq, int32_t p0, int32_t p1, int32_t n);
  [[noreturn]] static void throw_no_host_storage(const char* what);
  uint64_t block_hash(uint64_t parent, const int32_t* tokens, uint64_t salt) const;
  int32_t find_block(uint64_t hash, uint64_t parent, const int32_t* tokens, uint64_t salt) const;
  int32_t take_block();       // an empty block, evicting the LRU cached one if needed
  void release(int32_t blk);  // refcount--, then to the LRU list or the free stack
  void unregister(int32_t blk);
  void lru_push(int32_t blk);
  void lru_remove(int32_t blk);
  void copy_block(int32_t from, int32_t to);

  struct Seq {
    std::vector<int32_t> blocks;   // capacity reserved up front
    std::vector<uint64_t> hashes;  // chained hash of each full block (caching sequences)
    int32_t len = 0;
    bool caching = false;
    uint64_t salt = 0;
  };
  struct BlockKey {  // what a registered block holds (checked on lookup: hashes may collide)
    uint64_t hash = 0, parent = 0, salt = 0;
    bool registered = false;
  };
  int block_size_ = 32;
  int64_t n_layer_ = 0, k_dim_ = 0, v_dim_ = 0, n_blocks_ = 0;
  BlockCopier copier_ = nullptr;
  void* copier_user_ = nullptr;
  std::unique_ptr<uint16_t[]> storage_;
  size_t storage_size_ = 0;
  uint16_t* k_ = nullptr;
  uint16_t* v_ = nullptr;
  std::vector<int32_t> free_;    // stack of empty block ids
  std::vector<int32_t> ref_;     // per block: block tables holding it
  std::vector<int32_t> tokens_;  // per cell (block * block_size + slot): the token committed there
  std::vector<BlockKey> keys_;
  std::unordered_map<uint64_t, int32_t> index_;  // hash -> registered block
  std::vector<int32_t> lru_prev_, lru_next_;     // cached blocks, least recently released first
  int32_t lru_head_ = -1, lru_tail_ = -1;
  int64_t n_lru_ = 0;
  uint64_t prefix_hits_ = 0;
  std::vector<Seq> seqs_;
  std::vector<int32_t> batch_next_, batch_old_;  // reserve_batch's scratch (n_seq_max each)
};

}  // namespace strix
