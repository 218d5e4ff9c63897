// PLACEHOLDER: not implemented yet; every function refuses by name.
#include "quant/quants.h"

#include "core/error.h"

namespace strix::quant {

void dequantize_row_q4_0(const void*, float*, int64_t) { throw Refusal("dequantize q4_0 is not implemented"); }
void dequantize_row_q4_1(const void*, float*, int64_t) { throw Refusal("dequantize q4_1 is not implemented"); }
void dequantize_row_q5_0(const void*, float*, int64_t) { throw Refusal("dequantize q5_0 is not implemented"); }
void dequantize_row_q5_1(const void*, float*, int64_t) { throw Refusal("dequantize q5_1 is not implemented"); }
void dequantize_row_q8_0(const void*, float*, int64_t) { throw Refusal("dequantize q8_0 is not implemented"); }
void dequantize_row_q8_1(const void*, float*, int64_t) { throw Refusal("dequantize q8_1 is not implemented"); }
void quantize_row_q4_0_ref(const float*, void*, int64_t) { throw Refusal("quantize q4_0 is not implemented"); }
void quantize_row_q4_1_ref(const float*, void*, int64_t) { throw Refusal("quantize q4_1 is not implemented"); }
void quantize_row_q5_0_ref(const float*, void*, int64_t) { throw Refusal("quantize q5_0 is not implemented"); }
void quantize_row_q5_1_ref(const float*, void*, int64_t) { throw Refusal("quantize q5_1 is not implemented"); }
void quantize_row_q8_0_ref(const float*, void*, int64_t) { throw Refusal("quantize q8_0 is not implemented"); }
void quantize_row_q8_1_ref(const float*, void*, int64_t) { throw Refusal("quantize q8_1 is not implemented"); }

}  // namespace strix::quant
