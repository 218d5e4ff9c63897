#include "ref/reference.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "core/error.h"
#include "core/source_dir.h"
#include "quant/types.h"

namespace strix::ref {

namespace fs = std::filesystem;

static constexpr const char* kPackageSubdir = "node_modules/@node-llama-cpp/linux-x64/bins/linux-x64";

std::string reference_dir() {
  if (const char* env = std::getenv("STRIX_LIBLLAMA_DIR"); env != nullptr && *env != '\0') {
    if (!fs::exists(fs::path(env) / "libggml-base.so")) {
      throw Error(std::string("STRIX_LIBLLAMA_DIR=") + env + " holds no libggml-base.so");
    }
    return env;
  }
  // The source tree this binary was built from, then the working directory and its parents.
  std::vector<fs::path> roots = {fs::path(strix::source_dir())};
  for (fs::path p = fs::current_path(); !p.empty(); p = p.parent_path()) {
    roots.push_back(p);
    if (p == p.root_path()) break;
  }
  for (const auto& root : roots) {
    const fs::path dir = root / kPackageSubdir;
    if (fs::exists(dir / "libggml-base.so")) return dir.string();
  }
  throw Error(std::string("the reference libllama is not installed: no ") + kPackageSubdir +
              " under the source tree or the working directory (run ./scripts/deps.sh, or set STRIX_LIBLLAMA_DIR)");
}

namespace {
// The features libggml's zen4 build needs (AVX-512 F, VBMI, VNNI, BF16).
bool cpu_runs_zen4_build() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vbmi") &&
         __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bf16");
#else
  return false;
#endif
}
}  // namespace

std::string reference_cpu_variant() {
  if (const char* env = std::getenv("STRIX_REF_CPU_VARIANT"); env != nullptr && *env != '\0') {
    const std::string v = env;
    return v == "best" ? std::string() : v;
  }
  if (cpu_runs_zen4_build() && fs::exists(fs::path(reference_dir()) / "libggml-cpu-zen4.so")) return "zen4";
  return {};
}

void use_libggml_cpu_pick() { ::setenv("STRIX_REF_CPU_VARIANT", "best", 0); }

SharedLib::SharedLib(const std::string& path) : path_(path) {
  handle_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    const char* err = ::dlerror();
    throw Error("cannot load " + path + ": " + (err ? err : "unknown dlopen error"));
  }
}

SharedLib::~SharedLib() {
  // Left loaded on purpose: libggml registers atexit handlers and backends that
  // must outlive any object holding a pointer into it.
}

void* SharedLib::symbol_or_null(const char* name) const { return handle_ ? ::dlsym(handle_, name) : nullptr; }

void* SharedLib::symbol(const char* name) const {
  void* p = symbol_or_null(name);
  if (p == nullptr) throw Error(std::string("symbol ") + name + " not found in " + path_);
  return p;
}

const LibGgml& LibGgml::get() {
  static const LibGgml instance;
  return instance;
}

LibGgml::LibGgml() : lib_(reference_dir() + "/libggml-base.so") {
  type_name = lib_.fn<decltype(type_name)>("ggml_type_name");
  blck_size = lib_.fn<decltype(blck_size)>("ggml_blck_size");
  type_size = lib_.fn<decltype(type_size)>("ggml_type_size");
  fp16_to_fp32_row = lib_.fn<decltype(fp16_to_fp32_row)>("ggml_fp16_to_fp32_row");
  fp32_to_fp16_row = lib_.fn<decltype(fp32_to_fp16_row)>("ggml_fp32_to_fp16_row");
  bf16_to_fp32_row = lib_.fn<decltype(bf16_to_fp32_row)>("ggml_bf16_to_fp32_row");
  fp32_to_bf16_row_ref = lib_.fn<decltype(fp32_to_bf16_row_ref)>("ggml_fp32_to_bf16_row_ref");
  quantize_init = lib_.fn<decltype(quantize_init)>("ggml_quantize_init");
  quantize_chunk = lib_.fn<decltype(quantize_chunk)>("ggml_quantize_chunk");
  quantize_requires_imatrix = lib_.fn<decltype(quantize_requires_imatrix)>("ggml_quantize_requires_imatrix");

  gguf_init_from_file = lib_.fn<decltype(gguf_init_from_file)>("gguf_init_from_file");
  gguf_free = lib_.fn<decltype(gguf_free)>("gguf_free");
  gguf_get_version = lib_.fn<decltype(gguf_get_version)>("gguf_get_version");
  gguf_get_alignment = lib_.fn<decltype(gguf_get_alignment)>("gguf_get_alignment");
  gguf_get_data_offset = lib_.fn<decltype(gguf_get_data_offset)>("gguf_get_data_offset");
  gguf_get_n_kv = lib_.fn<decltype(gguf_get_n_kv)>("gguf_get_n_kv");
  gguf_find_key = lib_.fn<decltype(gguf_find_key)>("gguf_find_key");
  gguf_get_key = lib_.fn<decltype(gguf_get_key)>("gguf_get_key");
  gguf_get_kv_type = lib_.fn<decltype(gguf_get_kv_type)>("gguf_get_kv_type");
  gguf_get_arr_type = lib_.fn<decltype(gguf_get_arr_type)>("gguf_get_arr_type");
  gguf_get_val_data = lib_.fn<decltype(gguf_get_val_data)>("gguf_get_val_data");
  gguf_get_val_str = lib_.fn<decltype(gguf_get_val_str)>("gguf_get_val_str");
  gguf_get_arr_n = lib_.fn<decltype(gguf_get_arr_n)>("gguf_get_arr_n");
  gguf_get_arr_data = lib_.fn<decltype(gguf_get_arr_data)>("gguf_get_arr_data");
  gguf_get_arr_str = lib_.fn<decltype(gguf_get_arr_str)>("gguf_get_arr_str");
  gguf_get_n_tensors = lib_.fn<decltype(gguf_get_n_tensors)>("gguf_get_n_tensors");
  gguf_find_tensor = lib_.fn<decltype(gguf_find_tensor)>("gguf_find_tensor");
  gguf_get_tensor_offset = lib_.fn<decltype(gguf_get_tensor_offset)>("gguf_get_tensor_offset");
  gguf_get_tensor_name = lib_.fn<decltype(gguf_get_tensor_name)>("gguf_get_tensor_name");
  gguf_get_tensor_type = lib_.fn<decltype(gguf_get_tensor_type)>("gguf_get_tensor_type");
  gguf_get_tensor_size = lib_.fn<decltype(gguf_get_tensor_size)>("gguf_get_tensor_size");
  gguf_get_tensor_ne = lib_.fn<decltype(gguf_get_tensor_ne)>("gguf_get_tensor_ne");
}

LibGgml::DequantFn LibGgml::dequantize_row(uint32_t type) const {
  const char* name = strix::type_name(type);
  if (name == nullptr) return nullptr;
  const std::string sym = std::string("dequantize_row_") + name;
  return reinterpret_cast<DequantFn>(lib_.symbol_or_null(sym.c_str()));
}

LibGgml::QuantRefFn LibGgml::quantize_row_ref(uint32_t type) const {
  const char* name = strix::type_name(type);
  if (name == nullptr) return nullptr;
  const std::string sym = std::string("quantize_row_") + name + "_ref";
  return reinterpret_cast<QuantRefFn>(lib_.symbol_or_null(sym.c_str()));
}

}  // namespace strix::ref
