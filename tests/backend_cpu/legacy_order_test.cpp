// Bit-exact float order of Q5_0, Q4_1, Q5_1, MXFP4, Q2_K and Q3_K weights against the
// zen4-class libggml-cpu (libllama's CPU backend here) and, for the AVX2
// level, its haswell build:
//   - vec_dot (Strix's decode) equals ggml_vec_dot_* bit for bit, for block
//     counts odd and even (MXFP4 sums its odd last block apart);
//   - gemm (Strix's prefill) equals ggml_mul_mat (a one-node graph, one
//     thread) for every output: Q5_0 through llamafile's tinyBLAS_Q0 for two
//     or more activation rows, Q4_1 / Q5_1 / Q3_K (and Q2_K at the AVX2
//     level) through vec_dot for every output.
// Q2_K's zen4 gemm is libllama's repacked order (gemm_repack_x86.h), which a
// plain one-node graph does not use; strix parity on a Q2_K model checks it.
// Negative control: the scalar level (ggml's reference order) must differ
// from ggml's on some output, so the bitwise comparison sees an order change.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "test_util.h"

namespace strix::cpu::test {
namespace {

constexpr int kRows = 40;
constexpr int kCols = 64;

struct Product {
  GgmlType wt, at;
  int n = 0;
  size_t bx = 0, by = 0;
  std::vector<uint8_t> w, a;
  std::vector<std::vector<float>> src_a;  // the activation rows before quantization
};

// Rows with a gap after each (bx, by larger than a row); exact-size buffers for ASan.
Product make_product(const CpuKernels& k, GgmlType wt, int n, uint32_t seed) {
  Product p;
  p.wt = wt;
  p.at = k.vec_dot_type[id(wt)];
  p.n = n;
  p.bx = row_size(wt, n) + 40;
  p.by = row_size(p.at, n) + 72;
  p.w.assign(p.bx * (kRows - 1) + row_size(wt, n), 0xEE);
  p.a.assign(p.by * (kCols - 1) + row_size(p.at, n), 0xEE);
  for (int r = 0; r < kRows; ++r) {
    const std::vector<uint8_t> q = ggml_quantize(wt, random_row(n, seed * 131u + r, 1.0f, r % 3 == 0));
    std::memcpy(p.w.data() + r * p.bx, q.data(), row_size(wt, n));
  }
  for (int c = 0; c < kCols; ++c) {
    p.src_a.push_back(random_row(n, seed * 7919u + c, 0.5f, c % 2 == 0));
    k.quantize_act[id(p.at)](p.src_a[c].data(), p.a.data() + c * p.by, n);
  }
  return p;
}

// Outputs of k.vec_dot over every (row, column) that differ bitwise from the
// library's ggml_vec_dot_*.
int vec_dot_mismatches(const CpuKernels& k, const Product& p, const char* variant) {
  const auto dot = ref::LibGgmlCpu::get(variant).vec_dot(ref::ggml_vec_dot_symbol(id(p.wt), id(p.at)));
  EXPECT_NE(dot, nullptr);
  if (!dot) return -1;
  int bad = 0;
  for (int r = 0; r < kRows; ++r) {
    for (int c = 0; c < kCols; ++c) {
      float ours = 0, want = 0;
      k.vec_dot[id(p.wt)](p.n, &ours, p.w.data() + r * p.bx, p.a.data() + c * p.by);
      dot(p.n, &want, 0, p.w.data() + r * p.bx, 0, p.a.data() + c * p.by, 0, 1);
      bad += std::memcmp(&ours, &want, sizeof(float)) != 0;
    }
  }
  return bad;
}

struct GgmlInitParams {
  size_t mem_size;
  void* mem_buffer;
  bool no_alloc;
};

// ggml_mul_mat of the library on the first nr weight rows and nc activation
// rows (F32, quantized by ggml itself): out[c * nr + r].
std::vector<float> ggml_mul_mat_ref(const Product& p, int nr, int nc, const char* variant) {
  const ref::SharedLib& base = ref::LibGgml::get().lib();
  const ref::SharedLib& cpu = ref::LibGgmlCpu::get(variant).lib();
  const auto init = base.fn<void* (*)(GgmlInitParams)>("ggml_init");
  const auto new_2d = base.fn<void* (*)(void*, int, int64_t, int64_t)>("ggml_new_tensor_2d");
  const auto mul_mat = base.fn<void* (*)(void*, void*, void*)>("ggml_mul_mat");
  const auto new_graph = base.fn<void* (*)(void*)>("ggml_new_graph");
  const auto expand = base.fn<void (*)(void*, void*)>("ggml_build_forward_expand");
  const auto get_data = base.fn<void* (*)(const void*)>("ggml_get_data");
  const auto free_ctx = base.fn<void (*)(void*)>("ggml_free");
  const auto compute = cpu.fn<int (*)(void*, void*, int)>("ggml_graph_compute_with_ctx");

  void* ctx = init(GgmlInitParams{size_t{32} << 20, nullptr, false});
  void* w = new_2d(ctx, static_cast<int>(id(p.wt)), p.n, nr);
  void* a = new_2d(ctx, static_cast<int>(id(GgmlType::F32)), p.n, nc);
  const size_t wrow = row_size(p.wt, p.n);
  for (int r = 0; r < nr; ++r) std::memcpy(static_cast<uint8_t*>(get_data(w)) + r * wrow, p.w.data() + r * p.bx, wrow);
  for (int c = 0; c < nc; ++c) {
    std::memcpy(static_cast<float*>(get_data(a)) + static_cast<size_t>(c) * p.n, p.src_a[c].data(),
                p.n * sizeof(float));
  }
  void* out = mul_mat(ctx, w, a);
  void* graph = new_graph(ctx);
  expand(graph, out);
  EXPECT_EQ(compute(ctx, graph, 1), 0);  // GGML_STATUS_SUCCESS
  const float* o = static_cast<const float*>(get_data(out));
  std::vector<float> result(o, o + static_cast<size_t>(nr) * nc);
  free_ctx(ctx);
  return result;
}

// Outputs of k.gemm over nr x nc that differ bitwise from ggml_mul_mat's (or
// that it wrote outside the tile); the first one described in *first.
int gemm_mismatches(const CpuKernels& k, const Product& p, int nr, int nc, std::string* first, const char* variant) {
  const std::vector<float> want = ggml_mul_mat_ref(p, nr, nc, variant);
  const size_t bs = static_cast<size_t>(nr) + 5;
  std::vector<float> s(bs * nc, -777.0f);
  k.gemm[id(p.wt)](p.n, p.w.data(), p.bx, nr, p.a.data(), p.by, nc, s.data(), bs);
  int bad = 0;
  for (int c = 0; c < nc; ++c) {
    for (int r = 0; r < nr; ++r) {
      const float got = s[c * bs + r];
      const float ref = want[static_cast<size_t>(c) * nr + r];
      if (std::memcmp(&got, &ref, sizeof(float)) != 0 && bad++ == 0 && first) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "nr=%d nc=%d r=%d c=%d got %.9g want %.9g", nr, nc, r, c, got, ref);
        *first = buf;
      }
    }
    for (size_t r = nr; r < bs; ++r) bad += s[c * bs + r] != -777.0f;
  }
  return bad;
}

