// The CUDA kernels (src/backend/cuda) against scalar CPU references written
// here from the formats' definitions and src/quant's reference dequantizers:
// random inputs, outputs poisoned with NaN before each launch (an unwritten
// element fails), every CUDA call checked. Skips when the build has no CUDA
// backend or no GPU is present (CI), so the suite passes there.
#include <gtest/gtest.h>

#if STRIX_HAVE_CUDA

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/kernels.h"
#include "backend/cuda/cuda_context.h"
#include "backend/cuda/device.h"
#include "backend/cuda/kernels.h"
#include "backend_cuda/cuda_fixture.h"
#include "core/error.h"
#include "quant/fp16.h"
#include "quant/types.h"

namespace strix::cuda {
namespace {

class CudaKernels : public CudaFixture {
 protected:
  CudaKernels() : CudaFixture(12345) {}
};

// A random matrix quantized to `t` (through src/quant's reference quantizer) and its dequantized values.
struct QMatrix {
  std::vector<uint8_t> bytes;
  std::vector<float> deq;
  size_t nb1 = 0;
};
QMatrix make_matrix(GgmlType t, int64_t ne0, int64_t ne1, const std::vector<float>& src) {
  const TypeTraits& tr = type_traits(t);
  QMatrix m;
  m.nb1 = row_size(t, ne0);
  m.bytes.resize(m.nb1 * ne1);
  m.deq.resize(ne0 * ne1);
  for (int64_t r = 0; r < ne1; ++r) {
    if (t == GgmlType::F32) {
      std::memcpy(m.bytes.data() + r * m.nb1, src.data() + r * ne0, m.nb1);
    } else {
      tr.from_float_ref(src.data() + r * ne0, m.bytes.data() + r * m.nb1, ne0);
    }
    tr.to_float(m.bytes.data() + r * m.nb1, m.deq.data() + r * ne0, ne0);
  }
  return m;
}

// Every type the float path reads (rows of 768 and 512: whole blocks of all of them).
const GgmlType kTypes[] = {GgmlType::F32,  GgmlType::F16,    GgmlType::BF16,   GgmlType::Q4_0,
                           GgmlType::Q4_1, GgmlType::Q5_0,   GgmlType::Q5_1,   GgmlType::Q8_0,
                           GgmlType::Q2_K, GgmlType::Q3_K,   GgmlType::Q4_K,   GgmlType::Q5_K,
                           GgmlType::Q6_K, GgmlType::IQ4_NL, GgmlType::IQ4_XS, GgmlType::MXFP4};

// The float path's type table against the CPU's (no GPU needed): every type
// of kTypes is read and rounds its activations to the CPU's vec_dot partner;
// other types and rows that are not whole blocks are refused.
TEST(CudaTypes, PartnersEqualTheCpuVecDotTypesAndBadRowsAreRefused) {
  const cpu::CpuKernels& k = cpu::cpu_kernels();
  for (GgmlType t : kTypes) {
    EXPECT_TRUE(type_supported(t)) << type_name(static_cast<uint32_t>(t));
    EXPECT_EQ(round_partner(t), k.vec_dot_type[static_cast<uint32_t>(t)]) << type_name(static_cast<uint32_t>(t));
    const int64_t blk = type_traits(t).block_size;
    EXPECT_EQ(type_unsupported_reason(t, 512), nullptr) << type_name(static_cast<uint32_t>(t));
    if (blk > 1) {
      EXPECT_NE(type_unsupported_reason(t, 512 + blk / 2), nullptr) << type_name(static_cast<uint32_t>(t));
    }
  }
  EXPECT_NE(type_unsupported_reason(GgmlType::BF16, 171), nullptr);
  EXPECT_EQ(type_unsupported_reason(GgmlType::BF16, 172), nullptr);
  for (GgmlType t : {GgmlType::IQ2_XXS, GgmlType::IQ3_S, GgmlType::TQ2_0, GgmlType::Q8_K, GgmlType::NVFP4}) {
    EXPECT_FALSE(type_supported(t)) << type_name(static_cast<uint32_t>(t));
    EXPECT_NE(type_unsupported_reason(t, 512), nullptr);
    EXPECT_THROW(round_partner(t), Refusal);
  }
}

TEST_F(CudaKernels, GemvMatchesDoubleReferenceForEveryType) {
  const int64_t ne0 = 768, ne1 = 67;  // rows not a multiple of the 4 rows of a block
  for (GgmlType t : kTypes) {
    const QMatrix m = make_matrix(t, ne0, ne1, randn(ne0 * ne1));
    DevMem w = up(m.bytes);
    const DevWeight dw{t, ne0, ne1, m.nb1, w.as<uint8_t>()};
    for (int n : {1, 3, 8, 13}) {
      const std::vector<float> x = randn(n * ne0);
      DevMem dx = up(x);
      DevMem y = poisoned_floats(n * ne1);
      gemv(dw, dx.as<float>(), ne0, n, y.as<float>(), ne1, st());
      const auto got = down<float>(y, n * ne1);
      for (int c = 0; c < n; ++c) {
        for (int64_t r = 0; r < ne1; ++r) {
          double ref = 0, mag = 0;
          for (int64_t i = 0; i < ne0; ++i) {
            ref += static_cast<double>(m.deq[r * ne0 + i]) * x[c * ne0 + i];
            mag += std::fabs(static_cast<double>(m.deq[r * ne0 + i]) * x[c * ne0 + i]);
          }
          ASSERT_NEAR(got[c * ne1 + r], ref, 1e-5 * mag + 1e-6)
              << type_name(static_cast<uint32_t>(t)) << " n=" << n << " col " << c << " row " << r;
        }
      }
    }
  }
}

// Rows whose length is not a multiple of 8 (stories260K's n_ff = 172) go through the pair-wise F32/F16/BF16 path.
TEST_F(CudaKernels, GemvNarrowF32F16Rows) {
  const int64_t ne0 = 172, ne1 = 9;
  for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16}) {
    const QMatrix m = make_matrix(t, ne0, ne1, randn(ne0 * ne1));
    DevMem w = up(m.bytes);
    const DevWeight dw{t, ne0, ne1, m.nb1, w.as<uint8_t>()};
    const std::vector<float> x = randn(2 * ne0);
    DevMem dx = up(x);
    DevMem y = poisoned_floats(2 * ne1);
    gemv(dw, dx.as<float>(), ne0, 2, y.as<float>(), ne1, st());
    const auto got = down<float>(y, 2 * ne1);
    for (int c = 0; c < 2; ++c) {
      for (int64_t r = 0; r < ne1; ++r) {
        double ref = 0;
        for (int64_t i = 0; i < ne0; ++i) ref += static_cast<double>(m.deq[r * ne0 + i]) * x[c * ne0 + i];
        ASSERT_NEAR(got[c * ne1 + r], ref, 1e-4) << type_name(static_cast<uint32_t>(t));
      }
    }
  }
}

