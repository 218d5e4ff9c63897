// IQ reference quantizers vs libggml's quantize_row_*_ref, byte for byte, on
// rows from many distributions and of 1..8 blocks (and longer rows).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "core/error.h"
#include "iq_test_util.h"
#include "quant/iq_grids.h"

namespace strix {
namespace {

constexpr uint32_t kQuantTypes[] = {static_cast<uint32_t>(GgmlType::IQ2_S), static_cast<uint32_t>(GgmlType::IQ3_XXS),
                                    static_cast<uint32_t>(GgmlType::IQ3_S), static_cast<uint32_t>(GgmlType::IQ4_NL),
                                    static_cast<uint32_t>(GgmlType::IQ4_XS)};

bool is_grid_type(uint32_t type) {
  return type == static_cast<uint32_t>(GgmlType::IQ2_S) || type == static_cast<uint32_t>(GgmlType::IQ3_XXS) ||
         type == static_cast<uint32_t>(GgmlType::IQ3_S);
}

// A named row generator: fills n values.
struct Distribution {
  const char* name;
  std::function<void(std::mt19937&, float*, int64_t)> fill;
  bool finite = true;  // libggml's grid quantizers abort on non-finite rows
};

std::vector<Distribution> distributions() {
  auto normal = [](float stddev) {
    return [stddev](std::mt19937& rng, float* x, int64_t n) {
      std::normal_distribution<float> d(0.f, stddev);
      for (int64_t i = 0; i < n; ++i) x[i] = d(rng);
    };
  };
  std::vector<Distribution> v;
  v.push_back({"normal_1e-3", normal(1e-3f)});
  v.push_back({"normal_1", normal(1.f)});
  v.push_back({"normal_30", normal(30.f)});
  v.push_back({"normal_1e4", normal(1e4f)});
  v.push_back({"uniform_sym", [](std::mt19937& rng, float* x, int64_t n) {
                 std::uniform_real_distribution<float> d(-1.f, 1.f);
                 for (int64_t i = 0; i < n; ++i) x[i] = d(rng);
               }});
  v.push_back({"uniform_pos", [](std::mt19937& rng, float* x, int64_t n) {
                 std::uniform_real_distribution<float> d(0.f, 2.f);
                 for (int64_t i = 0; i < n; ++i) x[i] = d(rng);
               }});
  v.push_back({"sparse_90pct_zero", [](std::mt19937& rng, float* x, int64_t n) {
                 std::normal_distribution<float> d(0.f, 1.f);
                 for (int64_t i = 0; i < n; ++i) x[i] = rng() % 10 == 0 ? d(rng) : 0.f;
               }});
  v.push_back({"all_zero", [](std::mt19937&, float* x, int64_t n) { std::fill(x, x + n, 0.f); }});
  v.push_back({"constant_pos", [](std::mt19937&, float* x, int64_t n) { std::fill(x, x + n, 0.5f); }});
  v.push_back({"constant_neg", [](std::mt19937&, float* x, int64_t n) { std::fill(x, x + n, -3.f); }});
  v.push_back({"outliers", [](std::mt19937& rng, float* x, int64_t n) {
                 std::normal_distribution<float> d(0.f, 1.f);
                 for (int64_t i = 0; i < n; ++i) x[i] = d(rng);
                 for (int64_t i = 0; i < n; i += 61) x[(i + rng() % 61) % n] *= 1000.f;
               }});
  v.push_back({"tiny_1e-9", normal(1e-9f)});
  // Whole 16/32-value groups of zeros between normal ones: the groups the
  // quantizers skip (IQ3_S then shifts its index and sign cursors).
  v.push_back({"zero_groups", [](std::mt19937& rng, float* x, int64_t n) {
                 std::normal_distribution<float> d(0.f, 1.f);
                 for (int64_t i = 0; i < n; ++i) x[i] = ((i / 32) % 3 == 1 || (i / 16) % 5 == 3) ? 0.f : d(rng);
               }});
  v.push_back({"integers", [](std::mt19937& rng, float* x, int64_t n) {
                 for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(static_cast<int>(rng() % 17) - 8);
               }});
  v.push_back({"laplace_0.02", [](std::mt19937& rng, float* x, int64_t n) {
                 std::exponential_distribution<float> e(50.f);
                 for (int64_t i = 0; i < n; ++i) x[i] = (rng() & 1) ? e(rng) : -e(rng);
               }});
  // Every 16 values get their own magnitude, 1e-6 .. 1e3: stresses the 4- and
  // 6-bit group scales against the f16 super-scale.
  v.push_back({"per_group_magnitudes", [](std::mt19937& rng, float* x, int64_t n) {
                 std::normal_distribution<float> d(0.f, 1.f);
                 std::uniform_real_distribution<float> e(-6.f, 3.f);
                 float m = 1.f;
                 for (int64_t i = 0; i < n; ++i) {
                   if (i % 16 == 0) m = std::pow(10.f, e(rng));
                   x[i] = m * d(rng);
                 }
               }});
  v.push_back({"nan_and_inf",
               [](std::mt19937& rng, float* x, int64_t n) {
                 std::normal_distribution<float> d(0.f, 1.f);
                 for (int64_t i = 0; i < n; ++i) x[i] = d(rng);
                 for (int64_t i = 0; i < n; i += 37) {
                   x[i] =
                       (rng() % 2) ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
                 }
               },
               false});
  return v;
}

struct QuantResult {
  std::vector<uint8_t> theirs;
  std::vector<uint8_t> ours;
};

QuantResult quantize_both(uint32_t type, const std::vector<float>& x) {
  const TypeTraits& t = type_traits_checked(type);
  const auto& g = ref::LibGgml::get();
  if (is_grid_type(type)) g.quantize_init(static_cast<int>(type));  // builds libggml's search tables
  const int64_t k = static_cast<int64_t>(x.size());
  const size_t bytes = static_cast<size_t>(k / t.block_size) * t.type_size;
  // Different fill bytes, so a byte either side leaves untouched is noticed.
  QuantResult r{std::vector<uint8_t>(bytes, 0xa5), std::vector<uint8_t>(bytes, 0x5a)};
  g.quantize_row_ref(type)(x.data(), r.theirs.data(), k);
  t.from_float_ref(x.data(), r.ours.data(), k);
  return r;
}

// The pinned libggml leaves the 4-bit levels of an IQ4_NL block whose values
// are all (near) zero as they were: the previous block's levels, or, in a
// row's leading zero blocks, uninitialized stack bytes. Those nibbles cannot be
// compared; overwrite them in libggml's output with ours (the f16 scale and
// every other block still must match). Returns how many blocks were masked.
int mask_uninitialized_iq4_nl(uint32_t type, const std::vector<float>& x, QuantResult* r) {
  if (type != static_cast<uint32_t>(GgmlType::IQ4_NL)) return 0;
  int masked = 0;
  for (size_t b = 0; b < x.size() / 32; ++b) {
    float amax = 0;
    for (size_t j = 0; j < 32; ++j) {
      const float ax = std::fabs(x[32 * b + j]);
      if (ax > amax) amax = ax;
    }
    if (!(amax < 1e-15f)) break;  // later zero blocks copy a known block
    std::copy(r->ours.begin() + 18 * b + 2, r->ours.begin() + 18 * b + 18, r->theirs.begin() + 18 * b + 2);
    ++masked;
  }
  return masked;
}

size_t first_difference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return i;
  }
  return a.size();
}

