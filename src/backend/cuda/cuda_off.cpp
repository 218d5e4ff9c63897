// The CUDA entry points of a build without the CUDA backend (STRIX_CUDA=OFF,
// e.g. no toolkit, or the sanitizer build): each refuses, naming the option.
#include <string>

#include "backend/cuda/cuda_context.h"
#include "core/error.h"

namespace strix::cuda {

namespace {
constexpr const char* kOff =
    "this strix was built without the CUDA backend (configure with -DSTRIX_CUDA=ON and a CUDA toolkit)";
[[noreturn]] void refuse() { throw Refusal(kOff); }
}  // namespace

struct CudaContext::Impl {};

bool available(std::string* why) {
  if (why) *why = kOff;
  return false;
}
void check_model(const Model&) { refuse(); }

Offload parse_ngl(std::string_view value, int64_t n_layer) {
  if (value == "0" || value == "auto") return offload_layers(0, n_layer);
  refuse();
}

CudaContext::CudaContext(const Model&, const ContextOptions&) { refuse(); }
CudaContext::CudaContext(const Model&, const ContextOptions&, GpuPart) { refuse(); }
CudaContext::~CudaContext() = default;
void CudaContext::decode(std::span<const int32_t>, std::span<const int32_t>, std::span<const int32_t>,
                         std::span<const uint8_t>) {
  refuse();
}
std::span<const float> CudaContext::logits(int32_t) const { refuse(); }
BatchContext::TopLogits CudaContext::top_logits(int32_t) const { refuse(); }
void CudaContext::clear() { refuse(); }
void CudaContext::seq_truncate(int, int32_t) { refuse(); }
void CudaContext::seq_cut(int, int32_t, int32_t) { refuse(); }
int64_t CudaContext::n_ctx() const { refuse(); }
const KvCache& CudaContext::kv() const { refuse(); }
KvCache& CudaContext::kv_cache() { refuse(); }
const Model& CudaContext::model() const { refuse(); }
int64_t CudaContext::n_vocab() const { refuse(); }
std::string CudaContext::device_name() const { refuse(); }
uint64_t CudaContext::weight_bytes() const { refuse(); }
GpuInfo gpu_info(bool) { refuse(); }

}  // namespace strix::cuda
