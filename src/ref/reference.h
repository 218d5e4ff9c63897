// The reference: libllama / libggml from the pinned npm package
// @node-llama-cpp/linux-x64, loaded at run time with dlopen. Nothing of it is
// linked into Strix; tests, `strix parity` and `strix bench --compare` use it to
// check Strix against llama.cpp.
//
// The directory is $STRIX_LIBLLAMA_DIR when set, else
// <repo>/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64 (installed by
// scripts/deps.sh). A missing library is an Error naming both, never a skip.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace strix::ref {

// The directory holding libggml-base.so and libllama.*.so; throws Error when
// it does not exist.
std::string reference_dir();

// The libggml-cpu build the reference libllama computes with: "" for
// libggml's own pick (the best build this CPU runs), else a build's name
// ("zen4" loads libggml-cpu-zen4.so). STRIX_REF_CPU_VARIANT sets it ("best":
// libggml's pick). Unset, it is "zen4" on a CPU that runs libggml's zen4
// build (AVX-512 F, VBMI, VNNI, BF16): the build whose order Strix's AVX-512
// level follows bit for bit. On Intel CPUs of that level libggml picks its
// sapphirerapids build instead, which sums in another order (a mean KL of
// 5e-4 from zen4's on the quantized parity models; docs/MODELS.md).
// Elsewhere it is libggml's pick. Speed comparisons call use_libggml_cpu_pick().
std::string reference_cpu_variant();

// For a speed comparison: the reference runs as llama.cpp would on this CPU,
// on libggml's own pick of its CPU build, unless STRIX_REF_CPU_VARIANT says
// otherwise. Call before the first LibLlama::get().
void use_libggml_cpu_pick();

// A dlopen'ed shared library. Symbols are looked up once and cached by callers.
class SharedLib {
 public:
  SharedLib() = default;
  explicit SharedLib(const std::string& path);  // RTLD_NOW | RTLD_LOCAL; throws Error with dlerror()
  ~SharedLib();
  SharedLib(const SharedLib&) = delete;
  SharedLib& operator=(const SharedLib&) = delete;

  // Throws Error naming the symbol and the library when absent.
  void* symbol(const char* name) const;
  void* symbol_or_null(const char* name) const;
  template <typename Fn>
  Fn fn(const char* name) const {
    return reinterpret_cast<Fn>(symbol(name));
  }
  const std::string& path() const { return path_; }

 private:
  void* handle_ = nullptr;
  std::string path_;
};

// Our own declarations of the subset of libggml-base's C API we use.
struct gguf_context;  // opaque
struct ggml_context;  // opaque
struct GgufInitParams {
  bool no_alloc;
  ggml_context** ctx;
};

class LibGgml {
 public:
  // The process-wide instance (loaded on first use).
  static const LibGgml& get();

  const SharedLib& lib() const { return lib_; }

  // ggml_type_name / blck_size / type_size
  const char* (*type_name)(int type);
  int64_t (*blck_size)(int type);
  size_t (*type_size)(int type);

  // Row conversions. `dequantize_row(type)` / `quantize_row_ref(type)` return
  // nullptr when libggml-base exports no such function for the type.
  using DequantFn = void (*)(const void* x, float* y, int64_t k);
  using QuantRefFn = void (*)(const float* x, void* y, int64_t k);
  DequantFn dequantize_row(uint32_t type) const;
  QuantRefFn quantize_row_ref(uint32_t type) const;
  void (*fp16_to_fp32_row)(const uint16_t* x, float* y, int64_t n);
  void (*fp32_to_fp16_row)(const float* x, uint16_t* y, int64_t n);
  void (*bf16_to_fp32_row)(const uint16_t* x, float* y, int64_t n);
  void (*fp32_to_bf16_row_ref)(const float* x, uint16_t* y, int64_t n);
  void (*quantize_init)(int type);
  size_t (*quantize_chunk)(int type, const float* src, void* dst, int64_t start, int64_t nrows, int64_t n_per_row,
                           const float* imatrix);
  bool (*quantize_requires_imatrix)(int type);

  // gguf
  gguf_context* (*gguf_init_from_file)(const char* fname, GgufInitParams params);
  void (*gguf_free)(gguf_context* ctx);
  uint32_t (*gguf_get_version)(const gguf_context* ctx);
  size_t (*gguf_get_alignment)(const gguf_context* ctx);
  size_t (*gguf_get_data_offset)(const gguf_context* ctx);
  int64_t (*gguf_get_n_kv)(const gguf_context* ctx);
  int64_t (*gguf_find_key)(const gguf_context* ctx, const char* key);
  const char* (*gguf_get_key)(const gguf_context* ctx, int64_t key_id);
  int (*gguf_get_kv_type)(const gguf_context* ctx, int64_t key_id);
  int (*gguf_get_arr_type)(const gguf_context* ctx, int64_t key_id);
  const void* (*gguf_get_val_data)(const gguf_context* ctx, int64_t key_id);
  const char* (*gguf_get_val_str)(const gguf_context* ctx, int64_t key_id);
  size_t (*gguf_get_arr_n)(const gguf_context* ctx, int64_t key_id);
  const void* (*gguf_get_arr_data)(const gguf_context* ctx, int64_t key_id);
  const char* (*gguf_get_arr_str)(const gguf_context* ctx, int64_t key_id, size_t i);
  int64_t (*gguf_get_n_tensors)(const gguf_context* ctx);
  int64_t (*gguf_find_tensor)(const gguf_context* ctx, const char* name);
  size_t (*gguf_get_tensor_offset)(const gguf_context* ctx, int64_t tensor_id);
  const char* (*gguf_get_tensor_name)(const gguf_context* ctx, int64_t tensor_id);
  int (*gguf_get_tensor_type)(const gguf_context* ctx, int64_t tensor_id);
  size_t (*gguf_get_tensor_size)(const gguf_context* ctx, int64_t tensor_id);
  const int64_t* (*gguf_get_tensor_ne)(const gguf_context* ctx, int64_t tensor_id);

 private:
  LibGgml();
  SharedLib lib_;
};

}  // namespace strix::ref
