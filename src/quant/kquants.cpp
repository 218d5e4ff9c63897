// PLACEHOLDER: not implemented yet; every function refuses by name.
#include "quant/quants.h"

#include "core/error.h"

namespace strix::quant {

void dequantize_row_q2_K(const void*, float*, int64_t) { throw Refusal("dequantize q2_K is not implemented"); }
void dequantize_row_q3_K(const void*, float*, int64_t) { throw Refusal("dequantize q3_K is not implemented"); }
void dequantize_row_q4_K(const void*, float*, int64_t) { throw Refusal("dequantize q4_K is not implemented"); }
void dequantize_row_q5_K(const void*, float*, int64_t) { throw Refusal("dequantize q5_K is not implemented"); }
void dequantize_row_q6_K(const void*, float*, int64_t) { throw Refusal("dequantize q6_K is not implemented"); }
void dequantize_row_q8_K(const void*, float*, int64_t) { throw Refusal("dequantize q8_K is not implemented"); }
void quantize_row_q2_K_ref(const float*, void*, int64_t) { throw Refusal("quantize q2_K is not implemented"); }
void quantize_row_q3_K_ref(const float*, void*, int64_t) { throw Refusal("quantize q3_K is not implemented"); }
void quantize_row_q4_K_ref(const float*, void*, int64_t) { throw Refusal("quantize q4_K is not implemented"); }
void quantize_row_q5_K_ref(const float*, void*, int64_t) { throw Refusal("quantize q5_K is not implemented"); }
void quantize_row_q6_K_ref(const float*, void*, int64_t) { throw Refusal("quantize q6_K is not implemented"); }
void quantize_row_q8_K_ref(const float*, void*, int64_t) { throw Refusal("quantize q8_K is not implemented"); }

}  // namespace strix::quant
