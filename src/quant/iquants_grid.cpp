// Reference quantizers of the grid formats IQ2_S, IQ3_XXS and IQ3_S (no
// importance weights, as libggml's quantize_row_*_ref), and the lattice search
// tables they need (what ggml_quantize_init builds).
//
// The algorithm, per group of 16 (IQ2_S) or 32 (IQ3) values: take |x| and keep
// the signs apart; try a range of scales; for each, round |x|/scale to odd
// levels 2l+1, look the level vector up in the grid and, when it is not a grid
// point, take the nearest grid point by weighted distance; keep the scale with
// the best weighted least-squares fit; then store a 4-bit group scale relative
// to a per-256 f16 super-scale. Every float expression keeps ggml's operand
// order and nothing is contracted into an FMA, so the bytes match libggml.
#pragma GCC optimize("fp-contract=off")

#include <cfloat>
#include <climits>
#include <cmath>
#include <cstring>
#include <string>

#include "core/error.h"
#include "quant/fp16.h"
#include "quant/iq_grids.h"
#include "quant/quants.h"

namespace strix::quant {
namespace {

constexpr int kQK = 256;
constexpr float kGroupMaxEpsIq3Xxs = 1e-8f;
constexpr float kGroupMaxEpsIq2S = 1e-8f;
constexpr int32_t kUnreachable = INT32_MIN;  // map entry of a level vector the quantizers never form

// ---------------------------------------------------------------- lattices

// points: grid_size x dim levels (0..2^bits-1). map_size: how many packed
// vectors ggml maps. nwant: how many distinct nearest distances the neighbour
// list of an off-grid vector spans. Off-grid vectors with a level the
// quantizer cannot produce (>= n_levels) get no list.
IqLattice build_lattice(const std::vector<uint8_t>& levels, int dim, int bits, int n_levels, int map_size, int nwant) {
  IqLattice lat;
  lat.dim = dim;
  lat.bits = bits;
  const int grid_size = static_cast<int>(levels.size()) / dim;
  lat.points.resize(levels.size());
  for (size_t i = 0; i < levels.size(); ++i) lat.points[i] = static_cast<int8_t>(2 * levels[i] + 1);
  lat.map.assign(map_size, -1);
  const uint32_t mask = (1u << bits) - 1;
  for (int g = 0; g < grid_size; ++g) {
    uint32_t u = 0;
    for (int k = 0; k < dim; ++k) u |= static_cast<uint32_t>(levels[g * dim + k]) << (bits * k);
    lat.map[u] = g;
  }
  std::vector<int> dist2(grid_size);
  int pos[8];
  for (int u = 0; u < map_size; ++u) {
    if (lat.map[u] >= 0) continue;
    bool reachable = true;
    for (int k = 0; k < dim; ++k) {
      const int l = static_cast<int>((static_cast<uint32_t>(u) >> (bits * k)) & mask);
      reachable = reachable && l < n_levels;
      pos[k] = 2 * l + 1;
    }
    if (!reachable) {
      lat.map[u] = kUnreachable;
      continue;
    }
    for (int g = 0; g < grid_size; ++g) {
      const int8_t* pg = lat.point(g);
      int d2 = 0;
      for (int k = 0; k < dim; ++k) d2 += (pg[k] - pos[k]) * (pg[k] - pos[k]);
      dist2[g] = d2;
    }
    // ggml sorts (d2, index) pairs and keeps everything up to the nwant-th
    // distinct distance: the same list, in the same order, as walking the
    // distinct distances upwards and taking indices ascending at each.
    const size_t start = lat.neighbours.size();
    lat.map[u] = -static_cast<int32_t>(start + 1);
    lat.neighbours.push_back(0);
    int prev = -1;
    for (int w = 0; w < nwant; ++w) {
      int next = INT_MAX;
      for (int g = 0; g < grid_size; ++g) {
        if (dist2[g] > prev && dist2[g] < next) next = dist2[g];
      }
      if (next == INT_MAX) break;
      for (int g = 0; g < grid_size; ++g) {
        if (dist2[g] == next) lat.neighbours.push_back(static_cast<uint16_t>(g));
      }
      prev = next;
    }
    lat.neighbours[start] = static_cast<uint16_t>(lat.neighbours.size() - start - 1);
  }
  return lat;
}

template <typename Word>
std::vector<uint8_t> grid_levels(const Word* grid, int grid_size, int dim, int (*level_of)(uint8_t)) {
  std::vector<uint8_t> levels(static_cast<size_t>(grid_size) * dim);
  for (int g = 0; g < grid_size; ++g) {
    for (int k = 0; k < dim; ++k) {
      levels[g * dim + k] = static_cast<uint8_t>(level_of(static_cast<uint8_t>(grid[g] >> (8 * k))));
    }
  }
  return levels;
}

int iq2_level(uint8_t b) { return b == 0x08 ? 0 : b == 0x19 ? 1 : 2; }
int iq3xxs_level(uint8_t b) { return (b - 4) / 8; }
int iq3s_level(uint8_t b) { return (b - 1) / 2; }

// ---------------------------------------------------------------- helpers

// ggml's nearest_int (see iquants.cpp).
inline int nearest_int(float f) {
  const float v = f + 12582912.f;
  int32_t i;
  std::memcpy(&i, &v, 4);
  return (i & 0x007fffff) - 0x00400000;
}
// ggml's MIN / MAX macros: (a) < (b) ? (a) : (b) and (a) > (b) ? (a) : (b).
inline int imin(int a, int b) { return a < b ? a : b; }
inline int imax(int a, int b) { return a > b ? a : b; }
inline float fmax_ggml(float a, float b) { return a > b ? a : b; }

inline void wr16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }

// The off-grid vector u: the neighbour nearest to xval/scale by weighted
// squared distance (first one on ties); writes its levels to L[0..dim).
int find_best_neighbour(const IqLattice& lat, uint32_t u, const float* xval, const float* weight, float scale,
                        int8_t* L, const char* what) {
  if (lat.map[u] == kUnreachable) throw Error(std::string(what) + ": level vector outside the lattice");
  const uint16_t* nb = lat.neighbours_of(u);
  const int n = nb[0];
  float best_d2 = FLT_MAX;
  int grid_index = -1;
  for (int j = 1; j <= n; ++j) {
    const int8_t* pg = lat.point(nb[j]);
    float d2 = 0;
    for (int i = 0; i < lat.dim; ++i) {
      const float q = pg[i];
      const float diff = scale * q - xval[i];
      d2 += weight[i] * diff * diff;
    }
    if (d2 < best_d2) {
      best_d2 = d2;
      grid_index = nb[j];
    }
  }
  // libggml aborts here (GGML_ASSERT); only non-finite input gets this far.
  if (grid_index < 0) throw Error(std::string(what) + ": no grid point fits (non-finite input?)");
  const int8_t* pg = lat.point(grid_index);
  for (int i = 0; i < lat.dim; ++i) L[i] = static_cast<int8_t>((pg[i] - 1) / 2);
  return grid_index;
}

uint32_t pack_levels(const int8_t* L, int dim, int bits) {
  uint32_t u = 0;
  for (int i = 0; i < dim; ++i) u |= static_cast<uint32_t>(L[i]) << (bits * i);
  return u;
}

// Final lookup of a group's levels; ggml aborts when they are off the grid.
int grid_index_of(const IqLattice& lat, const int8_t* L, const char* what) {
  const int g = lat.map[pack_levels(L, lat.dim, lat.bits)];
  if (g < 0) throw Error(std::string(what) + ": quantized point not on the grid");
  return g;
}

// ---------------------------------------------------------------- IQ2_S

// One 256-value super-block -> 82 bytes.
void quantize_iq2_s_block(const IqLattice& lat, const float* xbl, uint8_t* y) {
  constexpr int kMaxQ = 3;
  std::memset(y, 0, 82);
  wr16(y, fp32_to_fp16(0.f));
  uint8_t* qs = y + 2;
  uint8_t* qh = y + 66;
  uint8_t* scales_out = y + 74;

  float scales[kQK / 16];
  float weight[16];
  float xval[16];
  int8_t L[16];
  int8_t Laux[16];
  float waux[16];
  bool is_on_grid[2];
  bool is_on_grid_aux[2];
  uint8_t block_signs[2];

  float max_scale = 0;
  float sumx2 = 0;
  for (int i = 0; i < kQK; ++i) sumx2 += xbl[i] * xbl[i];
  const float sigma2 = 2 * sumx2 / kQK;

  for (int ib = 0; ib < kQK / 16; ++ib) {
    const float* xb = xbl + 16 * ib;
    for (int i = 0; i < 16; ++i) weight[i] = 0.25f * sigma2 + xb[i] * xb[i];
    for (int i = 0; i < 16; ++i) waux[i] = std::sqrt(weight[i]);
    for (int k = 0; k < 2; ++k) {
      uint8_t s = 0;
      for (int i = 0; i < 8; ++i) {
        if (xb[8 * k + i] >= 0) {
          xval[8 * k + i] = xb[8 * k + i];
        } else {
          xval[8 * k + i] = -xb[8 * k + i];
          s = static_cast<uint8_t>(s | (1 << i));
        }
      }
      block_signs[k] = s;
    }
    float max = xval[0];
    for (int i = 1; i < 16; ++i) max = fmax_ggml(max, xval[i]);
    std::memset(L, 0, 16);
    if (max < kGroupMaxEpsIq2S) {
      scales[ib] = 0;
      continue;
    }
    float best = 0;
    float scale = max / (2 * kMaxQ - 1);
    is_on_grid[0] = is_on_grid[1] = true;
    for (int is = -9; is <= 9; ++is) {
      const float id = (2 * kMaxQ - 1 + static_cast<float>(is) * 0.1f) / max;
      const float this_scale = 1 / id;
      for (int k = 0; k < 2; ++k) {
        for (int i = 0; i < 8; ++i) {
          const int l = nearest_int(0.5f * (id * xval[8 * k + i] - 1));
          Laux[8 * k + i] = static_cast<int8_t>(imax(0, imin(kMaxQ - 1, l)));
        }
        const uint32_t u = pack_levels(Laux + 8 * k, 8, 2);
        is_on_grid_aux[k] = true;
        if (lat.map[u] < 0) {
          is_on_grid_aux[k] = false;
          find_best_neighbour(lat, u, xval + 8 * k, waux + 8 * k, this_scale, Laux + 8 * k, "iq2_s");
        }
      }
      float sumqx = 0;
      float sumq2 = 0;
      for (int i = 0; i < 16; ++i) {
        const float w = weight[i];
        const float q = static_cast<float>(2 * Laux[i] + 1);
        sumqx += w * xval[i] * q;
        sumq2 += w * q * q;
      }
      if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
        scale = sumqx / sumq2;
        best = scale * sumqx;
        for (int i = 0; i < 16; ++i) L[i] = Laux[i];
        for (int k = 0; k < 2; ++k) is_on_grid[k] = is_on_grid_aux[k];
      }
    }
    int n_not_ongrid = 0;
    for (int k = 0; k < 2; ++k) n_not_ongrid += is_on_grid[k] ? 0 : 1;
    if (n_not_ongrid > 0 && scale > 0) {
      const float id = 1 / scale;
      for (int k = 0; k < 2; ++k) {
        if (is_on_grid[k]) continue;
        for (int i = 0; i < 8; ++i) {
          const int l = nearest_int(0.5f * (id * xval[8 * k + i] - 1));
          L[8 * k + i] = static_cast<int8_t>(imax(0, imin(kMaxQ - 1, l)));
        }
        const uint32_t u = pack_levels(L + 8 * k, 8, 2);
        if (lat.map[u] < 0) find_best_neighbour(lat, u, xval + 8 * k, waux + 8 * k, scale, L + 8 * k, "iq2_s");
      }
      float sumqx = 0;
      float sumq2 = 0;
      for (int i = 0; i < 16; ++i) {
        const float w = weight[i];
        const float q = static_cast<float>(2 * L[i] + 1);
        sumqx += w * xval[i] * q;
        sumq2 += w * q * q;
      }
      if (sumq2 > 0) scale = sumqx / sumq2;
    }
    if (scale < 0) {
      scale = -scale;
      for (int k = 0; k < 2; ++k) block_signs[k] = static_cast<uint8_t>(~block_signs[k]);
    }
    for (int k = 0; k < 2; ++k) {
      const int grid_index = grid_index_of(lat, L + 8 * k, "iq2_s");
      const int i8 = 2 * ib + k;
      qs[i8] = static_cast<uint8_t>(grid_index & 255);
      qh[i8 / 4] = static_cast<uint8_t>(qh[i8 / 4] | ((grid_index >> 8) << 2 * (i8 % 4)));
      qs[kQK / 8 + i8] = block_signs[k];
    }
    scales[ib] = scale;
    max_scale = fmax_ggml(max_scale, scale);
  }

