#include "quant/types.h"

#include <cctype>

#include "core/error.h"
#include "quant/quants.h"

namespace strix {

namespace {

using namespace quant;

#define Q(T, name, bs, ts, deq, qref) \
  TypeTraits { GgmlType::T, name, bs, ts, true, deq, qref }
#define F(T, name, ts, deq, qref) \
  TypeTraits { GgmlType::T, name, 1, ts, false, deq, qref }

// Block sizes and byte sizes as libggml reports them (ggml_blck_size / ggml_type_size).
const TypeTraits kTraits[] = {
    F(F32, "f32", 4, dequantize_row_f32, quantize_row_f32_ref),
    F(F16, "f16", 2, dequantize_row_f16, quantize_row_f16_ref),
    Q(Q4_0, "q4_0", 32, 18, dequantize_row_q4_0, quantize_row_q4_0_ref),
    Q(Q4_1, "q4_1", 32, 20, dequantize_row_q4_1, quantize_row_q4_1_ref),
    Q(Q5_0, "q5_0", 32, 22, dequantize_row_q5_0, quantize_row_q5_0_ref),
    Q(Q5_1, "q5_1", 32, 24, dequantize_row_q5_1, quantize_row_q5_1_ref),
    Q(Q8_0, "q8_0", 32, 34, dequantize_row_q8_0, quantize_row_q8_0_ref),
    Q(Q8_1, "q8_1", 32, 36, dequantize_row_q8_1, quantize_row_q8_1_ref),
    Q(Q2_K, "q2_K", 256, 84, dequantize_row_q2_K, quantize_row_q2_K_ref),
    Q(Q3_K, "q3_K", 256, 110, dequantize_row_q3_K, quantize_row_q3_K_ref),
    Q(Q4_K, "q4_K", 256, 144, dequantize_row_q4_K, quantize_row_q4_K_ref),
    Q(Q5_K, "q5_K", 256, 176, dequantize_row_q5_K, quantize_row_q5_K_ref),
    Q(Q6_K, "q6_K", 256, 210, dequantize_row_q6_K, quantize_row_q6_K_ref),
    Q(Q8_K, "q8_K", 256, 292, dequantize_row_q8_K, quantize_row_q8_K_ref),
    Q(IQ2_XXS, "iq2_xxs", 256, 66, dequantize_row_iq2_xxs, nullptr),
    Q(IQ2_XS, "iq2_xs", 256, 74, dequantize_row_iq2_xs, nullptr),
    Q(IQ3_XXS, "iq3_xxs", 256, 98, dequantize_row_iq3_xxs, quantize_row_iq3_xxs_ref),
    Q(IQ1_S, "iq1_s", 256, 50, dequantize_row_iq1_s, nullptr),
    Q(IQ4_NL, "iq4_nl", 32, 18, dequantize_row_iq4_nl, quantize_row_iq4_nl_ref),
    Q(IQ3_S, "iq3_s", 256, 110, dequantize_row_iq3_s, quantize_row_iq3_s_ref),
    Q(IQ2_S, "iq2_s", 256, 82, dequantize_row_iq2_s, quantize_row_iq2_s_ref),
    Q(IQ4_XS, "iq4_xs", 256, 136, dequantize_row_iq4_xs, quantize_row_iq4_xs_ref),
    F(I8, "i8", 1, nullptr, nullptr),
    F(I16, "i16", 2, nullptr, nullptr),
    F(I32, "i32", 4, nullptr, nullptr),
    F(I64, "i64", 8, nullptr, nullptr),
    F(F64, "f64", 8, nullptr, nullptr),
    Q(IQ1_M, "iq1_m", 256, 56, dequantize_row_iq1_m, nullptr),
    F(BF16, "bf16", 2, dequantize_row_bf16, quantize_row_bf16_ref),
    Q(TQ1_0, "tq1_0", 256, 54, dequantize_row_tq1_0, quantize_row_tq1_0_ref),
    Q(TQ2_0, "tq2_0", 256, 66, dequantize_row_tq2_0, quantize_row_tq2_0_ref),
    Q(MXFP4, "mxfp4", 32, 17, dequantize_row_mxfp4, quantize_row_mxfp4_ref),
    Q(NVFP4, "nvfp4", 64, 36, dequantize_row_nvfp4, quantize_row_nvfp4_ref),
    Q(Q1_0, "q1_0", 128, 18, dequantize_row_q1_0, quantize_row_q1_0_ref),
    Q(Q2_0, "q2_0", 64, 18, dequantize_row_q2_0, quantize_row_q2_0_ref),
};
#undef Q
#undef F

struct Table {
  const TypeTraits* by_id[kGgmlTypeCount] = {};
  Table() {
    for (const auto& t : kTraits) by_id[static_cast<uint32_t>(t.type)] = &t;
  }
};

const Table& table() {
  static const Table t;
  return t;
}

}  // namespace

const TypeTraits* type_traits(uint32_t id) { return id < kGgmlTypeCount ? table().by_id[id] : nullptr; }

const TypeTraits& type_traits_checked(uint32_t id) {
  const TypeTraits* t = type_traits(id);
  if (t == nullptr) throw Refusal("unknown ggml tensor type id " + std::to_string(id));
  return *t;
}

const char* type_name(uint32_t id) {
  const TypeTraits* t = type_traits(id);
  return t ? t->name : nullptr;
}

std::optional<GgmlType> type_from_name(std::string_view name) {
  for (const auto& t : kTraits) {
    std::string_view n = t.name;
    if (n.size() != name.size()) continue;
    bool eq = true;
    for (size_t i = 0; i < n.size() && eq; ++i) {
      eq = std::tolower(static_cast<unsigned char>(n[i])) == std::tolower(static_cast<unsigned char>(name[i]));
    }
    if (eq) return t.type;
  }
  return std::nullopt;
}

size_t row_size(GgmlType type, int64_t ne0) {
  const TypeTraits& t = type_traits(type);
  if (ne0 < 0 || ne0 % t.block_size != 0) {
    throw Error(std::string("row of ") + std::to_string(ne0) + " elements is not a multiple of the " + t.name +
                " block size " + std::to_string(t.block_size));
  }
  return static_cast<size_t>(ne0 / t.block_size) * t.type_size;
}

}  // namespace strix
