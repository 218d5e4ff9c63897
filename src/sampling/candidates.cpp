#include "sampling/candidates.h"

#include <algorithm>
#include <cassert>
#include <climits>
#include <cmath>

namespace strix::sampling {

namespace {

bool logit_greater(const TokenData& a, const TokenData& b) { return a.logit > b.logit; }

// The histogram's geometry: 128 buckets over logits [-10, 10], everything
// outside in the end buckets.
constexpr int kBuckets = 128;
constexpr float kBucketLow = -10.0f;
constexpr float kBucketHigh = 10.0f;
constexpr float kBucketScale = kBuckets / (kBucketHigh - kBucketLow);
constexpr float kBucketInter = -kBucketLow * kBucketScale;

}  // namespace

int32_t truncate_like_x86(float x) {
  if (x >= -2147483648.0f && x < 2147483648.0f) return static_cast<int32_t>(x);
  return INT32_MIN;  // NaN or out of range: the "integer indefinite" value
}

void bucket_partial_sort(const Candidates& cur, int npartial, std::vector<TokenData>& out, SortScratch& scratch) {
  int histo[kBuckets] = {};
  const int n = static_cast<int>(cur.size);
  scratch.bucket_of.resize(cur.size);
  for (int i = 0; i < n; ++i) {
    const float val = cur.data[i].logit;
    // libllama: ib = clamp(int(scale * val + inter), 0, 127) with the int cast
    // of x86 (out of range -> INT_MIN -> bucket 0).
    const int ib = std::max(0, std::min(kBuckets - 1, truncate_like_x86(kBucketScale * val + kBucketInter)));
    scratch.bucket_of[i] = ib;
    ++histo[ib];
  }
  int nhave = 0;
  int ib = kBuckets - 1;
  for (; ib >= 0; --ib) {
    nhave += histo[ib];
    if (nhave >= npartial) break;
  }
  out.resize(static_cast<size_t>(nhave));
  TokenData* ptr = out.data();
  scratch.bucket_ptrs.clear();
  for (int j = kBuckets - 1; j >= ib; --j) {
    scratch.bucket_ptrs.push_back(ptr);
    ptr += histo[j];
  }
  for (int i = 0; i < n; ++i) {
    const int j = scratch.bucket_of[i];
    if (j >= ib) *scratch.bucket_ptrs[kBuckets - 1 - j]++ = cur.data[i];
  }
  ptr = out.data();
  int ndone = 0;
  for (int j = kBuckets - 1; j > ib; --j) {
    std::sort(ptr, ptr + histo[j], logit_greater);
    ptr += histo[j];
    ndone += histo[j];
  }
  std::partial_sort(ptr, ptr + npartial - ndone, ptr + histo[ib], logit_greater);
}

void partial_sort_inplace(Candidates& cur, int npartial, SortScratch& scratch) {
  if (npartial <= 128) {
    std::partial_sort(cur.data, cur.data + npartial, cur.data + cur.size, logit_greater);
  } else {
    bucket_partial_sort(cur, npartial, scratch.tmp, scratch);
    std::copy(scratch.tmp.data(), scratch.tmp.data() + npartial, cur.data);
  }
  cur.size = static_cast<size_t>(npartial);
  cur.sorted = true;
}

void softmax(Candidates& cur, bool do_sort, SortScratch& scratch) {
  assert(cur.size > 0);
  if (do_sort && !cur.sorted) partial_sort_inplace(cur, static_cast<int>(cur.size), scratch);
  float max_l = cur.data[0].logit;
  if (!cur.sorted) {
    for (size_t i = 1; i < cur.size; ++i) max_l = std::max(max_l, cur.data[i].logit);
  }
  float cum_sum = 0.0f;
  for (size_t i = 0; i < cur.size; ++i) {
    const float p = std::exp(cur.data[i].logit - max_l);  // expf
    cur.data[i].p = p;
    cum_sum += p;
  }
  for (size_t i = 0; i < cur.size; ++i) cur.data[i].p /= cum_sum;
}

void scale_temperature(Candidates& cur, float temp) {
  if (cur.size == 0) return;
  if (temp <= 0.0f) {
    size_t max_i = 0;
    float max_l = cur.data[0].logit;
    for (size_t i = 1; i < cur.size; ++i) {
      if (cur.data[i].logit > max_l) {
        cur.data[max_i].logit = -INFINITY;
        max_i = i;
        max_l = cur.data[i].logit;
      } else {
        cur.data[i].logit = -INFINITY;
      }
    }
    return;
  }
  for (size_t i = 0; i < cur.size; ++i) cur.data[i].logit /= temp;
}

void top_k(Candidates& cur, int32_t k, SortScratch& scratch) {
  if (k <= 0) return;
  k = std::min(k, static_cast<int32_t>(cur.size));
  if (!cur.sorted) partial_sort_inplace(cur, k, scratch);
  cur.size = static_cast<size_t>(k);
}

}  // namespace strix::sampling