  if (!max_scale) return;

  const float d = max_scale / 31;
  wr16(y, fp32_to_fp16(d * 0.9875f));
  const float id = 1 / d;
  for (int ib = 0; ib < kQK / 16; ++ib) {
    int l = nearest_int(0.5f * (id * scales[ib] - 1));
    l = imax(0, imin(15, l));
    if (ib % 2 == 0) {
      scales_out[ib / 2] = static_cast<uint8_t>(l);
    } else {
      scales_out[ib / 2] = static_cast<uint8_t>(scales_out[ib / 2] | (l << 4));
    }
  }
}

// ---------------------------------------------------------------- IQ3 shared search

// The scale search of one 32-value IQ3 group (8 sub-groups of 4), as ggml runs
// it. xval / weight / waux: [32]; L: [32] out. Returns the group scale (may be
// negative only in theory; the caller flips it). `nsteps`: candidates are
// (15 + is*0.2)/max for is in [-nsteps, nsteps]. `recheck_all`: IQ3_S redoes
// every sub-group after the search, IQ3_XXS only the ones off the grid.
float iq3_search_group(const IqLattice& lat, const float* xval, const float* weight, const float* waux, float max,
                       int nsteps, bool start_on_grid, bool recheck_all, int8_t* L, const char* what) {
  constexpr int kMaxQ = 8;
  int8_t Laux[32];
  bool is_on_grid[8];
  bool is_on_grid_aux[8];
  float best = 0;
  float scale = max / (2 * kMaxQ - 1);
  for (int k = 0; k < 8; ++k) is_on_grid[k] = start_on_grid;
  for (int is = -nsteps; is <= nsteps; ++is) {
    const float id = (2 * kMaxQ - 1 + static_cast<float>(is) * 0.2f) / max;
    const float this_scale = 1 / id;
    for (int k = 0; k < 8; ++k) {
      for (int i = 0; i < 4; ++i) {
        const int l = nearest_int(0.5f * (id * xval[4 * k + i] - 1));
        Laux[4 * k + i] = static_cast<int8_t>(imax(0, imin(kMaxQ - 1, l)));
      }
      const uint32_t u = pack_levels(Laux + 4 * k, 4, 3);
      is_on_grid_aux[k] = true;
      if (lat.map[u] < 0) {
        is_on_grid_aux[k] = false;
        find_best_neighbour(lat, u, xval + 4 * k, waux + 4 * k, this_scale, Laux + 4 * k, what);
      }
    }
    float sumqx = 0;
    float sumq2 = 0;
    for (int i = 0; i < 32; ++i) {
      const float w = weight[i];
      const float q = static_cast<float>(2 * Laux[i] + 1);
      sumqx += w * xval[i] * q;
      sumq2 += w * q * q;
    }
    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
      scale = sumqx / sumq2;
      best = scale * sumqx;
      for (int i = 0; i < 32; ++i) L[i] = Laux[i];
      for (int k = 0; k < 8; ++k) is_on_grid[k] = is_on_grid_aux[k];
    }
  }
  int n_not_ongrid = 0;
  for (int k = 0; k < 8; ++k) n_not_ongrid += is_on_grid[k] ? 0 : 1;
  if (n_not_ongrid > 0 && scale > 0) {
    const float id = 1 / scale;
    for (int k = 0; k < 8; ++k) {
      if (!recheck_all && is_on_grid[k]) continue;
      int8_t l4[4];
      for (int i = 0; i < 4; ++i) {
        const int l = nearest_int(0.5f * (id * xval[4 * k + i] - 1));
        l4[i] = static_cast<int8_t>(imax(0, imin(kMaxQ - 1, l)));
      }
      const uint32_t u = pack_levels(l4, 4, 3);
      int grid_index = lat.map[u];
      if (grid_index < 0) grid_index = find_best_neighbour(lat, u, xval + 4 * k, waux + 4 * k, scale, L + 4 * k, what);
      const int8_t* pg = lat.point(grid_index);
      for (int i = 0; i < 4; ++i) L[4 * k + i] = static_cast<int8_t>((pg[i] - 1) / 2);
    }
    float sumqx = 0;
    float sumq2 = 0;
    for (int i = 0; i < 32; ++i) {
      const float w = weight[i];
      const float q = static_cast<float>(2 * L[i] + 1);
      sumqx += w * xval[i] * q;
      sumq2 += w * q * q;
    }
    if (sumq2 > 0) scale = sumqx / sumq2;
  }
  return scale;
}

