#include "kv/kv_cache.h"

#include <string>

#include "core/error.h"

namespace strix {

KvCache::KvCache(const Options& o)
    : block_size_(o.block_size), n_layer_(o.n_layer), k_dim_(o.k_dim), v_dim_(o.v_dim) {
  if (o.block_size <= 0 || o.n_cells <= 0 || o.n_layer <= 0 || o.n_seq_max <= 0) {
    throw Error("KV cache: bad size (cells " + std::to_string(o.n_cells) + ", block " +
                std::to_string(o.block_size) + ")");
  }
  n_blocks_ = (o.n_cells + block_size_ - 1) / block_size_;
  const size_t k_elems = static_cast<size_t>(n_layer_) * n_blocks_ * block_size_ * k_dim_;
  const size_t v_elems = static_cast<size_t>(n_layer_) * n_blocks_ * block_size_ * v_dim_;
  storage_size_ = k_elems + v_elems;
  // Zeroed: cells are always written before they are read, but untouched
  // memory keeps sanitizers and page accounting honest.
  storage_.reset(new uint16_t[storage_size_]());
  k_ = storage_.get();
  v_ = k_ + k_elems;
  free_.reserve(n_blocks_);
  for (int64_t b = n_blocks_ - 1; b >= 0; --b) free_.push_back(static_cast<int32_t>(b));
  seqs_.resize(o.n_seq_max);
  for (Seq& s : seqs_) s.blocks.reserve(n_blocks_);
}

void KvCache::reserve(int seq, int32_t new_len) {
  Seq& s = seqs_[seq];
  const size_t need = (static_cast<size_t>(new_len) + block_size_ - 1) / block_size_;
  if (need > s.blocks.size() && need - s.blocks.size() > free_.size()) {
    throw Error("the context is full: sequence " + std::to_string(seq) + " needs " + std::to_string(new_len) +
                " cells, the KV cache holds " + std::to_string(n_blocks_ * block_size_) +
                " in all (raise -c)");
  }
  while (s.blocks.size() < need) {
    s.blocks.push_back(free_.back());
    free_.pop_back();
  }
}

void KvCache::truncate(int seq, int32_t p0) {
  Seq& s = seqs_[seq];
  if (p0 < 0) p0 = 0;
  if (p0 < s.len) s.len = p0;
  const size_t keep = (static_cast<size_t>(s.len) + block_size_ - 1) / block_size_;
  while (s.blocks.size() > keep) {
    free_.push_back(s.blocks.back());
    s.blocks.pop_back();
  }
}

void KvCache::clear() {
  for (int i = 0; i < static_cast<int>(seqs_.size()); ++i) truncate(i, 0);
}

}  // namespace strix
