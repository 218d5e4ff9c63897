// The fused decode kernels against the unfused sequences they replace, and
// their quantized activations against the CPU partner quantizer applied to
// the GPU's own unquantized values (bit for bit). Each check has a negative
// control. Skips without a CUDA backend or GPU (CI).
#include <gtest/gtest.h>

#if STRIX_HAVE_CUDA

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/kernels.h"
#include "backend/cuda/cuda_context.h"
#include "backend/cuda/device.h"
#include "backend/cuda/kernels.h"
#include "backend_cuda/cuda_fixture.h"
#include "core/error.h"
#include "quant/types.h"

namespace strix::cuda {
namespace {

class CudaFused : public CudaFixture {
 protected:
  CudaFused() : CudaFixture(777) {}
  DevMem poisoned(size_t bytes) { return poisoned_bytes(bytes); }
  // The CPU partner quantizer of weight type t applied to rows of `width`, dequantized.
  static std::vector<float> cpu_quantized(GgmlType t, const std::vector<float>& x, int n, int64_t width) {
    const cpu::CpuKernels& k = cpu::cpu_kernels();
    const GgmlType vdt = k.vec_dot_type[static_cast<uint32_t>(t)];
    const size_t rs = row_size(vdt, width);
    std::vector<uint8_t> q(rs);
    std::vector<float> out(n * width);
    for (int r = 0; r < n; ++r) {
      k.quantize_act[static_cast<uint32_t>(vdt)](x.data() + r * width, q.data(), width);
      type_traits(vdt).to_float(q.data(), out.data() + r * width, width);
    }
    return out;
  }
  static std::vector<float> dequant(const std::vector<int8_t>& q, const std::vector<float>& d, int blk) {
    std::vector<float> v(q.size());
    for (size_t i = 0; i < q.size(); ++i) v[i] = d[i / blk] * static_cast<float>(q[i]);
    return v;
  }
};

// x_out = x + y; out = rms_norm(x_out) * w; q/d = out quantized. x_out and
// out equal add_rms_norm's, q*d equals the CPU quantizer of out, for Q8_0 and
// Q8_K partners, with and without the add (a row of 800: a part chunk).
TEST_F(CudaFused, RmsNormQuantEqualsAddRmsNormThenTheCpuQuantizer) {
  const int n = 3;
  for (int64_t dim : {2048, 4096, 768, 800, 12288}) {
    for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q4_K}) {
      if (dim % gemv_q_block(t) != 0) continue;
      for (bool with_add : {true, false}) {
        const auto x = randn(n * dim), y = randn(n * dim), w = randn(dim);
        DevMem dx = up(x), dy = up(y), dw = up(w), dx2 = up(x), dy2 = up(y), dxo = poisoned(sizeof(float) * n * dim);
        DevMem out = poisoned(sizeof(float) * n * dim), ref = poisoned(sizeof(float) * n * dim);
        DevMem q = poisoned(n * dim), d = poisoned(sizeof(float) * n * dim / 32);
        rms_norm_quant(dx.as<float>(), with_add ? dy.as<float>() : nullptr, dxo.as<float>(), n, dim, dw.as<float>(),
                       1e-5f, out.as<float>(), t, q.as<int8_t>(), d.as<float>(), st());
        if (with_add) {
          add_rms_norm(dx2.as<float>(), dy2.as<float>(), ref.as<float>(), n, dim, dw.as<float>(), 1e-5f, st());
        } else {
          rms_norm(dx2.as<float>(), n, dim, dim, ref.as<float>(), dim, dw.as<float>(), 1e-5f, st());
        }
        const auto got = down<float>(out, n * dim), want = down<float>(ref, n * dim);
        // the residual sum lands in x_out (x itself is left alone)
        const auto gx = down<float>(with_add ? dxo : dx, n * dim), wx = down<float>(dx2, n * dim);
        const auto x_after = down<float>(dx, n * dim);
        int differ = 0;
        for (int64_t i = 0; i < n * dim; ++i) {
          ASSERT_EQ(x_after[i], x[i]) << i;
          ASSERT_EQ(gx[i], wx[i]) << i;
          ASSERT_NEAR(got[i], want[i], 1e-6f * (1 + std::fabs(want[i]))) << i;
          differ += got[i] != want[i];
        }
        EXPECT_LE(differ, n * dim / 100) << "the double sums should almost always round alike";
        const int blk = gemv_q_block(t);
        const auto gq = dequant(down<int8_t>(q, n * dim), down<float>(d, n * dim / blk), blk);
        const auto cq = cpu_quantized(t, got, n, dim);
        for (int64_t i = 0; i < n * dim; ++i) ASSERT_EQ(gq[i], cq[i]) << "dim " << dim << " element " << i;
        // negative control: the quantizer of another row's values differs
        std::vector<float> shifted(got.begin() + dim, got.end());
        shifted.insert(shifted.end(), got.begin(), got.begin() + dim);
        const auto other = cpu_quantized(t, shifted, n, dim);
        int miss = 0;
        for (int64_t i = 0; i < n * dim; ++i) miss += gq[i] != other[i];
        EXPECT_GT(miss, 0);
      }
    }
  }
}