struct Level {
  CpuIsa isa;
  const char* variant;
};

// The levels whose libggml-cpu build is here and runs on this CPU.
std::vector<Level> levels() {
  std::vector<Level> out;
  for (const Level& l : {Level{CpuIsa::kAvx512, "zen4"}, Level{CpuIsa::kAvx2, "haswell"}}) {
    if (cpu_supports(l.isa) && std::string(ggml_variant(l.isa)) == l.variant) out.push_back(l);
  }
  return out;
}

const GgmlType kTypes[] = {GgmlType::Q5_0, GgmlType::Q4_1, GgmlType::Q5_1, GgmlType::MXFP4};

TEST(CpuLegacyOrder, vec_dot_equals_libggml_bit_for_bit) {
  const std::vector<Level> ls = levels();
  if (ls.empty()) GTEST_SKIP() << "no x86 level with its libggml-cpu build here";
  for (const Level& l : ls) {
    const CpuKernels& k = cpu_kernels_for(l.isa);
    for (GgmlType wt : kTypes) {
      for (int n : {32, 64, 96, 1024, 2880, 4128}) {
        const Product p = make_product(k, wt, n, 17u + static_cast<uint32_t>(n));
        EXPECT_EQ(vec_dot_mismatches(k, p, l.variant), 0) << l.variant << " " << type_traits(wt).name << " n=" << n;
      }
    }
    for (GgmlType wt : {GgmlType::Q2_K, GgmlType::Q3_K}) {
      for (int n : {256, 768, 2816}) {
        const Product p = make_product(k, wt, n, 19u + static_cast<uint32_t>(n));
        EXPECT_EQ(vec_dot_mismatches(k, p, l.variant), 0) << l.variant << " " << type_traits(wt).name << " n=" << n;
      }
    }
  }
}

