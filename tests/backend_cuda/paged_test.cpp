// The KV cells through block tables (KvLayout::blocks, the paged cache the CUDA
// context uses) against the contiguous layout: kv_store, attention,
// attention_prefill and attention_decode (split and not) give the same outputs bit for
// bit when each sequence's 32-cell blocks sit at permuted places of the pool.
// Negative control: a table with two blocks swapped changes the attention.
// Skips without a CUDA backend or GPU (CI).
#include <gtest/gtest.h>

#if STRIX_HAVE_CUDA

#include <cmath>
#include <cstdint>
#include <vector>

#include "backend/cuda/device.h"
#include "backend/cuda/kernels.h"
#include "backend_cuda/cuda_fixture.h"
#include "ops/cpu_ops.h"

namespace strix::cuda {
namespace {

class CudaPaged : public CudaFixture {
 protected:
  CudaPaged() : CudaFixture(4242) {}
};

constexpr int kBs = 32, kShift = 5;

struct Layouts {
  DevMem kc, vc, kp, vp, table;
  KvLayout flat, paged;
};

TEST_F(CudaPaged, BlockTablesGiveTheContiguousResults) {
  const int n_head = 8, n_kv = 2, hd = 64, cap = 192;
  const int64_t qd = n_head * hd, kd = n_kv * hd;
  const int len[2] = {150, 70};
  // sequence 0 holds 5 blocks, sequence 1 three, scattered over a pool of 10
  const int max_blocks = 6;
  std::vector<int32_t> table = {7, 2, 9, 0, 4, -1, 5, 1, 8, -1, -1, -1};
  const size_t flat_cells = sizeof(uint16_t) * 2 * cap * kd, pool_cells = sizeof(uint16_t) * 10 * kBs * kd;

  auto make = [&](const std::vector<int32_t>& t) {
    Layouts l;
    l.kc = poisoned_bytes(flat_cells), l.vc = poisoned_bytes(flat_cells);
    l.kp = poisoned_bytes(pool_cells), l.vp = poisoned_bytes(pool_cells);
    l.table = up(t);
    l.flat = KvLayout{l.kc.as<uint16_t>(), l.vc.as<uint16_t>(), kd, kd, cap};
    l.paged = KvLayout{l.kp.as<uint16_t>(), l.vp.as<uint16_t>(), kd, kd, 0, l.table.as<int32_t>(), kShift, max_blocks};
    return l;
  };
  Layouts L = make(table);
  std::vector<int32_t> pos, seq;
  for (int s = 0; s < 2; ++s) {
    for (int c = 0; c < len[s]; ++c) pos.push_back(c), seq.push_back(s);
  }
  const int n_all = static_cast<int>(pos.size());
  const auto k = randn(n_all * kd), v = randn(n_all * kd);
  DevMem dk = up(k), dv = up(v), dp = up(pos), ds = up(seq);
  kv_store(L.flat, dk.as<float>(), kd, dv.as<float>(), kd, n_all, dp.as<int32_t>(), ds.as<int32_t>(), st());
  kv_store(L.paged, dk.as<float>(), kd, dv.as<float>(), kd, n_all, dp.as<int32_t>(), ds.as<int32_t>(), st());
  // every cell where the table puts it
  {
    const auto fk = down<uint16_t>(L.kc, flat_cells / 2), pk = down<uint16_t>(L.kp, pool_cells / 2);
    for (int i = 0; i < n_all; ++i) {
      const int64_t fc = static_cast<int64_t>(seq[i]) * cap + pos[i];
      const int64_t pc = static_cast<int64_t>(table[seq[i] * max_blocks + pos[i] / kBs]) * kBs + pos[i] % kBs;
      for (int64_t d = 0; d < kd; ++d) ASSERT_EQ(fk[fc * kd + d], pk[pc * kd + d]) << "cell " << i;
    }
  }

  // prefill-style attention of the last three tokens of each sequence
  std::vector<int32_t> qpos = {147, 148, 149, 67, 68, 69}, qseq = {0, 0, 0, 1, 1, 1};
  const int nq = static_cast<int>(qpos.size());
  auto q = randn(nq * qd);
  for (float& x : q) x *= 3.0f;
  DevMem dq = up(q), dqp = up(qpos), dqs = up(qseq);
  auto attend = [&](const KvLayout& kv, bool flash = false) {
    DevMem out = poisoned_bytes(sizeof(float) * nq * qd);
    AttnArgs a;
    a.q = dq.as<float>(), a.q_stride = qd, a.pos = dqp.as<int32_t>(), a.seq = dqs.as<int32_t>();
    a.n_tokens = nq, a.n_head = n_head, a.n_head_kv = n_kv, a.head_dim_k = a.head_dim_v = hd;
    a.kq_scale = 1.0f / std::sqrt(static_cast<float>(hd));
    a.max_cells = 150;
    a.out = out.as<float>(), a.out_stride = qd;
    if (flash) {
      attention_prefill(kv, a, st());
    } else {
      attention(kv, a, st());
    }
    return down<float>(out, nq * qd);
  };
  const auto want = attend(L.flat), got = attend(L.paged);
  for (int64_t i = 0; i < nq * qd; ++i) ASSERT_EQ(got[i], want[i]) << "attention output " << i;
  // the tensor-core prefill kernel reads its K/V tiles through the tables too
  ASSERT_TRUE(attention_prefill_fits(hd, hd));
  const auto fwant = attend(L.flat, true), fgot = attend(L.paged, true);
  for (int64_t i = 0; i < nq * qd; ++i) ASSERT_EQ(fgot[i], fwant[i]) << "attention_prefill output " << i;

  // one-token decode (RoPE, store, attention) at the end of sequence 1, without and with splits
  RopeParams rp;
  rp.n_rot = hd;
  rp.freq_base = 10000.0f;
  const auto q1 = randn(qd), k1 = randn(kd), v1 = randn(kd);
  const std::vector<int32_t> p1 = {70}, s1 = {1};
  DevMem dq1 = up(q1), dk1 = up(k1), dv1 = up(v1), dp1 = up(p1), ds1 = up(s1);
  for (int max_split : {1, 8}) {
    auto decode = [&](const KvLayout& kv) {
      DevMem out = poisoned_bytes(sizeof(float) * qd);
      DevMem ml = poisoned_bytes(sizeof(float) * 2 * n_head * 8), so = poisoned_bytes(sizeof(float) * qd * 8);
      DevMem cnt = up(std::vector<uint32_t>(n_kv, 0));
      AttnDecode ad = decode_args(dq1, dk1, dv1, dp1, ds1, n_head, n_kv, hd, cap, out);
      ad.min_chunk = 64;
      if (max_split > 1) {
        ad.split_ml = ml.as<float>(), ad.split_o = so.as<float>(), ad.split_count = cnt.as<unsigned>();
        ad.max_split = max_split;
      }
      attention_decode(ad, rp, nullptr, kv, st());
      return down<float>(out, qd);
    };
    ASSERT_TRUE(attention_decode_fits(n_head, n_kv, hd, hd, cap, max_split, 64));
    const auto dw = decode(L.flat), dg = decode(L.paged);
    for (int64_t i = 0; i < qd; ++i) ASSERT_EQ(dg[i], dw[i]) << "decode output " << i << " split " << max_split;
  }

  // negative control: two of sequence 0's blocks swapped in its table
  std::vector<int32_t> swapped = table;
  std::swap(swapped[1], swapped[3]);
  Layouts B = make(swapped);
  kv_store(B.flat, dk.as<float>(), kd, dv.as<float>(), kd, n_all, dp.as<int32_t>(), ds.as<int32_t>(), st());
  // the cells written through the right table, read through the swapped one
  check(cudaMemcpy(B.kp.as(), L.kp.as(), pool_cells, cudaMemcpyDeviceToDevice), "copy");
  check(cudaMemcpy(B.vp.as(), L.vp.as(), pool_cells, cudaMemcpyDeviceToDevice), "copy");
  const auto bad = attend(B.paged);
  int diff = 0;
  for (int64_t i = 0; i < 3 * qd; ++i) diff += bad[i] != want[i];  // sequence 0's queries
  EXPECT_GT(diff, 0);
}

// attention_decode over a batch of tokens, one of each of three sequences (the
// engine's batched decode): outputs, quantized rows and the cache equal three
// launches of one token each, bit for bit, with and without splits and the
// output quantizer. Negative control: two tokens' sequence ids swapped.
TEST_F(CudaPaged, BatchedDecodeEqualsOneLaunchPerToken) {
  const int n_head = 8, n_kv = 2, hd = 64, cap = 192, n = 3;
  const int64_t qd = n_head * hd, kd = n_kv * hd, qs = qd + 16, kvs = kd + 8;  // padded row strides
  const int len[n] = {150, 70, 40};
  const int max_blocks = 6;
  const std::vector<int32_t> table = {7, 2, 9, 0, 4, -1, 5, 1, 8, -1, -1, -1, 3, 6, -1, -1, -1, -1};
  const size_t pool = sizeof(uint16_t) * 10 * kBs * kd;
  RopeParams rp;
  rp.n_rot = hd;
  rp.freq_base = 10000.0f;
  std::vector<int32_t> pos, seq;
  for (int s = 0; s < n; ++s) {
    for (int c = 0; c < len[s]; ++c) pos.push_back(c), seq.push_back(s);
  }
  const auto k0 = randn(pos.size() * kd), v0 = randn(pos.size() * kd);
  DevMem dk0 = up(k0), dv0 = up(v0), dp0 = up(pos), ds0 = up(seq), tb = up(table);
  auto cache = [&](DevMem& kc, DevMem& vc) {
    kc = poisoned_bytes(pool), vc = poisoned_bytes(pool);
    const KvLayout kv{kc.as<uint16_t>(), vc.as<uint16_t>(), kd, kd, 0, tb.as<int32_t>(), kShift, max_blocks};
    kv_store(kv, dk0.as<float>(), kd, dv0.as<float>(), kd, static_cast<int>(pos.size()), dp0.as<int32_t>(),
             ds0.as<int32_t>(), st());
    return kv;
  };
  auto q = randn(n * qs);
  for (float& x : q) x *= 3.0f;
  const auto k = randn(n * kvs), v = randn(n * kvs);
  const std::vector<int32_t> tpos = {len[0], len[1], len[2]};
  for (int max_split : {1, 8}) {
    for (int blk : {0, 32}) {
      auto run = [&](const KvLayout& kv, const std::vector<int32_t>& tp, int first, int count, DevMem& out, DevMem& q8,
                     DevMem& d8) {
        DevMem dq = up(q), dk = up(k), dv = up(v), dp = up(tp), ds = up(std::vector<int32_t>{0, 1, 2});
        DevMem ml = poisoned_bytes(sizeof(float) * 2 * n_head * 8 * n);
        DevMem so = poisoned_bytes(sizeof(float) * qd * 8 * n);
        DevMem cnt = up(std::vector<uint32_t>(n_kv * n, 0));
        AttnDecode ad = decode_args(dq, dk, dv, dp, ds, n_head, n_kv, hd, cap, out);
        ad.q += first * qs, ad.k += first * kvs, ad.v += first * kvs, ad.pos += first, ad.seq += first;
        ad.n_tokens = count, ad.q_stride = qs, ad.k_stride = kvs, ad.v_stride = kvs, ad.out_stride = qd;
        ad.out += first * qd;
        ad.min_chunk = 64;
        if (blk) ad.q8 = q8.as<int8_t>() + first * qd, ad.d8 = d8.as<float>() + first * qd / blk, ad.q8_block = blk;
        if (max_split > 1) {
          ad.split_ml = ml.as<float>(), ad.split_o = so.as<float>(), ad.split_count = cnt.as<unsigned>();
          ad.max_split = max_split;
        }
        attention_decode(ad, rp, nullptr, kv, st());
      };
      DevMem ka, va, kb, vb;
      const KvLayout one = cache(ka, va), all = cache(kb, vb);
      DevMem out1 = poisoned_bytes(sizeof(float) * n * qd), outn = poisoned_bytes(sizeof(float) * n * qd);
      DevMem q81 = poisoned_bytes(n * qd), q8n = poisoned_bytes(n * qd);
      DevMem d81 = poisoned_bytes(sizeof(float) * n * qd / 32), d8n = poisoned_bytes(sizeof(float) * n * qd / 32);
      for (int t = 0; t < n; ++t) run(one, tpos, t, 1, out1, q81, d81);
      ASSERT_TRUE(attention_decode_fits(n_head, n_kv, hd, hd, cap, max_split, 64, n));
      run(all, tpos, 0, n, outn, q8n, d8n);
      const auto o1 = down<float>(out1, n * qd), on = down<float>(outn, n * qd);
      for (int64_t i = 0; i < n * qd; ++i) ASSERT_EQ(on[i], o1[i]) << "output " << i << " split " << max_split;
      if (blk) {
        const auto a1 = down<int8_t>(q81, n * qd), an = down<int8_t>(q8n, n * qd);
        const auto s1 = down<float>(d81, n * qd / blk), sn = down<float>(d8n, n * qd / blk);
        for (int64_t i = 0; i < n * qd; ++i) ASSERT_EQ(an[i], a1[i]) << "quant " << i;
        for (int64_t i = 0; i < n * qd / blk; ++i) ASSERT_EQ(sn[i], s1[i]) << "scale " << i;
      }
      const auto c1 = down<uint16_t>(ka, pool / 2), cn = down<uint16_t>(kb, pool / 2);
      for (size_t i = 0; i < c1.size(); ++i) ASSERT_EQ(cn[i], c1[i]) << "k cache " << i;
      // control: token 0 at token 1's position (a batch that indexed positions wrongly)
      DevMem kc, vc, outx = poisoned_bytes(sizeof(float) * n * qd);
      const KvLayout other = cache(kc, vc);
      run(other, {len[1], len[1], len[2]}, 0, n, outx, q8n, d8n);
      const auto ox = down<float>(outx, n * qd);
      int diff = 0;
      for (int64_t i = 0; i < qd; ++i) diff += ox[i] != o1[i];
      EXPECT_GT(diff, 0);
    }
  }
}

// kv_move against the CPU's cut of the same f16 rows (ops::rope_shift +
// rope_shift_row_f16 for K, a copy for V), for both RoPE modes and a partial
// rotation, through a paged layout where source and destination overlap.
// Negative control: the cells moved without rotation differ.
TEST_F(CudaPaged, KvMoveEqualsTheCpuShift) {
  const int n_kv = 2, hd = 64, len = 150, p0 = 5, p1 = 60, n = len - p1;
  const int64_t kd = n_kv * hd;
  const int max_blocks = 5;
  const std::vector<int32_t> table = {7, 2, 9, 0, 4};
  const size_t pool = sizeof(uint16_t) * 10 * kBs * kd;
  for (RopeMode mode : {RopeMode::kNorm, RopeMode::kNeox}) {
    for (int n_rot : {hd, hd / 2}) {
      RopeParams rp;
      rp.mode = mode;
      rp.n_rot = n_rot;
      rp.freq_base = 10000.0f;
      DevMem kp = poisoned_bytes(pool), vp = poisoned_bytes(pool), tb = up(table);
      const KvLayout kv{kp.as<uint16_t>(), vp.as<uint16_t>(), kd, kd, 0, tb.as<int32_t>(), kShift, max_blocks};
      std::vector<int32_t> pos(len), seq(len, 0);
      for (int c = 0; c < len; ++c) pos[c] = c;
      const auto k = randn(len * kd), v = randn(len * kd);
      DevMem dk = up(k), dv = up(v), dp = up(pos), ds = up(seq);
      kv_store(kv, dk.as<float>(), kd, dv.as<float>(), kd, len, dp.as<int32_t>(), ds.as<int32_t>(), st());
      const ops::RopeShift sh = ops::rope_shift(p0 - p1, rp, nullptr);
      DevMem cs = up(sh.cache), scratch = poisoned_bytes(sizeof(uint16_t) * n * 2 * kd);
      auto cell = [&](int p) { return static_cast<int64_t>(table[p / kBs]) * kBs + p % kBs; };
      const auto k_before = down<uint16_t>(kp, pool / 2), v_before = down<uint16_t>(vp, pool / 2);
      kv_move(kv, 0, p0, p1, n, cs.as<float>(), n_rot, mode == RopeMode::kNeox, hd, scratch.as<uint16_t>(), st());
      const auto gk = down<uint16_t>(kp, pool / 2), gv = down<uint16_t>(vp, pool / 2);
      std::vector<uint16_t> want(kd);
      std::vector<float> tmp(kd);
      int unrotated_equal = 0;
      for (int i = 0; i < n; ++i) {
        const uint16_t* src = k_before.data() + cell(p1 + i) * kd;
        ops::rope_shift_row_f16(sh, src, want.data(), n_kv, hd, tmp.data());
        for (int64_t d = 0; d < kd; ++d) {
          ASSERT_EQ(gk[cell(p0 + i) * kd + d], want[d]) << "k cell " << i << " dim " << d;
          ASSERT_EQ(gv[cell(p0 + i) * kd + d], v_before[cell(p1 + i) * kd + d]) << "v cell " << i;
          if (d % hd < n_rot) unrotated_equal += gk[cell(p0 + i) * kd + d] == src[d];
        }
      }
      // the control: cells moved without rotation would match in every rotated dim
      EXPECT_LT(unrotated_equal, n * n_kv * n_rot / 10);
      // cells before p0 untouched
      for (int64_t d = 0; d < p0 * kd; ++d) {
        const int64_t at = cell(static_cast<int>(d / kd)) * kd + d % kd;
        ASSERT_EQ(gk[at], k_before[at]);
      }
    }
  }
}

}  // namespace
}  // namespace strix::cuda

#else

TEST(CudaPaged, SkippedWithoutCudaBackend) { GTEST_SKIP() << "built with STRIX_CUDA=OFF"; }

#endif
