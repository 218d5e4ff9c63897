// A fixed-capacity FIFO of the most recent tokens (libllama's ring_buffer):
// pushing onto a full ring drops the oldest. Used by the penalties and DRY
// stages for their windows of the last N accepted tokens.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace strix::sampling {

class TokenRing {
 public:
  explicit TokenRing(size_t capacity) : data_(capacity) {}
  size_t size() const { return size_; }
  size_t capacity() const { return data_.size(); }
  // The oldest token; the ring must not be empty.
  int32_t front() const { return data_[first_]; }
  // The i-th most recent token (0: the last one); i < size().
  int32_t rat(size_t i) const { return data_[(first_ + size_ - i - 1) % data_.size()]; }
  void push_back(int32_t token) {
    if (data_.empty()) return;
    if (size_ == data_.size()) {
      first_ = (first_ + 1) % data_.size();
    } else {
      ++size_;
    }
    data_[pos_] = token;
    pos_ = (pos_ + 1) % data_.size();
  }
  void clear() { size_ = first_ = pos_ = 0; }

 private:
  std::vector<int32_t> data_;
  size_t size_ = 0, first_ = 0, pos_ = 0;
};

}  // namespace strix::sampling
