// PLACEHOLDER: not implemented yet; every function refuses by name.
#include "quant/quants.h"

#include "core/error.h"

namespace strix::quant {

void dequantize_row_tq1_0(const void*, float*, int64_t) { throw Refusal("dequantize tq1_0 is not implemented"); }
void dequantize_row_tq2_0(const void*, float*, int64_t) { throw Refusal("dequantize tq2_0 is not implemented"); }
void quantize_row_tq1_0_ref(const float*, void*, int64_t) { throw Refusal("quantize tq1_0 is not implemented"); }
void quantize_row_tq2_0_ref(const float*, void*, int64_t) { throw Refusal("quantize tq2_0 is not implemented"); }

}  // namespace strix::quant
