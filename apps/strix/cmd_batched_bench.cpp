// strix batched-bench -m FILE [-c N] [-b N] [-ub N] [-npp 128,256] [-ntg 128] [-npl 1,4,16]
//                     [-t N] [-ngl 0|99] [-r N] [--compare] [--out-json PATH]
// llama-batched-bench's table for Strix (src/tools/batched_bench.h has the
// methodology), with --compare also for the pinned libllama in-process.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "apps/strix/commands.h"
#include "core/error.h"
#include "tools/batched_bench.h"

namespace strix::app {

namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "usage: strix batched-bench -m FILE [options]\n"
               "\n"
               "Prompt processing and aggregate decode of B concurrent sequences, as llama-batched-bench:\n"
               "B prompts of PP tokens, then TG steps of one token per sequence.\n"
               "\n"
               "  -m, --model FILE       the GGUF model\n"
               "  -c, --ctx-size N       most cache cells a test may use, B*(PP+TG) (default: all tests run)\n"
               "  -b, --batch-size N     most tokens per decode call (default 2048)\n"
               "  -ub, --ubatch-size N   micro-batch (default 512)\n"
               "  -npp N,...             prompt tokens per sequence (default 128,256,512)\n"
               "  -ntg N,...             generated tokens per sequence (default 128,256)\n"
               "  -npl N,...             concurrent sequences B (default 1,2,4,8,16,32)\n"
               "  -t, --threads N        threads (default: all hardware threads)\n"
               "  -ngl N                 0: CPU; 99 / all: the CUDA backend; N in between: the output layer\n"
               "                         and the last N-1 repeating layers on the GPU (default 0)\n"
               "  -mmp 0|1               1: map the file in place, 0: read it into memory (default: as strix bench)\n"
               "  -r, --repetitions N    repetitions per test, times averaged (default 1)\n"
               "  --compare              also run libllama on the same tests, alternating\n"
               "  --seed S               picks the random token ids (default 1)\n"
               "  --out-json PATH        also write the receipt to PATH\n"
               "\n"
               "Not implemented: -pps (a prompt shared by the sequences), -kvu, --output-format.\n");
}

int to_int(const std::string& flag, const std::string& v) { return count_arg("batched-bench", flag, v); }

std::vector<int> to_ints(const std::string& flag, const std::string& v) {
  return count_list_arg("batched-bench", flag, v);
}

}  // namespace

int cmd_batched_bench(int argc, char** argv) {
  BatchedBenchOptions o;
  std::string out_json, command = "strix batched-bench";
  for (int i = 1; i < argc; ++i) command += std::string(" ") + argv[i];
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Error("batched-bench: " + a + " needs a value");
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else if (a == "-m" || a == "--model") {
      o.model = value();
    } else if (a == "-c" || a == "--ctx-size") {
      o.n_kv_max = to_int(a, value());
    } else if (a == "-b" || a == "--batch-size") {
      o.n_batch = to_int(a, value());
    } else if (a == "-ub" || a == "--ubatch-size") {
      o.n_ubatch = to_int(a, value());
    } else if (a == "-npp") {
      o.n_pp = to_ints(a, value());
    } else if (a == "-ntg") {
      o.n_tg = to_ints(a, value());
    } else if (a == "-npl") {
      o.n_pl = to_ints(a, value());
    } else if (a == "-t" || a == "--threads") {
      o.n_threads = to_int(a, value());
    } else if (a == "-ngl" || a == "--gpu-layers" || a == "--n-gpu-layers") {
      o.ngl = value();
    } else if (a == "-mmp") {
      const std::string v = value();
      if (v != "0" && v != "1") throw Error("batched-bench: -mmp takes 0 or 1, got '" + v + "'");
      o.mmap = v == "1" ? 1 : 0;
    } else if (a == "-r" || a == "--repetitions") {
      o.reps = to_int(a, value());
    } else if (a == "--compare") {
      o.compare = true;
    } else if (a == "--seed") {
      o.seed = static_cast<uint64_t>(to_int(a, value()));
    } else if (a == "--out-json") {
      out_json = value();
    } else if (a == "-pps" || a == "-kvu" || a == "--kv-unified" || a == "--output-format") {
      throw Refusal("batched-bench: " + a + " is not implemented");
    } else {
      throw Error("batched-bench: unknown flag '" + a + "' (run `strix batched-bench -h` for the list)");
    }
  }
  std::printf("%s\n", batched_bench_header(o.compare).c_str());
  std::fflush(stdout);
  const nlohmann::json receipt = run_batched_bench(o, command, strix_version(), [&](const BatchedBenchRow& r) {
    std::printf("%s\n", batched_bench_row(r, o.compare).c_str());
    std::fflush(stdout);
  });
  if (!out_json.empty()) {
    std::ofstream f(out_json);
    if (!f) throw Error("batched-bench: cannot write " + out_json);
    f << receipt.dump(2) << "\n";
  }
  return 0;
}

}  // namespace strix::app
