#include "kv/kv_cache.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/error.h"

namespace strix {

namespace {

// splitmix64's finaliser: a full-avalanche mix of 64 bits.
uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

}  // namespace

KvCache::KvCache(const Options& o) : block_size_(o.block_size), n_layer_(o.n_layer), k_dim_(o.k_dim), v_dim_(o.v_dim) {
  if (o.block_size <= 0 || o.n_cells <= 0 || o.n_layer <= 0 || o.n_seq_max <= 0) {
    throw Error("KV cache: bad size (cells " + std::to_string(o.n_cells) + ", block " + std::to_string(o.block_size) +
                ")");
  }
  n_blocks_ = (o.n_cells + block_size_ - 1) / block_size_;
  const size_t k_elems = static_cast<size_t>(n_layer_) * n_blocks_ * block_size_ * k_dim_;
  const size_t v_elems = static_cast<size_t>(n_layer_) * n_blocks_ * block_size_ * v_dim_;
  if (o.host_storage) {
    storage_size_ = k_elems + v_elems;
    // Zeroed: cells are always written before they are read, but untouched
    // memory keeps sanitizers and page accounting honest.
    storage_.reset(new uint16_t[storage_size_]());
    k_ = storage_.get();
    v_ = k_ + k_elems;
  }
  free_.reserve(n_blocks_);
  for (int64_t b = n_blocks_ - 1; b >= 0; --b) free_.push_back(static_cast<int32_t>(b));
  ref_.assign(n_blocks_, 0);
  tokens_.assign(static_cast<size_t>(n_blocks_) * block_size_, -1);
  keys_.assign(n_blocks_, BlockKey{});
  lru_prev_.assign(n_blocks_, -1);
  lru_next_.assign(n_blocks_, -1);
  index_.reserve(n_blocks_);
  seqs_.resize(o.n_seq_max);
  for (Seq& s : seqs_) {
    s.blocks.reserve(n_blocks_);
    s.hashes.reserve(n_blocks_);
  }
}

uint64_t KvCache::salt_hash(std::string_view salt) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a, then mixed
  for (unsigned char c : salt) h = (h ^ c) * 0x100000001b3ULL;
  return mix64(h ^ salt.size());
}

uint64_t KvCache::block_hash(uint64_t parent, const int32_t* tokens, uint64_t salt) const {
  uint64_t h = mix64(parent ^ mix64(salt + 0x9e3779b97f4a7c15ULL));
  for (int i = 0; i < block_size_; ++i) h = mix64(h ^ (static_cast<uint64_t>(static_cast<uint32_t>(tokens[i])) + i));
  return h;
}

int32_t KvCache::find_block(uint64_t hash, uint64_t parent, const int32_t* tokens, uint64_t salt) const {
  const auto it = index_.find(hash);
  if (it == index_.end()) return -1;
  const int32_t blk = it->second;
  const BlockKey& k = keys_[blk];
  if (!k.registered || k.parent != parent || k.salt != salt) return -1;
  const int32_t* held = tokens_.data() + static_cast<size_t>(blk) * block_size_;
  if (!std::equal(tokens, tokens + block_size_, held)) return -1;
  return blk;
}

void KvCache::lru_push(int32_t blk) {
  lru_prev_[blk] = lru_tail_;
  lru_next_[blk] = -1;
  if (lru_tail_ >= 0) {
    lru_next_[lru_tail_] = blk;
  } else {
    lru_head_ = blk;
  }
  lru_tail_ = blk;
  ++n_lru_;
}

void KvCache::lru_remove(int32_t blk) {
  const int32_t p = lru_prev_[blk], n = lru_next_[blk];
  if (p >= 0) {
    lru_next_[p] = n;
  } else {
    lru_head_ = n;
  }
  if (n >= 0) {
    lru_prev_[n] = p;
  } else {
    lru_tail_ = p;
  }
  lru_prev_[blk] = lru_next_[blk] = -1;
  --n_lru_;
}

void KvCache::unregister(int32_t blk) {
  BlockKey& k = keys_[blk];
  if (!k.registered) return;
  const auto it = index_.find(k.hash);
  if (it != index_.end() && it->second == blk) index_.erase(it);
  k = BlockKey{};
}

int32_t KvCache::take_block() {
  int32_t blk = -1;
  if (!free_.empty()) {
    blk = free_.back();
    free_.pop_back();
  } else if (lru_head_ >= 0) {
    blk = lru_head_;  // evict the least recently released cached block
    lru_remove(blk);
    unregister(blk);
  } else {
    return -1;
  }
  ref_[blk] = 1;
  return blk;
}