class IqQuantize : public ::testing::TestWithParam<uint32_t> {};

TEST_P(IqQuantize, matches_libggml_byte_for_byte) {
  const uint32_t type = GetParam();
  const TypeTraits& t = type_traits_checked(type);
  ASSERT_NE(t.from_float_ref, nullptr);
  ASSERT_NE(ref::LibGgml::get().quantize_row_ref(type), nullptr);
  int rows = 0;
  int failed = 0;
  int masked = 0;
  for (const Distribution& dist : distributions()) {
    if (!dist.finite && is_grid_type(type)) continue;
    for (int seed = 0; seed < 3; ++seed) {
      for (int nb = 1; nb <= 8; ++nb) {
        std::mt19937 rng(1000 * seed + 17 * nb + type);
        std::vector<float> x(static_cast<size_t>(nb * t.block_size));
        dist.fill(rng, x.data(), static_cast<int64_t>(x.size()));
        QuantResult r = quantize_both(type, x);
        masked += mask_uninitialized_iq4_nl(type, x, &r);
        ++rows;
        if (r.theirs != r.ours) {
          ++failed;
          ADD_FAILURE() << t.name << " " << dist.name << " seed " << seed << " blocks " << nb
                        << ": first differing byte " << first_difference(r.theirs, r.ours);
        }
      }
    }
  }
  EXPECT_EQ(failed, 0) << "of " << rows << " rows";
  RecordProperty("rows", rows);
  RecordProperty("masked_iq4_nl_blocks", masked);
}

