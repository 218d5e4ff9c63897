// Bit-exact float order of the AVX-512 level for Q5_K, F32 and F16 weights
// against the zen4-class libggml-cpu, the CPU backend libllama runs here:
//   - vec_dot (Strix's decode) equals ggml_vec_dot_* of that library, bit
//     for bit, for row lengths that exercise every tail path;
//   - gemm (Strix's prefill) equals ggml_mul_mat computed by that library
//     (a one-node graph, one thread) for every output: Q5_K through
//     ggml's vec_dot (no tinyBLAS or repacking for Q5_K), F32 / F16 through
//     llamafile's tinyBLAS for two or more activation rows and k % 16 == 0,
//     else through ggml's vec_dot.
// Shapes: several row and column counts (every tile remainder), long rows
// (several passes of the Q5_K tile), strides larger than a row. Strix's
// buffers are exact-size for ASan.
// Negative control: the scalar level (ggml's reference order) must differ
// from ggml_mul_mat on some output, and so must ggml's own one-row order
// (vec_dot) from its many-row order (tinyBLAS) for F32 / F16: the bitwise
// comparison sees a change of summation order.
// Skipped where the CPU lacks the AVX-512 level or its BF16 (the zen4 build).
// The AVX2 level is checked the same way against the haswell build.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "test_util.h"

