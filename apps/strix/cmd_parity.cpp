// strix parity -m FILE [--tokens N] [--threads N] [--mode prefill|decode|mixed|all]
//              [--seed S] [--ubatch N]
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
               "                    [--seed S] [--ubatch N] [--trace]\n"
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
               "  --trace            print each position whose KL is not 0\n");
}

}  // namespace

int cmd_parity(int argc, char** argv) {
  std::string path, mode = "all";
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
  if (o.n_tokens < 1 || o.n_threads < 1 || o.n_ubatch < 1) throw Error("parity: --tokens, --threads and --ubatch must be >= 1");
  std::vector<std::string> modes = mode == "all" ? std::vector<std::string>{"prefill", "decode", "mixed"}
                                                 : std::vector<std::string>{mode};
  bool ok = true;
  std::printf("%s\n", path.c_str());
  for (const std::string& m : modes) {
    o.mode = m;
    const ParityReport r = run_parity(path, o);
    std::printf("  %s\n", r.summary().c_str());
    std::fflush(stdout);
    ok = ok && r.pass();
  }
  std::printf("verdict: %s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 2;
}

}  // namespace strix::app
