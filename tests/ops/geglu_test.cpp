// ops::geglu against ggml-cpu's GELU: libggml-cpu computes the f32 GeGLU
// through its f16 table (ggml_table_gelu_f16, filled by ggml_cpu_init and
// exported), so every f16 input in (-10, 10) must give exactly the table entry
// of the FMA builds.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/cpu/kernels.h"
#include "core/thread_pool.h"
#include "ops/cpu_ops.h"
#include "ops/exec.h"
#include "quant/fp16.h"
#include "ref/libggml_cpu.h"

namespace strix {
namespace {

// out = geglu(gate, up) on one thread over one row.
std::vector<float> run_geglu(const std::vector<float>& gate, const std::vector<float>& up) {
  ThreadPool pool(1);
  Workspace ws;
  Exec e(pool, 0, 1, cpu::cpu_kernels(), ws);
  std::vector<float> out(gate.size());
  const auto w = static_cast<int64_t>(gate.size());
  ops::geglu(e, gate.data(), w, up.data(), w, out.data(), w, 1, w);
  return out;
}

// Every finite f16 x with |x| < 10, as floats.
std::vector<float> table_inputs(std::vector<uint16_t>& bits) {
  std::vector<float> x;
  for (uint32_t h = 0; h < (1u << 16); ++h) {
    const float f = fp16_to_fp32(static_cast<uint16_t>(h));
    if (std::isfinite(f) && f > -10.0f && f < 10.0f) {
      x.push_back(f);
      bits.push_back(static_cast<uint16_t>(h));
    }
  }
  return x;
}

TEST(Geglu, MatchesGgmlGeluTableBitForBit) {
  std::vector<uint16_t> bits;
  const std::vector<float> x = table_inputs(bits);
  const std::vector<float> ones(x.size(), 1.0f);
  const std::vector<float> ours = run_geglu(x, ones);
  // the FMA builds (haswell, zen4: what libllama loads on AVX2 / AVX-512 hosts);
  // the no-FMA x64 build rounds one entry differently
  for (const std::string variant : {"haswell", "zen4"}) {
    const auto* table = static_cast<const uint16_t*>(ref::LibGgmlCpu::get(variant).lib().symbol("ggml_table_gelu_f16"));
    int64_t mismatches = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const float theirs = fp16_to_fp32(table[bits[i]]);
      if (f32_bits(theirs) != f32_bits(ours[i])) {
        if (mismatches++ < 5) ADD_FAILURE() << variant << ": x=" << x[i] << " ggml " << theirs << " ours " << ours[i];
      }
    }
    EXPECT_EQ(mismatches, 0) << variant << " of " << x.size();
  }
}

TEST(Geglu, OutsideTheTableAndScaledByUp) {
  const std::vector<float> g = {-12.0f, -10.0f, 10.0f, 11.5f, 0.3337f, -2.71828f};
  const std::vector<float> u = {3.0f, 2.0f, -1.5f, 0.25f, 7.0f, -0.5f};
  const std::vector<float> out = run_geglu(g, u);
  const auto* table = static_cast<const uint16_t*>(ref::LibGgmlCpu::get("zen4").lib().symbol("ggml_table_gelu_f16"));
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[1], 0.0f);
  EXPECT_EQ(out[2], 10.0f * -1.5f);
  EXPECT_EQ(out[3], 11.5f * 0.25f);
  EXPECT_EQ(out[4], fp16_to_fp32(table[fp32_to_fp16(0.3337f)]) * 7.0f);  // x rounded to f16 first
  EXPECT_EQ(out[5], fp16_to_fp32(table[fp32_to_fp16(-2.71828f)]) * -0.5f);
}

// The control: the unrounded f32 formula differs from the table, so the test
// above can tell the two apart.
TEST(Geglu, PlainF32FormulaWouldDiffer) {
  std::vector<uint16_t> bits;
  const std::vector<float> x = table_inputs(bits);
  const auto* table = static_cast<const uint16_t*>(ref::LibGgmlCpu::get("zen4").lib().symbol("ggml_table_gelu_f16"));
  int64_t differ = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float f = x[i];
    const float plain = 0.5f * f * (1.0f + std::tanh(0.7978845608f * f * (1.0f + 0.044715f * f * f)));
    differ += plain != fp16_to_fp32(table[bits[i]]);
  }
  EXPECT_GT(differ, static_cast<int64_t>(x.size() / 2));
}

}  // namespace
}  // namespace strix