void KvCache::release(int32_t blk) {
  if (--ref_[blk] > 0) return;
  if (keys_[blk].registered) {
    lru_push(blk);
  } else {
    free_.push_back(blk);
  }
}

void KvCache::throw_no_host_storage(const char* what) {
  throw Error(std::string("KV cache: ") + what + " needs the cells in host memory; this cache keeps them elsewhere");
}

void KvCache::copy_block(int32_t from, int32_t to) {
  std::copy_n(tokens_.begin() + static_cast<size_t>(from) * block_size_, block_size_,
              tokens_.begin() + static_cast<size_t>(to) * block_size_);
  if (copier_ != nullptr) copier_(copier_user_, from, to);
  if (!host_storage()) {
    if (copier_ == nullptr) throw_no_host_storage("copying a block");
    return;
  }
  const size_t bk = static_cast<size_t>(block_size_) * k_dim_, bv = static_cast<size_t>(block_size_) * v_dim_;
  for (int64_t il = 0; il < n_layer_; ++il) {
    const size_t base = static_cast<size_t>(il) * n_blocks_;
    std::memcpy(k_ + (base + to) * bk, k_ + (base + from) * bk, bk * sizeof(uint16_t));
    std::memcpy(v_ + (base + to) * bv, v_ + (base + from) * bv, bv * sizeof(uint16_t));
  }
}

bool KvCache::shared(int32_t blk) const { return ref_[blk] > 1 || keys_[blk].registered; }

int64_t KvCache::count_shared(const Seq& s, size_t b0, size_t b1) const {
  int64_t n = 0;
  for (size_t b = b0; b < s.blocks.size() && b < b1; ++b) n += shared(s.blocks[b]);
  return n;
}

void KvCache::copy_shared(Seq& s, size_t b0, size_t b1) {
  if (copier_ == nullptr && !host_storage() && count_shared(s, b0, b1) > 0) throw_no_host_storage("copying a block");
  for (size_t b = b0; b < s.blocks.size() && b < b1; ++b) {
    const int32_t old = s.blocks[b];
    if (!shared(old)) continue;
    const int32_t blk = take_block();  // never `old`: it is in use, so not on the LRU list
    copy_block(old, blk);
    s.blocks[b] = blk;
    release(old);
  }
}

int64_t KvCache::blocks_needed(int seq, int32_t new_len) const {
  const Seq& s = seqs_[seq];
  const size_t need = (static_cast<size_t>(new_len) + block_size_ - 1) / block_size_;
  // Blocks the new cells [len, new_len) write into that others hold or the index serves: copied first.
  const int64_t n_copy = new_len > s.len ? count_shared(s, static_cast<size_t>(s.len) / block_size_, need) : 0;
  const size_t n_new = need > s.blocks.size() ? need - s.blocks.size() : 0;
  return static_cast<int64_t>(n_new) + n_copy;
}

void KvCache::reserve(int seq, int32_t new_len) {
  Seq& s = seqs_[seq];
  const size_t need = (static_cast<size_t>(new_len) + block_size_ - 1) / block_size_;
  const int64_t n_take = blocks_needed(seq, new_len);
  const bool copy = n_take > static_cast<int64_t>(need > s.blocks.size() ? need - s.blocks.size() : 0);
  if (n_take > n_free_blocks()) {
    throw Error("the context is full: sequence " + std::to_string(seq) + " needs " + std::to_string(new_len) +
                " cells, the KV cache holds " + std::to_string(n_blocks_ * block_size_) + " in all (raise -c)");
  }
  if (copy) copy_shared(s, static_cast<size_t>(s.len) / block_size_, need);
  while (s.blocks.size() < need) s.blocks.push_back(take_block());
}

