// The decode GEMV of the quantized weights (Q8_0, Q4_K, Q6_K) in integers,
// as libllama's CPU vec_dot computes them: the activations are quantized
// once to the weight's partner (Q8_0 blocks of 32, Q8_K super-blocks of 256,
// ggml-cpu's x86 quantizers; quant_act.cu), every block product is an exact int32 dot
// (dp4a), and only the per-block scales are float. Each warp reads a row
// with 16-byte (Q4_K) or 2-byte (Q8_0, Q6_K: 34- and 210-byte blocks) loads,
// lanes spread over consecutive blocks so a warp's loads cover contiguous
// bytes; up to 8 token columns share every weight load.
#include <cstdlib>
#include <string>
#include <type_traits>

#include "backend/cuda/common.cuh"
#include "backend/cuda/device.h"
#include "backend/cuda/gemv_rows.cuh"
#include "backend/cuda/kernels.h"
#include "backend/cuda/pdl.cuh"

namespace strix::cuda {

namespace {

// Up to three weights of one activation (q/k/v, gate/up) in one launch: the
// grid's blocks run the segments one after another, one warp per row.
constexpr int kMaxSegs = 3;
// Rows (warps) per block. Measured on the H200 (runs 6 and 7): 2 or 8 rows per
// block, and loading 2 or 4 blocks ahead per lane, were no faster.
constexpr unsigned kGemvWarps = 4;
struct Seg {
  const uint8_t* w;
  size_t nb1;
  int64_t rows;
  float* y;
  int64_t ys;
  GgmlType type;
  unsigned first_block;  // of the grid
};
struct Segs {
  Seg s[kMaxSegs];
  int count;
  bool prefetch;  // with programmatic dependent launch: the rows into L2 before griddep_wait
  bool q6_stage;  // Q6_K rows of whole 4-block steps through shared memory (row_loop_q6k_staged)
};

// R rows per warp, S warps per row (the row's blocks interleaved between
// them, their sums added in warp order), C token columns. Decode (C = 1) of a
// big launch takes R = 2, so every lane has two rows' loads in flight; long
// rows of a small launch take S = 2, so there are warps enough to keep the
// memory busy.
template <int C, int R, int S, bool P = false>
__global__ void gemv_q_kernel(Segs segs, const int8_t* __restrict__ aq, const float* __restrict__ ad, int64_t width) {
  static_assert(R == 1 || S == 1, "rows per warp or warps per row, not both");
  int si = 0;
#pragma unroll
  for (int i = 1; i < kMaxSegs; ++i) si += (i < segs.count && blockIdx.x >= segs.s[i].first_block);
  const Seg& sg = segs.s[si];
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t r = (static_cast<int64_t>(blockIdx.x - sg.first_block) * (kGemvWarps / S) + warp / S) * R;
  const int part = warp % S;
  const uint8_t* row = sg.w + r * sg.nb1;
  // the weights do not depend on the kernel before: start reading them while it
  // ends (each row loop issues its first step's loads, then griddep_wait)
  if (segs.prefetch && r < sg.rows && part == 0) {
    prefetch_l2(row, sg.nb1 * static_cast<size_t>(sg.rows - r < R ? sg.rows - r : R), lane);
  }
  const int nrows = r >= sg.rows ? 0 : sg.rows - r < R ? static_cast<int>(sg.rows - r) : R;
  if (S == 1 && nrows == 0) return;
  float acc[R][C];
#pragma unroll
  for (int i = 0; i < R; ++i) {
#pragma unroll
    for (int c = 0; c < C; ++c) acc[i][c] = 0.0f;
  }
  if (nrows > 0) {
    switch (sg.type) {
      case GgmlType::Q8_0:
        row_loop<BQ8_0, C, R, S, true, P>(row, sg.nb1, nrows, static_cast<int>(width / 32), aq, ad, width, lane, part,
                                          acc);
        break;
      case GgmlType::Q4_K:
        row_loop<BQ4_K, C, R, S, true, P>(row, sg.nb1, nrows, static_cast<int>(width / 256), aq, ad, width, lane, part,
                                          acc);
        break;
      default: {
        const int nblk = static_cast<int>(width / 256);
        if (segs.q6_stage && nblk % 4 == 0 && (reinterpret_cast<uintptr_t>(sg.w) & 7) == 0) {
          __shared__ uint2 stage[kGemvWarps][R * kQ6StageWords];
          row_loop_q6k_staged<C, R, S, true>(row, sg.nb1, nrows, nblk, aq, ad, width, lane, part, acc, stage[warp]);
        } else {
          row_loop<BQ6_K, C, R, S, true, P>(row, sg.nb1, nrows, nblk, aq, ad, width, lane, part, acc);
        }
        break;
      }
    }
  } else {
    griddep_wait();  // a split row's idle warp: every thread passes the wait
  }
  if constexpr (S == 1) {
#pragma unroll
    for (int i = 0; i < R; ++i) {
#pragma unroll
      for (int c = 0; c < C; ++c) {
        const float s = warp_sum(acc[i][c]);
        if (lane == 0 && i < nrows) sg.y[c * sg.ys + r + i] = s;
      }
    }
  } else {
    __shared__ float sums[kGemvWarps][C];
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const float s = warp_sum(acc[0][c]);
      if (lane == 0) sums[warp][c] = s;
    }
    __syncthreads();
    if (part == 0 && nrows > 0 && lane < C) {
      float s = sums[warp][lane];
#pragma unroll
      for (int k = 1; k < S; ++k) s += sums[warp + k][lane];
      sg.y[lane * sg.ys + r] = s;
    }
  }
}

// The one-column GEMV's layout: by the launch's size (auto), or
// STRIX_CUDA_GEMV_MODE=plain (one warp per row, for A/B runs).
bool gemv_plain() {
  static const bool plain = env_is("STRIX_CUDA_GEMV_MODE", "plain");
  return plain;
}

// STRIX_CUDA_GEMV_Q6=plain|rows2|split: the layout of a one-column launch of
// Q6_K weights only, whatever its size (A/B runs; unset: by size, see
// gemv_q_multi).
int gemv_q6_mode() {
  static const int mode = env_is("STRIX_CUDA_GEMV_Q6", "plain")   ? 1
                          : env_is("STRIX_CUDA_GEMV_Q6", "rows2") ? 2
                          : env_is("STRIX_CUDA_GEMV_Q6", "split") ? 3
                                                                  : 0;
  return mode;
}

// The one-column GEMV loads the next step before this step's products
// (row_loop's kPipe; H200 run 29: 8B tg128 398.3 vs 394.0, 1B even);
// STRIX_CUDA_GEMV_PIPE=0 turns it off for A/B runs.
bool gemv_pipe() {
  static const bool on = !env_is("STRIX_CUDA_GEMV_PIPE", "0");
  return on;
}

// Launches of 16k+ rows (gate/up, the output head) take four rows per warp
// (H200 run 31: 8B tg128 403.9 / 404.6 vs 398.4 / 396.3 with two, 1B 1,459 /
// 1,477 vs 1,439 / 1,438); STRIX_CUDA_GEMV_ROWS=2 keeps two, for A/B runs.
bool gemv_rows4() {
  static const bool on = !env_is("STRIX_CUDA_GEMV_ROWS", "2");
  return on;
}

// STRIX_CUDA_Q6_STAGE=0: Q6_K rows read lane by lane (row_loop), for A/B runs.
bool q6_stage() {
  static const bool on = !env_is("STRIX_CUDA_Q6_STAGE", "0");
  return on;
}

// The one-column launch's layouts: rows per warp (R), warps per row (S).
enum class Mode { kPlain, kTwoRows, kFourRows, kSplit };

}  // namespace

