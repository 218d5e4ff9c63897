// cuda::top_logits (each output row's largest logits on the device, for the
// greedy sampler) against a partial sort on the CPU, and CudaContext's
// top_logits() against its own full rows (the lazy row copy). Rows of a real
// vocabulary's size with planted ties (ranked by the lower id), all--inf
// rows, and rows with a NaN or +inf (flagged by id -1); outputs poisoned
// first. Negative control: a row changed after the launch disagrees.
#include <gtest/gtest.h>

#if STRIX_HAVE_CUDA

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "backend_cuda/cuda_fixture.h"
#include "backend_cuda/test_models.h"
#include "core/error.h"
#include "core/source_dir.h"
#include "models/model.h"

namespace strix::cuda {
namespace {

class CudaTopLogits : public CudaFixture {
 protected:
  CudaTopLogits() : CudaFixture(99) {}
};

std::vector<int32_t> cpu_top(const float* row, int64_t n) {
  std::vector<int32_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + kTopLogits, order.end(),
                    [&](int32_t a, int32_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
  order.resize(kTopLogits);
  return order;
}

TEST_F(CudaTopLogits, EqualsAPartialSortOnTheCpu) {
  // one part (512), parts of one round of loads (128,256, 151,936), and parts of several rounds (600,000)
  for (const int64_t n_vocab : {int64_t{512}, int64_t{128256}, int64_t{151936}, int64_t{600000}}) {
    SCOPED_TRACE(n_vocab);
    const int rows = 7;
    std::vector<float> x = randn(static_cast<size_t>(rows * n_vocab), 3.0f);
    auto r = [&](int i) { return x.data() + static_cast<int64_t>(i) * n_vocab; };
    r(1)[100] = r(1)[90000 % n_vocab] = r(1)[5] = 50.0f;             // a three-way tie at the top
    for (int j = 0; j < 20; ++j) r(2)[(j * 997) % n_vocab] = 20.0f;  // more ties than slots
    std::fill(r(3), r(3) + n_vocab, -INFINITY);                      // all -inf
    r(4)[n_vocab - 1] = NAN;
    r(5)[3] = INFINITY;
    r(6)[7] = -INFINITY;  // -inf alone is fine
    const DevMem dx = up(x);
    const size_t sb = top_logits_scratch_bytes(rows, n_vocab);
    DevMem scratch(sb, "top_logits scratch");
    check(cudaMemset(scratch.as(), 0, sb), "zeroing the scratch");
    // Three launches on one scratch: rows of NaNs (every row flagged), then the first
    // three rows alone (another row count: the flags and counters of the first
    // launch must not leak into it), then all rows.
    std::vector<float> tv;
    std::vector<int32_t> ti;
    for (const int n : {-rows, 3, rows}) {
      const int nr = n < 0 ? -n : n;
      DevMem top = poisoned_bytes(sizeof(float) * rows * kTopLogits);
      DevMem ids = poisoned_bytes(sizeof(int32_t) * rows * kTopLogits);
      if (n < 0) {
        const DevMem nan_rows = up(std::vector<float>(static_cast<size_t>(rows * n_vocab), NAN));
        top_logits(nan_rows.as<float>(), nr, n_vocab, top.as<float>(), ids.as<int32_t>(), scratch.as(), sb, st());
        const std::vector<int32_t> nan_ids = down<int32_t>(ids, rows * kTopLogits);
        for (int i = 0; i < rows; ++i) EXPECT_EQ(nan_ids[static_cast<size_t>(i) * kTopLogits], -1) << i;
        continue;
      }
      top_logits(dx.as<float>(), nr, n_vocab, top.as<float>(), ids.as<int32_t>(), scratch.as(), sb, st());
      tv = down<float>(top, nr * kTopLogits);
      ti = down<int32_t>(ids, nr * kTopLogits);
      if (nr == rows) break;
      for (int i = 0; i < nr; ++i) {  // rows 0-2: no flag, the CPU's order
        const std::vector<int32_t> want = cpu_top(r(i), n_vocab);
        for (int j = 0; j < kTopLogits; ++j) {
          EXPECT_EQ(ti[static_cast<size_t>(i) * kTopLogits + j], want[static_cast<size_t>(j)]) << i << " " << j;
        }
      }
    }
    EXPECT_THROW(top_logits(dx.as<float>(), rows, n_vocab, nullptr, nullptr, scratch.as(), sb - 1, st()), Error);
    for (int i = 0; i < rows; ++i) {
      SCOPED_TRACE(i);
      if (i == 4 || i == 5) {
        for (int j = 0; j < kTopLogits; ++j) EXPECT_EQ(ti[static_cast<size_t>(i) * kTopLogits + j], -1) << j;
        continue;
      }
      const std::vector<int32_t> want = cpu_top(r(i), n_vocab);
      for (int j = 0; j < kTopLogits; ++j) {
        EXPECT_EQ(ti[static_cast<size_t>(i) * kTopLogits + j], want[static_cast<size_t>(j)]) << "slot " << j;
        const float wv = r(i)[want[static_cast<size_t>(j)]], gv = tv[static_cast<size_t>(i) * kTopLogits + j];
        EXPECT_TRUE(wv == gv || (std::isinf(wv) && std::isinf(gv))) << "slot " << j;
      }
    }
    // negative control: the CPU's answer for a changed row is not the GPU's
    std::vector<float> changed(r(0), r(0) + n_vocab);
    changed[static_cast<size_t>(ti[1])] += 100.0f;  // the runner-up becomes the largest
    EXPECT_NE(cpu_top(changed.data(), n_vocab)[0], ti[0]);
  }
}

TEST_F(CudaTopLogits, ContextRowsAgreeWithTheirTopLists) {
  const std::string path = test::stories();
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is absent";
  auto model = Model::load(path);
  CudaContext ctx(*model, {.n_ctx = 256, .n_seq_max = 2});
  const std::vector<int32_t> tok = {1, 400, 30, 200, 1, 77};
  const std::vector<int32_t> pos = {0, 1, 2, 3, 0, 1};
  const std::vector<int32_t> seq = {0, 0, 0, 0, 1, 1};
  const std::vector<uint8_t> want = {0, 1, 0, 1, 1, 1};
  ctx.decode(tok, pos, seq, want);
  for (int32_t i : {1, 3, 4, 5}) {
    SCOPED_TRACE(i);
    const BatchContext::TopLogits top = ctx.top_logits(i);
    ASSERT_EQ(top.id.size(), static_cast<size_t>(kTopLogits));
    const std::span<const float> row = ctx.logits(i);
    const std::vector<int32_t> ref = cpu_top(row.data(), static_cast<int64_t>(row.size()));
    for (int j = 0; j < kTopLogits; ++j) {
      EXPECT_EQ(top.id[static_cast<size_t>(j)], ref[static_cast<size_t>(j)]);
      EXPECT_EQ(top.logit[static_cast<size_t>(j)], row[static_cast<size_t>(ref[static_cast<size_t>(j)])]);
    }
  }
  EXPECT_THROW(ctx.top_logits(0), Error);  // no output there
}

}  // namespace
}  // namespace strix::cuda

#else  // built without the CUDA backend

TEST(CudaTopLogits, SkippedWithoutCudaBackend) { GTEST_SKIP() << "built with STRIX_CUDA=OFF"; }

#endif
