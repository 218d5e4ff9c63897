// strix quantize [--allow-requantize] IN OUT TYPE [NTHREADS]
// A thin wrapper over the REFERENCE libllama's llama_model_quantize (the pinned
// npm package, loaded with dlopen): it makes quantized files exactly as
// llama-quantize does, for benchmarks and tests. Strix's own quantizer is not
// involved.
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "apps/strix/commands.h"
#include "core/error.h"
#include "ref/libllama.h"

namespace strix::app {

int cmd_quantize(int argc, char** argv) {
  const char* usage = "usage: strix quantize [--allow-requantize] IN.gguf OUT.gguf TYPE [NTHREADS]";
  std::vector<std::string> pos;
  bool requantize = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::printf(
          "%s\n"
          "\n"
          "Quantizes with the reference libllama's llama_model_quantize (as llama-quantize).\n"
          "TYPE: Q4_K_M, Q8_0, Q4_0, Q5_K_M, Q6_K, F16, ... or a llama_ftype number.\n"
          "  --allow-requantize  accept an already quantized IN (as llama-quantize's flag)\n",
          usage);
      return 0;
    }
    if (a == "--allow-requantize") {
      requantize = true;
    } else if (a.size() > 1 && a[0] == '-') {
      throw Error("quantize: unknown option " + a + " (" + usage + ")");
    } else {
      pos.push_back(a);
    }
  }
  if (pos.size() < 3 || pos.size() > 4) throw Error(usage);
  const int n_threads = pos.size() == 4 ? std::stoi(pos[3]) : static_cast<int>(std::thread::hardware_concurrency());
  ref::quantize_model(pos[0], pos[1], pos[2], n_threads, requantize);
  std::printf("wrote %s (%s, libllama's llama_model_quantize)\n", pos[1].c_str(), pos[2].c_str());
  return 0;
}

}  // namespace strix::app