void KvCache::reserve_batch(std::span<const int32_t> tokens, std::span<const int32_t> pos, std::span<const int32_t> seq,
                            int64_t n_vocab, int64_t max_len, std::string_view full_hint) {
  const int n_seq = n_seq_max();
  batch_next_.resize(static_cast<size_t>(n_seq));
  batch_old_.resize(static_cast<size_t>(n_seq));
  for (int s = 0; s < n_seq; ++s) batch_next_[s] = batch_old_[s] = seqs_[s].len;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= n_vocab) {
      throw Error("decode: token id " + std::to_string(tokens[i]) + " is outside the vocabulary (0.." +
                  std::to_string(n_vocab - 1) + ")");
    }
    if (seq[i] < 0 || seq[i] >= n_seq) {
      throw Error("decode: sequence id " + std::to_string(seq[i]) + " is outside 0.." + std::to_string(n_seq - 1));
    }
    if (pos[i] != batch_next_[seq[i]]) {
      throw Error("decode: sequence " + std::to_string(seq[i]) + " continues at position " +
                  std::to_string(batch_next_[seq[i]]) + ", the batch gives " + std::to_string(pos[i]));
    }
    ++batch_next_[seq[i]];
  }
  for (int s = 0; s < n_seq; ++s) {
    if (batch_next_[s] > max_len) {
      throw Error("the context is full: sequence " + std::to_string(s) + " would hold " +
                  std::to_string(batch_next_[s]) + " tokens, the context size is " + std::to_string(max_len) +
                  std::string(full_hint));
    }
  }
  try {
    for (int s = 0; s < n_seq; ++s) reserve(s, batch_next_[s]);
  } catch (...) {
    for (int s = 0; s < n_seq; ++s) truncate(s, batch_old_[s]);
    throw;
  }
}

void KvCache::commit(int seq, int32_t pos, int32_t token) {
  Seq& s = seqs_[seq];
  const int32_t blk = s.blocks[pos / block_size_];
  tokens_[static_cast<size_t>(blk) * block_size_ + pos % block_size_] = token;
  s.len = pos + 1;
  if (!s.caching || (pos + 1) % block_size_ != 0) return;
  const size_t b = static_cast<size_t>(pos / block_size_);
  if (s.hashes.size() != b) return;  // an earlier block was not committed token by token
  const uint64_t parent = b > 0 ? s.hashes[b - 1] : 0;
  const uint64_t h = block_hash(parent, tokens_.data() + static_cast<size_t>(blk) * block_size_, s.salt);
  s.hashes.push_back(h);
  // A block computed twice (two sequences prefilling the same prefix at once)
  // stays private to its sequence: the index keeps the first.
  if (keys_[blk].registered || index_.count(h) != 0) return;
  keys_[blk] = BlockKey{h, parent, s.salt, true};
  index_.emplace(h, blk);
}

void KvCache::truncate(int seq, int32_t p0) {
  Seq& s = seqs_[seq];
  if (p0 < 0) p0 = 0;
  if (p0 < s.len) s.len = p0;
  const size_t keep = (static_cast<size_t>(s.len) + block_size_ - 1) / block_size_;
  // The last block first: cached tails are evicted before the heads they hang from.
  while (s.blocks.size() > keep) {
    release(s.blocks.back());
    s.blocks.pop_back();
  }
  const size_t full = static_cast<size_t>(s.len) / block_size_;
  if (s.hashes.size() > full) s.hashes.resize(full);
}

int32_t KvCache::prepare_cut(int seq, int32_t p0, int32_t p1) {
  Seq& s = seqs_[seq];
  if (p0 < 0 || p1 < p0 || p1 > s.len) {
    throw Error("KV cut: cells [" + std::to_string(p0) + ", " + std::to_string(p1) + ") are not within sequence " +
                std::to_string(seq) + "'s " + std::to_string(s.len));
  }
  const int32_t n = s.len - p1;
  const int32_t new_len = p0 + n;
  s.caching = false;
  const size_t b0 = static_cast<size_t>(p0) / block_size_;
  if (s.hashes.size() > b0) s.hashes.resize(b0);
  const size_t b1 = (static_cast<size_t>(new_len) + block_size_ - 1) / block_size_;
  // Blocks other tables hold must be copied; a registered block this sequence
  // alone holds is copied too (the cache keeps serving it) while the pool has
  // room, else it leaves the index and is written in place.
  int64_t n_held = 0, n_own = 0;
  for (size_t b = b0; b < s.blocks.size() && b < b1; ++b) {
    const int32_t blk = s.blocks[b];
    n_held += ref_[blk] > 1;
    n_own += ref_[blk] == 1 && keys_[blk].registered;
  }
  if (n_held > n_free_blocks()) {
    throw Error("the context is full: moving cells of sequence " + std::to_string(seq) + " needs " +
                std::to_string(n_held) + " free blocks (raise -c)");
  }
  if (n_held + n_own > n_free_blocks()) {
    for (size_t b = b0; b < s.blocks.size() && b < b1; ++b) {
      if (ref_[s.blocks[b]] == 1) unregister(s.blocks[b]);
    }
  }
  copy_shared(s, b0, b1);
  return n;
}

