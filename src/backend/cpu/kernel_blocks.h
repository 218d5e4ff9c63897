// Block layouts used by the CPU kernels that quant/ keeps private to its .cpp
// files (IQ4_NL, IQ4_XS, MXFP4), and small helpers shared by every ISA level.
// The legacy and K-quant blocks come from quant/legacy_blocks.h and
// quant/kquant_blocks.h.
#pragma once

#include <bit>
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

// IQ / ternary / FP4 / low-bit blocks (layouts: quant/iquants.cpp, ternary.cpp,
// fp4.cpp, lowbit.cpp).
struct BlockIq2Xxs {
  uint16_t d;
  uint16_t qs[32];  // per 32 values two u32: 4 grid indexes, then 4x7 sign bits | 4-bit scale << 28
};
static_assert(sizeof(BlockIq2Xxs) == 66);

struct BlockIq2Xs {
  uint16_t d;
  uint16_t qs[32];  // 9-bit grid index | 7-bit sign index << 9
  uint8_t scales[8];
};
static_assert(sizeof(BlockIq2Xs) == 74);

struct BlockIq2S {
  uint16_t d;
  uint8_t qs[64];  // 32 grid index low bytes, then 32 sign bytes
  uint8_t qh[8];   // 2 high index bits per 8 values
  uint8_t scales[8];
};
static_assert(sizeof(BlockIq2S) == 82);

struct BlockIq3Xxs {
  uint16_t d;
  uint8_t qs[96];  // 64 grid indexes, then 8 u32: 4x7 sign bits | 4-bit scale << 28
};
static_assert(sizeof(BlockIq3Xxs) == 98);

struct BlockIq3S {
  uint16_t d;
  uint8_t qs[64];
  uint8_t qh[8];
  uint8_t signs[32];
  uint8_t scales[4];
};
static_assert(sizeof(BlockIq3S) == 110);

struct BlockIq1S {
  uint16_t d;
  uint8_t qs[32];
  uint16_t qh[8];  // 4x3 index high bits | 3-bit scale << 12 | delta sign << 15
};
static_assert(sizeof(BlockIq1S) == 50);

struct BlockIq1M {
  uint8_t qs[32];
  uint8_t qh[16];
  uint8_t scales[8];  // 4 u16: 3-bit scales; the f16 super-scale in their top nibbles
};
static_assert(sizeof(BlockIq1M) == 56);

struct BlockTq1_0 {
  uint8_t qs[48];  // 5 trits per byte
  uint8_t qh[4];   // 4 trits per byte
  uint16_t d;
};
static_assert(sizeof(BlockTq1_0) == 54);

struct BlockTq2_0 {
  uint8_t qs[64];  // 2-bit codes, value code - 1
  uint16_t d;
};
static_assert(sizeof(BlockTq2_0) == 66);

struct BlockNvfp4 {
  uint8_t d[4];    // UE4M3 scale per 16 elements
  uint8_t qs[32];  // E2M1 codes; sub-block s: bytes 8s..8s+7, element j low nibble, j+8 high
};
static_assert(sizeof(BlockNvfp4) == 36);

struct BlockQ1_0 {
  uint16_t d;
  uint8_t qs[16];  // element j: bit j%8 of qs[j/8]; 1 -> +d, 0 -> -d
};
static_assert(sizeof(BlockQ1_0) == 18);

struct BlockQ2_0 {
  uint16_t d;
  uint8_t qs[16];  // element j: bits 2*(j%4) of qs[j/4]; code q -> (q - 1) * d
};
static_assert(sizeof(BlockQ2_0) == 18);

// UE4M3 byte -> half its value (NVFP4 scales; the codes use the doubled E2M1
// table kMxfp4Doubled). 0 and 0x7F give 0; bit 7 is ignored otherwise. Exact.
inline float ue4m3_half(uint8_t x) {
  if (x == 0 || x == 0x7F) return 0.0f;
  const uint32_t e = (x >> 3) & 0xF;
  const uint32_t m = x & 7;
  // e == 0: m * 2^-9 / 2 = m * 2^-10; else (1 + m/8) * 2^(e-7) / 2 = (8 + m) * 2^(e-11)
  if (e == 0) return static_cast<float>(m) * 0x1p-10f;
  return f32_from_bits(((e + 119) << 23) | (m << 20));
}

// Q3_K's 16 six-bit scales (biased by 32), unpacked from their 12 bytes as int8 minus 32.
inline void unpack_q3_k_scales(const uint8_t packed[12], int8_t out[16]) {
  uint32_t a, b, c;
  std::memcpy(&a, packed, 4);
  std::memcpy(&b, packed + 4, 4);
  std::memcpy(&c, packed + 8, 4);
  const uint32_t w[4] = {(a & 0x0f0f0f0fu) | ((c & 0x03030303u) << 4),
                         (b & 0x0f0f0f0fu) | (((c >> 2) & 0x03030303u) << 4),
                         ((a >> 4) & 0x0f0f0f0fu) | (((c >> 4) & 0x03030303u) << 4),
                         ((b >> 4) & 0x0f0f0f0fu) | (((c >> 6) & 0x03030303u) << 4)};
  std::memcpy(out, w, 16);
  for (int j = 0; j < 16; ++j) out[j] = static_cast<int8_t>(out[j] - 32);
}

// IQ2/IQ3 sign index (7 bits; the eighth sign makes the parity even, as
// ksigns_iq2xs) -> 8 byte masks, byte j = 0xFF when element j is negated.
struct Iq2SignMasks {
  uint64_t v[128];
  constexpr Iq2SignMasks() : v() {
    for (int i = 0; i < 128; ++i) {
      int parity = 0;
      for (int b = 0; b < 7; ++b) parity ^= (i >> b) & 1;
      const int signs = i | (parity << 7);
      uint64_t m = 0;
      for (int j = 0; j < 8; ++j) {
        if ((signs >> j) & 1) m |= uint64_t{0xFF} << (8 * j);
      }
      v[i] = m;
    }
  }
};
inline constexpr Iq2SignMasks kIq2SignMasks{};

// ue4m3_half for every byte (no branches in the kernels' inner loops).
struct Ue4m3HalfTable {
  float v[256];
  constexpr Ue4m3HalfTable() : v() {
    for (int x = 0; x < 256; ++x) {
      const uint32_t e = (x >> 3) & 0xF, m = x & 7;
      if (x == 0 || x == 0x7F) {
        v[x] = 0.0f;
      } else if (e == 0) {
        v[x] = static_cast<float>(m) * 0x1p-10f;
      } else {
        v[x] = std::bit_cast<float>(((e + 119) << 23) | (m << 20));
      }
    }
  }
};
inline constexpr Ue4m3HalfTable kUe4m3Half{};

// IQ1_M: the four delta signs of a 32-element sub-block (bits 3 and 7 of its
// two qh bytes, as index bits 0..3) -> 32 bytes of -1 / +1, 8 per group.
struct Iq1mDeltas {
  uint64_t v[16][4];
  constexpr Iq1mDeltas() : v() {
    for (int i = 0; i < 16; ++i) {
      for (int l = 0; l < 4; ++l) v[i][l] = (i >> l) & 1 ? 0xFFFFFFFFFFFFFFFFull : 0x0101010101010101ull;
    }
  }
};
inline constexpr Iq1mDeltas kIq1mDeltas{};

}  // namespace strix::cpu
