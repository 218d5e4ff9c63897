// The prefill path's kernels. The tensor-core prefill attention
// (attention_prefill, attn_prefill.cu)
// against a double reference with q, K, V and the probabilities rounded to
// f16 (attention()'s contract) and against attention() itself, on batches of
// several sequences (one of them continuing cells stored by an earlier batch)
// and head layouts of 1, 3, 4 and 8 query heads per KV head. The cache is
// poisoned with f16 NaNs before the stores (a read of a cell nobody wrote
// shows), the output with float NaNs (an unwritten element shows). Negative
// controls: the same kernel with its causal boundary one cell early, and
// without the causal mask, must fail the same check. activations_f16 (the
// GEMM's input in one pass) against round_activations then to_f16, bit for
// bit. Skips without a CUDA backend or GPU (CI).
#include <gtest/gtest.h>

#if STRIX_HAVE_CUDA

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cuda/cuda_context.h"
#include "backend/cuda/device.h"
#include "backend/cuda/kernels.h"
#include "backend_cuda/cuda_fixture.h"
#include "quant/fp16.h"
#include "quant/types.h"

namespace strix::cuda {
namespace {

class CudaFlashPrefill : public CudaFixture {
 protected:
  CudaFlashPrefill() : CudaFixture(4242) {}
};

struct Heads {
  int n_head, n_kv, hd;
};

double r16(float f) { return static_cast<double>(fp16_to_fp32(fp32_to_fp16(f))); }

// max |got - ref| and ||got - ref|| / ||ref|| (NaN in got: infinity)
struct Err {
  double max_abs = 0, rel = 0;
};
Err compare(const std::vector<float>& got, const std::vector<double>& ref) {
  Err e;
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(got[i])) return {INFINITY, INFINITY};
    const double d = got[i] - ref[i];
    e.max_abs = std::max(e.max_abs, std::fabs(d));
    num += d * d;
    den += ref[i] * ref[i];
  }
  e.rel = std::sqrt(num / den);
  return e;
}

