// strix bench-serve -m FILE [-c 1,4,16,64] [-n 64] [-p 32] [--n-system 700] [--n-suffix 16]
//                   [-r 3] [-t N] [--no-compare] [--out-json PATH]
// The server engine under load next to libllama on the same load, in-process
// (src/tools/bench_serve.h has the methodology); prints the JSON receipt.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "apps/strix/commands.h"
#include "core/error.h"
#include "tools/bench_serve.h"

namespace strix::app {

namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "usage: strix bench-serve -m FILE [options]\n"
               "\n"
               "The server's engine under load, in-process, side by side with libllama on the same load:\n"
               "aggregate decode t/s at several concurrent streams, and the time to first token of a\n"
               "second request sharing a system prompt with the first (prefix cache).\n"
               "\n"
               "  -m, --model FILE      the GGUF model\n"
               "  -c, --streams N,...   concurrent streams (default 1,4,16,64)\n"
               "  -p, --n-prompt N      prompt tokens per stream in the decode test (default 32)\n"
               "  -n, --n-gen N         tokens generated per stream (default 64)\n"
               "  --n-system N          shared system prompt tokens (default 700)\n"
               "  --n-suffix N          per-request tokens after it (default 16)\n"
               "  -r, --repetitions N   repetitions of each measurement (default 3)\n"
               "  -t, --threads N       threads (default: all hardware threads)\n"
               "  -b, --batch-size N    most tokens per engine step (default 2048)\n"
               "  -ub, --ubatch-size N  micro-batch (default 512)\n"
               "  -ngl, --gpu-layers N  0 (default): the CPU; 99 or all: the engine on the CUDA backend;\n"
               "                        N in between: the output layer and the last N-1 repeating layers\n"
               "                        on the GPU (Strix only, with --no-compare)\n"
               "  --no-compare          Strix only\n"
               "  --seed S              picks the random token ids (default 1)\n"
               "  --out-json PATH       also write the receipt to PATH\n");
}

int to_int(const std::string& flag, const std::string& v) { return count_arg("bench-serve", flag, v); }

}  // namespace

int cmd_bench_serve(int argc, char** argv) {
  BenchServeOptions o;
  std::string out_json, command = "strix bench-serve";
  for (int i = 1; i < argc; ++i) command += std::string(" ") + argv[i];
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Error("bench-serve: " + a + " needs a value");
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else if (a == "-m" || a == "--model") {
      o.model = value();
    } else if (a == "-c" || a == "--streams") {
      o.streams = count_list_arg("bench-serve", a, value());
    } else if (a == "-p" || a == "--n-prompt") {
      o.n_prompt = to_int(a, value());
    } else if (a == "-n" || a == "--n-gen") {
      o.n_gen = to_int(a, value());
    } else if (a == "--n-system") {
      o.n_system = to_int(a, value());
    } else if (a == "--n-suffix") {
      o.n_suffix = to_int(a, value());
    } else if (a == "-r" || a == "--repetitions") {
      o.reps = to_int(a, value());
    } else if (a == "-t" || a == "--threads") {
      o.n_threads = to_int(a, value());
    } else if (a == "-b" || a == "--batch-size") {
      o.n_batch = to_int(a, value());
    } else if (a == "-ub" || a == "--ubatch-size") {
      o.n_ubatch = to_int(a, value());
    } else if (a == "-ngl" || a == "--gpu-layers" || a == "--n-gpu-layers") {
      o.ngl = value();
    } else if (a == "--no-compare") {
      o.compare = false;
    } else if (a == "--seed") {
      o.seed = static_cast<uint64_t>(to_int(a, value()));
    } else if (a == "--out-json") {
      out_json = value();
    } else {
      throw Error("bench-serve: unknown flag '" + a + "' (run `strix bench-serve -h` for the list)");
    }
  }
  const nlohmann::json receipt = run_bench_serve(o, command, strix_version());
  const std::string text = receipt.dump(2) + "\n";
  std::fputs(text.c_str(), stdout);
  if (!out_json.empty()) {
    std::ofstream f(out_json);
    if (!f) throw Error("bench-serve: cannot write " + out_json);
    f << text;
  }
  return 0;
}

}  // namespace strix::app
