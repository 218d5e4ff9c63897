// PLACEHOLDER: not implemented yet; every function refuses by name.
#include "quant/quants.h"

#include "core/error.h"

namespace strix::quant {

void dequantize_row_q1_0(const void*, float*, int64_t) { throw Refusal("dequantize q1_0 is not implemented"); }
void dequantize_row_q2_0(const void*, float*, int64_t) { throw Refusal("dequantize q2_0 is not implemented"); }
void quantize_row_q1_0_ref(const float*, void*, int64_t) { throw Refusal("quantize q1_0 is not implemented"); }
void quantize_row_q2_0_ref(const float*, void*, int64_t) { throw Refusal("quantize q2_0 is not implemented"); }

}  // namespace strix::quant
