#include "core/thread_pool.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define STRIX_CPU_RELAX() _mm_pause()
#else
#define STRIX_CPU_RELAX() ((void)0)
#endif

#include "core/error.h"

namespace strix {

namespace {
// Spin this many times before sleeping: long enough to cover the gap between two
// ops of a decode step, short enough not to burn a core while idle.
constexpr int kSpinIterations = 1 << 16;

// Waits for `done()`: spins briefly, then yields so that an oversubscribed machine
// (more threads than free cores) still makes progress.
template <typename Pred>
inline void spin_until(Pred done) {
  for (int i = 0; !done(); ++i) {
    if (i < 1024) {
      STRIX_CPU_RELAX();
    } else {
      std::this_thread::yield();
    }
  }
}
}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads) {
  if (n_threads < 1) throw Error("thread count must be at least 1, got " + std::to_string(n_threads));
  workers_.reserve(static_cast<size_t>(n_threads - 1));
  for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run(TaskFn fn, void* ctx) {
  if (n_threads_ == 1) {
    fn(ctx, 0, 1);
    return;
  }
  fn_ = fn;
  ctx_ = ctx;
  pending_.store(n_threads_ - 1, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);  // publishes fn_/ctx_
  generation_.notify_all();
  fn(ctx, 0, n_threads_);
  spin_until([this] { return pending_.load(std::memory_order_acquire) == 0; });
}

void ThreadPool::barrier() {
  if (n_threads_ == 1) return;
  const uint32_t phase = barrier_phase_.load(std::memory_order_relaxed);
  if (barrier_count_.fetch_add(1, std::memory_order_acq_rel) == n_threads_ - 1) {
    barrier_count_.store(0, std::memory_order_relaxed);
    barrier_phase_.store(phase + 1, std::memory_order_release);
    return;
  }
  spin_until([this, phase] { return barrier_phase_.load(std::memory_order_acquire) != phase; });
}

void ThreadPool::worker_loop(int ith) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t gen = generation_.load(std::memory_order_acquire);
    for (int spin = 0; gen == seen && spin < kSpinIterations; ++spin) {
      if (spin < 1024) {
        STRIX_CPU_RELAX();
      } else {
        std::this_thread::yield();
      }
      gen = generation_.load(std::memory_order_acquire);
    }
    while (gen == seen) {
      generation_.wait(seen, std::memory_order_acquire);
      gen = generation_.load(std::memory_order_acquire);
    }
    seen = gen;
    if (stop_.load(std::memory_order_acquire)) return;
    fn_(ctx_, ith, n_threads_);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace strix