// swiglu_quant: out equals swiglu()'s bit for bit, q*d the CPU quantizer of it.
TEST_F(CudaFused, SwigluQuantEqualsSwigluThenTheCpuQuantizer) {
  const int n = 5;
  const int64_t ff = 1536;
  for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q6_K}) {
    const auto g = randn(n * ff, 2.0f), u = randn(n * ff);
    DevMem dg = up(g), du = up(u);
    DevMem out = poisoned(sizeof(float) * n * ff), ref = poisoned(sizeof(float) * n * ff);
    DevMem q = poisoned(n * ff), d = poisoned(sizeof(float) * n * ff / 32);
    swiglu_quant(t, dg.as<float>(), ff, du.as<float>(), ff, n, ff, q.as<int8_t>(), d.as<float>(), out.as<float>(), ff,
                 st());
    swiglu(dg.as<float>(), ff, du.as<float>(), ff, ref.as<float>(), ff, n, ff, st());
    const auto got = down<float>(out, n * ff), want = down<float>(ref, n * ff);
    for (int64_t i = 0; i < n * ff; ++i) ASSERT_EQ(got[i], want[i]) << i;
    const int blk = gemv_q_block(t);
    const auto gq = dequant(down<int8_t>(q, n * ff), down<float>(d, n * ff / blk), blk);
    const auto cq = cpu_quantized(t, want, n, ff);
    for (int64_t i = 0; i < n * ff; ++i) ASSERT_EQ(gq[i], cq[i]) << "element " << i;
    // negative control: the plain quantizer of the gate alone differs
    const auto wrong = cpu_quantized(t, g, n, ff);
    int miss = 0;
    for (int64_t i = 0; i < n * ff; ++i) miss += gq[i] != wrong[i];
    EXPECT_GT(miss, n * ff / 2);
  }
}