namespace strix::cpu::test {
namespace {

bool zen4_level_available() {
  return cpu_supports(CpuIsa::kAvx512) && std::string(ggml_variant(CpuIsa::kAvx512)) == "zen4";
}

constexpr int kRows = 20;
constexpr int kCols = 19;

struct Product {
  GgmlType wt, at;
  int n = 0;
  size_t bx = 0, by = 0;
  std::vector<uint8_t> w, a;
  std::vector<std::vector<float>> src_a;  // the activation rows before quantization
};

Product make_product(const CpuKernels& k, GgmlType wt, int n, uint32_t seed) {
  Product p;
  p.wt = wt;
  p.at = k.vec_dot_type[id(wt)];
  p.n = n;
  p.bx = row_size(wt, n) + 48;
  p.by = row_size(p.at, n) + 80;
  p.w.assign(p.bx * (kRows - 1) + row_size(wt, n), 0xEE);
  p.a.assign(p.by * (kCols - 1) + row_size(p.at, n), 0xEE);
  for (int r = 0; r < kRows; ++r) {
    const std::vector<float> src = random_row(n, seed * 131u + r, 1.0f, r % 3 == 0);
    uint8_t* dst = p.w.data() + r * p.bx;
    if (wt == GgmlType::F32) {
      std::memcpy(dst, src.data(), n * sizeof(float));
    } else if (wt == GgmlType::F16) {
      ref::LibGgml::get().fp32_to_fp16_row(src.data(), reinterpret_cast<uint16_t*>(dst), n);
    } else {
      const std::vector<uint8_t> q = ggml_quantize(wt, src);
      std::memcpy(dst, q.data(), row_size(wt, n));
    }
  }
  for (int c = 0; c < kCols; ++c) {
    p.src_a.push_back(random_row(n, seed * 7919u + c, 0.5f, c % 2 == 0));
    uint8_t* dst = p.a.data() + c * p.by;
    if (p.at == GgmlType::F32) {
      std::memcpy(dst, p.src_a[c].data(), n * sizeof(float));
    } else {
      k.quantize_act[id(p.at)](p.src_a[c].data(), dst, n);
    }
  }
  return p;
}

std::string zen4_symbol(GgmlType wt, GgmlType at) {
  if (wt == GgmlType::F32) return "ggml_vec_dot_f32";
  return ref::ggml_vec_dot_symbol(id(wt), id(at));
}

// ggml_mul_mat of the zen4 libggml-cpu on the first nr weight rows and nc
// activation rows (F32, converted by ggml itself): out[c * nr + r].
struct GgmlInitParams {
  size_t mem_size;
  void* mem_buffer;
  bool no_alloc;
};

std::vector<float> ggml_mul_mat_ref(const Product& p, int nr, int nc, const char* variant = "zen4") {
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

  void* ctx = init(GgmlInitParams{size_t{64} << 20, nullptr, false});
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

// Outputs of k.gemm over nr x nc that differ bitwise from ggml_mul_mat's; the
// first one described in *first.
// ggml's F32 / F16 order depends on the whole weight matrix (tinyBLAS only
// when its row count m is a multiple of 4), which a tile does not see; Strix
// assumes m % 4 == 0, so the reference product has nr rounded up to 4 rows.
int gemm_mismatches(const CpuKernels& k, const Product& p, int nr, int nc, std::string* first,
                    const char* variant = "zen4") {
  const bool float_weights = p.wt == GgmlType::F32 || p.wt == GgmlType::F16;
  const int m = float_weights ? (nr + 3) / 4 * 4 : nr;
  const std::vector<float> want = ggml_mul_mat_ref(p, m, nc, variant);
  const size_t bs = static_cast<size_t>(nr) + 5;
  std::vector<float> s(bs * nc, -777.0f);
  k.gemm[id(p.wt)](p.n, p.w.data(), p.bx, nr, p.a.data(), p.by, nc, s.data(), bs);
  int bad = 0;
  for (int c = 0; c < nc; ++c) {
    for (int r = 0; r < nr; ++r) {
      const float got = s[c * bs + r];
      const float ref = want[static_cast<size_t>(c) * m + r];
      if (std::memcmp(&got, &ref, sizeof(float)) != 0) {
        if (bad++ == 0 && first) {
          char buf[160];
          std::snprintf(buf, sizeof buf, "nr=%d nc=%d r=%d c=%d got %.9g want %.9g", nr, nc, r, c, got, ref);
          *first = buf;
        }
      }
    }
    for (size_t r = nr; r < bs; ++r) {
      if (s[c * bs + r] != -777.0f) ++bad;  // wrote outside the tile
    }
  }
  return bad;
}

TEST(CpuGgmlOrder, vec_dot_equals_zen4_bit_for_bit) {
  if (!zen4_level_available()) GTEST_SKIP() << "no AVX-512 level with the zen4 libggml-cpu here";
  const CpuKernels& k = cpu_kernels_for(CpuIsa::kAvx512);
  const auto& lib = ref::LibGgmlCpu::get("zen4");
  struct Case {
    GgmlType wt;
    std::vector<int> ns;
  };
  const Case cases[] = {
      {GgmlType::Q5_K, {256, 512, 2816, 4096}},
      {GgmlType::Q6_K, {256, 512, 2816, 8192}},
      {GgmlType::F32, {1, 7, 8, 15, 16, 17, 24, 63, 64, 65, 80, 88, 100, 127, 128, 200, 1000, 4099}},
      {GgmlType::F16, {1, 7, 16, 63, 64, 65, 100, 128, 200, 1000, 4099}},
  };
  for (const Case& cs : cases) {
    for (int n : cs.ns) {
      const Product p = make_product(k, cs.wt, n, 17u + static_cast<uint32_t>(n));
      const auto zen4_dot = lib.vec_dot(zen4_symbol(p.wt, p.at));
      ASSERT_NE(zen4_dot, nullptr);
      int bad = 0;
      for (int r = 0; r < kRows; ++r) {
        for (int c = 0; c < kCols; ++c) {
          float ours = 0, want = 0;
          k.vec_dot[id(p.wt)](n, &ours, p.w.data() + r * p.bx, p.a.data() + c * p.by);
          zen4_dot(n, &want, 0, p.w.data() + r * p.bx, 0, p.a.data() + c * p.by, 0, 1);
          bad += std::memcmp(&ours, &want, sizeof(float)) != 0;
        }
      }
      EXPECT_EQ(bad, 0) << type_traits(cs.wt).name << " n=" << n;
    }
  }
}

TEST(CpuGgmlOrder, gemm_equals_libllama_per_output) {
  if (!zen4_level_available()) GTEST_SKIP() << "no AVX-512 level with the zen4 libggml-cpu here";
  const CpuKernels& k = cpu_kernels_for(CpuIsa::kAvx512);
  struct Case {
    GgmlType wt;
    int n;
  };
  // Q5_K: 11 super-blocks = two passes of the tile; F32 / F16: tinyBLAS
  // (k % 16 == 0) and vec_dot (k % 16 != 0) shapes.
  const Case cases[] = {{GgmlType::Q5_K, 256 * 11}, {GgmlType::Q5_K, 256}, {GgmlType::Q6_K, 256 * 11},
                        {GgmlType::Q6_K, 256},      {GgmlType::F32, 1024},
                        {GgmlType::F32, 200},       {GgmlType::F16, 1024}, {GgmlType::F16, 72}};
  const int shapes[] = {1, 2, 3, 4, 5, 7, 8, 9, 16, 17};
  for (const Case& cs : cases) {
    const Product p = make_product(k, cs.wt, cs.n, 3u + static_cast<uint32_t>(cs.n));
    for (int nr : shapes) {
      for (int nc : shapes) {
        std::string first;
        EXPECT_EQ(gemm_mismatches(k, p, nr, nc, &first), 0)
            << type_traits(cs.wt).name << " n=" << cs.n << ": " << first;
      }
    }
  }
}

// The AVX2 level against the haswell build (libllama's backend on an AVX2
// CPU): Q5_K in vec_dot and gemm, and the F32 / F16 tiles where tinyBLAS
// runs (8 lanes there), and F32 / F16 vec_dot.
TEST(CpuGgmlOrder, avx2_level_matches_haswell) {
  if (!cpu_supports(CpuIsa::kAvx2)) GTEST_SKIP() << "no AVX2 level here";
  const CpuKernels& k = cpu_kernels_for(CpuIsa::kAvx2);
  const auto& lib = ref::LibGgmlCpu::get("haswell");
  {
    const Product p = make_product(k, GgmlType::Q5_K, 256 * 11, 21u);
    const auto dot = lib.vec_dot(zen4_symbol(p.wt, p.at));
    ASSERT_NE(dot, nullptr);
    int bad = 0;
    for (int r = 0; r < kRows; ++r) {
      for (int c = 0; c < kCols; ++c) {
        float ours = 0, want = 0;
        k.vec_dot[id(p.wt)](p.n, &ours, p.w.data() + r * p.bx, p.a.data() + c * p.by);
        dot(p.n, &want, 0, p.w.data() + r * p.bx, 0, p.a.data() + c * p.by, 0, 1);
        bad += std::memcmp(&ours, &want, sizeof(float)) != 0;
      }
    }
    EXPECT_EQ(bad, 0) << "q5_K vec_dot";
  }
  for (GgmlType wt : {GgmlType::F32, GgmlType::F16}) {
    for (int n : {1, 3, 4, 7, 8, 12, 15, 31, 32, 33, 44, 63, 64, 100, 1000, 4099}) {
      const Product p = make_product(k, wt, n, 29u + static_cast<uint32_t>(n));
      const auto dot = lib.vec_dot(zen4_symbol(p.wt, p.at));
      ASSERT_NE(dot, nullptr);
      int bad = 0;
      for (int r = 0; r < kRows; ++r) {
        for (int c = 0; c < kCols; ++c) {
          float ours = 0, want = 0;
          k.vec_dot[id(wt)](n, &ours, p.w.data() + r * p.bx, p.a.data() + c * p.by);
          dot(n, &want, 0, p.w.data() + r * p.bx, 0, p.a.data() + c * p.by, 0, 1);
          bad += std::memcmp(&ours, &want, sizeof(float)) != 0;
        }
      }
      EXPECT_EQ(bad, 0) << type_traits(wt).name << " vec_dot n=" << n;
    }
  }
  const int shapes[] = {1, 2, 3, 4, 5, 8, 9, 17};
  for (GgmlType wt : {GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::F32, GgmlType::F16}) {
    const bool kq = wt == GgmlType::Q5_K || wt == GgmlType::Q6_K;
    const Product p = make_product(k, wt, kq ? 256 * 11 : 1000, 23u);
    for (int nr : shapes) {
      for (int nc : shapes) {
        std::string first;
        EXPECT_EQ(gemm_mismatches(k, p, nr, nc, &first, "haswell"), 0) << type_traits(wt).name << ": " << first;
      }
    }
  }
}

TEST(CpuGgmlOrder, negative_control_a_different_order_is_seen) {
  if (!zen4_level_available()) GTEST_SKIP() << "no AVX-512 level with the zen4 libggml-cpu here";
  // the scalar level sums in ggml's reference order: some outputs must differ
  const CpuKernels& scalar = cpu_kernels_for(CpuIsa::kScalar);
  for (GgmlType wt : {GgmlType::Q5_K, GgmlType::F32, GgmlType::F16}) {
    const Product p = make_product(scalar, wt, 4096, 5u);
    EXPECT_GT(gemm_mismatches(scalar, p, 8, 8, nullptr), 0) << type_traits(wt).name;
  }
  // ggml's one-row order (vec_dot) differs from its many-row one (tinyBLAS)
  const CpuKernels& k = cpu_kernels_for(CpuIsa::kAvx512);
  for (GgmlType wt : {GgmlType::F32, GgmlType::F16}) {
    const Product p = make_product(k, wt, 4096, 9u);
    const std::vector<float> many = ggml_mul_mat_ref(p, 8, 2);
    int differ = 0;
    for (int c = 0; c < 2; ++c) {
      Product one = p;
      one.src_a = {p.src_a[c]};
      const std::vector<float> single = ggml_mul_mat_ref(one, 8, 1);
      differ += std::memcmp(single.data(), many.data() + c * 8, 8 * sizeof(float)) != 0;
    }
    EXPECT_GT(differ, 0) << type_traits(wt).name;
  }
}

}  // namespace
}  // namespace strix::cpu::test
