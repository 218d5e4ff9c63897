#include "tools/ref_threadpool.h"

#include <algorithm>
#include <cstdint>
#include <fstream>

#include "core/error.h"

namespace strix {

namespace {

// libggml-cpu's threadpool, created and attached as llama-bench does (without
// one, libggml starts and joins its threads for every graph). Our declaration
// of struct ggml_threadpool_params (ggml.h): bool cpumask[GGML_MAX_N_THREADS =
// 512]; int n_threads; int prio; uint32_t poll; bool strict_cpu; bool paused.
// Checked after ggml_threadpool_params_init fills it.
struct GgmlThreadpoolParams {
  bool cpumask[512];
  int32_t n_threads;
  int32_t prio;
  uint32_t poll;
  bool strict_cpu;
  bool paused;
  uint8_t spare[512];  // room in case the pinned build's struct is larger; checked below
};

}  // namespace

// The libggml-cpu-<variant>.so that libggml loaded for this CPU (from our maps).
std::string loaded_ggml_cpu_lib() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const size_t at = line.find('/');
    if (at != std::string::npos && line.find("libggml-cpu-") != std::string::npos) return line.substr(at);
  }
  return "";
}

RefThreadpool::RefThreadpool(int n_threads) {
  const std::string path = loaded_ggml_cpu_lib();
  if (path.empty()) throw Error("bench: the reference libggml-cpu-*.so is not loaded");
  cpu_ = std::make_unique<ref::SharedLib>(path);  // the loaded instance (dlopen counts a reference)
  auto params_init = ref::LibGgml::get().lib().fn<void (*)(GgmlThreadpoolParams*, int)>("ggml_threadpool_params_init");
  auto tp_new = cpu_->fn<void* (*)(GgmlThreadpoolParams*)>("ggml_threadpool_new");
  free_ = cpu_->fn<void (*)(void*)>("ggml_threadpool_free");
  pause_ = cpu_->fn<void (*)(void*)>("ggml_threadpool_pause");
  attach_ =
      ref::LibLlama::get().llama().fn<void (*)(ref::llama_abi::Context*, void*, void*)>("llama_attach_threadpool");
  GgmlThreadpoolParams p;
  std::fill(reinterpret_cast<uint8_t*>(&p), reinterpret_cast<uint8_t*>(&p) + sizeof p, uint8_t{0xA5});
  params_init(&p, n_threads);
  // the defaults of ggml.c: no cpumask, n_threads, normal priority, poll 50, not strict, not paused
  const bool layout_ok = p.n_threads == n_threads && p.prio == 0 && p.poll == 50 && !p.strict_cpu && !p.paused &&
                         !p.cpumask[0] && !p.cpumask[511] && p.spare[0] == 0xA5;
  if (!layout_ok) {
    throw Error("bench: ggml_threadpool_params of the reference libggml does not have the layout Strix declares");
  }
  tp_ = tp_new(&p);
  if (tp_ == nullptr) throw Error("bench: ggml_threadpool_new failed");
}

RefThreadpool::~RefThreadpool() {
  if (tp_ != nullptr) free_(tp_);
}

void RefThreadpool::attach(const ref::LlamaContext& ctx) const { attach_(ctx.raw(), tp_, tp_); }
void RefThreadpool::pause() const { pause_(tp_); }

}  // namespace strix
