// A persistent thread pool: workers are created once and spin (then sleep) between
// jobs, so a forward pass pays no thread creation and no allocation per op.
//
// run(fn) executes fn(ctx, ith, nth) on every thread of the pool, the calling thread
// being ith == 0, and returns when all have finished. Inside fn, barrier() makes all
// nth threads meet (a sense-reversing spin barrier), so one run() can hold several
// dependent phases. Not re-entrant: one run() at a time per pool.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace strix {

class ThreadPool {
 public:
  using TaskFn = void (*)(void* ctx, int ith, int nth);

  // n_threads >= 1 counts the caller; n_threads - 1 workers are started.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  void run(TaskFn fn, void* ctx);
  // Convenience for lambdas; the lambda is called by reference, nothing is allocated.
  template <typename F>
  void run(F&& f) {
    run([](void* c, int ith, int nth) { (*static_cast<std::remove_reference_t<F>*>(c))(ith, nth); },
        static_cast<void*>(&f));
  }

  // All threads of the current run() wait here until every one has arrived.
  void barrier();

 private:
  void worker_loop(int ith);

  int n_threads_;
  std::vector<std::thread> workers_;

  alignas(64) std::atomic<uint64_t> generation_{0};  // bumped once per run()
  alignas(64) std::atomic<int> pending_{0};          // workers still running the job
  alignas(64) std::atomic<int> barrier_count_{0};
  alignas(64) std::atomic<uint32_t> barrier_phase_{0};
  TaskFn fn_ = nullptr;
  void* ctx_ = nullptr;
  std::atomic<bool> stop_{false};
};

}  // namespace strix
