#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <numeric>
#include <vector>

#include "core/error.h"

namespace strix {

TEST(ThreadPool, every_thread_runs_once_per_job) {
  for (int n : {1, 2, 3, 4}) {
    ThreadPool pool(n);
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    for (int rep = 0; rep < 1000; ++rep) {
      pool.run([&](int ith, int nth) {
        EXPECT_EQ(nth, n);
        hits[static_cast<size_t>(ith)].fetch_add(1);
      });
    }
    for (auto& h : hits) EXPECT_EQ(h.load(), 1000);
  }
}

TEST(ThreadPool, split_sum_matches_serial_sum) {
  ThreadPool pool(3);
  std::vector<int64_t> v(100003);
  std::iota(v.begin(), v.end(), 1);
  std::vector<int64_t> partial(3, 0);
  pool.run([&](int ith, int nth) {
    const size_t chunk = (v.size() + nth - 1) / nth;
    const size_t lo = chunk * ith, hi = std::min(v.size(), lo + chunk);
    for (size_t i = lo; i < hi; ++i) partial[static_cast<size_t>(ith)] += v[i];
  });
  EXPECT_EQ(partial[0] + partial[1] + partial[2], std::accumulate(v.begin(), v.end(), int64_t{0}));
}

// Phase 2 reads what every thread wrote in phase 1: wrong without the barrier.
TEST(ThreadPool, barrier_orders_phases) {
  ThreadPool pool(4);
  std::vector<int> a(4), b(4);
  for (int rep = 0; rep < 2000; ++rep) {
    pool.run([&](int ith, int nth) {
      a[static_cast<size_t>(ith)] = rep + ith;
      pool.barrier();
      int s = 0;
      for (int j = 0; j < nth; ++j) s += a[static_cast<size_t>(j)];
      b[static_cast<size_t>(ith)] = s;
      pool.barrier();
    });
    for (int i = 0; i < 4; ++i) ASSERT_EQ(b[static_cast<size_t>(i)], 4 * rep + 6);
  }
}

TEST(ThreadPool, refuses_zero_threads) { EXPECT_THROW(ThreadPool(0), Error); }

}  // namespace strix
