// PLACEHOLDER: not implemented yet; every function refuses by name.
#include "quant/quants.h"

#include "core/error.h"

namespace strix::quant {

void dequantize_row_iq1_s(const void*, float*, int64_t) { throw Refusal("dequantize iq1_s is not implemented"); }
void dequantize_row_iq1_m(const void*, float*, int64_t) { throw Refusal("dequantize iq1_m is not implemented"); }
void dequantize_row_iq2_xxs(const void*, float*, int64_t) { throw Refusal("dequantize iq2_xxs is not implemented"); }
void dequantize_row_iq2_xs(const void*, float*, int64_t) { throw Refusal("dequantize iq2_xs is not implemented"); }
void dequantize_row_iq2_s(const void*, float*, int64_t) { throw Refusal("dequantize iq2_s is not implemented"); }
void dequantize_row_iq3_xxs(const void*, float*, int64_t) { throw Refusal("dequantize iq3_xxs is not implemented"); }
void dequantize_row_iq3_s(const void*, float*, int64_t) { throw Refusal("dequantize iq3_s is not implemented"); }
void dequantize_row_iq4_nl(const void*, float*, int64_t) { throw Refusal("dequantize iq4_nl is not implemented"); }
void dequantize_row_iq4_xs(const void*, float*, int64_t) { throw Refusal("dequantize iq4_xs is not implemented"); }
void quantize_row_iq2_s_ref(const float*, void*, int64_t) { throw Refusal("quantize iq2_s is not implemented"); }
void quantize_row_iq3_xxs_ref(const float*, void*, int64_t) { throw Refusal("quantize iq3_xxs is not implemented"); }
void quantize_row_iq3_s_ref(const float*, void*, int64_t) { throw Refusal("quantize iq3_s is not implemented"); }
void quantize_row_iq4_nl_ref(const float*, void*, int64_t) { throw Refusal("quantize iq4_nl is not implemented"); }
void quantize_row_iq4_xs_ref(const float*, void*, int64_t) { throw Refusal("quantize iq4_xs is not implemented"); }

}  // namespace strix::quant
