// strix quantize IN OUT TYPE [NTHREADS]
// A thin wrapper over the REFERENCE libllama's llama_model_quantize (the pinned
// npm package, loaded with dlopen): it makes quantized files exactly as
// llama-quantize does, for benchmarks and tests. Strix's own quantizer is not
// involved.
#include <cstdio>
#include <string>
#include <thread>

#include "apps/strix/commands.h"
#include "core/error.h"
#include "ref/libllama.h"

namespace strix::app {

int cmd_quantize(int argc, char** argv) {
  if (argc >= 2 && (std::string(argv[1]) == "-h" || std::string(argv[1]) == "--help")) {
    std::printf(
        "usage: strix quantize IN.gguf OUT.gguf TYPE [NTHREADS]\n"
        "\n"
        "Quantizes with the reference libllama's llama_model_quantize (as llama-quantize).\n"
        "TYPE: Q4_K_M, Q8_0, Q4_0, Q5_K_M, Q6_K, F16, ... or a llama_ftype number.\n");
    return 0;
  }
  if (argc < 4 || argc > 5) throw Error("usage: strix quantize IN.gguf OUT.gguf TYPE [NTHREADS]");
  const int n_threads = argc == 5 ? std::stoi(argv[4]) : static_cast<int>(std::thread::hardware_concurrency());
  ref::quantize_model(argv[1], argv[2], argv[3], n_threads);
  std::printf("wrote %s (%s, libllama's llama_model_quantize)\n", argv[2], argv[3]);
  return 0;
}

}  // namespace strix::app
