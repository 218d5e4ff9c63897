// Byte layouts of the K-quant super-blocks (256 elements), as they lie in a GGUF
// tensor. Half scales are IEEE half bit patterns (uint16_t), little endian.
//
// Sub-block scales:
//   Q2_K  16 sub-blocks of 16: scales[j] = scale (low nibble) | min (high nibble)
//   Q3_K  16 sub-blocks of 16: 6-bit signed scales (+32 bias) packed in 12 bytes:
//         low nibbles of 0..7 in bytes 0..7, low nibbles of 8..15 in the high
//         nibbles of bytes 0..7, top two bits of j in bits 2*(j/4) of byte 8 + j%4
//   Q4_K, Q5_K  8 sub-blocks of 32: 6-bit scale and 6-bit min packed in 12 bytes
//         (see get_scale_min in kquants.cpp)
//   Q6_K  16 sub-blocks of 16: int8 scales
#pragma once

#include <cstdint>

namespace strix::quant {

constexpr int kSuperBlock = 256;  // elements per K-quant super-block

struct BlockQ2_K {
  uint8_t scales[kSuperBlock / 16];  // 4-bit scale | 4-bit min << 4
  uint8_t qs[kSuperBlock / 4];       // 2-bit quants
  uint16_t d;                        // super-block scale of the scales
  uint16_t dmin;                     // super-block scale of the mins
};
static_assert(sizeof(BlockQ2_K) == 84);

struct BlockQ3_K {
  uint8_t hmask[kSuperBlock / 8];  // third bit of each quant
  uint8_t qs[kSuperBlock / 4];     // low two bits
  uint8_t scales[12];              // 6-bit scales, biased by 32
  uint16_t d;
};
static_assert(sizeof(BlockQ3_K) == 110);

struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];           // 6-bit scales and mins
  uint8_t qs[kSuperBlock / 2];  // 4-bit quants
};
static_assert(sizeof(BlockQ4_K) == 144);

struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kSuperBlock / 8];  // fifth bit of each quant
  uint8_t qs[kSuperBlock / 2];  // low four bits
};
static_assert(sizeof(BlockQ5_K) == 176);

struct BlockQ6_K {
  uint8_t ql[kSuperBlock / 2];  // low four bits
  uint8_t qh[kSuperBlock / 4];  // top two bits
  int8_t scales[kSuperBlock / 16];
  uint16_t d;
};
static_assert(sizeof(BlockQ6_K) == 210);

// The activation partner of the K-quant dot products; its scale is a float.
struct BlockQ8_K {
  float d;
  int8_t qs[kSuperBlock];
  int16_t bsums[kSuperBlock / 16];  // sum of each group of 16 quants
};
static_assert(sizeof(BlockQ8_K) == 292);

}  // namespace strix::quant
