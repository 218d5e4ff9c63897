// Paged KV cache: a pool of fixed-size blocks shared by all sequences, and one
// block table per sequence. Cell `p` of a sequence (its token at position p)
// lives in block table[p / block_size], slot p % block_size. K and V are stored
// as f16 (llama.cpp's default cache type), one row of n_head_kv * head_dim per
// cell and layer.
//
// All memory is allocated once at construction; growing a sequence only takes
// blocks from the free list, so the decode loop never allocates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
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
  };
  explicit KvCache(const Options& opts);

  int block_size() const { return block_size_; }
  int n_seq_max() const { return static_cast<int>(seqs_.size()); }
  int64_t n_blocks() const { return n_blocks_; }
  int64_t n_free_blocks() const { return static_cast<int64_t>(free_.size()); }
  int64_t k_dim() const { return k_dim_; }
  int64_t v_dim() const { return v_dim_; }
  size_t bytes() const { return storage_size_ * sizeof(uint16_t); }

  // Tokens stored for a sequence (its next position).
  int32_t seq_len(int seq) const { return seqs_[seq].len; }
  // Makes room for cells [0, new_len) of `seq`; throws Error when the cache is full.
  void reserve(int seq, int32_t new_len);
  // Sets the length of a sequence after its cells were written (<= reserved).
  void set_len(int seq, int32_t len) { seqs_[seq].len = len; }
  // Drops cells [p0, len) of a sequence, returning whole blocks to the pool.
  void truncate(int seq, int32_t p0);
  void clear();

  // Cell rows (f16) of layer `il` for position p of `seq` (p must be reserved).
  uint16_t* k_row(int64_t il, int seq, int32_t p) { return k_ + offset(il, seq, p, k_dim_); }
  uint16_t* v_row(int64_t il, int seq, int32_t p) { return v_ + offset(il, seq, p, v_dim_); }
  const uint16_t* k_row(int64_t il, int seq, int32_t p) const { return k_ + offset(il, seq, p, k_dim_); }
  const uint16_t* v_row(int64_t il, int seq, int32_t p) const { return v_ + offset(il, seq, p, v_dim_); }
  // The block of cells starting at position p (a multiple of block_size): up
  // to block_size consecutive rows.
  const int32_t* block_table(int seq) const { return seqs_[seq].blocks.data(); }
  size_t layer_stride_k() const { return static_cast<size_t>(n_blocks_) * block_size_ * k_dim_; }
  size_t layer_stride_v() const { return static_cast<size_t>(n_blocks_) * block_size_ * v_dim_; }

 private:
  size_t offset(int64_t il, int seq, int32_t p, int64_t dim) const {
    const int32_t blk = seqs_[seq].blocks[p / block_size_];
    return (static_cast<size_t>(il) * n_blocks_ + blk) * block_size_ * dim +
           static_cast<size_t>(p % block_size_) * dim;
  }

  struct Seq {
    std::vector<int32_t> blocks;  // capacity reserved up front
    int32_t len = 0;
  };
  int block_size_ = 32;
  int64_t n_layer_ = 0, k_dim_ = 0, v_dim_ = 0, n_blocks_ = 0;
  std::unique_ptr<uint16_t[]> storage_;
  size_t storage_size_ = 0;
  uint16_t* k_ = nullptr;
  uint16_t* v_ = nullptr;
  std::vector<int32_t> free_;  // stack of free block ids
  std::vector<Seq> seqs_;
};

}  // namespace strix
