// PLACEHOLDER: not implemented yet; every function refuses by name.
#include "quant/quants.h"

#include "core/error.h"

namespace strix::quant {

void dequantize_row_mxfp4(const void*, float*, int64_t) { throw Refusal("dequantize mxfp4 is not implemented"); }
void dequantize_row_nvfp4(const void*, float*, int64_t) { throw Refusal("dequantize nvfp4 is not implemented"); }
void quantize_row_mxfp4_ref(const float*, void*, int64_t) { throw Refusal("quantize mxfp4 is not implemented"); }
void quantize_row_nvfp4_ref(const float*, void*, int64_t) { throw Refusal("quantize nvfp4 is not implemented"); }

}  // namespace strix::quant