TEST_F(CudaFlashPrefill, MatchesTheReferenceAndAttentionKernel) {
  constexpr double kMaxAbs = 2e-3, kRel = 1e-3;
  const int cap = 320, n_seq = 3, earlier = 70;
  // this batch: seq 0 at 70..219 (after 0..69 stored by an earlier batch), seq 1 at 0..36, seq 2 at 0..4
  std::vector<int32_t> pos, seq;
  for (int p = earlier; p < 220; ++p) pos.push_back(p), seq.push_back(0);
  for (int p = 0; p < 37; ++p) pos.push_back(p), seq.push_back(1);
  for (int p = 0; p < 5; ++p) pos.push_back(p), seq.push_back(2);
  const int n = static_cast<int>(pos.size());
  std::vector<int32_t> pos0, seq0;
  for (int p = 0; p < earlier; ++p) pos0.push_back(p), seq0.push_back(0);

  for (const Heads hc :
       {Heads{32, 8, 128}, Heads{32, 8, 64}, Heads{8, 4, 32}, Heads{12, 4, 64}, Heads{4, 4, 128}, Heads{16, 2, 32}}) {
    SCOPED_TRACE("heads " + std::to_string(hc.n_head) + "/" + std::to_string(hc.n_kv) + " x " + std::to_string(hc.hd));
    ASSERT_TRUE(attention_prefill_fits(hc.hd, hc.hd));
    const int hd = hc.hd, G = hc.n_head / hc.n_kv;
    const int64_t kd = static_cast<int64_t>(hc.n_kv) * hd, qd = static_cast<int64_t>(hc.n_head) * hd;
    // the cache: NaN halves everywhere, then the earlier batch and this one stored
    DevMem kc = poisoned_bytes(sizeof(uint16_t) * n_seq * cap * kd),
           vc = poisoned_bytes(sizeof(uint16_t) * n_seq * cap * kd);
    const KvLayout kv{kc.as<uint16_t>(), vc.as<uint16_t>(), kd, kd, cap};
    const auto k0 = randn(earlier * kd), v0 = randn(earlier * kd);
    const auto k = randn(n * kd), v = randn(n * kd), q = randn(n * qd, 1.5f);
    DevMem dk0 = up(k0), dv0 = up(v0), dp0 = up(pos0), ds0 = up(seq0);
    DevMem dk = up(k), dv = up(v), dq = up(q), dp = up(pos), ds = up(seq);
    kv_store(kv, dk0.as<float>(), kd, dv0.as<float>(), kd, earlier, dp0.as<int32_t>(), ds0.as<int32_t>(), st());
    kv_store(kv, dk.as<float>(), kd, dv.as<float>(), kd, n, dp.as<int32_t>(), ds.as<int32_t>(), st());

    // the cells as the host sees them: (seq, pos) -> row of k / v
    auto krow = [&](int s, int p) -> const float* {
      if (s == 0 && p < earlier) return k0.data() + p * kd;
      for (int u = 0; u < n; ++u)
        if (seq[u] == s && pos[u] == p) return k.data() + u * kd;
      return nullptr;
    };
    auto vrow = [&](int s, int p) -> const float* {
      if (s == 0 && p < earlier) return v0.data() + p * kd;
      for (int u = 0; u < n; ++u)
        if (seq[u] == s && pos[u] == p) return v.data() + u * kd;
      return nullptr;
    };
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    // reference of every token over cells [0, last[t]] of its sequence
    auto reference = [&](const std::vector<int32_t>& last) {
      std::vector<double> ref(n * qd);
      for (int t = 0; t < n; ++t) {
        for (int h = 0; h < hc.n_head; ++h) {
          const int kvh = h / G;
          std::vector<double> s(last[t] + 1);
          double mx = -1e300;
          for (int c = 0; c <= last[t]; ++c) {
            const float* kr = krow(seq[t], c);
            double dot = 0;
            for (int i = 0; i < hd; ++i) dot += r16(q[t * qd + h * hd + i]) * r16(kr[kvh * hd + i]);
            s[c] = dot * scale;
            mx = std::max(mx, s[c]);
          }
          double sum = 0;
          for (double& e : s) sum += (e = std::exp(e - mx));
          for (double& e : s) e = r16(static_cast<float>(e / sum));
          for (int i = 0; i < hd; ++i) {
            double o = 0;
            for (int c = 0; c <= last[t]; ++c) o += s[c] * r16(vrow(seq[t], c)[kvh * hd + i]);
            ref[t * qd + h * hd + i] = o;
          }
        }
      }
      return ref;
    };
    const std::vector<double> ref = reference(pos);

    AttnArgs a;
    a.q = dq.as<float>();
    a.q_stride = qd;
    a.pos = dp.as<int32_t>();
    a.seq = ds.as<int32_t>();
    a.n_tokens = n;
    a.n_head = hc.n_head;
    a.n_head_kv = hc.n_kv;
    a.head_dim_k = a.head_dim_v = hd;
    a.kq_scale = scale;
    a.max_cells = 220;
    a.out_stride = qd;
    auto run = [&](bool flash, const DevMem& d_pos) {
      DevMem out = poisoned_bytes(sizeof(float) * n * qd);
      AttnArgs b = a;
      b.pos = d_pos.as<int32_t>();
      b.out = out.as<float>();
      if (flash) {
        attention_prefill(kv, b, st());
      } else {
        attention(kv, b, st());
      }
      return down<float>(out, n * qd);
    };
    const auto got = run(true, dp);
    const Err e = compare(got, ref);
    EXPECT_LE(e.max_abs, kMaxAbs);
    EXPECT_LE(e.rel, kRel);
    std::printf("  heads %d/%d x %d: flash vs reference max |d| %.3g, rel %.3g\n", hc.n_head, hc.n_kv, hd, e.max_abs,
                e.rel);
    // a second launch gives the same bits
    const auto again = run(true, dp);
    EXPECT_EQ(0, std::memcmp(got.data(), again.data(), sizeof(float) * got.size())) << "two launches differ";
    // against attention() on the same cache
    const auto plain = run(false, dp);
    std::vector<double> plain_d(plain.begin(), plain.end());
    const Err ep = compare(got, plain_d);
    EXPECT_LE(ep.max_abs, kMaxAbs);
    EXPECT_LE(ep.rel, kRel);
    const Err eplain = compare(plain, ref);
    std::printf(
        "  heads %d/%d x %d: flash vs attention() max |d| %.3g, rel %.3g; attention() vs reference %.3g, %.3g\n",
        hc.n_head, hc.n_kv, hd, ep.max_abs, ep.rel, eplain.max_abs, eplain.rel);

    // negative controls: the causal boundary one cell early; no causal mask (every token sees its sequence's batch)
    std::vector<int32_t> early(pos), all(pos);
    for (int t = 0; t < n; ++t) {
      early[t] = std::max(0, pos[t] - 1);
      int mx = 0;
      for (int u = 0; u < n; ++u)
        if (seq[u] == seq[t]) mx = std::max(mx, pos[u]);
      all[t] = mx;
    }
    DevMem d_early = up(early), d_all = up(all);
    for (const auto* ctrl : {&d_early, &d_all}) {
      const Err ec = compare(run(true, *ctrl), ref);
      EXPECT_TRUE(ec.max_abs > kMaxAbs && ec.rel > kRel)
          << "a wrong mask passed the check: max |d| " << ec.max_abs << ", rel " << ec.rel;
    }
  }
}