// ---------------------------------------------------------------- IQ3_XXS

// One super-block -> 98 bytes: d | 64 grid indices | 8 x u32 (4x7 sign bits, 4-bit scale).
void quantize_iq3_xxs_block(const IqLattice& lat, const float* xbl, uint8_t* y) {
  uint8_t q3[kQK / 4] = {};  // grid indices, 8 per group
  uint32_t scales_and_signs[kQK / 32] = {};
  float scales[kQK / 32];
  float weight[32];
  float xval[32];
  float waux[32];
  int8_t L[32];
  uint8_t block_signs[4];
  wr16(y, fp32_to_fp16(0.f));

  float max_scale = 0;
  for (int ib = 0; ib < kQK / 32; ++ib) {
    const float* xb = xbl + 32 * ib;
    for (int i = 0; i < 32; ++i) weight[i] = xb[i] * xb[i];
    for (int i = 0; i < 32; ++i) waux[i] = std::sqrt(weight[i]);
    // Signs of each 8 are stored in 7 bits (even parity): with an odd number
    // of negatives, the least important value is quantized with the wrong sign.
    for (int k = 0; k < 4; ++k) {
      int nflip = 0;
      uint8_t s = 0;
      for (int i = 0; i < 8; ++i) {
        if (xb[8 * k + i] >= 0) {
          xval[8 * k + i] = xb[8 * k + i];
        } else {
          xval[8 * k + i] = -xb[8 * k + i];
          ++nflip;
          s = static_cast<uint8_t>(s | (1 << i));
        }
      }
      if (nflip % 2) {
        int imin_i = 0;
        float min = weight[8 * k] * xb[8 * k] * xb[8 * k];
        for (int i = 1; i < 8; ++i) {
          const float ax = weight[8 * k + i] * xb[8 * k + i] * xb[8 * k + i];
          if (ax < min) {
            min = ax;
            imin_i = i;
          }
        }
        xval[8 * k + imin_i] = -xval[8 * k + imin_i];
        s = static_cast<uint8_t>(s ^ (1 << imin_i));
      }
      block_signs[k] = s & 127;
    }
    float max = xval[0];
    for (int i = 1; i < 32; ++i) max = fmax_ggml(max, xval[i]);
    std::memset(L, 0, 32);
    if (max < kGroupMaxEpsIq3Xxs) {
      scales[ib] = 0;
      continue;
    }
    float scale = iq3_search_group(lat, xval, weight, waux, max, 15, true, false, L, "iq3_xxs");
    if (scale < 0) {
      scale = -scale;
      for (int k = 0; k < 4; ++k) block_signs[k] = static_cast<uint8_t>((~block_signs[k]) & 127);
    }
    for (int k = 0; k < 8; ++k) q3[8 * ib + k] = static_cast<uint8_t>(grid_index_of(lat, L + 4 * k, "iq3_xxs"));
    scales_and_signs[ib] =
        block_signs[0] | (block_signs[1] << 7) | (block_signs[2] << 14) | (static_cast<uint32_t>(block_signs[3]) << 21);
    scales[ib] = scale;
    max_scale = fmax_ggml(max_scale, scale);
  }

  if (!max_scale) {
    std::memset(y + 2, 0, 96);
    return;
  }
  const float d = max_scale / 31;
  wr16(y, fp32_to_fp16(d * 1.0125f));
  const float id = 1 / d;
  for (int ib = 0; ib < kQK / 32; ++ib) {
    int l = nearest_int(0.5f * (id * scales[ib] - 1));
    l = imax(0, imin(15, l));
    scales_and_signs[ib] |= static_cast<uint32_t>(l) << 28;
  }
  std::memcpy(y + 2, q3, kQK / 4);
  std::memcpy(y + 2 + kQK / 4, scales_and_signs, sizeof(scales_and_signs));
}

