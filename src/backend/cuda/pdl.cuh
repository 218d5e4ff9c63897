// Programmatic dependent launch (Hopper): a kernel launched with pdl_launch
// may be scheduled while the kernel before it on the stream is finishing,
// and must call griddep_wait() before it touches anything that kernel
// writes or reads (its inputs, and outputs the previous kernel may still
// read). Work that only reads the weights (L2 prefetch) may come before.
// griddep_wait() is a no-op for a kernel launched without the attribute.
// griddep_wait() also lets the next kernel launch (launch_dependents) once
// every block of this one has passed its wait, so the next kernel's blocks are
// scheduled as this one's retire instead of after its last block. (Run 8
// measured PDL without that trigger: 1B tg128 933 vs 900 t/s, 8B 260 vs 273.)
// The GEMV issues its first weight loads before the wait (row_loop's kWait).
// Default (unset or 2): PDL; STRIX_CUDA_PDL=0: plain launches; 1: PDL with
// the GEMV's L2 prefetch of its weight rows before the wait. (H200 run 27:
// tg128 1B 1,228 vs 1,167 plain, 8B 360.4 vs 347.7; runs 8-21 measured PDL
// without the early loads: 1B +2.6%, 8B -1.3%.)
#pragma once

#include <cuda_runtime.h>

#include <utility>

#include "backend/cuda/device.h"

namespace strix::cuda {

__device__ __forceinline__ void griddep_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Prefetches [p, p + bytes) into L2, spread over the calling warp's lanes.
__device__ __forceinline__ void prefetch_l2(const void* p, size_t bytes, int lane) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const char* c = static_cast<const char*>(p);
  for (size_t off = static_cast<size_t>(lane) * 128; off < bytes; off += 32 * 128) {
    asm volatile("prefetch.global.L2 [%0];" ::"l"(c + off));
  }
#else
  (void)p, (void)bytes, (void)lane;
#endif
}

// Prefetches [p, p + bytes) into L2 from one thread, a line at a time.
__device__ __forceinline__ void prefetch_l2(const void* p, size_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const char* c = static_cast<const char*>(p);
  for (size_t off = 0; off < bytes; off += 128) asm volatile("prefetch.global.L2 [%0];" ::"l"(c + off));
#else
  (void)p, (void)bytes;
#endif
}

inline int pdl_mode() {
  static const int mode = env_is("STRIX_CUDA_PDL", "0") ? 0 : env_is("STRIX_CUDA_PDL", "1") ? 1 : 2;
  return mode;
}
inline bool pdl_enabled() { return pdl_mode() != 0; }
inline bool pdl_prefetch() { return pdl_mode() == 1; }

template <class... KArgs, class... Args>
cudaError_t pdl_launch(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t st, Args&&... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = st;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = pdl_enabled() ? 1 : 0;
  return cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}

}  // namespace strix::cuda