// activations_f16 == to_f16(round_activations(x)) bit for bit, for every
// partner type, strided input rows, a zero block and a magnitude tie of
// opposite signs in a Q8_K block (the first one sets the scale).
TEST_F(CudaFlashPrefill, ActivationsF16EqualRoundThenConvert) {
  const int n = 37;
  for (const int64_t width : {int64_t{512}, int64_t{768}}) {
    const int64_t xs = width + 64;
    auto x = randn(n * xs, 2.0f);
    for (int64_t i = 0; i < 256; ++i) x[3 * xs + i] = 0.0f;  // row 3: a zero block (Q8_K) / eight (Q8_0)
    x[5 * xs + 10] = 7.5f, x[5 * xs + 200] = -7.5f;          // row 5: a tie, + first
    x[6 * xs + 10] = -7.5f, x[6 * xs + 200] = 7.5f;          // row 6: a tie, - first
    DevMem dx = up(x);
    for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_1, GgmlType::Q4_K,
                       GgmlType::Q6_K}) {
      SCOPED_TRACE(std::string(type_name(static_cast<uint32_t>(t))) + " rows of " + std::to_string(width));
      DevMem rounded = poisoned_bytes(sizeof(float) * n * width);
      DevMem ref16 = poisoned_bytes(sizeof(uint16_t) * n * width), got16 = poisoned_bytes(sizeof(uint16_t) * n * width);
      if (round_activations(t, dx.as<float>(), xs, n, width, rounded.as<float>(), width, st())) {
        to_f16(rounded.as<float>(), width, n, width, ref16.as<uint16_t>(), st());
      } else {
        to_f16(dx.as<float>(), xs, n, width, ref16.as<uint16_t>(), st());
      }
      activations_f16(t, dx.as<float>(), xs, n, width, got16.as<uint16_t>(), st());
      const auto ref = down<uint16_t>(ref16, n * width), got = down<uint16_t>(got16, n * width);
      size_t bad = 0;
      for (size_t i = 0; i < ref.size(); ++i) bad += ref[i] != got[i];
      EXPECT_EQ(bad, 0u);
      if (t == GgmlType::Q4_K) {  // not vacuous: the rounding changed values the plain conversion keeps
        DevMem plain = poisoned_bytes(sizeof(uint16_t) * n * width);
        to_f16(dx.as<float>(), xs, n, width, plain.as<uint16_t>(), st());
        const auto p = down<uint16_t>(plain, n * width);
        size_t diff = 0;
        for (size_t i = 0; i < p.size(); ++i) diff += p[i] != got[i];
        EXPECT_GT(diff, ref.size() / 2);
      }
    }
  }
}

// activations_f16_swiglu == to_f16(round_activations(swiglu(gate, up))) bit for bit.
TEST_F(CudaFlashPrefill, ActivationsF16SwigluEqualSwigluRoundThenConvert) {
  const int n = 19;
  const int64_t width = 768, gs = 2 * width;  // gate | up rows, as the merged GEMM writes them
  const auto gu = randn(n * gs, 3.0f);
  DevMem dgu = up(gu);
  const float* g = dgu.as<float>();
  const float* u = g + width;
  for (GgmlType t : {GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q6_K}) {
    SCOPED_TRACE(type_name(static_cast<uint32_t>(t)));
    DevMem act = poisoned_bytes(sizeof(float) * n * width), rounded = poisoned_bytes(sizeof(float) * n * width);
    DevMem ref16 = poisoned_bytes(sizeof(uint16_t) * n * width), got16 = poisoned_bytes(sizeof(uint16_t) * n * width);
    swiglu(g, gs, u, gs, act.as<float>(), width, n, width, st());
    ASSERT_TRUE(round_activations(t, act.as<float>(), width, n, width, rounded.as<float>(), width, st()));
    to_f16(rounded.as<float>(), width, n, width, ref16.as<uint16_t>(), st());
    activations_f16_swiglu(t, g, gs, u, gs, n, width, got16.as<uint16_t>(), st());
    const auto ref = down<uint16_t>(ref16, n * width), got = down<uint16_t>(got16, n * width);
    size_t bad = 0;
    for (size_t i = 0; i < ref.size(); ++i) bad += ref[i] != got[i];
    EXPECT_EQ(bad, 0u);
    // not vacuous: the gate alone (no SwiGLU) gives other values
    activations_f16(t, g, gs, n, width, got16.as<uint16_t>(), st());
    const auto plain = down<uint16_t>(got16, n * width);
    size_t diff = 0;
    for (size_t i = 0; i < ref.size(); ++i) diff += ref[i] != plain[i];
    EXPECT_GT(diff, ref.size() / 2);
  }
}

// The forward's choice: head sizes 32, 64, 128 with K and V equal.
TEST(CudaFlashPrefillFits, HeadSizes) {
  EXPECT_TRUE(attention_prefill_fits(128, 128));
  EXPECT_TRUE(attention_prefill_fits(64, 64));
  EXPECT_TRUE(attention_prefill_fits(32, 32));
  EXPECT_FALSE(attention_prefill_fits(8, 8));
  EXPECT_FALSE(attention_prefill_fits(256, 256));
  EXPECT_FALSE(attention_prefill_fits(128, 64));
}

}  // namespace
}  // namespace strix::cuda

#else

TEST(CudaFlashPrefill, SkippedWithoutCudaBackend) { GTEST_SKIP() << "built with STRIX_CUDA=OFF"; }

#endif