// The activations each weight type is multiplied with equal those of the CPU
// kernels that reproduce libllama (quantize_act of the weight's vec_dot type,
// dequantized), bit for bit. Negative control: another partner's rounding
// (Q8_K for the blocks of 32, Q8_0 for Q8_K, BF16 for F16 and back) differs.
TEST_F(CudaKernels, RoundActivationsEqualsTheCpuPartnerQuantizer) {
  const cpu::CpuKernels& k = cpu::cpu_kernels();
  const int n = 3;
  const int64_t width = 1024;
  auto cpu_round = [&](GgmlType vdt, const std::vector<float>& x) {
    std::vector<float> r(n * width);
    std::vector<uint8_t> buf(row_size(vdt, width));
    for (int i = 0; i < n; ++i) {
      k.quantize_act[static_cast<uint32_t>(vdt)](x.data() + i * width, buf.data(), width);
      type_traits(vdt).to_float(buf.data(), r.data() + i * width, width);
    }
    return r;
  };
  for (GgmlType t : kTypes) {
    if (t == GgmlType::F32) continue;
    std::vector<float> x = randn(n * width, 2.0f);
    x[5] = 0.0f;
    for (int i = 0; i < 256; ++i) x[width + i] = 0.0f;  // an all-zero block
    const GgmlType vdt = k.vec_dot_type[static_cast<uint32_t>(t)];
    const GgmlType other = vdt == GgmlType::F16    ? GgmlType::BF16
                           : vdt == GgmlType::BF16 ? GgmlType::F16
                           : vdt == GgmlType::Q8_K ? GgmlType::Q8_0
                                                   : GgmlType::Q8_K;
    const std::vector<float> expect = cpu_round(vdt, x), wrong = cpu_round(other, x);
    DevMem dx = up(x);
    DevMem out = poisoned_floats(n * width);
    ASSERT_TRUE(round_activations(t, dx.as<float>(), width, n, width, out.as<float>(), width, st()));
    const auto got = down<float>(out, n * width);
    int64_t differ_from_other = 0;
    for (int64_t i = 0; i < n * width; ++i) {
      ASSERT_EQ(got[i], expect[i]) << type_name(static_cast<uint32_t>(t)) << " element " << i << " x " << x[i];
      differ_from_other += got[i] != wrong[i];
    }
    EXPECT_GT(differ_from_other, 0) << type_name(static_cast<uint32_t>(t)) << ": negative control ("
                                    << type_name(static_cast<uint32_t>(other)) << " rounding) must differ";
  }
}