// gemv_q_multi over q/k/v-like weights of mixed types equals one gemv_q per weight, bit for bit.
TEST_F(CudaFused, GemvQMultiEqualsOneLaunchPerWeight) {
  const int64_t ne0 = 1024;
  struct M {
    GgmlType t;
    int64_t rows;
  };
  const M ms[3] = {{GgmlType::Q4_K, 67}, {GgmlType::Q4_K, 16}, {GgmlType::Q6_K, 21}};
  std::vector<DevMem> ws;
  std::vector<DevWeight> dws;
  for (const M& m : ms) {
    const size_t nb1 = row_size(m.t, ne0);
    std::vector<uint8_t> bytes(nb1 * m.rows);
    const auto src = randn(ne0 * m.rows);
    for (int64_t r = 0; r < m.rows; ++r)
      type_traits(m.t).from_float_ref(src.data() + r * ne0, bytes.data() + r * nb1, ne0);
    ws.push_back(up(bytes));
    dws.push_back({m.t, ne0, m.rows, nb1, ws.back().as<uint8_t>()});
  }
  for (int n : {1, 3, 8, 11}) {
    const auto x = randn(n * ne0);
    DevMem dx = up(x);
    DevMem q = poisoned(n * ne0), d = poisoned(sizeof(float) * n * ne0 / 256);
    quantize_act(GgmlType::Q4_K, dx.as<float>(), ne0, n, ne0, q.as<int8_t>(), d.as<float>(), st());
    std::vector<DevMem> ys, refs;
    GemvOut outs[3];
    for (int i = 0; i < 3; ++i) {
      ys.push_back(poisoned(sizeof(float) * n * ms[i].rows));
      refs.push_back(poisoned(sizeof(float) * n * ms[i].rows));
      outs[i] = {&dws[i], ys[i].as<float>(), ms[i].rows};
      gemv_q(dws[i], q.as<int8_t>(), d.as<float>(), n, refs[i].as<float>(), ms[i].rows, st());
    }
    gemv_q_multi(outs, 3, q.as<int8_t>(), d.as<float>(), n, st());
    for (int i = 0; i < 3; ++i) {
      const auto got = down<float>(ys[i], n * ms[i].rows), want = down<float>(refs[i], n * ms[i].rows);
      for (size_t j = 0; j < got.size(); ++j) ASSERT_EQ(got[j], want[j]) << "weight " << i << " n " << n << " " << j;
      if (i > 0) {  // negative control: another weight's outputs differ
        const auto prev = down<float>(refs[i - 1], n * ms[i - 1].rows);
        int same = 0;
        for (size_t j = 0; j < std::min(got.size(), prev.size()); ++j) same += got[j] == prev[j];
        EXPECT_LT(same, 3);
      }
    }
  }
  // weights of different row lengths cannot share a launch
  DevWeight other = dws[0];
  other.ne0 = 512;
  GemvOut bad[2] = {{&dws[0], nullptr, 0}, {&other, nullptr, 0}};
  EXPECT_THROW(gemv_q_multi(bad, 2, nullptr, nullptr, 1, st()), Error);
}

// rope_kv_store equals rope(q), rope(k), kv_store(k, v) bit for bit, for
// both modes and a partial rotation (n_rot < head_dim).
TEST_F(CudaFused, RopeKvStoreEqualsRopeThenKvStore) {
  const int n_head = 4, n_kv = 2, hd = 64, cap = 12;
  const int64_t qd = n_head * hd, kd = n_kv * hd;
  const std::vector<int32_t> pos = {3, 4, 0, 7}, seq = {0, 0, 1, 1};
  const int n = static_cast<int>(pos.size());
  for (RopeMode mode : {RopeMode::kNorm, RopeMode::kNeox}) {
    for (int n_rot : {hd, hd / 2}) {
      RopeParams rp;
      rp.mode = mode;
      rp.n_rot = n_rot;
      rp.freq_base = 10000.0f;
      const auto q = randn(n * qd), k = randn(n * kd), v = randn(n * kd);
      DevMem dq = up(q), dk = up(k), dv = up(v), dq2 = up(q), dk2 = up(k), dp = up(pos), ds = up(seq);
      const size_t cells = sizeof(uint16_t) * 2 * cap * kd;
      DevMem kc = poisoned(cells), vc = poisoned(cells), kc2 = poisoned(cells), vc2 = poisoned(cells);
      const KvLayout kv{kc.as<uint16_t>(), vc.as<uint16_t>(), kd, kd, cap};
      const KvLayout kv2{kc2.as<uint16_t>(), vc2.as<uint16_t>(), kd, kd, cap};
      rope_kv_store(dq.as<float>(), qd, dk.as<float>(), kd, dv.as<float>(), kd, n, n_head, n_kv, hd, dp.as<int32_t>(),
                    ds.as<int32_t>(), rp, nullptr, kv, st());
      rope(dq2.as<float>(), n, n_head, hd, qd, dp.as<int32_t>(), rp, nullptr, st());
      rope(dk2.as<float>(), n, n_kv, hd, kd, dp.as<int32_t>(), rp, nullptr, st());
      kv_store(kv2, dk2.as<float>(), kd, dv.as<float>(), kd, n, dp.as<int32_t>(), ds.as<int32_t>(), st());
      const auto gq = down<float>(dq, n * qd), wq = down<float>(dq2, n * qd);
      for (int64_t i = 0; i < n * qd; ++i) ASSERT_EQ(gq[i], wq[i]) << "q " << i;
      const auto gk = down<uint16_t>(kc, cells / 2), wk = down<uint16_t>(kc2, cells / 2);
      const auto gv = down<uint16_t>(vc, cells / 2), wv = down<uint16_t>(vc2, cells / 2);
      for (int t = 0; t < n; ++t) {
        const int64_t cell = static_cast<int64_t>(seq[t]) * cap + pos[t];
        for (int64_t i = 0; i < kd; ++i) {
          ASSERT_EQ(gk[cell * kd + i], wk[cell * kd + i]) << "k cell " << cell << " dim " << i;
          ASSERT_EQ(gv[cell * kd + i], wv[cell * kd + i]) << "v cell " << cell << " dim " << i;
        }
      }
      // negative control: the cache of the unrotated k differs
      DevMem dk3 = up(k), kc3 = poisoned(cells), vc3 = poisoned(cells);
      const KvLayout kv3{kc3.as<uint16_t>(), vc3.as<uint16_t>(), kd, kd, cap};
      kv_store(kv3, dk3.as<float>(), kd, dv.as<float>(), kd, n, dp.as<int32_t>(), ds.as<int32_t>(), st());
      const auto uk = down<uint16_t>(kc3, cells / 2);
      int miss = 0;
      for (int t = 1; t < n; ++t) {  // position 0 is not rotated
        const int64_t cell = static_cast<int64_t>(seq[t]) * cap + pos[t];
        for (int64_t i = 0; i < kd; ++i) miss += uk[cell * kd + i] != gk[cell * kd + i];
      }
      EXPECT_GT(miss, 0);
    }
  }
}