bool gemv_q_supported(GgmlType t) { return t == GgmlType::Q8_0 || t == GgmlType::Q4_K || t == GgmlType::Q6_K; }

int gemv_q_block(GgmlType t) { return t == GgmlType::Q8_0 ? 32 : 256; }

void gemv_q_multi(const GemvOut* outs, int count, const int8_t* q, const float* d, int n, cudaStream_t st) {
  if (count < 1 || count > kMaxSegs) throw Error("gemv_q_multi: 1 to 3 weights per launch");
  const int64_t width = outs[0].w->ne0;
  Segs segs{};
  segs.count = count;
  segs.prefetch = pdl_prefetch();
  segs.q6_stage = q6_stage();
  for (int i = 0; i < count; ++i) {
    const DevWeight& w = *outs[i].w;
    if (!gemv_q_supported(w.type)) refuse_type(w.type);
    if (w.ne0 != width || gemv_q_block(w.type) != gemv_q_block(outs[0].w->type)) {
      throw Error("gemv_q_multi: the weights differ in row length or activation type");
    }
    if (w.ne0 % gemv_q_block(w.type) != 0) {
      throw Error("gemv_q: rows of " + std::to_string(w.ne0) + " are not whole blocks");
    }
    segs.s[i] = {w.data, w.nb1, w.ne1, outs[i].y, outs[i].y_stride, w.type, 0};
  }
  const int64_t per = width / gemv_q_block(outs[0].w->type);
  // the grid: each weight's blocks one after another, rpb rows per block
  auto layout = [&](Segs& sc, int rows_per_block) {
    unsigned blocks = 0;
    for (int i = 0; i < count; ++i) {
      sc.s[i].first_block = blocks;
      blocks += blocks_for(sc.s[i].rows, rows_per_block);
    }
    return blocks;
  };
  int64_t all_rows = 0;
  for (int i = 0; i < count; ++i) all_rows += segs.s[i].rows;
  const int64_t nblk = width / gemv_q_block(outs[0].w->type);
  // H200 run 15: two rows per warp paid on the 28,672 gate/up rows of the 8B (four
  // since run 31) and lost on launches of 4-6k rows; 56-block rows of 4,096
  // (down) had 15 warps an SM. Splitting rows from 4,096 elements (q/k/v, o) or over four
  // warps lost (run 41, 8B tg128: 407.6 / 409.0 and 418.5 / 418.3 against 424.2 / 424.7).
  Mode one = gemv_plain()        ? Mode::kPlain
             : all_rows >= 16384 ? (gemv_rows4() ? Mode::kFourRows : Mode::kTwoRows)
             : nblk * 256 >= 8192 && gemv_q_block(outs[0].w->type) == 256 ? Mode::kSplit
                                                                          : Mode::kPlain;
  // Q6_K (staged rows): two rows per warp from 4,096 rows instead of two warps
  // per row (H200 run 29: the 8B's 4,096 x 56-block downs, tg128 406.2 vs 394.0;
  // the 1B's 2,048 x 32-block downs lost 1.2% with it, so they stay split)
  bool all_q6 = true;
  for (int i = 0; i < count; ++i) all_q6 = all_q6 && segs.s[i].type == GgmlType::Q6_K;
  if (all_q6 && one == Mode::kSplit && all_rows >= 4096) one = Mode::kTwoRows;
  if (all_q6 && gemv_q6_mode() != 0) {
    one = gemv_q6_mode() == 1 ? Mode::kPlain : gemv_q6_mode() == 2 ? Mode::kTwoRows : Mode::kSplit;
  }
  for (int t0 = 0; t0 < n;) {
    const int left = n - t0;
    const int c = left >= 8 ? 8 : left >= 4 ? 4 : left >= 2 ? 2 : 1;
    const int8_t* qc = q + static_cast<int64_t>(t0) * width;
    const float* dc = d + static_cast<int64_t>(t0) * per;
    Segs sc = segs;
    for (int i = 0; i < count; ++i) sc.s[i].y += static_cast<int64_t>(t0) * sc.s[i].ys;
    const unsigned threads = 32u * kGemvWarps;
    const Mode mode = c == 1 ? one : Mode::kPlain;
    const int rows_per_block = mode == Mode::kFourRows  ? 4 * kGemvWarps
                               : mode == Mode::kTwoRows ? 2 * kGemvWarps
                               : mode == Mode::kSplit   ? kGemvWarps / 2
                                                        : kGemvWarps;
    const dim3 grid(layout(sc, rows_per_block));  // before sc is passed
    auto go = [&](auto kernel) { check(pdl_launch(kernel, grid, dim3(threads), 0, st, sc, qc, dc, width), "gemv_q"); };
    // one column: the layout's kernel, with or without the pipelined loads
    auto one_column = [&](auto pipe) {
      constexpr bool P = decltype(pipe)::value;
      switch (mode) {
        case Mode::kFourRows:
          go(gemv_q_kernel<1, 4, 1, P>);
          break;
        case Mode::kTwoRows:
          go(gemv_q_kernel<1, 2, 1, P>);
          break;
        case Mode::kSplit:
          go(gemv_q_kernel<1, 1, 2, P>);
          break;
        case Mode::kPlain:
          go(gemv_q_kernel<1, 1, 1, P>);
          break;
      }
    };
    switch (c) {
      case 8:
        go(gemv_q_kernel<8, 1, 1>);
        break;
      case 4:
        go(gemv_q_kernel<4, 1, 1>);
        break;
      case 2:
        go(gemv_q_kernel<2, 1, 1>);
        break;
      default:
        gemv_pipe() ? one_column(std::true_type{}) : one_column(std::false_type{});
        break;
    }
    check_launch("gemv_q");
    t0 += c;
  }
}

void gemv_q(const DevWeight& w, const int8_t* q, const float* d, int n, float* y, int64_t y_stride, cudaStream_t st) {
  const GemvOut o{&w, y, y_stride};
  gemv_q_multi(&o, 1, q, d, n, st);
}

}  // namespace strix::cuda
