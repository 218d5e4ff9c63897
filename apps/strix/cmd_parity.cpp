// strix parity -m FILE [--tokens N] [--threads N] [--mode prefill|decode|mixed|all]
//              [--seed S] [--ubatch N] [--exact]
// Runs libllama (the pinned reference) and Strix on the same token ids and
// compares the logits at every position.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "apps/strix/commands.h"
#include "core/error.h"
#include "tools/parity.h"

namespace strix::app {

namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "usage: strix parity -m FILE [--tokens N] [--threads N] [--mode prefill|decode|mixed|all]\n"
               "                    [--seed S] [--ubatch N] [--trace] [--exact]\n"
               "\n"
               "Run libllama (the pinned reference, from node_modules/@node-llama-cpp) and Strix on the\n"
               "same token ids; print mean and max KL(libllama || strix), max |dlogit|, top-1 agreement\n"
               "and a verdict (bar: top-1 100%%, max KL <= 1e-6 for F32/F16/Q8_0 weights, 1e-4 otherwise).\n"
               "\n"
               "  -m, --model FILE   the GGUF file\n"
               "  --tokens N         positions per sequence (default 128)\n"
               "  --threads N        Strix threads (default 1)\n"
               "  --mode M           prefill (one batch), decode (token by token), mixed (3 sequences in\n"
               "                     ragged batches), all (default: all)\n"
               "  --seed S           picks the token ids (default 1)\n"
               "  --ubatch N         micro-batch size of both sides (default 512)\n"
               "  --trace            print each position whose KL is not 0\n"
               "  --exact            CUDA: libllama's CPU float order in every op (F32/F16/Q8_0/Q4_K/Q6_K)\n"
               "  --greedy N         instead: generate N tokens greedily from BOS on both sides and compare\n"
               "                     the token ids (each side feeds back its own choice)\n"
               "  --strix-model FILE Strix loads FILE, libllama -m FILE (negative controls: must FAIL)\n"
               "  -ngl N             0 (default): Strix on the CPU; 99 or all: on the GPU (CUDA builds, full\n"
               "                     offload); N in between: the output layer and the last N-1 repeating\n"
               "                     layers on the GPU, the rest on the CPU (llama.cpp's count). Any GPU\n"
               "                     share is judged by the CUDA bar: top-1 >= 99.5%%, mean KL <= 1e-4\n"
               "                     (F32/F16/Q8_0 weights) or 1e-3\n");
}

}  // namespace

int cmd_parity(int argc, char** argv) {
  std::string path, mode = "all";
  int greedy = 0;
  ParityOptions o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw Error(a + " needs a value");
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else if (a == "-m" || a == "--model") {
      path = next();
    } else if (a == "--tokens") {
      o.n_tokens = std::stoi(next());
    } else if (a == "--threads" || a == "-t") {
      o.n_threads = std::stoi(next());
    } else if (a == "--mode") {
      mode = next();
    } else if (a == "--trace") {
      o.trace = true;
    } else if (a == "--exact") {
      o.exact = true;
    } else if (a == "--greedy") {
      greedy = std::stoi(next());
    } else if (a == "--strix-model") {
      o.strix_path = next();
    } else if (a == "-ngl" || a == "--n-gpu-layers" || a == "--gpu-layers") {
      o.ngl = next();
    } else if (a == "--seed") {
      o.seed = std::stoull(next());
    } else if (a == "--ubatch" || a == "-ub") {
      o.n_ubatch = std::stoi(next());
    } else {
      throw Error("parity: unknown flag " + a);
    }
  }
  if (path.empty()) {
    usage(stderr);
    return 1;
  }
  if (o.n_tokens < 1 || o.n_threads < 1 || o.n_ubatch < 1)
    throw Error("parity: --tokens, --threads and --ubatch must be >= 1");
  if (greedy > 0) {
    const GreedyReport g = run_greedy(path, greedy, o);
    std::printf("%s\n  greedy %d tokens [%s]: %s", path.c_str(), greedy, g.backend.c_str(),
                g.pass() ? "all equal" : "first difference at ");
    if (!g.pass()) std::printf("%d (libllama %d, strix %d)", g.first_diff, g.ref[g.first_diff], g.ours[g.first_diff]);
    std::printf("\n  text: %s\nverdict: %s\n", g.text.c_str(), g.pass() ? "PASS" : "FAIL");
    return g.pass() ? 0 : 2;
  }
  std::vector<std::string> modes =
      mode == "all" ? std::vector<std::string>{"prefill", "decode", "mixed"} : std::vector<std::string>{mode};
  bool ok = true;
  std::printf("%s\n", path.c_str());
  for (const std::string& m : modes) {
    o.mode = m;
    const ParityReport r = run_parity(path, o);
    std::printf("  %s\n", r.summary().c_str());
    std::fflush(stdout);
    ok = ok && r.verdict();
  }
  std::printf("verdict: %s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 2;
}

}  // namespace strix::app
