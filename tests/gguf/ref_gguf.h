// libggml's own GGUF parser (the reference), as the reader tests use it.
#pragma once

#include <string>

#include "ref/reference.h"

namespace gguf_test {

using strix::ref::LibGgml;

// Silences libggml's log (its parse errors go to stderr otherwise).
inline void quiet_libggml() {
  using LogFn = void (*)(int level, const char* text, void* user);
  static const bool once = [] {
    auto set = LibGgml::get().lib().fn<void (*)(LogFn, void*)>("ggml_log_set");
    set([](int, const char*, void*) {}, nullptr);
    return true;
  }();
  (void)once;
}

// An owned gguf_context from gguf_init_from_file. With `load_data` libggml
// also reads the whole data section into a ggml context (so a file cut short
// inside the tensor data is rejected), as llama.cpp's loaders do.
class RefGguf {
 public:
  explicit RefGguf(const std::string& path, bool load_data = true) {
    quiet_libggml();
    const LibGgml& g = LibGgml::get();
    strix::ref::GgufInitParams params{false, load_data ? &data_ctx_ : nullptr};
    ctx_ = g.gguf_init_from_file(path.c_str(), params);
  }
  ~RefGguf() {
    const LibGgml& g = LibGgml::get();
    if (ctx_) g.gguf_free(ctx_);
    if (data_ctx_) g.lib().fn<void (*)(strix::ref::ggml_context*)>("ggml_free")(data_ctx_);
  }
  RefGguf(const RefGguf&) = delete;
  RefGguf& operator=(const RefGguf&) = delete;

  bool ok() const { return ctx_ != nullptr; }
  strix::ref::gguf_context* get() const { return ctx_; }

 private:
  strix::ref::gguf_context* ctx_ = nullptr;
  strix::ref::ggml_context* data_ctx_ = nullptr;
};

}  // namespace gguf_test