// The integer GEMV (quantize_act + gemv_q): its quantized activations equal
// the CPU partner quantizer's bit for bit, and every output equals the CPU
// vec_dot of the same weight row and activation row up to float summation
// order. Negative control: compared with the next column's vec_dot it fails.
// Shapes: short rows; rows of 32+ super-blocks in a small launch (one column:
// two warps per row); a launch of 16k+ rows (one column: two rows per warp).
TEST_F(CudaKernels, IntegerGemvEqualsCpuVecDot) {
  const cpu::CpuKernels& k = cpu::cpu_kernels();
  struct Shape {
    int64_t ne0, ne1;
    std::vector<int> ns;
  };
  for (const Shape& sh : {Shape{1024, 67, {1, 3, 8, 13}}, Shape{8192, 37, {1, 2}}, Shape{512, 16411, {1}},
                          Shape{3072, 300, {1, 2, 5}}, Shape{1024, 16411, {1}}})
    for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q6_K}) {
      const int64_t ne0 = sh.ne0, ne1 = sh.ne1;
      ASSERT_TRUE(gemv_q_supported(t));
      const QMatrix m = make_matrix(t, ne0, ne1, randn(ne0 * ne1));
      DevMem w = up(m.bytes);
      const DevWeight dw{t, ne0, ne1, m.nb1, w.as<uint8_t>()};
      const GgmlType vdt = k.vec_dot_type[static_cast<uint32_t>(t)];
      const int blk = gemv_q_block(t);
      for (int n : sh.ns) {
        std::vector<float> x = randn(n * ne0, 1.5f);
        if (n > 1) {
          for (int i = 0; i < blk; ++i) x[ne0 + i] = 0.0f;  // an all-zero block
        }
        const size_t rs = row_size(vdt, ne0);
        std::vector<uint8_t> act(rs * n);
        std::vector<float> act_f(n * ne0);
        for (int c = 0; c < n; ++c) {
          k.quantize_act[static_cast<uint32_t>(vdt)](x.data() + c * ne0, act.data() + c * rs, ne0);
          type_traits(vdt).to_float(act.data() + c * rs, act_f.data() + c * ne0, ne0);
        }
        DevMem dx = up(x);
        DevMem q(static_cast<size_t>(n * ne0), "q");
        DevMem d = poisoned_floats(n * ne0 / blk);
        check(cudaMemset(q.as(), 0x7f, static_cast<size_t>(n * ne0)), "poison q");
        quantize_act(t, dx.as<float>(), ne0, n, ne0, q.as<int8_t>(), d.as<float>(), st());
        const auto gq = down<int8_t>(q, n * ne0);
        const auto gd = down<float>(d, n * ne0 / blk);
        for (int64_t i = 0; i < n * ne0; ++i) {
          ASSERT_EQ(gd[i / blk] * static_cast<float>(gq[i]), act_f[i])
              << type_name(static_cast<uint32_t>(t)) << " activation " << i << " x " << x[i];
        }
        DevMem y = poisoned_floats(n * ne1);
        gemv_q(dw, q.as<int8_t>(), d.as<float>(), n, y.as<float>(), ne1, st());
        const auto got = down<float>(y, n * ne1);
        int wrong_column_misses = 0;
        for (int c = 0; c < n; ++c) {
          for (int64_t r = 0; r < ne1; ++r) {
            float want = 0, other = 0;
            k.vec_dot[static_cast<uint32_t>(t)](static_cast<int>(ne0), &want, m.bytes.data() + r * m.nb1,
                                                act.data() + c * rs);
            k.vec_dot[static_cast<uint32_t>(t)](static_cast<int>(ne0), &other, m.bytes.data() + r * m.nb1,
                                                act.data() + ((c + 1) % n) * rs);
            double mag = 0;
            for (int64_t i = 0; i < ne0; ++i)
              mag += std::fabs(static_cast<double>(m.deq[r * ne0 + i]) * act_f[c * ne0 + i]);
            const double tol = 2e-6 * mag + 1e-6;
            ASSERT_NEAR(got[c * ne1 + r], want, tol)
                << type_name(static_cast<uint32_t>(t)) << " n=" << n << " col " << c << " row " << r;
            wrong_column_misses += std::fabs(got[c * ne1 + r] - other) > tol;
          }
        }
        if (n > 1) {
          EXPECT_GT(wrong_column_misses, 0) << "negative control: the next column's dot must differ";
        }
        if (n == 1) {  // negative control: the row next to each one differs
          int wrong_row_misses = 0;
          for (int64_t r = 0; r + 1 < ne1 && r < 64; ++r) {
            float other = 0;
            k.vec_dot[static_cast<uint32_t>(t)](static_cast<int>(ne0), &other, m.bytes.data() + (r + 1) * m.nb1,
                                                act.data());
            wrong_row_misses += std::fabs(got[r] - other) > 1e-3f * (1 + std::fabs(other));
          }
          EXPECT_GT(wrong_row_misses, 0);
        }
      }
    }
}

