// The candidates array every sampling stage works on, and the primitive
// operations libllama's samplers share (src/llama-sampler.cpp of the pinned
// build): its partial sorts (a heap partial sort up to 128 entries, a 128-bucket
// histogram sort above), its float softmax, temperature scaling and top-k.
//
// Bit-exactness: the element order after a sort decides which of several equal
// logits survives a cut and which index a draw lands on, so the sorts call the
// same standard algorithms (std::sort / std::partial_sort with the same
// comparator, over the same 12-byte elements in the same input order) that
// libllama calls; the arithmetic is float where libllama's is float, in the same
// order, and Strix is built without FMA contraction (plain x86-64), as libllama.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "grammar/grammar.h"

namespace strix::sampling {

// llama_token_data: {id, logit, p}. The grammar matcher masks the same type.
using TokenData = grammar::TokenData;

// llama_token_data_array. data may be advanced past dropped entries (XTC does).
struct Candidates {
  TokenData* data = nullptr;
  size_t size = 0;
  int64_t selected = -1;  // index into data, set by the stage that draws
  bool sorted = false;    // data is in descending logit order
};

// Scratch buffers kept between calls so that sampling allocates nothing once
// they have grown to the vocabulary size.
struct SortScratch {
  std::vector<int> bucket_of;  // [n] bucket of each candidate
  std::vector<TokenData*> bucket_ptrs;
  std::vector<TokenData> tmp;  // [>= npartial] output of the bucket sort
};

// libllama's llama_token_data_array_partial_sort: writes into out the entries of
// the highest buckets that hold at least npartial candidates (out.size() may be
// larger than npartial); the first npartial are in descending logit order.
void bucket_partial_sort(const Candidates& cur, int npartial, std::vector<TokenData>& out, SortScratch& scratch);

// libllama's llama_token_data_array_partial_sort_inplace: keeps the top
// npartial, sorted; sets size = npartial and sorted = true.
void partial_sort_inplace(Candidates& cur, int npartial, SortScratch& scratch);

// llama_sampler_softmax_impl: p = expf(logit - max) / sum in float; sorts first
// when do_sort. Needs size > 0.
void softmax(Candidates& cur, bool do_sort, SortScratch& scratch);

// llama_sampler_temp_impl: logit /= temp; temp <= 0 keeps the first maximal
// logit and sets every other to -inf.
void scale_temperature(Candidates& cur, float temp);

// llama_sampler_top_k_impl: k <= 0 is a no-op; otherwise keeps the top
// min(k, size), sorting when not sorted.
void top_k(Candidates& cur, int32_t k, SortScratch& scratch);

// int(x) as x86-64's cvttss2si computes it (libllama's casts of floats that can
// be out of range or NaN): INT32_MIN when x is NaN or outside int32.
int32_t truncate_like_x86(float x);

}  // namespace strix::sampling
