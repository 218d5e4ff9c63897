// TQ1_0 and TQ2_0: ternary weights {-1, 0, +1} times one fp16 scale per 256.
//
//   block_tq1_0 (256 elements, 54 bytes): [qs: 48][qh: 4][d: fp16]
//     qs[0..31]  hold 5 trits each: byte m, trit n -> element       n*32 + m
//     qs[32..47] hold 5 trits each: byte m, trit n -> element 160 + n*16 + m
//     qh[0..3]   hold 4 trits each: byte j, trit n -> element 240 + n*4  + j
//   A byte stores its trits t0..t4 (t0 most significant, as the base-3 number
//   t0 t1 t2 t3 t4; qh bytes use t4 = 0) as ceil(number * 256 / 243), so trit n
//   is the top trit of (byte * 3^n mod 256), read back as (that * 3) >> 8.
//
//   block_tq2_0 (256 elements, 66 bytes): [qs: 64][d: fp16]
//     byte c*32 + m, bits 2n..2n+1 -> element c*128 + n*32 + m, value q - 1
//     (q = 3, never written by the quantizer, decodes to +2).
//
// Bit-identical with libggml (tests/quant_misc); float operations keep its order.
#pragma GCC optimize("fp-contract=off")

#include <cmath>
#include <cstdint>

#include "quant/fp16.h"
#include "quant/quants.h"

namespace strix::quant {

namespace {

constexpr int kBlock = 256;
constexpr int kTq1Bytes = 54;
constexpr int kTq1Qh = 48;  // offset of qh
constexpr int kTq1D = 52;   // offset of d
constexpr int kTq2Bytes = 66;
constexpr int kTq2D = 64;

constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};

float read_fp16(const uint8_t* p) { return fp16_to_fp32(static_cast<uint16_t>(p[0] | (p[1] << 8))); }
void write_fp16(uint8_t* p, float v) {
  const uint16_t h = fp32_to_fp16(v);
  p[0] = static_cast<uint8_t>(h & 0xFF);
  p[1] = static_cast<uint8_t>(h >> 8);
}

// Trit n (0 = most significant) of a packed byte, as -1, 0 or +1 (and +2 is
// impossible: (t * 3) >> 8 is at most 2).
int unpack_trit(uint8_t packed, int n) {
  const uint8_t shifted = static_cast<uint8_t>(packed * kPow3[n]);
  return ((shifted * 3) >> 8) - 1;
}

// max |x| the way libggml's MAX macro folds it: a NaN |x| becomes the running
// maximum and is dropped again by the next comparison.
float fold_abs_max(const float* x, int n) {
  float amax = 0.0f;
  for (int j = 0; j < n; ++j) {
    const float a = std::fabs(x[j]);
    amax = amax > a ? amax : a;
  }
  return amax;
}

// glibc's lroundf (round half away from zero), inlined: the library call was the
// whole cost of quantizing. Floats of magnitude >= 2^23 are integers already;
// NaN, inf and anything past the int64 range give LONG_MIN (what glibc returns
// on x86-64).
int64_t round_half_away(float v) {
  const float a = std::fabs(v);
  if (a < 0x1p23f) {
    int64_t r = static_cast<int64_t>(v);           // truncated
    const float frac = v - static_cast<float>(r);  // exact
    if (frac >= 0.5f) ++r;
    if (frac <= -0.5f) --r;
    return r;
  }
  if (a < 0x1p63f) return static_cast<int64_t>(v);
  return INT64_MIN;
}

// round(x * inv) + 1, i.e. -1/0/+1 -> 0/1/2, as libggml's `int xi = lroundf(..) + 1`:
// a NaN product gives LONG_MIN, whose low 32 bits (plus one) are 1.
int ternary_code(float x, float inv) {
  const int64_t r = round_half_away(x * inv);
  return static_cast<int>(static_cast<uint32_t>(static_cast<uint64_t>(r) + 1u));
}

// Pack `count` trits (stride apart, first one most significant) into a byte, then
// scale the base-3 number by 256/243 rounding up. libggml accumulates in uint8_t;
// wrapping mod 2^32 and reducing mod 256 once at the end gives the same byte.
uint8_t pack_trits(const float* x, int stride, int count, float inv) {
  uint32_t q = 0;
  for (int n = 0; n < count; ++n) q = q * 3 + static_cast<uint32_t>(ternary_code(x[n * stride], inv));
  if (count == 4) q *= 3;  // the 5th trit is 0
  return static_cast<uint8_t>(((q & 0xFF) * 256 + 242) / 243);
}

}  // namespace

void dequantize_row_tq1_0(const void* x, float* y, int64_t k) {
  const auto* b = static_cast<const uint8_t*>(x);
  for (int64_t i = 0; i < k / kBlock; ++i, b += kTq1Bytes) {
    const float d = read_fp16(b + kTq1D);
    // qs in two runs (32 bytes, then 16), then qh; each run emits trit 0 of
    // every byte, then trit 1, ...
    const struct { int offset, bytes, trits; } runs[3] = {{0, 32, 5}, {32, 16, 5}, {kTq1Qh, 4, 4}};
    for (const auto& run : runs) {
      for (int n = 0; n < run.trits; ++n) {
        for (int m = 0; m < run.bytes; ++m) {
          *y++ = static_cast<float>(unpack_trit(b[run.offset + m], n)) * d;
        }
      }
    }
  }
}

void quantize_row_tq1_0_ref(const float* x, void* y, int64_t k) {
  auto* b = static_cast<uint8_t*>(y);
  for (int64_t i = 0; i < k / kBlock; ++i, b += kTq1Bytes, x += kBlock) {
    const float d = fold_abs_max(x, kBlock);
    const float inv = d != 0.0f ? 1.0f / d : 0.0f;
    write_fp16(b + kTq1D, d);
    for (int m = 0; m < 32; ++m) b[m] = pack_trits(x + m, 32, 5, inv);
    for (int m = 0; m < 16; ++m) b[32 + m] = pack_trits(x + 160 + m, 16, 5, inv);
    for (int j = 0; j < 4; ++j) b[kTq1Qh + j] = pack_trits(x + 240 + j, 4, 4, inv);
  }
}

void dequantize_row_tq2_0(const void* x, float* y, int64_t k) {
  const auto* b = static_cast<const uint8_t*>(x);
  for (int64_t i = 0; i < k / kBlock; ++i, b += kTq2Bytes) {
    const float d = read_fp16(b + kTq2D);
    for (int c = 0; c < 2; ++c) {
      for (int n = 0; n < 4; ++n) {
        for (int m = 0; m < 32; ++m) {
          const int q = (b[c * 32 + m] >> (2 * n)) & 3;
          *y++ = static_cast<float>(q - 1) * d;
        }
      }
    }
  }
}

void quantize_row_tq2_0_ref(const float* x, void* y, int64_t k) {
  auto* b = static_cast<uint8_t*>(y);
  for (int64_t i = 0; i < k / kBlock; ++i, b += kTq2Bytes, x += kBlock) {
    const float d = fold_abs_max(x, kBlock);
    const float inv = d != 0.0f ? 1.0f / d : 0.0f;
    write_fp16(b + kTq2D, d);
    for (int c = 0; c < 2; ++c) {
      for (int m = 0; m < 32; ++m) {
        uint8_t q = 0;
        for (int n = 0; n < 4; ++n) {
          q = static_cast<uint8_t>(q + ((ternary_code(x[c * 128 + n * 32 + m], inv) & 3) << (2 * n)));
        }
        b[c * 32 + m] = q;
      }
    }
  }
}

}  // namespace strix::quant
