// Byte layouts of the legacy 32-element block formats (Q4_0 .. Q8_1), as they lie
// in a GGUF tensor. Scales are IEEE half bit patterns (uint16_t), little endian.
//
// Element order inside a block: nibble formats put element j (j < 16) in the low
// nibble of qs[j] and element j + 16 in the high nibble; 5-bit formats keep the
// fifth bit of element j in bit j of the 32-bit little-endian qh word.
#pragma once

#include <cstdint>

namespace strix::quant {

constexpr int kLegacyBlock = 32;  // elements per legacy block

struct BlockQ4_0 {
  uint16_t d;                    // scale: x = (q - 8) * d
  uint8_t qs[kLegacyBlock / 2];  // 4-bit quants
};
static_assert(sizeof(BlockQ4_0) == 18);

struct BlockQ4_1 {
  uint16_t d;  // scale
  uint16_t m;  // minimum: x = q * d + m
  uint8_t qs[kLegacyBlock / 2];
};
static_assert(sizeof(BlockQ4_1) == 20);

struct BlockQ5_0 {
  uint16_t d;                    // x = (q - 16) * d
  uint8_t qh[4];                 // fifth bits, bit j = element j
  uint8_t qs[kLegacyBlock / 2];  // low four bits
};
static_assert(sizeof(BlockQ5_0) == 22);

struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;  // x = q * d + m
  uint8_t qh[4];
  uint8_t qs[kLegacyBlock / 2];
};
static_assert(sizeof(BlockQ5_1) == 24);

struct BlockQ8_0 {
  uint16_t d;  // x = q * d
  int8_t qs[kLegacyBlock];
};
static_assert(sizeof(BlockQ8_0) == 34);

struct BlockQ8_1 {
  uint16_t d;  // x = q * d
  uint16_t s;  // d * sum(qs), used by dot products, not by dequantize
  int8_t qs[kLegacyBlock];
};
static_assert(sizeof(BlockQ8_1) == 36);

}  // namespace strix::quant