// ---------------------------------------------------------------- IQ3_S

// One super-block -> 110 bytes: d | qs[64] | qh[8] | signs[32] | scales[4].
void quantize_iq3_s_block(const IqLattice& lat, const float* xbl, uint8_t* y) {
  std::memset(y, 0, 110);
  wr16(y, fp32_to_fp16(0.f));
  uint8_t* qs = y + 2;
  uint8_t* qh = y + 66;
  uint8_t* signs = y + 74;
  uint8_t* scales_out = y + 106;

  float scales[kQK / 32];
  float weight[32];
  float xval[32];
  float waux[32];
  int8_t L[32];
  uint8_t block_signs[4];

  float max_scale = 0;
  for (int ib = 0; ib < kQK / 32; ++ib) {
    const float* xb = xbl + 32 * ib;
    for (int i = 0; i < 32; ++i) weight[i] = xb[i] * xb[i];
    for (int i = 0; i < 32; ++i) waux[i] = std::sqrt(weight[i]);
    for (int k = 0; k < 4; ++k) {
      uint8_t s = 0;
      for (int i = 0; i < 8; ++i) {
        if (xb[8 * k + i] >= 0) {
          xval[8 * k + i] = xb[8 * k + i];
        } else {
          xval[8 * k + i] = -xb[8 * k + i];
          s = static_cast<uint8_t>(s | (1 << i));
        }
      }
      block_signs[k] = s;
    }
    float max = xval[0];
    for (int i = 1; i < 32; ++i) max = fmax_ggml(max, xval[i]);
    std::memset(L, 0, 32);
    if (!max) {
      // ggml skips the group without advancing its qs / signs cursors, so the
      // next group's indices and signs land in this group's slots (qh and the
      // scales stay indexed by group). Kept for bit-exactness.
      scales[ib] = 0;
      continue;
    }
    float scale = iq3_search_group(lat, xval, weight, waux, max, 9, false, true, L, "iq3_s");
    if (scale < 0) {
      scale = -scale;
      for (int k = 0; k < 4; ++k) block_signs[k] = static_cast<uint8_t>(~block_signs[k]);
    }
    for (int k = 0; k < 8; ++k) {
      const int grid_index = grid_index_of(lat, L + 4 * k, "iq3_s");
      qs[k] = static_cast<uint8_t>(grid_index & 255);
      qh[(ib * 8 + k) / 8] = static_cast<uint8_t>(qh[(ib * 8 + k) / 8] | ((grid_index >> 8) << ((ib * 8 + k) % 8)));
    }
    qs += 8;
    for (int k = 0; k < 4; ++k) signs[k] = block_signs[k];
    signs += 4;
    scales[ib] = scale;
    max_scale = fmax_ggml(max_scale, scale);
  }

  if (!max_scale) return;
  const float d = max_scale / 31;
  wr16(y, fp32_to_fp16(d * 1.033f));
  const float id = 1 / d;
  for (int ib = 0; ib < kQK / 32; ib += 2) {
    const int l1 = imax(0, imin(15, nearest_int(0.5f * (id * scales[ib + 0] - 1))));
    const int l2 = imax(0, imin(15, nearest_int(0.5f * (id * scales[ib + 1] - 1))));
    scales_out[ib / 2] = static_cast<uint8_t>(l1 | (l2 << 4));
  }
}

}  // namespace