// attention_decode (one token: RoPE, KV store, attention, the o-projection's
// quantizer) equals rope_kv_store, attention and quantize_act bit for bit:
// the cache, the attention output and the quantized row, for head groups of
// 1, 4 and 8, both RoPE modes, a partial rotation, and Q8_K / Q8_0 / no
// quantization, over a cache already holding other cells of two sequences.
TEST_F(CudaFused, AttentionDecodeEqualsRopeKvStoreAttentionQuantize) {
  struct Case {
    int n_head, n_kv, hd, n_rot;
    RopeMode mode;
    GgmlType wo;  // F32: not quantized
  };
  const Case cases[] = {{8, 2, 64, 64, RopeMode::kNorm, GgmlType::Q4_K},
                        {8, 2, 128, 64, RopeMode::kNeox, GgmlType::Q8_0},
                        {4, 4, 64, 64, RopeMode::kNorm, GgmlType::Q8_0},
                        {16, 2, 64, 64, RopeMode::kNeox, GgmlType::Q6_K},
                        {4, 2, 96, 96, RopeMode::kNorm, GgmlType::F32}};
  const int cap = 40, p = 23, sq = 1;
  for (const Case& cs : cases) {
    const int64_t qd = cs.n_head * cs.hd, kd = cs.n_kv * cs.hd;
    RopeParams rp;
    rp.mode = cs.mode;
    rp.n_rot = cs.n_rot;
    rp.freq_base = 10000.0f;
    // cells 0 .. p - 1 of both sequences hold earlier tokens (the same in both caches)
    std::vector<int32_t> pos0, seq0;
    for (int s = 0; s < 2; ++s)
      for (int c = 0; c < p; ++c) pos0.push_back(c), seq0.push_back(s);
    const int n0 = static_cast<int>(pos0.size());
    const auto k0 = randn(n0 * kd), v0 = randn(n0 * kd);
    const size_t cells = sizeof(uint16_t) * 2 * cap * kd;
    DevMem kc = poisoned(cells), vc = poisoned(cells), kc2 = poisoned(cells), vc2 = poisoned(cells);
    const KvLayout kv{kc.as<uint16_t>(), vc.as<uint16_t>(), kd, kd, cap};
    const KvLayout kv2{kc2.as<uint16_t>(), vc2.as<uint16_t>(), kd, kd, cap};
    DevMem dk0 = up(k0), dv0 = up(v0), dp0 = up(pos0), ds0 = up(seq0);
    kv_store(kv, dk0.as<float>(), kd, dv0.as<float>(), kd, n0, dp0.as<int32_t>(), ds0.as<int32_t>(), st());
    kv_store(kv2, dk0.as<float>(), kd, dv0.as<float>(), kd, n0, dp0.as<int32_t>(), ds0.as<int32_t>(), st());

    const auto q = randn(qd), k = randn(kd), v = randn(kd);
    const std::vector<int32_t> pos = {p}, seq = {sq};
    DevMem dq = up(q), dk = up(k), dv = up(v), dq2 = up(q), dk2 = up(k), dp = up(pos), ds = up(seq);
    const bool quant = cs.wo != GgmlType::F32;
    const int blk = quant ? gemv_q_block(cs.wo) : 0;
    DevMem out = poisoned(sizeof(float) * qd), ref = poisoned(sizeof(float) * qd);
    DevMem q8 = poisoned(qd), d8 = poisoned(sizeof(float) * qd / 32);
    DevMem q8r = poisoned(qd), d8r = poisoned(sizeof(float) * qd / 32);

    ASSERT_TRUE(attention_decode_fits(cs.n_head, cs.n_kv, cs.hd, cs.hd, cap));
    AttnDecode ad = decode_args(dq, dk, dv, dp, ds, cs.n_head, cs.n_kv, cs.hd, cap, out);
    if (quant) ad.q8 = q8.as<int8_t>(), ad.d8 = d8.as<float>(), ad.q8_block = blk;
    attention_decode(ad, rp, nullptr, kv, st());

    rope_kv_store(dq2.as<float>(), qd, dk2.as<float>(), kd, dv.as<float>(), kd, 1, cs.n_head, cs.n_kv, cs.hd,
                  dp.as<int32_t>(), ds.as<int32_t>(), rp, nullptr, kv2, st());
    AttnArgs a;
    a.q = dq2.as<float>();
    a.q_stride = qd;
    a.pos = dp.as<int32_t>();
    a.seq = ds.as<int32_t>();
    a.n_tokens = 1;
    a.n_head = cs.n_head;
    a.n_head_kv = cs.n_kv;
    a.head_dim_k = a.head_dim_v = cs.hd;
    a.kq_scale = ad.kq_scale;
    a.max_cells = cap;
    a.out = ref.as<float>();
    a.out_stride = qd;
    attention(kv2, a, st());
    if (quant) quantize_act(cs.wo, ref.as<float>(), qd, 1, qd, q8r.as<int8_t>(), d8r.as<float>(), st());

    const auto gk = down<uint16_t>(kc, cells / 2), wk = down<uint16_t>(kc2, cells / 2);
    const auto gv = down<uint16_t>(vc, cells / 2), wv = down<uint16_t>(vc2, cells / 2);
    for (size_t i = 0; i < gk.size(); ++i) {
      ASSERT_EQ(gk[i], wk[i]) << "k cache " << i << " heads " << cs.n_head;
      ASSERT_EQ(gv[i], wv[i]) << "v cache " << i << " heads " << cs.n_head;
    }
    const auto got = down<float>(out, qd), want = down<float>(ref, qd);
    for (int64_t i = 0; i < qd; ++i) ASSERT_EQ(got[i], want[i]) << "output " << i << " heads " << cs.n_head;
    if (quant) {
      const auto gq = down<int8_t>(q8, qd), wq = down<int8_t>(q8r, qd);
      const auto gd = down<float>(d8, qd / blk), wd = down<float>(d8r, qd / blk);
      for (int64_t i = 0; i < qd; ++i) ASSERT_EQ(gq[i], wq[i]) << "quant " << i;
      for (int64_t i = 0; i < qd / blk; ++i) ASSERT_EQ(gd[i], wd[i]) << "scale " << i;
    }
    // negative control: attention at the previous position (the new cell not attended) differs
    std::vector<int32_t> prev = {p - 1};
    DevMem dprev = up(prev), other = poisoned(sizeof(float) * qd);
    a.pos = dprev.as<int32_t>();
    a.out = other.as<float>();
    attention(kv2, a, st());
    const auto oth = down<float>(other, qd);
    int same = 0;
    for (int64_t i = 0; i < qd; ++i) same += oth[i] == got[i];
    EXPECT_LT(same, qd / 10);
  }
  EXPECT_FALSE(attention_decode_fits(6, 2, 64, 64, 16));       // groups of 3 heads
  EXPECT_FALSE(attention_decode_fits(8, 2, 64, 64, 1 << 20));  // scores beyond shared memory
  AttnDecode bad;
  bad.n_head = 6, bad.n_head_kv = 2, bad.head_dim_k = bad.head_dim_v = 64, bad.max_cells = 16;
  EXPECT_THROW(attention_decode(bad, RopeParams{}, nullptr, KvLayout{}, st()), Error);
}

