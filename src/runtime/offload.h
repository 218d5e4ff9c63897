// -ngl N: which layers run on the GPU, as llama.cpp counts them
// (llama-model.cpp, load_tensors, since ggml-org/llama.cpp#18148 "offload
// output layer to GPU first"): the model has n_layer + 1 slots, the repeating
// layers then the output layer (output norm + head), and the GPU takes the
// last N of them:
//   i_gpu_start = max(n_layer + 1 - N, 0)  -> layers [i_gpu_start, n_layer) on the GPU
//   the output layer is on the GPU for every N >= 1
// The token embedding (the input layer) stays on the CPU under partial offload;
// full offload (N >= n_layer + 1, e.g. 99 or "all") runs everything on the GPU
// (cuda::CudaContext), N = 0 everything on the CPU (Context), anything between
// runs layers [0, i_gpu_start) on the CPU and the rest on the GPU
// (HybridContext).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "models/model.h"
#include "runtime/batch_context.h"
#include "runtime/context.h"

namespace strix {

struct Offload {
  int64_t n_layer = 0;  // the model's repeating layers
  int64_t n_gpu = 0;    // slots on the GPU: 0 .. n_layer + 1
  bool on_gpu() const { return n_gpu > 0; }
  bool full() const { return n_gpu >= n_layer + 1; }
  bool partial() const { return on_gpu() && !full(); }
  // llama.cpp's i_gpu_start: the first repeating layer on the GPU (n_layer
  // when only the output layer is there); the CPU runs [0, first_gpu_layer()).
  int64_t first_gpu_layer() const { return n_gpu >= n_layer + 1 ? 0 : n_layer + 1 - n_gpu; }
  // e.g. "repeating layers 2..3 and the output layer on the GPU, repeating layers 0..1 on the CPU"
  std::string describe() const;
};

// The split of -ngl n_gpu_layers (>= 0; counts above n_layer + 1 mean all).
Offload offload_layers(int64_t n_gpu_layers, int64_t n_layer);

// The context for that split: Context, cuda::CudaContext or HybridContext.
std::unique_ptr<BatchContext> make_context(const Model& model, const ContextOptions& opts, const Offload& offload);

// The GPU a context from make_context runs on ("" for the CPU Context).
std::string gpu_name(const BatchContext& ctx);

}  // namespace strix
