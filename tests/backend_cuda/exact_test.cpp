// Exact numerics on CUDA (backend/cuda/exact.h, `--exact`) against the CPU:
// the GEMVs bit for bit against the CPU kernels that libllama's zen4 build
// sums like (cpu_kernels' AVX-512 level, itself bit-equal to libllama in
// tests/parity), and whole models against libllama through run_parity: the
// logits must be equal, not close. Negative controls: the fast kernels differ
// in the last bits (so equality is a real test), and other weights fail.
// Skips without a GPU.
#include <gtest/gtest.h>

#if STRIX_HAVE_CUDA

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "backend/cpu/attn_ref.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/vec_ops.h"
#include "backend/cuda/exact.h"
#include "backend/cuda/kernels.h"
#include "backend_cuda/cuda_fixture.h"
#include "backend_cuda/test_models.h"
#include "core/error.h"
#include "quant/fp16.h"
#include "quant/types.h"

namespace strix::cuda {
namespace {

class CudaExact : public CudaFixture {
 protected:
  CudaExact() : CudaFixture(4242) {}
  void SetUp() override {
    CudaFixture::SetUp();
    if (cpu::cpu_kernels().isa != cpu::CpuIsa::kAvx512) GTEST_SKIP() << "the CPU references need the AVX-512 level";
  }
};

std::vector<uint8_t> quantize_rows(GgmlType t, const std::vector<float>& x, int64_t ne0, int64_t rows) {
  const size_t rs = row_size(t, ne0);
  std::vector<uint8_t> b(rs * rows);
  for (int64_t r = 0; r < rows; ++r) type_traits(t).from_float_ref(x.data() + r * ne0, b.data() + r * rs, ne0);
  return b;
}

// Q8_0: every output equals the CPU's vec_dot (libllama's order in decode and in prefill), for
// one column and several; the fast integer GEMV on the same inputs must differ somewhere.
TEST_F(CudaExact, Q8_0GemvEqualsCpuVecDotBitForBit) {
  const cpu::CpuKernels& k = cpu::cpu_kernels();
  for (const auto& [ne0, ne1] : {std::pair<int64_t, int64_t>{1024, 67}, {4096, 301}, {256, 1024}}) {
    const auto w = quantize_rows(GgmlType::Q8_0, randn(ne0 * ne1), ne0, ne1);
    const size_t nb1 = row_size(GgmlType::Q8_0, ne0);
    DevMem dw = up(w);
    const DevWeight W{GgmlType::Q8_0, ne0, ne1, nb1, dw.as<uint8_t>()};
    for (int n : {1, 3, 8, 13}) {
      const std::vector<float> x = randn(n * ne0, 2.0f);
      std::vector<uint8_t> act(nb1 * n);  // the CPU's activation quantizer (round to nearest even)
      for (int c = 0; c < n; ++c) {
        k.quantize_act[static_cast<uint32_t>(GgmlType::Q8_0)](x.data() + c * ne0, act.data() + c * nb1, ne0);
      }
      DevMem dx = up(x);
      DevMem q(static_cast<size_t>(n * ne0), "q");
      DevMem d = poisoned_floats(n * ne0 / 32);
      quantize_act(GgmlType::Q8_0, dx.as<float>(), ne0, n, ne0, q.as<int8_t>(), d.as<float>(), st());
      DevMem y = poisoned_floats(n * ne1);
      gemv_q8_0_exact(W, q.as<int8_t>(), d.as<float>(), n, y.as<float>(), ne1, st());
      const auto got = down<float>(y, n * ne1);
      DevMem yf = poisoned_floats(n * ne1);
      int fast_differs = 0;
      if (n <= 8) gemv_q(W, q.as<int8_t>(), d.as<float>(), n, yf.as<float>(), ne1, st());
      const auto fast = n <= 8 ? down<float>(yf, n * ne1) : std::vector<float>();
      for (int c = 0; c < n; ++c) {
        for (int64_t r = 0; r < ne1; ++r) {
          float want = 0;
          k.vec_dot[static_cast<uint32_t>(GgmlType::Q8_0)](static_cast<int>(ne0), &want, w.data() + r * nb1,
                                                           act.data() + c * nb1);
          ASSERT_EQ(got[c * ne1 + r], want) << ne0 << "x" << ne1 << " n=" << n << " col " << c << " row " << r;
          if (!fast.empty()) fast_differs += fast[c * ne1 + r] != want;
        }
      }
      if (ne0 >= 1024 && n <= 8) {
        EXPECT_GT(fast_differs, 0) << "negative control: the fast GEMV's float order";
      }
    }
  }
}

// Q4_K (libllama repacks it: gemm order for the first n - n % 4 columns, gemv order for the
// rest; the CPU's gemm is that order for up to 64 columns) and Q6_K (vec_dot's order).
TEST_F(CudaExact, KQuantGemvEqualsCpuBitForBit) {
  const cpu::CpuKernels& k = cpu::cpu_kernels();
  for (GgmlType t : {GgmlType::Q4_K, GgmlType::Q6_K}) {
    for (const auto& [ne0, ne1] : {std::pair<int64_t, int64_t>{256, 72}, {2048, 136}, {4096, 64}}) {
      const auto w = quantize_rows(t, randn(ne0 * ne1), ne0, ne1);
      const size_t nb1 = row_size(t, ne0);
      DevMem dw = up(w);
      const DevWeight W{t, ne0, ne1, nb1, dw.as<uint8_t>()};
      for (int n : {1, 3, 4, 6, 13}) {
        const std::vector<float> x = randn(n * ne0, 2.0f);
        const size_t rs = row_size(GgmlType::Q8_K, ne0);
        std::vector<uint8_t> act(rs * n);
        for (int c = 0; c < n; ++c) {
          k.quantize_act[static_cast<uint32_t>(GgmlType::Q8_K)](x.data() + c * ne0, act.data() + c * rs, ne0);
        }
        std::vector<float> want(static_cast<size_t>(n * ne1));
        k.gemm[static_cast<uint32_t>(t)](static_cast<int>(ne0), w.data(), nb1, static_cast<int>(ne1), act.data(), rs, n,
                                         want.data(), static_cast<size_t>(ne1));
        DevMem dx = up(x);
        DevMem q(static_cast<size_t>(n * ne0), "q");
        DevMem d = poisoned_floats(n * ne0 / 256);
        quantize_act(t, dx.as<float>(), ne0, n, ne0, q.as<int8_t>(), d.as<float>(), st());
        DevMem y = poisoned_floats(n * ne1);
        gemv_q_exact(W, q.as<int8_t>(), d.as<float>(), n, y.as<float>(), ne1, st());
        const auto got = down<float>(y, n * ne1);
        for (int64_t i = 0; i < n * ne1; ++i) {
          ASSERT_EQ(got[i], want[i]) << type_name(static_cast<uint32_t>(t)) << " " << ne0 << "x" << ne1 << " n=" << n
                                     << " col " << i / ne1 << " row " << i % ne1;
        }
      }
    }
  }
}

// F16 / F32: one column in vec_dot's order (its tail past the last 64 too), several in
// tinyBLAS's (one 16-lane chain: vec_ops' attn_dot is that order for f16 rows; for f32
// rows it is written out here).
TEST_F(CudaExact, FloatGemvEqualsCpuOrderBitForBit) {
  const cpu::CpuKernels& k = cpu::cpu_kernels();
  const cpu::VecOps& vo = cpu::vec_ops();
  for (GgmlType t : {GgmlType::F16, GgmlType::F32}) {
    for (const auto& [ne0, ne1] : {std::pair<int64_t, int64_t>{1024, 68}, {172, 36}, {4096, 40}, {40, 8}}) {
      const std::vector<float> src = randn(ne0 * ne1);
      const size_t nb1 = row_size(t, ne0);
      std::vector<uint8_t> w(nb1 * ne1);
      if (t == GgmlType::F32) {
        std::memcpy(w.data(), src.data(), w.size());
      } else {
        for (int64_t i = 0; i < ne0 * ne1; ++i) reinterpret_cast<uint16_t*>(w.data())[i] = fp32_to_fp16(src[i]);
      }
      DevMem dw = up(w);
      const DevWeight W{t, ne0, ne1, nb1, dw.as<uint8_t>()};
      for (int n : {1, 2, 5}) {
        std::vector<float> x = randn(n * ne0);
        if (t == GgmlType::F16) {
          for (float& v : x) v = fp16_to_fp32(fp32_to_fp16(v));  // the partner's values (round_activations)
        }
        DevMem dx = up(x);
        DevMem y = poisoned_floats(n * ne1);
        gemv_float_exact(W, dx.as<float>(), ne0, n, y.as<float>(), ne1, st());
        const auto got = down<float>(y, n * ne1);
        const bool tiny = n >= 2 && ne1 % 4 == 0 && ne0 % 16 == 0;
        for (int c = 0; c < n; ++c) {
          std::vector<uint16_t> xh(static_cast<size_t>(ne0));
          for (int64_t i = 0; i < ne0; ++i) xh[i] = fp32_to_fp16(x[c * ne0 + i]);
          for (int64_t r = 0; r < ne1; ++r) {
            float want = 0;
            if (tiny && t == GgmlType::F16) {
              want = vo.attn_dot(static_cast<int>(ne0), reinterpret_cast<const uint16_t*>(w.data() + r * nb1),
                                 x.data() + c * ne0);
            } else if (tiny) {
              // tinyBLAS's f32 order written out: one 16-lane FMA chain, reduced as
              // _mm512_reduce_add_ps (cpu::attn_ref::reduce16)
              const float* wr = reinterpret_cast<const float*>(w.data() + r * nb1);
              float acc[16] = {};
              for (int64_t i = 0; i < ne0; i += 16) {
                for (int l = 0; l < 16; ++l) acc[l] = std::fma(wr[i + l], x[c * ne0 + i + l], acc[l]);
              }
              want = cpu::attn_ref::reduce16(acc);
            } else {
              const void* xa = t == GgmlType::F16 ? static_cast<const void*>(xh.data()) : x.data() + c * ne0;
              k.vec_dot[static_cast<uint32_t>(t)](static_cast<int>(ne0), &want, w.data() + r * nb1, xa);
            }
            ASSERT_EQ(got[c * ne1 + r], want) << type_name(static_cast<uint32_t>(t)) << " " << ne0 << "x" << ne1
                                              << " n=" << n << " col " << c << " row " << r;
          }
        }
      }
    }
  }
}

// Whole models against libllama on the CPU: equal logits in prefill, decode and mixed batches.
std::string dir() {
  static const std::string d = test::temp_dir("exact");
  return d;
}
std::string model(const std::string& arch, const std::string& type, uint64_t seed = 1) {
  return test::synth_once(dir(), arch + "-" + type + "-" + std::to_string(seed), test::small_shape(arch, seed), type);
}
ParityReport exact_parity(const std::string& path, const std::string& mode, int n_tokens, bool exact = true,
                          const std::string& strix_path = {}, const std::string& ngl = "99") {
  ParityOptions o;
  o.n_tokens = n_tokens;
  o.mode = mode;
  o.ngl = ngl;
  o.exact = exact;
  o.strix_path = strix_path;
  return run_parity(path, o);
}

class CudaExactParity : public test::NeedsGpu,
                        public ::testing::WithParamInterface<std::tuple<std::string, std::string>> {};

TEST_P(CudaExactParity, LogitsEqualLibllamaInEveryMode) {
  const auto& [arch, type] = GetParam();
  const std::string path = model(arch, type);
  for (const char* mode : {"prefill", "decode", "mixed"}) {
    const ParityReport r = exact_parity(path, mode, 64);
    std::printf("  %s %s exact: %s\n", arch.c_str(), type.c_str(), r.summary().c_str());
    EXPECT_EQ(r.max_abs_dlogit, 0.0) << mode << ": " << r.summary();
    EXPECT_EQ(r.top1_agree, r.n_positions) << mode << ": " << r.summary();
  }
}

INSTANTIATE_TEST_SUITE_P(Models, CudaExactParity,
                         ::testing::Combine(::testing::Values("llama", "qwen2", "qwen3"),
                                            ::testing::Values("f16", "q8_0", "q4_k_m")));

class CudaExactControl : public test::NeedsGpu {};

// The same model on the fast kernels: within float-order noise, not equal (what --exact removes).
TEST_F(CudaExactControl, FastKernelsAreNotEqual) {
  const ParityReport r = exact_parity(model("llama", "q8_0"), "decode", 64, false);
  EXPECT_GT(r.max_abs_dlogit, 0.0) << r.summary();
}

// Strix runs other weights (seed 2): must fail the bar.
TEST_F(CudaExactControl, OtherWeightsFail) {
  const ParityReport r = exact_parity(model("llama", "q8_0"), "decode", 32, true, model("llama", "q8_0", 2));
  EXPECT_FALSE(r.cuda_pass()) << r.summary();
  EXPECT_GT(r.max_abs_dlogit, 0.0);
}

// Partial offload: the CPU's layers and the GPU's, equal to libllama too.
TEST_F(CudaExactControl, PartialOffloadEqual) {
  const ParityReport r = exact_parity(model("llama", "q8_0"), "mixed", 48, true, {}, "2");
  EXPECT_EQ(r.max_abs_dlogit, 0.0) << r.summary();
}

// Weights exact numerics do not cover are refused by name, before anything runs.
TEST_F(CudaExactControl, OtherWeightTypesAreRefused) {
  const std::string path = model("llama", "q5_k");
  try {
    exact_parity(path, "decode", 8);
    FAIL() << "a Q5_K model ran with --exact";
  } catch (const Refusal& e) {
    EXPECT_NE(std::string(e.what()).find("exact numerics"), std::string::npos) << e.what();
  }
}

TEST_F(CudaExactControl, Stories260KGreedy200) {
  const std::string path = test::stories();
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is absent";
  ParityOptions o;
  o.ngl = "99";
  o.exact = true;
  const GreedyReport g = run_greedy(path, 200, o);
  EXPECT_TRUE(g.pass()) << "first difference at " << g.first_diff << ": " << g.text;
}

}  // namespace
}  // namespace strix::cuda

#endif