// attention_decode over a long context cut into splits (flash-decoding: each
// split's max, exp-sum and unnormalized P·V, combined by the KV head's last
// block) against the same kernel with one block per KV head (itself equal to
// the unfused kernels bit for bit, above): the cache bit for bit, the output
// within the one-block path's f16 rounding of the probabilities, the same
// result on a second launch (the counters were reset), and with the token
// early in a large cache (one split active) bit for bit. Negative control: a
// cell of the first split changed must change the output.
TEST_F(CudaFused, AttentionDecodeSplitsEqualOneBlock) {
  struct Case {
    int n_head, n_kv, hd;
    GgmlType wo;
  };
  const Case cases[] = {{32, 8, 128, GgmlType::Q4_K}, {8, 2, 64, GgmlType::Q8_0}, {16, 2, 64, GgmlType::F32}};
  const int cap = 3000;
  for (const Case& cs : cases) {
    for (const int p : {2600, 100}) {
      const int64_t qd = cs.n_head * cs.hd, kd = cs.n_kv * cs.hd;
      RopeParams rp;
      rp.n_rot = cs.hd;
      rp.freq_base = 10000.0f;
      std::vector<int32_t> pos0, seq0;
      for (int c = 0; c < p; ++c) pos0.push_back(c), seq0.push_back(0);
      const auto k0 = randn(p * kd), v0 = randn(p * kd);
      const size_t cells = sizeof(uint16_t) * cap * kd;
      DevMem kc = poisoned(cells), vc = poisoned(cells), kc2 = poisoned(cells), vc2 = poisoned(cells);
      const KvLayout kv{kc.as<uint16_t>(), vc.as<uint16_t>(), kd, kd, cap};
      const KvLayout kv2{kc2.as<uint16_t>(), vc2.as<uint16_t>(), kd, kd, cap};
      DevMem dk0 = up(k0), dv0 = up(v0), dp0 = up(pos0), ds0 = up(seq0);
      kv_store(kv, dk0.as<float>(), kd, dv0.as<float>(), kd, p, dp0.as<int32_t>(), ds0.as<int32_t>(), st());
      kv_store(kv2, dk0.as<float>(), kd, dv0.as<float>(), kd, p, dp0.as<int32_t>(), ds0.as<int32_t>(), st());
      // sharper scores than unit normals give, so that a few cells dominate as in a trained model
      auto q = randn(qd);
      for (float& x : q) x *= 4.0f;
      const auto k = randn(kd), v = randn(kd);
      const std::vector<int32_t> pos = {p}, seq = {0};
      DevMem dq = up(q), dk = up(k), dv = up(v), dp = up(pos), ds = up(seq);
      const bool quant = cs.wo != GgmlType::F32;
      const int blk = quant ? gemv_q_block(cs.wo) : 0;
      const int max_split = 64;
      const int n_split = attention_decode_splits(cs.n_kv, cap, max_split);
      ASSERT_GT(n_split, 1);
      DevMem ml = poisoned(sizeof(float) * 2 * cs.n_head * max_split);
      DevMem so = poisoned(sizeof(float) * qd * max_split);
      DevMem cnt = up(std::vector<uint32_t>(cs.n_kv, 0));
      ASSERT_TRUE(attention_decode_fits(cs.n_head, cs.n_kv, cs.hd, cs.hd, cap, max_split));
      ASSERT_TRUE(attention_decode_fits(cs.n_head, cs.n_kv, cs.hd, cs.hd, cap));

      const auto run = [&](const KvLayout& cache, bool split, DevMem& out, DevMem& q8, DevMem& d8) {
        AttnDecode ad = decode_args(dq, dk, dv, dp, ds, cs.n_head, cs.n_kv, cs.hd, cap, out);
        if (quant) ad.q8 = q8.as<int8_t>(), ad.d8 = d8.as<float>(), ad.q8_block = blk;
        if (split) {
          ad.split_ml = ml.as<float>(), ad.split_o = so.as<float>(), ad.split_count = cnt.as<unsigned>();
          ad.max_split = max_split;
        }
        attention_decode(ad, rp, nullptr, cache, st());
      };
      DevMem out = poisoned(sizeof(float) * qd), out2 = poisoned(sizeof(float) * qd),
             ref = poisoned(sizeof(float) * qd);
      DevMem q8 = poisoned(qd), d8 = poisoned(sizeof(float) * qd / 32);
      DevMem q8r = poisoned(qd), d8r = poisoned(sizeof(float) * qd / 32);
      run(kv, true, out, q8, d8);
      run(kv2, false, ref, q8r, d8r);
      const auto gk = down<uint16_t>(kc, cells / 2), wk = down<uint16_t>(kc2, cells / 2);
      const auto gv = down<uint16_t>(vc, cells / 2), wv = down<uint16_t>(vc2, cells / 2);
      for (int64_t i = 0; i < static_cast<int64_t>(p + 1) * kd; ++i) {
        ASSERT_EQ(gk[i], wk[i]) << "k cache " << i;
        ASSERT_EQ(gv[i], wv[i]) << "v cache " << i;
      }
      const auto got = down<float>(out, qd), want = down<float>(ref, qd);
      float amax = 0;
      for (float x : want) amax = std::max(amax, std::fabs(x));
      const float tol = p > 256 ? 2e-3f * amax + 1e-6f : 0.0f;  // one active split: bit for bit
      for (int64_t i = 0; i < qd; ++i) ASSERT_NEAR(got[i], want[i], tol) << "output " << i << " p " << p;
      if (quant) {
        const auto gq = down<int8_t>(q8, qd), wq = down<int8_t>(q8r, qd);
        for (int64_t i = 0; i < qd; ++i) ASSERT_LE(std::abs(gq[i] - wq[i]), p > 256 ? 1 : 0) << "quant " << i;
      }
      // a second launch: the counters were left at zero, the result is the same bit for bit
      run(kv, true, out2, q8, d8);
      const auto again = down<float>(out2, qd);
      for (int64_t i = 0; i < qd; ++i) ASSERT_EQ(again[i], got[i]) << "second launch " << i;
      if (p > 256) {
        // negative control: the first split's cells (0 .. 255) rewritten with other values in the split run's cache
        const int n_first = 256;
        std::vector<int32_t> pf(pos0.begin(), pos0.begin() + n_first), sf(n_first, 0);
        const auto kf = randn(n_first * kd), vf = randn(n_first * kd);
        DevMem dkf = up(kf), dvf = up(vf), dpf = up(pf), dsf = up(sf);
        kv_store(kv, dkf.as<float>(), kd, dvf.as<float>(), kd, n_first, dpf.as<int32_t>(), dsf.as<int32_t>(), st());
        run(kv, true, out2, q8, d8);
        const auto changed = down<float>(out2, qd);
        int far = 0;
        for (int64_t i = 0; i < qd; ++i) far += std::fabs(changed[i] - want[i]) > tol;
        EXPECT_GT(far, qd / 4) << "the first split's cells do not reach the output";
      }
    }
  }
}

}  // namespace
}  // namespace strix::cuda

#else

TEST(CudaFused, SkippedWithoutCudaBackend) { GTEST_SKIP() << "built with STRIX_CUDA=OFF"; }

#endif