TEST(CpuLegacyOrder, gemm_equals_libllama_per_output) {
  const std::vector<Level> ls = levels();
  if (ls.empty()) GTEST_SKIP() << "no x86 level with its libggml-cpu build here";
  const int shapes[] = {1, 2, 3, 4, 5, 7, 11};
  for (const Level& l : ls) {
    const CpuKernels& k = cpu_kernels_for(l.isa);
    // Q8_0: one 8-lane FMA chain per output (vec_dot and tinyBLAS_Q0 alike).
    // Q3_K: vec_dot for every output at both levels; Q2_K too at the AVX2
    // level (the zen4 build repacks it, which a plain graph does not show).
    std::vector<GgmlType> types = {GgmlType::Q8_0, GgmlType::Q5_0, GgmlType::Q4_1, GgmlType::Q5_1, GgmlType::Q3_K};
    if (l.isa == CpuIsa::kAvx2) types.push_back(GgmlType::Q2_K);
    for (GgmlType wt : types) {
      const bool k_quant = wt == GgmlType::Q2_K || wt == GgmlType::Q3_K;
      for (int n : {k_quant ? 256 : 32 * 3, k_quant ? 256 * 5 : 32 * 67}) {
        const Product p = make_product(k, wt, n, 3u + static_cast<uint32_t>(n));
        for (int nr : shapes) {
          for (int nc : shapes) {
            std::string first;
            EXPECT_EQ(gemm_mismatches(k, p, nr, nc, &first, l.variant), 0)
                << l.variant << " " << type_traits(wt).name << " n=" << n << ": " << first;
          }
        }
      }
    }
    // Q8_0's 512-bit tiles take 4, 8 or 16 rows by the column count (2-4, 5-8,
    // 9-16, more): row blocks with remainders, odd column tails, prefill widths.
    const Product p = make_product(k, GgmlType::Q8_0, 32 * 67, 91u);
    for (int nr : {16, 19, 37}) {
      for (int nc : {6, 9, 13, 16, 17, 31, 64}) {
        std::string first;
        EXPECT_EQ(gemm_mismatches(k, p, nr, nc, &first, l.variant), 0) << l.variant << " q8_0 wide: " << first;
      }
    }
  }
}

TEST(CpuLegacyOrder, negative_control_a_different_order_is_seen) {
  const std::vector<Level> ls = levels();
  if (ls.empty()) GTEST_SKIP() << "no x86 level with its libggml-cpu build here";
  const CpuKernels& scalar = cpu_kernels_for(CpuIsa::kScalar);
  for (GgmlType wt :
       {GgmlType::Q5_0, GgmlType::Q4_1, GgmlType::Q5_1, GgmlType::MXFP4, GgmlType::Q2_K, GgmlType::Q3_K}) {
    const Product p = make_product(scalar, wt, 4096, 5u);
    EXPECT_GT(vec_dot_mismatches(scalar, p, ls.front().variant), 0) << type_traits(wt).name;
    if (wt != GgmlType::MXFP4) {
      EXPECT_GT(gemm_mismatches(scalar, p, 8, 8, nullptr, ls.front().variant), 0) << type_traits(wt).name;
    }
  }
}

}  // namespace
}  // namespace strix::cpu::test
