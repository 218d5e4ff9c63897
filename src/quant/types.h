// ggml tensor types: ids as on the wire, block sizes, and the reference
// (scalar, bit-exact with libggml) dequantize / quantize functions of each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace strix {

enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  // 4, 5: removed (Q4_2, Q4_3)
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  // 31..33: removed (Q4_0_4_4, Q4_0_4_8, Q4_0_8_8)
  TQ1_0 = 34,
  TQ2_0 = 35,
  // 36..38: removed (IQ4_NL_4_4, IQ4_NL_4_8, IQ4_NL_8_8)
  MXFP4 = 39,
  NVFP4 = 40,
  Q1_0 = 41,
  Q2_0 = 42,
};
constexpr uint32_t kGgmlTypeCount = 43;

// Convert `k` values (a multiple of the block size) of a row.
using DequantizeRowFn = void (*)(const void* src, float* dst, int64_t k);
using QuantizeRowFn = void (*)(const float* src, void* dst, int64_t k);

struct TypeTraits {
  GgmlType type;
  const char* name;     // ggml's name: "q4_K", "iq2_xxs", "bf16" ...
  int64_t block_size;   // elements per block
  size_t type_size;     // bytes per block
  bool is_quantized;
  DequantizeRowFn to_float;        // nullptr for I8..I64
  QuantizeRowFn from_float_ref;    // nullptr where ggml has no reference quantizer
};

// nullptr for ids Strix does not know (including removed ones).
const TypeTraits* type_traits(uint32_t id);
// Throws Refusal "unknown ggml tensor type id N" for unknown ids.
const TypeTraits& type_traits_checked(uint32_t id);
inline const TypeTraits& type_traits(GgmlType t) { return type_traits_checked(static_cast<uint32_t>(t)); }
const char* type_name(uint32_t id);  // "unknown(44)" style names are not returned: nullptr if unknown
std::optional<GgmlType> type_from_name(std::string_view name);  // case-insensitive

// Bytes of a row of `ne0` elements; throws Error when ne0 is not a multiple of
// the block size.
size_t row_size(GgmlType type, int64_t ne0);

}  // namespace strix
