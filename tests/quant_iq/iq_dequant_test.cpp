// IQ dequantize vs libggml's dequantize_row_*: random blocks, blocks that walk
// every grid index / sign pattern / level in every slot, extreme f16 scales,
// and negative controls (every single altered grid entry must be detected).
#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "iq_test_util.h"
#include "quant/iq_grids.h"

namespace strix {
namespace {

using iq_test::compare_dequant;

constexpr uint32_t kAllIqTypes[] = {static_cast<uint32_t>(GgmlType::IQ1_S),   static_cast<uint32_t>(GgmlType::IQ1_M),
                                    static_cast<uint32_t>(GgmlType::IQ2_XXS), static_cast<uint32_t>(GgmlType::IQ2_XS),
                                    static_cast<uint32_t>(GgmlType::IQ2_S),   static_cast<uint32_t>(GgmlType::IQ3_XXS),
                                    static_cast<uint32_t>(GgmlType::IQ3_S),   static_cast<uint32_t>(GgmlType::IQ4_NL),
                                    static_cast<uint32_t>(GgmlType::IQ4_XS)};

const TypeTraits& traits(uint32_t id) { return type_traits_checked(id); }

void wr16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }
uint16_t rd16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
void set_bits32(uint8_t* p, int shift, int width, uint32_t value) {
  uint32_t w;
  std::memcpy(&w, p, 4);
  const uint32_t mask = ((1u << width) - 1) << shift;
  w = (w & ~mask) | ((value << shift) & mask);
  std::memcpy(p, &w, 4);
}

// Where the f16 super-scale lives: every type has it in bytes 0..1 except
// IQ1_M, which spreads its nibbles over the top of the four scale words.
void set_scale(uint32_t type, uint8_t* block, uint16_t d) {
  if (type != static_cast<uint32_t>(GgmlType::IQ1_M)) {
    wr16(block, d);
    return;
  }
  for (int j = 0; j < 4; ++j) {
    uint16_t sc = rd16(block + 48 + 2 * j);
    sc = static_cast<uint16_t>((sc & 0x0fff) | (((d >> (4 * j)) & 0xf) << 12));
    wr16(block + 48 + 2 * j, sc);
  }
}

// ---------------------------------------------------------------- grid slots

// A grid type's codebook and how to write (grid index, sign pattern) into
// slot s of a block. Sign patterns: 7-bit ksigns indices or raw sign bytes;
// IQ1 uses the "sign" for the delta sign bit only.
struct GridSlots {
  uint32_t type;
  int grid_size;
  int slots;        // grid indices per block
  int sign_values;  // distinct sign patterns per slot (0: none)
  size_t word_bytes;
  const void* grid;
  std::function<void(uint8_t* block, int slot, int index, int sign)> put;
};

std::vector<GridSlots> grid_types() {
  std::vector<GridSlots> v;
  v.push_back({static_cast<uint32_t>(GgmlType::IQ2_XXS), 256, 32, 128, 8, quant::iq2xxs_grid,
               [](uint8_t* b, int s, int g, int sg) {
                 const int ib32 = s / 4, l = s % 4;
                 b[2 + 8 * ib32 + l] = static_cast<uint8_t>(g);
                 set_bits32(b + 2 + 8 * ib32 + 4, 7 * l, 7, static_cast<uint32_t>(sg));
               }});
  v.push_back({static_cast<uint32_t>(GgmlType::IQ2_XS), 512, 32, 128, 8, quant::iq2xs_grid,
               [](uint8_t* b, int s, int g, int sg) { wr16(b + 2 + 2 * s, static_cast<uint16_t>(g | (sg << 9))); }});
  v.push_back({static_cast<uint32_t>(GgmlType::IQ2_S), 1024, 32, 256, 8, quant::iq2s_grid,
               [](uint8_t* b, int s, int g, int sg) {
                 const int ib32 = s / 4, l = s % 4;
                 b[2 + s] = static_cast<uint8_t>(g & 255);
                 uint8_t& qh = b[66 + ib32];
                 qh = static_cast<uint8_t>((qh & ~(3 << (2 * l))) | ((g >> 8) << (2 * l)));
                 b[2 + 32 + s] = static_cast<uint8_t>(sg);
               }});
  v.push_back({static_cast<uint32_t>(GgmlType::IQ3_XXS), 256, 64, 128, 4, quant::iq3xxs_grid,
               [](uint8_t* b, int s, int g, int sg) {
                 b[2 + s] = static_cast<uint8_t>(g);
                 // one 7-bit sign index per 8 values = per 2 slots
                 if (s % 2 == 0) set_bits32(b + 2 + 64 + 4 * (s / 8), 7 * ((s % 8) / 2), 7, static_cast<uint32_t>(sg));
               }});
  v.push_back(
      {static_cast<uint32_t>(GgmlType::IQ3_S), 512, 64, 256, 4, quant::iq3s_grid, [](uint8_t* b, int s, int g, int sg) {
         b[2 + s] = static_cast<uint8_t>(g & 255);
         uint8_t& qh = b[66 + s / 8];
         qh = static_cast<uint8_t>((qh & ~(1 << (s % 8))) | ((g >> 8) << (s % 8)));
         if (s % 2 == 0) b[74 + s / 2] = static_cast<uint8_t>(sg);
       }});
  v.push_back(
      {static_cast<uint32_t>(GgmlType::IQ1_S), 2048, 32, 2, 8, quant::iq1s_grid, [](uint8_t* b, int s, int g, int sg) {
         const int ib = s / 4, l = s % 4;
         b[2 + s] = static_cast<uint8_t>(g & 255);
         uint16_t qh = rd16(b + 34 + 2 * ib);
         qh = static_cast<uint16_t>((qh & ~(7 << (3 * l))) | ((g >> 8) << (3 * l)));
         if (l == 0) qh = static_cast<uint16_t>((qh & 0x7fff) | (sg << 15));
         wr16(b + 34 + 2 * ib, qh);
       }});
  v.push_back(
      {static_cast<uint32_t>(GgmlType::IQ1_M), 2048, 32, 2, 8, quant::iq1s_grid, [](uint8_t* b, int s, int g, int sg) {
         const int ib = s / 4, l = s % 4;
         b[s] = static_cast<uint8_t>(g & 255);
         uint8_t& qh = b[32 + 2 * ib + l / 2];
         const int sh = 4 * (l % 2);
         qh = static_cast<uint8_t>((qh & ~(0xf << sh)) | ((((g >> 8) & 7) | (sg << 3)) << sh));
       }});
  return v;
}

// grid_size blocks in which slot s of block b holds index (b + 7s) mod G and
// sign pattern (b + 5s) mod S: every index and every sign pattern in every
// slot. Scales random, f16 super-scale moderate.
std::vector<uint8_t> walk_every_slot(const GridSlots& gs, std::mt19937& rng, std::set<int>* seen) {
  const size_t bs = traits(gs.type).type_size;
  std::vector<uint8_t> data = iq_test::random_bytes(rng, bs * gs.grid_size);
  for (int b = 0; b < gs.grid_size; ++b) {
    uint8_t* blk = data.data() + bs * b;
    set_scale(gs.type, blk, iq_test::random_moderate_f16(rng));
    for (int s = 0; s < gs.slots; ++s) {
      const int g = (b + 7 * s) % gs.grid_size;
      gs.put(blk, s, g, (b + 5 * s) % gs.sign_values);
      seen->insert(g);
    }
  }
  return data;
}

// grid_size / slots blocks in which every index appears exactly once; f16
// scale 1.0 so that any change of any grid coordinate changes the output.
std::vector<uint8_t> walk_once(const GridSlots& gs, std::mt19937& rng) {
  const size_t bs = traits(gs.type).type_size;
  const int nblocks = gs.grid_size / gs.slots;
  std::vector<uint8_t> data = iq_test::random_bytes(rng, bs * nblocks);
  for (int b = 0; b < nblocks; ++b) {
    uint8_t* blk = data.data() + bs * b;
    set_scale(gs.type, blk, 0x3c00);
    for (int s = 0; s < gs.slots; ++s) gs.put(blk, s, b * gs.slots + s, static_cast<int>(rng() % gs.sign_values));
  }
  return data;
}

class IqDequant : public ::testing::TestWithParam<uint32_t> {};

TEST_P(IqDequant, matches_libggml_on_random_blocks) {
  const uint32_t type = GetParam();
  const TypeTraits& t = traits(type);
  std::mt19937 rng(1234 + type);
  // 4096 blocks of random bytes; 7 of 8 get a moderate finite f16 scale, the
  // rest keep random scale bits (inf / NaN / subnormal included).
  const int nblocks = 4096;
  std::vector<uint8_t> data = iq_test::random_bytes(rng, t.type_size * nblocks);
  for (int b = 0; b < nblocks; ++b) {
    if (b % 8 != 7) set_scale(type, data.data() + t.type_size * b, iq_test::random_moderate_f16(rng));
  }
  int64_t first = -1;
  EXPECT_EQ(compare_dequant(type, data, &first), 0) << t.name << " first mismatch at " << first;
  // Odd row lengths: 1..5 blocks from an offset.
  for (int nb = 1; nb <= 5; ++nb) {
    std::vector<uint8_t> part(data.begin() + t.type_size * 3, data.begin() + t.type_size * (3 + nb));
    EXPECT_EQ(compare_dequant(type, part), 0) << t.name << " " << nb << " blocks";
  }
}

TEST_P(IqDequant, matches_libggml_with_extreme_f16_scales) {
  const uint32_t type = GetParam();
  const TypeTraits& t = traits(type);
  std::mt19937 rng(77 + type);
  const auto& specials = iq_test::special_f16();
  const int per_value = 16;
  std::vector<uint8_t> data = iq_test::random_bytes(rng, t.type_size * per_value * specials.size());
  for (size_t i = 0; i < specials.size(); ++i) {
    for (int r = 0; r < per_value; ++r) set_scale(type, data.data() + t.type_size * (i * per_value + r), specials[i]);
  }
  int64_t first = -1;
  EXPECT_EQ(compare_dequant(type, data, &first), 0) << t.name << " first mismatch at " << first;
}

TEST_P(IqDequant, detects_a_flipped_bit_in_a_block) {
  // Negative control of the comparison itself: libggml on the original bytes,
  // ours on bytes with one bit of the first quant byte past the scale flipped.
  const uint32_t type = GetParam();
  const TypeTraits& t = traits(type);
  std::mt19937 rng(5 + type);
  std::vector<uint8_t> data = iq_test::random_bytes(rng, t.type_size * 4);
  for (int b = 0; b < 4; ++b) set_scale(type, data.data() + t.type_size * b, 0x3c00);
  const int64_t k = 4 * t.block_size;
  std::vector<float> theirs(k), ours(k);
  ref::LibGgml::get().dequantize_row(type)(data.data(), theirs.data(), k);
  const size_t byte = type == static_cast<uint32_t>(GgmlType::IQ1_M) ? 0 : 2;
  data[t.type_size + byte] ^= 0x01;  // block 1, first grid index / value byte
  t.to_float(data.data(), ours.data(), k);
  EXPECT_GT(iq_test::count_float_mismatches(theirs.data(), ours.data(), k), 0) << t.name;
}

INSTANTIATE_TEST_SUITE_P(AllIqTypes, IqDequant, ::testing::ValuesIn(kAllIqTypes),
                         [](const ::testing::TestParamInfo<uint32_t>& info) {
                           return std::string(type_traits_checked(info.param).name);
                         });

// ---------------------------------------------------------------- grid walks

TEST(IqDequantGrid, every_index_and_sign_pattern_in_every_slot_matches_libggml) {
  for (const GridSlots& gs : grid_types()) {
    std::mt19937 rng(99 + gs.type);
    std::set<int> seen;
    const std::vector<uint8_t> data = walk_every_slot(gs, rng, &seen);
    EXPECT_EQ(static_cast<int>(seen.size()), gs.grid_size) << traits(gs.type).name;
    int64_t first = -1;
    EXPECT_EQ(compare_dequant(gs.type, data, &first), 0) << traits(gs.type).name << " first mismatch at " << first;
  }
}

TEST(IqDequantGrid, every_single_altered_grid_entry_is_detected) {
  // Dequantize the once-each walk through a copy of the grid: unaltered it
  // matches libggml; with any one entry altered (one coordinate moved to a
  // neighbouring level) it must not. So every grid entry is checked.
  for (const GridSlots& gs : grid_types()) {
    const TypeTraits& t = traits(gs.type);
    std::mt19937 rng(4242 + gs.type);
    const std::vector<uint8_t> data = walk_once(gs, rng);
    const int64_t k = static_cast<int64_t>(data.size() / t.type_size) * t.block_size;
    std::vector<float> theirs(k), ours(k);
    ref::LibGgml::get().dequantize_row(gs.type)(data.data(), theirs.data(), k);

    std::vector<uint8_t> grid(static_cast<const uint8_t*>(gs.grid),
                              static_cast<const uint8_t*>(gs.grid) + gs.word_bytes * gs.grid_size);
    quant::testing::dequantize_row_with_grid(gs.type, grid.data(), data.data(), ours.data(), k);
    ASSERT_EQ(iq_test::count_float_mismatches(theirs.data(), ours.data(), k), 0) << t.name;

    int undetected = 0;
    for (int g = 0; g < gs.grid_size; ++g) {
      uint8_t& c = grid[gs.word_bytes * g + (g % gs.word_bytes)];  // vary which coordinate
      const uint8_t saved = c;
      c = static_cast<uint8_t>(c == 0x08 ? 0x19 : c == 0xff ? 0x00 : c - 2);  // any other byte
      quant::testing::dequantize_row_with_grid(gs.type, grid.data(), data.data(), ours.data(), k);
      if (iq_test::count_float_mismatches(theirs.data(), ours.data(), k) == 0) ++undetected;
      c = saved;
    }
    EXPECT_EQ(undetected, 0) << t.name << ": altered grid entries that went unnoticed";
  }
}

TEST(IqDequantGrid, iq4_every_level_in_every_position_and_every_block_scale) {
  std::mt19937 rng(31337);
  // IQ4_NL: 16 blocks, nibble j of block b = (b + j) mod 16.
  {
    const uint32_t type = static_cast<uint32_t>(GgmlType::IQ4_NL);
    std::vector<uint8_t> data(18 * 16);
    for (int b = 0; b < 16; ++b) {
      uint8_t* blk = data.data() + 18 * b;
      wr16(blk, iq_test::random_moderate_f16(rng));
      for (int j = 0; j < 16; ++j) blk[2 + j] = static_cast<uint8_t>(((b + j) % 16) | (((b + j + 16) % 16) << 4));
    }
    EXPECT_EQ(compare_dequant(type, data), 0) << "iq4_nl";
  }
  // IQ4_XS: 64 blocks; 6-bit block scale (b + 7*ib) mod 64, nibbles as above.
  {
    const uint32_t type = static_cast<uint32_t>(GgmlType::IQ4_XS);
    std::vector<uint8_t> data(136 * 64);
    for (int b = 0; b < 64; ++b) {
      uint8_t* blk = data.data() + 136 * b;
      wr16(blk, iq_test::random_moderate_f16(rng));
      uint16_t sh = 0;
      for (int ib = 0; ib < 8; ++ib) {
        const int ls = (b + 7 * ib) % 64;
        sh = static_cast<uint16_t>(sh | ((ls >> 4) << (2 * ib)));
        uint8_t& sl = blk[4 + ib / 2];
        sl = static_cast<uint8_t>(ib % 2 == 0 ? (ls & 0xf) : (sl | ((ls & 0xf) << 4)));
      }
      wr16(blk + 2, sh);
      for (int j = 0; j < 128; ++j) blk[8 + j] = static_cast<uint8_t>(((b + j) % 16) | (((b + 3 * j) % 16) << 4));
    }
    EXPECT_EQ(compare_dequant(type, data), 0) << "iq4_xs";
  }
}

TEST(IqDequantGrid, grids_decode_to_their_documented_coordinate_sets) {
  // A cheap structural check of the transcription (the libggml comparisons
  // above are the real one): every coordinate comes from the type's set and
  // no grid holds an entry twice.
  auto check64 = [](const uint64_t* g, int n, std::set<int> allowed, const char* name) {
    std::set<uint64_t> uniq(g, g + n);
    EXPECT_EQ(static_cast<int>(uniq.size()), n) << name;
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < 8; ++j) ASSERT_TRUE(allowed.count(static_cast<int>((g[i] >> (8 * j)) & 0xff))) << name << i;
    }
  };
  auto check32 = [](const uint32_t* g, int n, std::set<int> allowed, const char* name) {
    std::set<uint32_t> uniq(g, g + n);
    EXPECT_EQ(static_cast<int>(uniq.size()), n) << name;
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < 4; ++j) ASSERT_TRUE(allowed.count(static_cast<int>((g[i] >> (8 * j)) & 0xff))) << name << i;
    }
  };
  check64(quant::iq2xxs_grid, 256, {0x08, 0x19, 0x2b}, "iq2xxs");
  check64(quant::iq2xs_grid, 512, {0x08, 0x19, 0x2b}, "iq2xs");
  check64(quant::iq2s_grid, 1024, {0x08, 0x19, 0x2b}, "iq2s");
  check64(quant::iq1s_grid, 2048, {0xff, 0x00, 0x01}, "iq1s");
  check32(quant::iq3xxs_grid, 256, {4, 12, 20, 28, 36, 44, 52, 62}, "iq3xxs");
  check32(quant::iq3s_grid, 512, {1, 3, 5, 7, 9, 11, 13, 15}, "iq3s");
  for (int i = 0; i < 128; ++i) {
    EXPECT_EQ(quant::ksigns_iq2xs[i] & 127, i);
    EXPECT_EQ(__builtin_popcount(quant::ksigns_iq2xs[i]) % 2, 0) << i;
  }
}

}  // namespace
}  // namespace strix