TEST_F(CudaKernels, DequantF16AndGetRowsEqualTheReferenceDequantizer) {
  const int64_t ne0 = 512, ne1 = 9;
  for (GgmlType t : kTypes) {
    const QMatrix m = make_matrix(t, ne0, ne1, randn(ne0 * ne1));
    DevMem w = up(m.bytes);
    const DevWeight dw{t, ne0, ne1, m.nb1, w.as<uint8_t>()};
    DevMem h(sizeof(uint16_t) * ne0 * ne1, "f16");
    check(cudaMemset(h.as(), 0xff, h.bytes()), "poison");
    dequant_f16(dw, h.as<uint16_t>(), st());
    const auto got16 = down<uint16_t>(h, ne0 * ne1);
    for (int64_t i = 0; i < ne0 * ne1; ++i) {
      ASSERT_EQ(got16[i], fp32_to_fp16(m.deq[i])) << type_name(static_cast<uint32_t>(t)) << " element " << i;
    }
    const std::vector<int32_t> ids = {3, 0, 8, 3};
    DevMem di = up(ids);
    DevMem out = poisoned_floats(ids.size() * ne0);
    get_rows(dw, di.as<int32_t>(), static_cast<int>(ids.size()), out.as<float>(), ne0, st());
    const auto rows = down<float>(out, ids.size() * ne0);
    for (size_t k = 0; k < ids.size(); ++k) {
      for (int64_t i = 0; i < ne0; ++i) {
        ASSERT_EQ(rows[k * ne0 + i], m.deq[ids[k] * ne0 + i]) << type_name(static_cast<uint32_t>(t));
      }
    }
  }
}

// An allocation the GPU cannot hold says how much, what is free, and what to lower.
TEST_F(CudaKernels, OutOfMemoryIsExplained) {
  try {
    DevMem m(size_t{1} << 50, "a test buffer");
    FAIL() << "a 1 PiB allocation succeeded";
  } catch (const Error& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("CUDA out of memory: a test buffer needs 1073741824 MiB, the GPU has "), std::string::npos) << w;
    EXPECT_NE(w.find("-ngl N"), std::string::npos) << w;
    EXPECT_NE(w.find("-c"), std::string::npos) << w;
  }
  DevMem ok(1024, "a small buffer after the failure");  // the error did not stick
  EXPECT_NE(ok.as(), nullptr);
}

