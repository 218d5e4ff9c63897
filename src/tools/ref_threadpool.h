// libggml-cpu's persistent threadpool for the reference libllama, created and
// attached as llama-bench and llama-batched-bench do (without one, libggml
// starts and joins its threads for every graph), for the benchmark tools'
// libllama side.
#pragma once

#include <memory>
#include <string>

#include "ref/libllama.h"

namespace strix {

// The libggml-cpu-<variant>.so that libggml loaded for this CPU (from
// /proc/self/maps), or "" when none is loaded.
std::string loaded_ggml_cpu_lib();

class RefThreadpool {
 public:
  explicit RefThreadpool(int n_threads);  // Error when libggml-cpu is not loaded or its ABI differs
  ~RefThreadpool();
  RefThreadpool(const RefThreadpool&) = delete;
  RefThreadpool& operator=(const RefThreadpool&) = delete;

  void attach(const ref::LlamaContext& ctx) const;
  void pause() const;  // after a timed run: the workers stop spinning

 private:
  std::unique_ptr<ref::SharedLib> cpu_;
  void* tp_ = nullptr;
  void (*free_)(void*) = nullptr;
  void (*pause_)(void*) = nullptr;
  void (*attach_)(ref::llama_abi::Context*, void*, void*) = nullptr;
};

}  // namespace strix
