// IQ codebooks: the grids the IQ1/IQ2/IQ3 formats index into, their sign and
// non-linear value tables, and the search tables the grid quantizers derive
// from them.
//
// Grid entries are stored the way ggml keeps them in memory: one byte per
// coordinate, coordinate j in byte j of the (little-endian) word.
//   iq2xxs/iq2xs/iq2s: 8 coordinates from {0x08, 0x19, 0x2b}
//   iq3xxs:            4 coordinates from {4, 12, 20, 28, 36, 44, 52, 62}
//   iq3s:              4 coordinates from {1, 3, 5, ..., 15}
//   iq1s:              8 int8 coordinates from {-1, 0, +1}
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace strix::quant {

extern const uint8_t ksigns_iq2xs[128];  // 7 sign bits, bit 7 makes the parity even
extern const uint8_t kmask_iq2xs[8];     // 1 << j
extern const int8_t kvalues_iq4nl[16];   // IQ4_NL / IQ4_XS levels, ascending

extern const uint64_t iq2xxs_grid[256];
extern const uint64_t iq2xs_grid[512];
extern const uint64_t iq2s_grid[1024];
extern const uint32_t iq3xxs_grid[256];
extern const uint32_t iq3s_grid[512];
extern const uint64_t iq1s_grid[2048];

// The quantizers' view of a grid: each point as odd levels 2*l+1 on a
// `dim`-dimensional lattice, a map from every packed level vector
// u = l_0 | l_1 << bits | ... (l in 0..2^bits-1) to its grid index, and for the
// vectors not on the grid a list of their nearest grid points.
struct IqLattice {
  int dim = 0;                       // 8 (IQ2) or 4 (IQ3)
  int bits = 0;                      // bits per coordinate in u: 2 or 3
  std::vector<int8_t> points;        // [grid_size][dim], values 2*l+1
  std::vector<int32_t> map;          // [1 << (bits*dim) range]: index >= 0, or -(offset+1) into neighbours
  std::vector<uint16_t> neighbours;  // at offset: n, then n grid indices by (distance, index)

  // Only for u with map[u] < 0.
  const uint16_t* neighbours_of(uint32_t u) const { return neighbours.data() + (-map[u] - 1); }
  const int8_t* point(int index) const { return points.data() + static_cast<size_t>(index) * dim; }
};

// Built on first use (thread-safe), as ggml_quantize_init builds them.
const IqLattice& iq2s_lattice();    // 1024 points; neighbours at the nearest distance
const IqLattice& iq3xxs_lattice();  // 256 points; neighbours at the two nearest distances
const IqLattice& iq3s_lattice();    // 512 points; neighbours at the three nearest distances

namespace testing {
// Dequantize one of the grid types (type id: IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS,
// IQ3_S, IQ1_S, IQ1_M) through a caller-supplied copy of its grid, so tests can
// show that a single altered grid entry is detected. Throws Refusal otherwise.
void dequantize_row_with_grid(uint32_t type, const void* grid, const void* x, float* y, int64_t k);
}  // namespace testing

}  // namespace strix::quant
