// Q1_0 and Q2_0: 1- and 2-bit codes with one fp16 scale per block.
//
//   block_q1_0 (128 elements, 18 bytes): [d: fp16][qs: 16 bytes]
//     element j is bit j%8 of qs[j/8]: 1 -> +d, 0 -> -d.
//     The quantizer stores d = mean |x| and the sign bit (x >= 0) of each element.
//   block_q2_0 (64 elements, 18 bytes): [d: fp16][qs: 16 bytes]
//     element j is bits 2*(j%4)..+1 of qs[j/4]: code q -> (q - 1) * d, so
//     codes 0..3 mean -1, 0, +1, +2. The quantizer stores d = max |x| and
//     clamp(round(x / d) + 1, 0, 3).
//
// Bit-identical with libggml (tests/quant_misc); float operations keep its order.
#pragma GCC optimize("fp-contract=off")

#include <cmath>
#include <cstdint>
#include <cstring>

#include "quant/fp16.h"
#include "quant/quants.h"

namespace strix::quant {

namespace {

constexpr int kQ1Block = 128;
constexpr int kQ2Block = 64;
constexpr int kBlockBytes = 18;  // both types

float read_fp16(const uint8_t* p) { return fp16_to_fp32(static_cast<uint16_t>(p[0] | (p[1] << 8))); }
void write_fp16(uint8_t* p, float v) {
  const uint16_t h = fp32_to_fp16(v);
  p[0] = static_cast<uint8_t>(h & 0xFF);
  p[1] = static_cast<uint8_t>(h >> 8);
}

// What x86's cvttss2si does with a float: truncate, and INT32_MIN for NaN or
// anything out of range. libggml's (int) casts compile to it; we spell it out.
int32_t truncate_like_x86(float f) {
  if (!(f >= -2147483648.0f && f < 2147483648.0f)) return INT32_MIN;
  return static_cast<int32_t>(f);
}

}  // namespace

void dequantize_row_q1_0(const void* x, float* y, int64_t k) {
  const auto* b = static_cast<const uint8_t*>(x);
  for (int64_t i = 0; i < k / kQ1Block; ++i, b += kBlockBytes, y += kQ1Block) {
    // bit ? d : -d, without a branch per element: negation flips only the sign
    // bit (NaN included), so xor-ing it in when the bit is 0 is the same value.
    const uint32_t d_bits = f32_bits(read_fp16(b));
    for (int j = 0; j < kQ1Block; ++j) {
      const uint32_t bit = (b[2 + j / 8] >> (j % 8)) & 1u;
      y[j] = f32_from_bits(d_bits ^ ((bit ^ 1u) << 31));
    }
  }
}

void quantize_row_q1_0_ref(const float* x, void* y, int64_t k) {
  auto* b = static_cast<uint8_t*>(y);
  for (int64_t i = 0; i < k / kQ1Block; ++i, b += kBlockBytes, x += kQ1Block) {
    float sum = 0.0f;  // summed in element order
    for (int j = 0; j < kQ1Block; ++j) sum += std::fabs(x[j]);
    write_fp16(b, sum / kQ1Block);
    std::memset(b + 2, 0, kBlockBytes - 2);
    for (int j = 0; j < kQ1Block; ++j) {
      if (x[j] >= 0.0f) b[2 + j / 8] = static_cast<uint8_t>(b[2 + j / 8] | (1u << (j % 8)));  // NaN -> 0
    }
  }
}

void dequantize_row_q2_0(const void* x, float* y, int64_t k) {
  const auto* b = static_cast<const uint8_t*>(x);
  for (int64_t i = 0; i < k / kQ2Block; ++i, b += kBlockBytes, y += kQ2Block) {
    const float d = read_fp16(b);
    for (int j = 0; j < kQ2Block; ++j) {
      // A real multiply per element, as libggml does: a table of the four values
      // lets the compiler fold -1 * d into -d, which flips the sign of a NaN d
      // where x86's mulss keeps it.
      const int q = (b[2 + j / 4] >> (2 * (j % 4))) & 3;
      y[j] = static_cast<float>(q - 1) * d;
    }
  }
}

void quantize_row_q2_0_ref(const float* x, void* y, int64_t k) {
  auto* b = static_cast<uint8_t*>(y);
  for (int64_t i = 0; i < k / kQ2Block; ++i, b += kBlockBytes, x += kQ2Block) {
    float amax = 0.0f;  // NaN never replaces the running maximum
    for (int j = 0; j < kQ2Block; ++j) {
      if (std::fabs(x[j]) > amax) amax = std::fabs(x[j]);
    }
    const float inv = amax > 0.0f ? 1.0f / amax : 0.0f;
    write_fp16(b, amax);
    for (int byte = 0; byte < kQ2Block / 4; ++byte) {
      uint32_t packed = 0;
      for (int s = 0; s < 4; ++s) {
        // NaN or infinite x * inv truncates to INT32_MIN (+1), which clamps to code 0
        int q = truncate_like_x86(std::round(x[4 * byte + s] * inv)) + 1;
        q = q < 0 ? 0 : (q > 3 ? 3 : q);
        packed |= static_cast<uint32_t>(q) << (2 * s);
      }
      b[2 + byte] = static_cast<uint8_t>(packed);
    }
  }
}

}  // namespace strix::quant
