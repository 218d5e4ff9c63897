#include <cstring>

#include "quant/fp16.h"
#include "quant/quants.h"

namespace strix::quant {

void dequantize_row_f32(const void* x, float* y, int64_t k) { std::memcpy(y, x, static_cast<size_t>(k) * 4); }
void quantize_row_f32_ref(const float* x, void* y, int64_t k) { std::memcpy(y, x, static_cast<size_t>(k) * 4); }

void dequantize_row_f16(const void* x, float* y, int64_t k) {
  const auto* h = static_cast<const uint16_t*>(x);
  for (int64_t i = 0; i < k; ++i) y[i] = fp16_to_fp32(h[i]);
}
void quantize_row_f16_ref(const float* x, void* y, int64_t k) {
  auto* h = static_cast<uint16_t*>(y);
  for (int64_t i = 0; i < k; ++i) h[i] = fp32_to_fp16(x[i]);
}

void dequantize_row_bf16(const void* x, float* y, int64_t k) {
  const auto* h = static_cast<const uint16_t*>(x);
  for (int64_t i = 0; i < k; ++i) y[i] = bf16_to_fp32(h[i]);
}
void quantize_row_bf16_ref(const float* x, void* y, int64_t k) {
  auto* h = static_cast<uint16_t*>(y);
  for (int64_t i = 0; i < k; ++i) h[i] = fp32_to_bf16(x[i]);
}

}  // namespace strix::quant
