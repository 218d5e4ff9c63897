// The CUDA kernels of the decoder forward pass, as host functions that launch
// on a stream (src/backend/cuda/*.cu, one file per op family). Every pointer
// is device memory; activations are f32 rows (token-major, row strides in
// floats), the KV cache is f16 [seq][cell][dim] per layer. Each launcher
// checks the launch and throws strix::Error naming the kernel.
//
// The arithmetic follows the CPU ops (src/ops/cpu_ops.cpp) where it decides
// rounding that libllama also does: q rounded to f16 before q·K, softmax
// probabilities rounded to f16 before P·V, RoPE angles by repeated
// multiplication and fma rotations, RMS sums in double.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "models/hparams.h"
#include "quant/types.h"

namespace strix::cuda {

// A weight matrix in device memory: ne1 rows of ne0 elements, nb1 bytes apart.
struct DevWeight {
  GgmlType type = GgmlType::F32;
  int64_t ne0 = 0, ne1 = 0;
  size_t nb1 = 0;
  const uint8_t* data = nullptr;
};

// The types the CUDA kernels read (GEMV, row lookup, dequantize): F32, F16,
// BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL,
// IQ4_XS, MXFP4. Others are refused by name before anything runs.
bool type_supported(GgmlType t);
// Why `t` with rows of `ne0` cannot run, or nullptr (rows must be whole
// blocks; F32/F16/BF16 rows of even length).
const char* type_unsupported_reason(GgmlType t, int64_t ne0);

// out[t] = dequantized row ids[t] of w.
void get_rows(const DevWeight& w, const int32_t* ids, int n, float* out, int64_t out_stride, cudaStream_t st);

// y[t][r] = dot(row r of w, x[t]) for t < n (any n; columns go 8 at a time).
void gemv(const DevWeight& w, const float* x, int64_t x_stride, int n, float* y, int64_t y_stride, cudaStream_t st);
// out[r][i] = half(dequantized w[r][i]) for the whole matrix (for the GEMM path).
// Q4_K and Q6_K go through one 16-byte store per thread (STRIX_CUDA_DEQUANT=plain:
// the generic kernel), with the same values.
void dequant_f16(const DevWeight& w, uint16_t* out, cudaStream_t st);
// The weight type's vec_dot partner on libllama's CPU path (as
// cpu::CpuKernels::vec_dot_type): F32, F16, BF16 themselves; Q8_0 for Q8_0,
// Q4_0, Q5_0, IQ4_NL, MXFP4; Q8_1 for Q4_1, Q5_1; Q8_K for Q2_K..Q6_K and
// IQ4_XS. Refused by name for other types.
GgmlType round_partner(GgmlType wtype);
// The activations libllama's CPU path multiplies weights of type `wtype` with:
// x converted to round_partner(wtype) and back to floats into `out` (Q8_1's
// values are Q8_0's). Returns false (and writes nothing) for F32 weights,
// whose partner is F32 itself.
bool round_activations(GgmlType wtype, const float* x, int64_t x_stride, int n, int64_t width, float* out,
                       int64_t out_stride, cudaStream_t st);
// The integer decode GEMV (gemv_q.cu) for Q8_0, Q4_K and Q6_K weights:
// quantize_act writes n rows of `width` activations as libllama's CPU partner
// quantizer does (Q8_0 blocks of 32 for Q8_0 weights, Q8_K blocks of 256 for
// K-quants): int8 q (packed rows of width) and one float d per block
// (gemv_q_block(wtype) elements); gemv_q multiplies a weight with them, every
// block product an exact int32 dot, y[t][r] for t < n.
bool gemv_q_supported(GgmlType t);
int gemv_q_block(GgmlType t);
void quantize_act(GgmlType wtype, const float* x, int64_t x_stride, int n, int64_t width, int8_t* q, float* d,
                  cudaStream_t st);
void gemv_q(const DevWeight& w, const int8_t* q, const float* d, int n, float* y, int64_t y_stride, cudaStream_t st);
// gemv_q of up to three weights that multiply the same activations (q/k/v,
// gate/up: same row length and partner type) in one launch.
struct GemvOut {
  const DevWeight* w;
  float* y;
  int64_t y_stride;
};
void gemv_q_multi(const GemvOut* outs, int count, const int8_t* q, const float* d, int n, cudaStream_t st);

// ---- mixture of experts (moe.cu) ----
// A 3-D expert tensor [ne0, ne1, n_expert]: expert x's matrix is `w` with
// data + x * nb2 (w.data: expert 0's).
struct DevExperts {
  DevWeight w;
  size_t nb2 = 0;
  int64_t n_expert = 0;
  DevWeight slice(int64_t x) const { return {w.type, w.ne0, w.ne1, w.nb1, w.data + static_cast<size_t>(x) * nb2}; }
};
// ops::moe_route with softmax gating, on the device: logits [n, n_expert]
// (rows logits_stride apart) -> ids [n, k] (slot 0 the most probable; equal
// probabilities to the lower expert index) and weights [n, k] (renormalised
// to sum 1 when norm_weights, times scale when it is neither 0 nor 1).
void moe_route(const float* logits, int64_t logits_stride, int n, int n_expert, int k, bool norm_weights, float scale,
               int32_t* ids, float* weights, cudaStream_t st);
// The indirect decode GEMVs of the experts, for n_pairs (token, slot) pairs p:
// y[p][r] = dot(row r of expert ids[p], activation row p / act_div), y rows
// y_stride apart. gemv_q_id: Q8_0 / Q4_K / Q6_K experts (one or two weights
// of one activation: gate and up) against quantize_act's rows (packed rows of
// ne0); gemv_id: any type of the float GEMV against f32 rows (x_stride even).
// An id outside [0, n_expert) leaves its pair's rows unwritten.
struct GemvIdOut {
  const DevExperts* w;
  float* y;
  int64_t y_stride;
};
void gemv_q_id(const GemvIdOut* outs, int count, const int32_t* ids, int n_pairs, int act_div, const int8_t* q,
               const float* d, cudaStream_t st);
void gemv_id(const DevExperts& w, const int32_t* ids, int n_pairs, int act_div, const float* x, int64_t x_stride,
             float* y, int64_t y_stride, cudaStream_t st);
// out[t] = ((y[pair t k] w[t k] + y[pair t k + 1] w[t k + 1]) + ...) over the
// k slots in order, every product and sum rounded as ggml's mul and adds
// (graph::moe_ffn's moe_scatter + moe_sum); pair p's row of y is pos[p]
// (pos null: p).
void moe_weighted_sum(const float* y, int64_t y_stride, const int32_t* pos, const float* weights, int n, int k,
                      int64_t width, float* out, int64_t out_stride, cudaStream_t st);

// Fused steps of the decode path, each equal to the unfused sequence it
// replaces value for value:
// rms_norm_quant: r = x + y (x when y is null), written to x_out when y is
// set; rms_norm(r) * w written to out when set (packed rows of dim) and
// quantized for wtype as quantize_act. One block per 256 elements of a row,
// each summing the whole row, so x_out must not be x and out must not be y.
void rms_norm_quant(const float* x, const float* y, float* x_out, int n, int64_t dim, const float* w, float eps,
                    float* out, GgmlType wtype, int8_t* q, float* d, cudaStream_t st);
// swiglu_quant: silu(gate) * up (as swiglu) quantized for wtype, also written to out when set.
void swiglu_quant(GgmlType wtype, const float* gate, int64_t gate_stride, const float* up, int64_t up_stride, int n,
                  int64_t width, int8_t* q, float* d, float* out, int64_t out_stride, cudaStream_t st);

// out[t][i] = half(x[t][i]), packed rows of `width`.
// activations_f16: round_activations (when the partner is not F32) and to_f16
// in one pass, equal to the two bit for bit (the prefill GEMM's input).
void activations_f16(GgmlType wtype, const float* x, int64_t x_stride, int n, int64_t width, uint16_t* out,
                     cudaStream_t st);
// The same of silu(gate) * up as swiglu() computes it (the down projection's input).
void activations_f16_swiglu(GgmlType wtype, const float* gate, int64_t gate_stride, const float* up, int64_t up_stride,
                            int n, int64_t width, uint16_t* out, cudaStream_t st);
void to_f16(const float* x, int64_t x_stride, int n, int64_t width, uint16_t* out, cudaStream_t st);

// RMS norm of rows (times w when not null), as ops::rms_norm.
void rms_norm(const float* x, int64_t rows, int64_t dim, int64_t x_stride, float* out, int64_t out_stride,
              const float* w, float eps, cudaStream_t st);
// x += y; out = rms_norm(x) * w (packed rows of dim), as ops::add_rms_norm.
void add_rms_norm(float* x, const float* y, float* out, int n, int64_t dim, const float* w, float eps, cudaStream_t st);
// out = a + b (packed rows of width).
void add(const float* a, const float* b, float* out, int n, int64_t width, cudaStream_t st);
// y[t][i] += bias[i].
void add_bias(float* y, int64_t y_stride, const float* bias, int n, int64_t width, cudaStream_t st);
// out = silu(gate) * up, as the CPU's vec_ops swiglu.
void swiglu(const float* gate, int64_t gate_stride, const float* up, int64_t up_stride, float* out, int64_t out_stride,
            int n, int64_t width, cudaStream_t st);
// dst[i] = src[ids[i]] (rows of width, both with `stride`).
void gather_rows(const float* src, int64_t stride, int64_t width, const int32_t* ids, int m, float* dst,
                 cudaStream_t st);

// RoPE in place on n tokens of n_heads heads (llama.cpp NORM or NEOX mode,
// YaRN as ops::rope); freq_factors (device, n_rot/2) may be null.
void rope(float* x, int n, int64_t n_heads, int64_t head_dim, int64_t stride, const int32_t* pos, const RopeParams& rp,
          const float* freq_factors, cudaStream_t st);

// One layer's KV cells. Paged (blocks set): cell p of sequence s is row
// blocks[s * max_blocks + p / block_size] * block_size + p % block_size of k
// and v (KvCache's block tables; block_size a power of two); contiguous
// (blocks null): row s * seq_cap + p.
struct KvLayout {
  uint16_t* k = nullptr;  // this layer's K rows of k_dim halves
  uint16_t* v = nullptr;
  int64_t k_dim = 0, v_dim = 0;
  int64_t seq_cap = 0;  // contiguous: cells per sequence
  const int32_t* blocks = nullptr;
  int block_shift = 0;  // log2(block_size)
  int max_blocks = 0;   // table entries per sequence
};
// Moves cells [p1, p1 + n) of sequence seq to [p0, p0 + n) (p0 < p1; both
// reserved): K rows rotated by the RoPE of the shift (cs: n_rot floats, each
// pair's cosine and sine as ops::rope_shift computes them on the host; neox or
// adjacent pairs, each head of head_dim), V rows copied; scratch holds
// n * (k_dim + v_dim) halves.
void kv_move(const KvLayout& kv, int seq, int32_t p0, int32_t p1, int32_t n, const float* cs, int n_rot, bool neox,
             int head_dim, uint16_t* scratch, cudaStream_t st);

// Stores k, v rows (rounded to f16) at (seq[t], pos[t]).
void kv_store(const KvLayout& kv, const float* k, int64_t k_stride, const float* v, int64_t v_stride, int n,
              const int32_t* pos, const int32_t* seq, cudaStream_t st);

struct AttnArgs {
  const float* q = nullptr;
  int64_t q_stride = 0;
  const int32_t* pos = nullptr;  // per token: attends cells [0, pos]
  const int32_t* seq = nullptr;
  int n_tokens = 0;
  int n_head = 0, n_head_kv = 0, head_dim_k = 0, head_dim_v = 0;
  float kq_scale = 1.0f;
  int max_cells = 0;  // largest pos + 1 of the batch (sizes the score buffer)
  float* out = nullptr;
  int64_t out_stride = 0;
};
// rope() of q (n_head heads) and k (n_head_kv heads) in place, then
// kv_store() of the rotated k and of v, in one launch (head_dim even).
void rope_kv_store(float* q, int64_t q_stride, float* k, int64_t k_stride, const float* v, int64_t v_stride, int n,
                   int64_t n_head, int64_t n_head_kv, int64_t head_dim, const int32_t* pos, const int32_t* seq,
                   const RopeParams& rp, const float* freq_factors, const KvLayout& kv, cudaStream_t st);

// Causal attention of each token over its sequence's cached cells (one query
// per (token, head); decode is the one-token case).
void attention(const KvLayout& kv, const AttnArgs& a, cudaStream_t st);
// attention() for prefill batches as a tiled tensor-core kernel (flash
// attention, attn_prefill.cu): blocks of 64 (token, group head) rows per KV
// head, 64-cell K/V tiles, online softmax; q rounded to f16 as attention()
// does, probabilities rounded to f16 before P·V unnormalized (attention()
// rounds the normalized ones), so the two differ in summation order and that
// rounding only. Any batch (several sequences too); head sizes 32, 64 or 128
// with K and V equal (attention_prefill_fits); q/out rows 8-byte aligned.
bool attention_prefill_fits(int head_dim_k, int head_dim_v);
void attention_prefill(const KvLayout& kv, const AttnArgs& a, cudaStream_t st);
// One token's attention fused with rope_kv_store before it and quantize_act
// after it (attn_decode.cu), equal to that sequence bit for bit: q and k (one
// token, not written back) rotated, k and v stored at (seq[0], pos[0]),
// attention over cells [0, pos[0]] into out, and out quantized into q8/d8 for
// an integer GEMV of partner block q8_block (32, 256, or 0: not quantized;
// a head group's n_head / n_head_kv * head_dim_v outputs must be whole blocks).
inline constexpr int kDecodeMinChunk = 128;  // H200 run 12: 1B tg128 @ d4096 766 t/s vs 596 with 256
// Several tokens in one launch (n_tokens, each of its own sequence: a batch
// of decode steps): token t's q, k, v and out rows are q_stride, k_stride,
// v_stride and out_stride floats after token 0's, its quantized row n_head *
// head_dim_v bytes after (d8: that / q8_block floats), and every value equals
// a launch of that token alone.
struct AttnDecode {
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  const int32_t* pos = nullptr;
  const int32_t* seq = nullptr;
  int n_tokens = 1;
  int64_t q_stride = 0, k_stride = 0, v_stride = 0, out_stride = 0;
  int n_head = 0, n_head_kv = 0, head_dim_k = 0, head_dim_v = 0;
  float kq_scale = 1.0f;
  int max_cells = 0;  // the most cells pos[0] + 1 may reach (sizes the score buffer)
  float* out = nullptr;
  int8_t* q8 = nullptr;
  float* d8 = nullptr;
  int q8_block = 0;
  // Scratch of the split context (flash-decoding): without it, or with
  // max_split 1, one block per KV head reads the whole context. With S =
  // n_tokens * attention_decode_splits(n_head_kv * n_tokens, max_cells,
  // max_split, min_chunk): split_ml S * n_head * 2 floats; split_o S * n_head
  // * head_dim_v floats; split_count n_tokens * n_head_kv zeroed counters
  // (each launch leaves them zero).
  float* split_ml = nullptr;
  float* split_o = nullptr;
  unsigned* split_count = nullptr;
  int max_split = 1;
  int min_chunk = kDecodeMinChunk;  // fewest cells per split (a multiple of 64)
};
// How many splits attention_decode cuts a context of max_cells into (about
// two blocks per SM, each split at least min_chunk cells, at most max_split);
// n_blocks: the launch's blocks per split (n_head_kv * n_tokens).
int attention_decode_splits(int n_blocks, int max_cells, int max_split, int min_chunk = kDecodeMinChunk);
// Whether the fused kernel takes this head layout and context (groups of 1, 2,
// 4 or 8 query heads per KV head; the scores of one split in shared memory).
bool attention_decode_fits(int n_head, int n_head_kv, int head_dim_k, int head_dim_v, int max_cells, int max_split = 1,
                           int min_chunk = kDecodeMinChunk, int n_tokens = 1);
void attention_decode(const AttnDecode& a, const RopeParams& rp, const float* freq_factors, const KvLayout& kv,
                      cudaStream_t st);
// For each of n rows of n_vocab logits (packed): its kTopLogits largest values
// and their ids, largest first, equal values by the lower id first; a row that
// holds a NaN or +inf gets id -1 in every slot (n_vocab >= kTopLogits).
// scratch: top_logits_scratch_bytes(n, n_vocab) of device memory, zeroed
// before its first use (each launch leaves its counters at zero again).
inline constexpr int kTopLogits = 8;
size_t top_logits_scratch_bytes(int n, int64_t n_vocab);
void top_logits(const float* logits, int n, int64_t n_vocab, float* top, int32_t* ids, void* scratch,
                size_t scratch_bytes, cudaStream_t st);

// The most cells per sequence attention() takes (shared memory of one block).
int attention_max_cells(int head_dim_v);

}  // namespace strix::cuda
