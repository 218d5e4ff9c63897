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
      AttnDecode ad;
      ad.q = dq1.as<float>(), ad.k = dk1.as<float>(), ad.v = dv1.as<float>();
      ad.pos = dp1.as<int32_t>(), ad.seq = ds1.as<int32_t>();
      ad.n_head = n_head, ad.n_head_kv = n_kv, ad.head_dim_k = ad.head_dim_v = hd;
      ad.kq_scale = 1.0f / std::sqrt(static_cast<float>(hd));
      ad.max_cells = cap;
      ad.out = out.as<float>();
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
