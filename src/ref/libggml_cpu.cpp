#include "ref/libggml_cpu.h"

#include <map>
#include <memory>
#include <mutex>

#include "core/error.h"
#include "quant/types.h"

namespace strix::ref {

LibGgmlCpu::LibGgmlCpu(const std::string& variant)
    : lib_((LibGgml::get(), reference_dir() + "/libggml-cpu-" + variant + ".so")) {
  // Fills the fp16 lookup tables that builds without F16C read.
  lib_.fn<void (*)()>("ggml_cpu_init")();
}

const LibGgmlCpu& LibGgmlCpu::get(const std::string& variant) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<LibGgmlCpu>> libs;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = libs[variant];
  if (!slot) slot.reset(new LibGgmlCpu(variant));
  return *slot;
}

LibGgmlCpu::VecDotFn LibGgmlCpu::vec_dot(const std::string& symbol) const {
  return reinterpret_cast<VecDotFn>(lib_.symbol_or_null(symbol.c_str()));
}

LibGgmlCpu::QuantizeFn LibGgmlCpu::quantize(const std::string& symbol) const {
  return reinterpret_cast<QuantizeFn>(lib_.symbol_or_null(symbol.c_str()));
}

std::string ggml_vec_dot_symbol(uint32_t weight_type, uint32_t act_type) {
  if (weight_type == static_cast<uint32_t>(GgmlType::F16)) return "ggml_vec_dot_f16";
  const char* w = type_name(weight_type);
  const char* a = type_name(act_type);
  if (!w || !a) throw Error("ggml_vec_dot_symbol: unknown type id");
  return std::string("ggml_vec_dot_") + w + "_" + a;
}

}  // namespace strix::ref