void KvCache::finish_cut(int seq, int32_t p0, int32_t p1, int32_t n) {
  Seq& s = seqs_[seq];
  auto cell = [&](int32_t p) {
    return static_cast<size_t>(s.blocks[p / block_size_]) * block_size_ + static_cast<size_t>(p % block_size_);
  };
  for (int32_t i = 0; i < n; ++i) tokens_[cell(p0 + i)] = tokens_[cell(p1 + i)];
  truncate(seq, p0 + n);
}

void KvCache::clear() {
  for (int i = 0; i < static_cast<int>(seqs_.size()); ++i) truncate(i, 0);
  while (lru_head_ >= 0) {
    const int32_t blk = lru_head_;
    lru_remove(blk);
    unregister(blk);
    free_.push_back(blk);
  }
}

void KvCache::seq_set_caching(int seq, bool on, uint64_t salt) {
  Seq& s = seqs_[seq];
  if (s.len != 0 || !s.blocks.empty()) throw Error("KV cache: prefix caching can only change on an empty sequence");
  s.caching = on;
  s.salt = salt;
  s.hashes.clear();
}

int32_t KvCache::cached_prefix(std::span<const int32_t> tokens, uint64_t salt) const {
  uint64_t parent = 0;
  int32_t n = 0;
  for (size_t at = 0; at + block_size_ <= tokens.size(); at += block_size_) {
    const uint64_t h = block_hash(parent, tokens.data() + at, salt);
    if (find_block(h, parent, tokens.data() + at, salt) < 0) break;
    parent = h;
    n += block_size_;
  }
  return n;
}

int32_t KvCache::attach_prefix(int seq, std::span<const int32_t> tokens) {
  Seq& s = seqs_[seq];
  if (s.len != 0 || !s.blocks.empty()) throw Error("KV cache: a prefix can only be attached to an empty sequence");
  if (!s.caching) return 0;
  uint64_t parent = 0;
  for (size_t at = 0; at + block_size_ <= tokens.size(); at += block_size_) {
    const uint64_t h = block_hash(parent, tokens.data() + at, s.salt);
    const int32_t blk = find_block(h, parent, tokens.data() + at, s.salt);
    if (blk < 0) break;
    if (ref_[blk] == 0) lru_remove(blk);
    ++ref_[blk];
    s.blocks.push_back(blk);
    s.hashes.push_back(h);
    parent = h;
  }
  s.len = static_cast<int32_t>(s.blocks.size()) * block_size_;
  prefix_hits_ += static_cast<uint64_t>(s.len);
  return s.len;
}

void KvCache::share_blocks(int src, int dst, int32_t n_tokens) {
  const Seq& a = seqs_[src];
  Seq& b = seqs_[dst];
  if (src == dst || b.len != 0 || !b.blocks.empty())
    throw Error("KV cache: blocks can only be shared into another, empty sequence");
  const int32_t nb = std::min(n_tokens, a.len) / block_size_;
  for (int32_t i = 0; i < nb; ++i) {
    ++ref_[a.blocks[i]];
    b.blocks.push_back(a.blocks[i]);
    if (b.caching && static_cast<size_t>(i) < a.hashes.size()) b.hashes.push_back(a.hashes[i]);
  }
  if (b.hashes.size() != b.blocks.size()) b.hashes.clear();
  b.len = nb * block_size_;
}

void KvCache::share_prefix(int src, int dst, int32_t n_tokens) {
  const Seq& a = seqs_[src];
  Seq& b = seqs_[dst];
  if (src == dst || b.len != 0 || !b.blocks.empty())
    throw Error("KV cache: a prefix can only be shared into another, empty sequence");
  const int32_t n = std::clamp(n_tokens, 0, a.len);
  const int32_t nb = (n + block_size_ - 1) / block_size_;
  for (int32_t i = 0; i < nb; ++i) {
    ++ref_[a.blocks[i]];
    b.blocks.push_back(a.blocks[i]);
  }
  const size_t full = static_cast<size_t>(n / block_size_);
  if (b.caching && a.caching && a.salt == b.salt && a.hashes.size() >= full) {
    b.hashes.assign(a.hashes.begin(), a.hashes.begin() + static_cast<std::ptrdiff_t>(full));
  }
  b.len = n;
}

}  // namespace strix
