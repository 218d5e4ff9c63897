// Block layouts used by the CPU kernels that quant/ keeps private to its .cpp
// files (IQ4_NL, IQ4_XS, MXFP4), and small helpers shared by every ISA level.
// The legacy and K-quant blocks come from quant/legacy_blocks.h and
// quant/kquant_blocks.h.
#pragma once

#include <cstdint>
#include <cstring>

#include "quant/fp16.h"
#include "quant/kquant_blocks.h"
#include "quant/legacy_blocks.h"

namespace strix::cpu {

struct BlockIq4Nl {
  uint16_t d;
  uint8_t qs[16];  // 32 indexes into kvalues_iq4nl, element j low nibble, j+16 high
};
static_assert(sizeof(BlockIq4Nl) == 18);

struct BlockIq4Xs {
  uint16_t d;
  uint16_t scales_h;    // top 2 bits of the 8 sub-block scales
  uint8_t scales_l[4];  // low 4 bits, two per byte
  uint8_t qs[128];
};
static_assert(sizeof(BlockIq4Xs) == 136);

struct BlockMxfp4 {
  uint8_t e;       // E8M0 shared exponent
  uint8_t qs[16];  // E2M1 codes, element j low nibble, j+16 high
};
static_assert(sizeof(BlockMxfp4) == 17);

// E2M1 code -> 2 * value (so the table is integral); the block scale is halved to match.
inline constexpr int8_t kMxfp4Doubled[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// E8M0 byte -> 2^(e - 128) (half of the E8M0 value), exact.
inline float e8m0_half(uint8_t e) {
  const uint32_t bits = e < 2 ? (0x00200000u << e) : (static_cast<uint32_t>(e - 1) << 23);
  return f32_from_bits(bits);
}

// The 8 six-bit scales and 8 six-bit mins of a Q4_K / Q5_K block, unpacked
// from their 12 packed bytes: scales[0..8) then mins[0..8). Packing, four
// bytes per word: A = bytes 0..3 (scales 0-3 in the low 6 bits, the top 2 bits
// of scales 4-7 above), B = bytes 4..7 (same for the mins), C = bytes 8..11
// (low 4 bits of scales 4-7 in the low nibbles, of mins 4-7 in the high ones).
inline void unpack_k_scales(const uint8_t packed[12], uint8_t out[16]) {
  uint32_t a, b, c;
  std::memcpy(&a, packed, 4);
  std::memcpy(&b, packed + 4, 4);
  std::memcpy(&c, packed + 8, 4);
  const uint32_t w[4] = {a & 0x3f3f3f3fu, (c & 0x0f0f0f0fu) | (((a >> 6) & 0x03030303u) << 4), b & 0x3f3f3f3fu,
                         ((c >> 4) & 0x0f0f0f0fu) | (((b >> 6) & 0x03030303u) << 4)};
  std::memcpy(out, w, 16);
}

}  // namespace strix::cpu