TEST_P(IqQuantize, matches_libggml_on_long_rows) {
  const uint32_t type = GetParam();
  const TypeTraits& t = type_traits_checked(type);
  std::mt19937 rng(2024 + type);
  std::normal_distribution<float> d(0.f, 0.05f);
  std::vector<float> x(16 * 256);
  for (auto& v : x) v = d(rng);
  QuantResult r = quantize_both(type, x);
  EXPECT_EQ(first_difference(r.theirs, r.ours), r.theirs.size()) << t.name;
}

TEST_P(IqQuantize, detects_a_corrupted_output_byte) {
  // Negative control: the byte comparison notices a single changed byte.
  const uint32_t type = GetParam();
  const TypeTraits& t = type_traits_checked(type);
  std::mt19937 rng(8 + type);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> x(2 * t.block_size);
  for (auto& v : x) v = d(rng);
  QuantResult r = quantize_both(type, x);
  ASSERT_EQ(r.theirs, r.ours) << t.name;
  r.ours[r.ours.size() / 2] ^= 0x10;
  EXPECT_NE(r.theirs, r.ours) << t.name;
}

INSTANTIATE_TEST_SUITE_P(RefQuantizers, IqQuantize, ::testing::ValuesIn(kQuantTypes),
                         [](const ::testing::TestParamInfo<uint32_t>& info) {
                           return std::string(type_traits_checked(info.param).name);
                         });

TEST(IqQuantizeTables, grid_quantizers_refuse_or_survive_non_finite_rows) {
  // libggml aborts (GGML_ASSERT) when no grid point fits a non-finite group;
  // ours throws Error there instead, and otherwise returns normally.
  std::vector<float> x(256, 1.f);
  x[5] = std::numeric_limits<float>::quiet_NaN();
  x[77] = std::numeric_limits<float>::infinity();
  std::vector<uint8_t> out(256);
  for (uint32_t type : kQuantTypes) {
    if (!is_grid_type(type)) continue;
    try {
      type_traits_checked(type).from_float_ref(x.data(), out.data(), 256);
    } catch (const Error&) {
    }
  }
}

TEST(IqQuantizeTables, lattices_have_ggml_shape) {
  // Every grid point maps back to itself, and every reachable off-grid vector
  // has at least one neighbour that is a valid grid index.
  struct Case {
    const quant::IqLattice& lat;
    int grid_size;
    int levels;
  };
  const Case cases[] = {
      {quant::iq2s_lattice(), 1024, 3}, {quant::iq3xxs_lattice(), 256, 8}, {quant::iq3s_lattice(), 512, 8}};
  for (const Case& c : cases) {
    int on_grid = 0;
    for (size_t u = 0; u < c.lat.map.size(); ++u) {
      const int32_t m = c.lat.map[u];
      if (m >= 0) {
        ++on_grid;
        continue;
      }
      bool reachable = true;
      for (int k = 0; k < c.lat.dim; ++k)
        reachable = reachable && ((u >> (c.lat.bits * k)) & ((1u << c.lat.bits) - 1)) < static_cast<uint32_t>(c.levels);
      if (!reachable) continue;
      const uint16_t* nb = c.lat.neighbours_of(static_cast<uint32_t>(u));
      ASSERT_GT(nb[0], 0) << u;
      for (int j = 1; j <= nb[0]; ++j) ASSERT_LT(nb[j], c.grid_size);
    }
    EXPECT_EQ(on_grid, c.grid_size);
  }
}

TEST(IqQuantizeTables, unexported_quantizers_stay_null) {
  // libggml exports no _ref quantizer for these; neither do we.
  for (GgmlType ty : {GgmlType::IQ1_S, GgmlType::IQ1_M, GgmlType::IQ2_XXS, GgmlType::IQ2_XS}) {
    EXPECT_EQ(type_traits(ty).from_float_ref, nullptr) << type_traits(ty).name;
    EXPECT_EQ(ref::LibGgml::get().quantize_row_ref(static_cast<uint32_t>(ty)), nullptr) << type_traits(ty).name;
  }
}

}  // namespace
}  // namespace strix
