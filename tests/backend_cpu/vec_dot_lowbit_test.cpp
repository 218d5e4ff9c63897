// The weight types added after the first kernel set (Q2_K, Q3_K, the IQ grid
// types, TQ1_0/TQ2_0, NVFP4, Q1_0/Q2_0, F32, BF16) vs libggml-cpu, per level.
//
// Weights are random blocks (every byte random, then the block scales set to
// one of several fp16 ranges, extremes included), so no quantizer or
// importance matrix is involved and every grid index / sign pattern / code can
// occur. Activations are quantized by the libggml-cpu variant's own
// quantize_row for the activation type (F32: raw floats; BF16: libggml-base's
// fp32 -> bf16 row conversion).
//
// Bar (as in vec_dot_test.cpp): |ours - ggml| <= 1e-6 * sum_i |w_i * a_i|,
// against the variant's SIMD kernel and its *_generic; the scalar level must
// equal the generic kernel bit for bit. Negative controls: a kernel that
// skips the last block, and one that reads a scale twice as large, both fail
// the same bar.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "quant/fp16.h"
#include "test_util.h"

namespace strix::cpu::test {
namespace {

constexpr double kTolerance = 1e-6;

const GgmlType kTypes[] = {GgmlType::Q2_K,  GgmlType::Q3_K,    GgmlType::IQ2_XXS, GgmlType::IQ2_XS,
                           GgmlType::IQ2_S, GgmlType::IQ3_XXS, GgmlType::IQ3_S,   GgmlType::IQ1_S,
                           GgmlType::IQ1_M, GgmlType::TQ1_0,   GgmlType::TQ2_0,   GgmlType::NVFP4,
                           GgmlType::Q1_0,  GgmlType::Q2_0,    GgmlType::F32,     GgmlType::BF16};

// Offsets of the fp16 scale fields in one block (IQ1_M: none, its scale is
// spread over four nibbles and set separately; NVFP4: four UE4M3 bytes, left random).
std::vector<int> half_offsets(GgmlType t) {
  switch (t) {
    case GgmlType::Q2_K:
      return {80, 82};
    case GgmlType::Q3_K:
      return {108};
    case GgmlType::TQ1_0:
      return {52};
    case GgmlType::TQ2_0:
      return {64};
    case GgmlType::IQ2_XXS:
    case GgmlType::IQ2_XS:
    case GgmlType::IQ2_S:
    case GgmlType::IQ3_XXS:
    case GgmlType::IQ3_S:
    case GgmlType::IQ1_S:
    case GgmlType::Q1_0:
    case GgmlType::Q2_0:
      return {0};
    default:
      return {};
  }
}

// A finite fp16 scale: kind 0 ordinary (2^-12 .. 2^-4), 1 tiny (subnormal or
// the smallest normals), 2 huge (up to 65504); random sign.
uint16_t random_half(std::mt19937& rng, int kind) {
  std::uniform_int_distribution<int> mant(0, 1023);
  std::uniform_int_distribution<int> bit(0, 1);
  int exp;
  if (kind == 0) {
    exp = std::uniform_int_distribution<int>(3, 11)(rng);
  } else if (kind == 1) {
    exp = std::uniform_int_distribution<int>(0, 1)(rng);
  } else {
    exp = std::uniform_int_distribution<int>(28, 30)(rng);
  }
  return static_cast<uint16_t>((bit(rng) << 15) | (exp << 10) | mant(rng));
}

std::vector<uint8_t> random_weights(GgmlType t, int n, uint32_t seed, int kind) {
  std::mt19937 rng(seed);
  if (t == GgmlType::F32 || t == GgmlType::BF16) {
    const float scale = kind == 0 ? 1.0f : (kind == 1 ? 1e-20f : 1e15f);
    const std::vector<float> f = random_row(n, seed, scale, true);
    if (t == GgmlType::F32) {
      std::vector<uint8_t> out(n * 4);
      std::memcpy(out.data(), f.data(), out.size());
      return out;
    }
    std::vector<uint8_t> out(n * 2);
    ref::LibGgml::get().fp32_to_bf16_row_ref(f.data(), reinterpret_cast<uint16_t*>(out.data()), n);
    return out;
  }
  const auto& tr = type_traits(t);
  std::vector<uint8_t> out(row_size(t, n));
  for (auto& b : out) b = static_cast<uint8_t>(rng());
  const int64_t nb = n / tr.block_size;
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t* blk = out.data() + b * tr.type_size;
    for (int off : half_offsets(t)) {
      const uint16_t h = random_half(rng, kind);
      std::memcpy(blk + off, &h, 2);
    }
    if (t == GgmlType::IQ1_M) {  // the f16 super-scale: top nibble of each of the 4 scale words
      const uint16_t h = random_half(rng, kind);
      for (int j = 0; j < 4; ++j) {
        uint16_t w;
        std::memcpy(&w, blk + 48 + 2 * j, 2);
        w = static_cast<uint16_t>((w & 0x0FFF) | (((h >> (4 * j)) & 0xF) << 12));
        std::memcpy(blk + 48 + 2 * j, &w, 2);
      }
    }
  }
  return out;
}

std::vector<uint8_t> activation(GgmlType at, const std::string& variant, int n, uint32_t seed, float scale) {
  const std::vector<float> x = random_row(n, seed * 7919u + 1, scale, seed % 2 == 1);
  std::vector<uint8_t> out(row_size(at, n));
  if (at == GgmlType::F32) {
    std::memcpy(out.data(), x.data(), out.size());
  } else if (at == GgmlType::BF16) {
    ref::LibGgml::get().fp32_to_bf16_row_ref(x.data(), reinterpret_cast<uint16_t*>(out.data()), n);
  } else {
    const auto q = ref::LibGgmlCpu::get(variant).quantize(std::string("quantize_row_") + type_traits(at).name);
    if (!q) throw Error("libggml-cpu lacks quantize_row for the activation type");
    q(x.data(), out.data(), n);
  }
  return out;
}

double magnitude(GgmlType wt, const std::vector<uint8_t>& w, GgmlType at, const std::vector<uint8_t>& a, int n) {
  auto to_float = [&](GgmlType t, const std::vector<uint8_t>& src) {
    std::vector<float> f(n);
    if (t == GgmlType::F32) {
      std::memcpy(f.data(), src.data(), 4 * static_cast<size_t>(n));
    } else if (t == GgmlType::BF16) {
      ref::LibGgml::get().bf16_to_fp32_row(reinterpret_cast<const uint16_t*>(src.data()), f.data(), n);
    } else if (auto fn = ref::LibGgml::get().dequantize_row(id(t))) {
      fn(src.data(), f.data(), n);
    } else {
      type_traits(t).to_float(src.data(), f.data(), n);
    }
    return f;
  };
  const auto fw = to_float(wt, w);
  const auto fa = to_float(at, a);
  double m = 0;
  for (int i = 0; i < n; ++i) m += std::fabs(static_cast<double>(fw[i]) * fa[i]);
  return m;
}

// ggml's symbol for the weight type's dot product.
std::string symbol(GgmlType wt, GgmlType at) {
  if (wt == GgmlType::F32 || wt == GgmlType::BF16) return std::string("ggml_vec_dot_") + type_traits(wt).name;
  return ref::ggml_vec_dot_symbol(id(wt), id(at));
}

bool within(float ours, float theirs, double tol) { return std::fabs(static_cast<double>(ours) - theirs) <= tol; }

// ggml-cpu's own table: ggml_get_type_traits_cpu(type)->{vec_dot, vec_dot_type}.
struct GgmlTraitsCpu {
  void* from_float;
  void* vec_dot;
  int vec_dot_type;
  int64_t nrows;
};

TEST(CpuVecDotMore, every_type_ggml_cpu_dots_has_a_kernel_with_its_activation_type) {
  const auto& lib = ref::LibGgmlCpu::get("x64");
  using TraitsFn = const GgmlTraitsCpu* (*)(int);
  const auto traits = reinterpret_cast<TraitsFn>(lib.lib().symbol("ggml_get_type_traits_cpu"));
  int compared = 0;
  for (CpuIsa isa : supported_levels()) {
    const CpuKernels& k = cpu_kernels_for(isa);
    for (uint32_t t = 0; t < kGgmlTypeCount; ++t) {
      if (type_traits(t) == nullptr) continue;  // removed ids
      const GgmlTraitsCpu* g = traits(static_cast<int>(t));
      if (g->vec_dot == nullptr) {
        EXPECT_EQ(k.vec_dot[t], nullptr) << type_name(t);
        continue;
      }
      ASSERT_NE(k.vec_dot[t], nullptr) << cpu_isa_name(isa) << " lacks a vec_dot for " << type_name(t);
      EXPECT_EQ(static_cast<int>(k.vec_dot_type[t]), g->vec_dot_type) << type_name(t);
      if (k.vec_dot_type[t] != GgmlType::F32) {
        EXPECT_NE(k.quantize_act[id(k.vec_dot_type[t])], nullptr) << "activation quantizer for " << type_name(t);
      }
      ++compared;
    }
  }
  EXPECT_GT(compared, 20);
}

TEST(CpuVecDotMore, matches_libggml_on_every_level) {
  int checked = 0;
  for (CpuIsa isa : supported_levels()) {
    const CpuKernels& k = cpu_kernels_for(isa);
    const std::string variant = ggml_variant(isa);
    const auto& lib = ref::LibGgmlCpu::get(variant);
    const auto& x64 = ref::LibGgmlCpu::get("x64");
    for (GgmlType wt : kTypes) {
      const GgmlType at = k.vec_dot_type[id(wt)];
      ASSERT_NE(k.vec_dot[id(wt)], nullptr) << type_traits(wt).name;
      const std::string sym = symbol(wt, at);
      const auto simd = lib.vec_dot(sym);
      ASSERT_NE(simd, nullptr) << sym;
      // the generic kernel; Q2_0 has no SIMD version on x86, so its plain
      // symbol in the baseline build is the generic one (F32 / BF16 too)
      auto generic = x64.vec_dot(sym + "_generic");
      if (!generic) generic = x64.vec_dot(sym);
      ASSERT_NE(generic, nullptr) << sym;
      const bool exact_generic = wt != GgmlType::F32 && wt != GgmlType::BF16;
      for (int n : {256, 768, 4096}) {
        for (uint32_t seed = 1; seed <= 3; ++seed) {
          for (int kind = 0; kind < 3; ++kind) {
            const auto w = random_weights(wt, n, seed * 31 + kind, kind);
            const auto a = activation(at, variant, n, seed, kind == 2 ? 1e-3f : 1.0f);
            float ours = 0, ref_simd = 0, ref_generic = 0;
            k.vec_dot[id(wt)](n, &ours, w.data(), a.data());
            simd(n, &ref_simd, 0, w.data(), 0, a.data(), 0, 1);
            generic(n, &ref_generic, 0, w.data(), 0, a.data(), 0, 1);
            const double tol = kTolerance * magnitude(wt, w, at, a, n);
            const std::string what = std::string(cpu_isa_name(isa)) + " " + sym + " n=" + std::to_string(n) +
                                     " seed=" + std::to_string(seed) + " kind=" + std::to_string(kind);
            EXPECT_TRUE(within(ours, ref_simd, tol)) << what << ": " << ours << " vs simd " << ref_simd;
            EXPECT_TRUE(within(ours, ref_generic, tol)) << what << ": " << ours << " vs generic " << ref_generic;
            if (isa == CpuIsa::kScalar && exact_generic) {
              EXPECT_EQ(std::memcmp(&ours, &ref_generic, 4), 0) << what << " scalar " << ours << " != " << ref_generic;
            }
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 0);
}

// The same bar must reject a wrong kernel: one that drops the last block, and
// one that sees the first block scaled x2 (the activation's first scale doubled).
TEST(CpuVecDotMore, negative_controls_fail_the_bar) {
  const int n = 1024;
  for (CpuIsa isa : supported_levels()) {
    const CpuKernels& k = cpu_kernels_for(isa);
    const std::string variant = ggml_variant(isa);
    const auto& lib = ref::LibGgmlCpu::get(variant);
    for (GgmlType wt : kTypes) {
      const GgmlType at = k.vec_dot_type[id(wt)];
      const auto w = random_weights(wt, n, 77, 0);
      auto a = activation(at, variant, n, 5, 1.0f);
      float good = 0;
      lib.vec_dot(symbol(wt, at))(n, &good, 0, w.data(), 0, a.data(), 0, 1);
      const double tol = kTolerance * magnitude(wt, w, at, a, n);
      const int block = static_cast<int>(std::max(type_traits(wt).block_size, type_traits(at).block_size));
      float short_row = 0;
      k.vec_dot[id(wt)](n - block, &short_row, w.data(), a.data());
      EXPECT_FALSE(within(short_row, good, tol)) << cpu_isa_name(isa) << " " << type_traits(wt).name;
      // double the first activation scale: Q8_0 / BF16 / F32 lead with it as
      // fp16 / element 0; Q8_K with a float
      if (at == GgmlType::Q8_K) {
        float d;
        std::memcpy(&d, a.data(), 4);
        d *= 2;
        std::memcpy(a.data(), &d, 4);
      } else if (at == GgmlType::Q8_0) {
        uint16_t h;
        std::memcpy(&h, a.data(), 2);
        h = static_cast<uint16_t>(h + 0x0400);
        std::memcpy(a.data(), &h, 2);
      } else {  // F32 / BF16: scale the first 32 elements
        for (int i = 0; i < 32; ++i) {
          if (at == GgmlType::F32) {
            float f;
            std::memcpy(&f, a.data() + 4 * i, 4);
            f *= 2;
            std::memcpy(a.data() + 4 * i, &f, 4);
          } else {
            uint16_t h;
            std::memcpy(&h, a.data() + 2 * i, 2);
            if (h & 0x7F80) h = static_cast<uint16_t>(h + 0x0080);  // exponent + 1
            std::memcpy(a.data() + 2 * i, &h, 2);
          }
        }
      }
      float scaled = 0;
      k.vec_dot[id(wt)](n, &scaled, w.data(), a.data());
      EXPECT_FALSE(within(scaled, good, tol)) << cpu_isa_name(isa) << " " << type_traits(wt).name << " scaled";
    }
  }
}

// The Q8_0-partner kernels reduce 8 activation blocks at a time (or go by
// pairs), F32 / BF16 go by 32 or 64 elements: rows whose block count is not a
// multiple of those take the remainder paths too.
TEST(CpuVecDotMore, kernels_handle_every_block_count) {
  const GgmlType types[] = {GgmlType::Q8_0, GgmlType::Q4_0,  GgmlType::Q5_0, GgmlType::IQ4_NL, GgmlType::Q1_0,
                            GgmlType::Q2_0, GgmlType::NVFP4, GgmlType::F32,  GgmlType::BF16};
  for (CpuIsa isa : supported_levels()) {
    const CpuKernels& k = cpu_kernels_for(isa);
    const std::string variant = ggml_variant(isa);
    const auto& lib = ref::LibGgmlCpu::get(variant);
    for (GgmlType wt : types) {
      const int qk = static_cast<int>(type_traits(wt).block_size);
      const GgmlType at = k.vec_dot_type[id(wt)];
      for (int nb : {1, 7, 8, 9, 13, 16, 23, 95}) {
        const int n = qk * nb;
        std::vector<uint8_t> w;
        if (qk == 32) {
          const auto wq = ggml_quantize(wt, random_row(n, 40u + nb, 1.0f, nb % 2 == 0));
          w.assign(wq.begin(), wq.begin() + static_cast<std::ptrdiff_t>(row_size(wt, n)));
        } else {
          w = random_weights(wt, n, 40u + nb, 0);
        }
        const auto a = activation(at, variant, n, 3u + nb, 1.0f);
        float ours = 0, theirs = 0;
        k.vec_dot[id(wt)](n, &ours, w.data(), a.data());
        lib.vec_dot(symbol(wt, at))(n, &theirs, 0, w.data(), 0, a.data(), 0, 1);
        EXPECT_TRUE(within(ours, theirs, kTolerance * magnitude(wt, w, at, a, n)))
            << cpu_isa_name(isa) << " " << type_traits(wt).name << " blocks=" << nb << ": " << ours << " vs " << theirs;
      }
    }
  }
}

TEST(CpuVecDotMore, bf16_quantizer_matches_libggml) {
  const int n = 4096 + 7;
  std::vector<float> x = random_row(n, 3, 1.0f, true);
  x[5] = std::nanf("");
  x[6] = -std::numeric_limits<float>::infinity();
  x[7] = 1e-40f;                       // subnormal
  x[8] = f32_from_bits(0x3f808000u);   // a tie: rounds to even
  x[9] = f32_from_bits(0x3f818000u);   // a tie: rounds up
  x[20] = f32_from_bits(0x7f800001u);  // signalling NaN
  std::vector<uint16_t> theirs(n);
  ref::LibGgml::get().fp32_to_bf16_row_ref(x.data(), theirs.data(), n);
  for (CpuIsa isa : supported_levels()) {
    const auto q = cpu_kernels_for(isa).quantize_act[id(GgmlType::BF16)];
    ASSERT_NE(q, nullptr);
    std::vector<uint16_t> ours(n, 0x1111);
    q(x.data(), ours.data(), n);
    EXPECT_EQ(ours, theirs) << cpu_isa_name(isa);
    // negative control: truncation instead of rounding differs
    std::vector<uint16_t> trunc(n);
    for (int i = 0; i < n; ++i) trunc[i] = static_cast<uint16_t>(f32_bits(x[i]) >> 16);
    EXPECT_NE(trunc, theirs);
  }
}

}  // namespace
}  // namespace strix::cpu::test