const IqLattice& iq2s_lattice() {
  static const IqLattice lat = build_lattice(grid_levels(iq2s_grid, 1024, 8, iq2_level), 8, 2, 3, 43692, 1);
  return lat;
}

const IqLattice& iq3xxs_lattice() {
  static const IqLattice lat = build_lattice(grid_levels(iq3xxs_grid, 256, 4, iq3xxs_level), 4, 3, 8, 4096, 2);
  return lat;
}

const IqLattice& iq3s_lattice() {
  static const IqLattice lat = build_lattice(grid_levels(iq3s_grid, 512, 4, iq3s_level), 4, 3, 8, 4096, 3);
  return lat;
}

void quantize_row_iq2_s_ref(const float* x, void* vy, int64_t k) {
  const IqLattice& lat = iq2s_lattice();
  auto* y = static_cast<uint8_t*>(vy);
  for (int64_t i = 0; i < k / kQK; ++i) quantize_iq2_s_block(lat, x + kQK * i, y + 82 * i);
}

void quantize_row_iq3_xxs_ref(const float* x, void* vy, int64_t k) {
  const IqLattice& lat = iq3xxs_lattice();
  auto* y = static_cast<uint8_t*>(vy);
  for (int64_t i = 0; i < k / kQK; ++i) quantize_iq3_xxs_block(lat, x + kQK * i, y + 98 * i);
}

void quantize_row_iq3_s_ref(const float* x, void* vy, int64_t k) {
  const IqLattice& lat = iq3s_lattice();
  auto* y = static_cast<uint8_t*>(vy);
  for (int64_t i = 0; i < k / kQK; ++i) quantize_iq3_s_block(lat, x + kQK * i, y + 110 * i);
}

}  // namespace strix::quant
