// Moving cached cells (llama_memory_seq_rm + llama_memory_seq_add on the GPU's
// paged cache): cells [p1, p1 + n) of a sequence go to [p0, p0 + n), K rows
// rotated by the RoPE of the shift as the CPU's rope_shift_row_f16 does (f16
// -> f32, each head's pairs rotated with the host's cos/sin table, -> f16), V
// rows copied. The ranges may overlap, so the rows go through a scratch first.
#include "backend/cuda/common.cuh"
#include "backend/cuda/kernels.h"

namespace strix::cuda {

namespace {

// Block per moved cell: its K (rotated) and V rows into scratch row i.
__global__ void kv_gather_kernel(KvLayout kv, int seq, int p1, const float* __restrict__ cs, int n_rot, bool neox,
                                 int head_dim, uint16_t* __restrict__ sk, uint16_t* __restrict__ sv) {
  const int i = static_cast<int>(blockIdx.x);
  const int64_t src = kv_cell(kv, seq, p1 + i);
  const uint16_t* kr = kv.k + src * kv.k_dim;
  const uint16_t* vr = kv.v + src * kv.v_dim;
  uint16_t* ko = sk + static_cast<int64_t>(i) * kv.k_dim;
  uint16_t* vo = sv + static_cast<int64_t>(i) * kv.v_dim;
  const int half = n_rot / 2;
  for (int64_t e = threadIdx.x; e < kv.k_dim; e += blockDim.x) {
    const int64_t h0 = e - e % head_dim;
    const int d = static_cast<int>(e % head_dim);
    float out = h2f(kr[e]);
    if (d < n_rot) {
      int a, b, c;  // the pair's two dims and its cos/sin index
      if (neox) {
        c = 2 * (d < half ? d : d - half);
        a = c / 2;
        b = a + half;
      } else {
        a = d & ~1;
        b = a + 1;
        c = a;
      }
      const float x0 = h2f(kr[h0 + a]), x1 = h2f(kr[h0 + b]);
      out = d == a ? fmaf(x0, cs[c], -(x1 * cs[c + 1])) : fmaf(x0, cs[c + 1], x1 * cs[c]);
    }
    ko[e] = f2h(out);
  }
  for (int64_t e = threadIdx.x; e < kv.v_dim; e += blockDim.x) vo[e] = vr[e];
}

__global__ void kv_scatter_kernel(KvLayout kv, int seq, int p0, const uint16_t* __restrict__ sk,
                                  const uint16_t* __restrict__ sv) {
  const int i = static_cast<int>(blockIdx.x);
  const int64_t dst = kv_cell(kv, seq, p0 + i);
  for (int64_t e = threadIdx.x; e < kv.k_dim; e += blockDim.x) kv.k[dst * kv.k_dim + e] = sk[i * kv.k_dim + e];
  for (int64_t e = threadIdx.x; e < kv.v_dim; e += blockDim.x) kv.v[dst * kv.v_dim + e] = sv[i * kv.v_dim + e];
}

}  // namespace

void kv_move(const KvLayout& kv, int seq, int32_t p0, int32_t p1, int32_t n, const float* cs, int n_rot, bool neox,
             int head_dim, uint16_t* scratch, cudaStream_t st) {
  if (n <= 0) return;
  if (n_rot > head_dim || n_rot % 2 != 0 || head_dim <= 0 || kv.k_dim % head_dim != 0) {
    throw Error("kv_move: bad RoPE dims (n_rot " + std::to_string(n_rot) + ", head_dim " + std::to_string(head_dim) +
                ")");
  }
  uint16_t* sk = scratch;
  uint16_t* sv = scratch + static_cast<int64_t>(n) * kv.k_dim;
  kv_gather_kernel<<<n, 256, 0, st>>>(kv, seq, p1, cs, n_rot, neox, head_dim, sk, sv);
  check_launch("kv_move (gather)");
  kv_scatter_kernel<<<n, 256, 0, st>>>(kv, seq, p0, sk, sv);
  check_launch("kv_move (scatter)");
}

}  // namespace strix::cuda