// Host buffers for the GPU's copies are page-locked, grow only, and copy both ways.
TEST_F(CudaKernels, HostVecIsPinnedAndCopies) {
  HostVec<float> h;
  h.resize(1000, "a test buffer");
  cudaPointerAttributes at{};
  check(cudaPointerGetAttributes(&at, h.data()), "cudaPointerGetAttributes");
  EXPECT_EQ(at.type, cudaMemoryTypeHost);  // page-locked (pageable memory reads as unregistered)
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<float>(i) * 0.5f;
  DevMem d(sizeof(float) * 1000, "a test buffer");
  check(cudaMemcpyAsync(d.as(), h.data(), sizeof(float) * 1000, cudaMemcpyHostToDevice, st()), "up");
  HostVec<float> back;
  back.resize(1000, "a test buffer");
  std::fill_n(back.data(), 1000, -1.0f);
  check(cudaMemcpyAsync(back.data(), d.as(), sizeof(float) * 1000, cudaMemcpyDeviceToHost, st()), "down");
  check(cudaStreamSynchronize(st()), "sync");
  for (size_t i = 0; i < 1000; ++i) ASSERT_EQ(back[i], static_cast<float>(i) * 0.5f) << i;
  float* const p = h.data();
  h.resize(10, "a test buffer");  // smaller: the same memory
  EXPECT_EQ(h.data(), p);
  EXPECT_EQ(h.size(), 10u);
  h.resize(100000, "a test buffer");  // larger: new memory of the new size
  EXPECT_EQ(h.size(), 100000u);
  h[99999] = 1.0f;
}

