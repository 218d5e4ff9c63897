// What a single-sequence caller (the CLI's generator) needs from a context,
// whichever backend runs it: runtime::Context on the CPU or
// cuda::CudaContext on the GPU. DecoderOf<C> adapts either one without
// changing it (one virtual call per decode step).
#pragma once

#include <cstdint>
#include <span>

#include "core/error.h"

namespace strix {

class Decoder {
 public:
  virtual ~Decoder() = default;
  // As Context::decode_seq / logits / seq_len / clear.
  virtual void decode_seq(std::span<const int32_t> tokens, int seq = 0, bool all_logits = false) = 0;
  virtual std::span<const float> logits(int32_t i) const = 0;
  virtual int32_t seq_len(int seq) const = 0;
  virtual void clear() = 0;
  virtual int64_t n_ctx() const = 0;  // cells per sequence
  // As Context::seq_cut; Refusal where the backend cannot move cached cells.
  virtual void seq_cut(int seq, int32_t p0, int32_t p1) = 0;
};

template <class C>
class DecoderOf final : public Decoder {
 public:
  DecoderOf(C& ctx, int64_t n_ctx) : ctx_(ctx), n_ctx_(n_ctx) {}
  void decode_seq(std::span<const int32_t> tokens, int seq, bool all_logits) override {
    ctx_.decode_seq(tokens, seq, all_logits);
  }
  std::span<const float> logits(int32_t i) const override { return ctx_.logits(i); }
  int32_t seq_len(int seq) const override { return ctx_.seq_len(seq); }
  void clear() override { ctx_.clear(); }
  int64_t n_ctx() const override { return n_ctx_; }
  void seq_cut(int seq, int32_t p0, int32_t p1) override {
    if constexpr (requires { ctx_.seq_cut(seq, p0, p1); }) {
      ctx_.seq_cut(seq, p0, p1);
    } else {
      throw Refusal("context shift: moving cached cells is not implemented on this backend (run without -ngl)");
    }
  }

 private:
  C& ctx_;
  int64_t n_ctx_;
};

}  // namespace strix