TEST_F(CudaKernels, UnsupportedTypeIsRefusedByName) {
  const DevWeight dw{GgmlType::IQ2_XXS, 256, 4, 66, nullptr};
  try {
    gemv(dw, nullptr, 256, 1, nullptr, 4, st());
    FAIL() << "no refusal";
  } catch (const Refusal& e) {
    EXPECT_NE(std::string(e.what()).find("iq2_xxs"), std::string::npos) << e.what();
  }
  try {
    round_activations(GgmlType::IQ2_XXS, nullptr, 256, 1, 256, nullptr, 256, st());
    FAIL() << "no refusal";
  } catch (const Refusal& e) {
    EXPECT_NE(std::string(e.what()).find("iq2_xxs"), std::string::npos) << e.what();
  }
  // a row that is not whole blocks: refused naming the type and the length
  const DevWeight bad{GgmlType::Q4_0, 48, 4, 27, nullptr};
  try {
    get_rows(bad, nullptr, 1, nullptr, 48, st());
    FAIL() << "no refusal";
  } catch (const Refusal& e) {
    EXPECT_NE(std::string(e.what()).find("q4_0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("48"), std::string::npos) << e.what();
  }
}

TEST_F(CudaKernels, RmsNormAddRmsNormSwigluAdd) {
  const int n = 5;
  const int64_t dim = 1000;
  const float eps = 1e-5f;
  const auto x = randn(n * dim), y = randn(n * dim), w = randn(dim);
  auto ref_norm = [&](const std::vector<float>& in, int t, int64_t i) {
    double ss = 0;
    for (int64_t j = 0; j < dim; ++j) ss += static_cast<double>(in[t * dim + j]) * in[t * dim + j];
    return in[t * dim + i] / std::sqrt(ss / dim + eps) * w[i];
  };
  DevMem dx = up(x), dy = up(y), dw = up(w);
  DevMem out = poisoned_floats(n * dim);
  rms_norm(dx.as<float>(), n, dim, dim, out.as<float>(), dim, dw.as<float>(), eps, st());
  auto got = down<float>(out, n * dim);
  for (int t = 0; t < n; ++t)
    for (int64_t i = 0; i < dim; ++i) ASSERT_NEAR(got[t * dim + i], ref_norm(x, t, i), 1e-5) << t << " " << i;

  std::vector<float> sum(n * dim);
  for (size_t i = 0; i < sum.size(); ++i) sum[i] = x[i] + y[i];
  DevMem out2 = poisoned_floats(n * dim);
  add_rms_norm(dx.as<float>(), dy.as<float>(), out2.as<float>(), n, dim, dw.as<float>(), eps, st());
  got = down<float>(out2, n * dim);
  const auto xs = down<float>(dx, n * dim);
  for (size_t i = 0; i < sum.size(); ++i) ASSERT_EQ(xs[i], sum[i]);
  for (int t = 0; t < n; ++t)
    for (int64_t i = 0; i < dim; ++i) ASSERT_NEAR(got[t * dim + i], ref_norm(sum, t, i), 1e-5);

  DevMem out3 = poisoned_floats(n * dim);
  swiglu(dy.as<float>(), dim, dw.as<float>(), 0, out3.as<float>(), dim, n, dim, st());
  got = down<float>(out3, n * dim);
  for (int t = 0; t < n; ++t) {
    for (int64_t i = 0; i < dim; ++i) {
      const double g = y[t * dim + i];
      ASSERT_NEAR(got[t * dim + i], g / (1 + std::exp(-g)) * w[i], 1e-5 * (1 + std::fabs(g * w[i])));
    }
  }
  DevMem out4 = poisoned_floats(n * dim);
  add(dx.as<float>(), dy.as<float>(), out4.as<float>(), n, dim, st());
  got = down<float>(out4, n * dim);
  for (size_t i = 0; i < sum.size(); ++i) ASSERT_EQ(got[i], sum[i] + y[i]);
}

// RoPE from its definition: pair (a, b) of head dims rotated by pos * base^(-2i/n_rot).
TEST_F(CudaKernels, RopeNormAndNeoxModes) {
  const int n = 4, heads = 3, hd = 64;
  const std::vector<int32_t> pos = {0, 1, 17, 200};
  for (RopeMode mode : {RopeMode::kNorm, RopeMode::kNeox}) {
    for (bool factors : {false, true}) {
      RopeParams rp;
      rp.mode = mode;
      rp.n_rot = hd;
      rp.freq_base = 10000.0f;
      const auto x = randn(n * heads * hd);
      std::vector<float> ff(hd / 2);
      for (int i = 0; i < hd / 2; ++i) ff[i] = 1.0f + 0.25f * static_cast<float>(i % 5);
      DevMem dx = up(x), dp = up(pos), df = up(ff);
      rope(dx.as<float>(), n, heads, hd, heads * hd, dp.as<int32_t>(), rp, factors ? df.as<float>() : nullptr, st());
      const auto got = down<float>(dx, x.size());
      for (int t = 0; t < n; ++t) {
        for (int h = 0; h < heads; ++h) {
          for (int i = 0; i < hd / 2; ++i) {
            const double th = pos[t] * std::pow(10000.0, -2.0 * i / hd) / (factors ? ff[i] : 1.0);
            const int a = mode == RopeMode::kNeox ? i : 2 * i, b = mode == RopeMode::kNeox ? i + hd / 2 : 2 * i + 1;
            const float* xr = x.data() + (t * heads + h) * hd;
            const float* gr = got.data() + (t * heads + h) * hd;
            const double ea = xr[a] * std::cos(th) - xr[b] * std::sin(th);
            const double eb = xr[a] * std::sin(th) + xr[b] * std::cos(th);
            ASSERT_NEAR(gr[a], ea, 2e-4) << "pos " << pos[t] << " pair " << i;
            ASSERT_NEAR(gr[b], eb, 2e-4) << "pos " << pos[t] << " pair " << i;
          }
        }
      }
    }
  }
}

// Attention over an f16 cache of two sequences (grouped heads), prefill-shaped
// batch: reference in double with q, K, V and the probabilities rounded to f16
// as the kernel's contract says.
TEST_F(CudaKernels, KvStoreAndCausalAttention) {
  const int n_head = 4, n_kv = 2, hd = 128, cap = 40;
  const int64_t kd = n_kv * hd;
  // seq 0: positions 0..9 (this batch 6..9 after 0..5 stored first); seq 1: 0..2
  std::vector<int32_t> pos, seq;
  for (int p = 0; p < 10; ++p) pos.push_back(p), seq.push_back(0);
  for (int p = 0; p < 3; ++p) pos.push_back(p), seq.push_back(1);
  const int n = static_cast<int>(pos.size());
  const auto k = randn(n * kd), v = randn(n * kd), q = randn(n * n_head * hd);
  DevMem kc(sizeof(uint16_t) * 2 * cap * kd, "k"), vc(sizeof(uint16_t) * 2 * cap * kd, "v");
  DevMem dk = up(k), dv = up(v), dq = up(q), dp = up(pos), ds = up(seq);
  const KvLayout kv{kc.as<uint16_t>(), vc.as<uint16_t>(), kd, kd, cap};
  kv_store(kv, dk.as<float>(), kd, dv.as<float>(), kd, n, dp.as<int32_t>(), ds.as<int32_t>(), st());
  DevMem out = poisoned_floats(n * n_head * hd);
  AttnArgs a;
  a.q = dq.as<float>();
  a.q_stride = n_head * hd;
  a.pos = dp.as<int32_t>();
  a.seq = ds.as<int32_t>();
  a.n_tokens = n;
  a.n_head = n_head;
  a.n_head_kv = n_kv;
  a.head_dim_k = a.head_dim_v = hd;
  a.kq_scale = 1.0f / std::sqrt(static_cast<float>(hd));
  a.max_cells = 10;
  a.out = out.as<float>();
  a.out_stride = n_head * hd;
  attention(kv, a, st());
  const auto got = down<float>(out, n * n_head * hd);
  auto r16 = [](float f) { return static_cast<double>(fp16_to_fp32(fp32_to_fp16(f))); };
  for (int t = 0; t < n; ++t) {
    for (int h = 0; h < n_head; ++h) {
      const int kvh = h / (n_head / n_kv);
      std::vector<int> cells;  // tokens of the same sequence at positions <= pos[t]
      for (int u = 0; u < n; ++u)
        if (seq[u] == seq[t] && pos[u] <= pos[t]) cells.push_back(u);
      std::vector<double> s;
      double mx = -1e300;
      for (int u : cells) {
        double dot = 0;
        for (int i = 0; i < hd; ++i) dot += r16(q[(t * n_head + h) * hd + i]) * r16(k[u * kd + kvh * hd + i]);
        s.push_back(dot * a.kq_scale);
        mx = std::max(mx, s.back());
      }
      double sum = 0;
      for (double& e : s) sum += (e = std::exp(e - mx));
      for (int i = 0; i < hd; ++i) {
        double o = 0;
        for (size_t c = 0; c < cells.size(); ++c)
          o += r16(static_cast<float>(s[c] / sum)) * r16(v[cells[c] * kd + kvh * hd + i]);
        ASSERT_NEAR(got[(t * n_head + h) * hd + i], o, 2e-3) << "token " << t << " head " << h << " dim " << i;
      }
    }
  }
}

TEST(CudaNgl, ParsesLlamaCppsLayerCount) {
  EXPECT_TRUE(parse_ngl("99", 32).full());
  EXPECT_TRUE(parse_ngl("all", 32).full());
  EXPECT_TRUE(parse_ngl("33", 32).full());
  EXPECT_EQ(parse_ngl("99", 32).n_gpu, 33);
  EXPECT_FALSE(parse_ngl("0", 32).on_gpu());
  EXPECT_EQ(parse_ngl("auto", 32).full(), available());
  // partial: the output layer and the last N-1 repeating layers
  EXPECT_TRUE(parse_ngl("32", 32).partial());
  EXPECT_EQ(parse_ngl("32", 32).first_gpu_layer(), 1);
  EXPECT_EQ(parse_ngl("5", 32).first_gpu_layer(), 28);
  EXPECT_EQ(parse_ngl("1", 32).first_gpu_layer(), 32);
  EXPECT_THROW(parse_ngl("x", 32), Error);
  EXPECT_THROW(parse_ngl("-1", 32), Error);
  EXPECT_THROW(parse_ngl("2.5", 32), Error);
  EXPECT_THROW(parse_ngl("", 32), Error);
}

}  // namespace
}  // namespace strix::cuda

#else  // built without the CUDA backend

TEST(CudaKernels, SkippedWithoutCudaBackend) { GTEST_SKIP() << "built with STRIX_CUDA=OFF"; }

#endif
