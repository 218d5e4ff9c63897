// strix bench -m FILE [-m FILE2 ...] [-p 512] [-n 128] [-d 0] [-r 5] [-t N] [-b 2048] [-ub 512]
//             [-o md|json] [--compare [LIBLLAMA_DIR]] [--out-json PATH]
// llama-bench's table for Strix; with --compare, libllama on the same file in
// the same process, alternating per repetition, and the ratio.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "apps/strix/commands.h"
#include "core/error.h"
#include "tools/bench.h"

namespace strix::app {

namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "usage: strix bench -m FILE [-m FILE ...] [-p N,...] [-n N,...] [-d N,...] [-r N] [-t N]\n"
               "                   [-b N] [-ub N] [-o md|json] [--compare [LIBLLAMA_DIR]] [--out-json PATH]\n"
               "\n"
               "Measure prompt processing (ppP: P random tokens in one batch) and generation (tgN: N\n"
               "single-token decodes) as llama-bench does, and print its markdown table (t/s: mean ± sd).\n"
               "\n"
               "  -m, --model FILE      a GGUF file (repeatable)\n"
               "  -p, --n-prompt N,...  prompt lengths (default 512; 0: no pp test)\n"
               "  -n, --n-gen N,...     generation lengths (default 128; 0: no tg test)\n"
               "  -d, --n-depth N,...   tokens already in the cache (default 0): \"pp512 @ d4096\"\n"
               "  -r, --repetitions N   timed repetitions per test (default 5), after one warmup\n"
               "  -t, --threads N       threads (default: all hardware threads)\n"
               "  -b, --batch-size N    most tokens per decode call (default 2048)\n"
               "  -ub, --ubatch-size N  micro-batch (default 512)\n"
               "  -o md|json            stdout: the table (default) or the JSON receipt\n"
               "  --compare [DIR]       also run libllama (the pinned npm package, or the one in DIR)\n"
               "                        on the same file, alternating per repetition; adds the\n"
               "                        columns libllama t/s and ratio (strix / libllama)\n"
               "  --out-json PATH       also write the receipt (host, build, samples) to PATH\n"
               "  -ngl, --n-gpu-layers N  0 (default): CPU; 99 or all: everything on the GPU (CUDA builds);\n"
               "                        N in between: the output layer and the last N-1 repeating layers\n"
               "                        on the GPU, the rest on the CPU (llama.cpp's count). Also prints the\n"
               "                        GPU's copy bandwidth and each tg test's weight bytes/s as a fraction\n"
               "                        of it (all the weights' bytes, also under partial offload)\n"
               "  -mmp, --mmap 0|1      1: map the file in place; 0: read it into huge-page memory; default:\n"
               "                        read it when it takes at most half of the available memory (CPU),\n"
               "                        map it with -ngl\n"
               "  --no-warmup           skip the warmup run\n"
               "  --seed S              picks the random token ids (default 1)\n");
}

std::vector<int> int_list(const std::string& flag, const std::string& v) {
  std::vector<int> out;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    int x = 0;
    try {
      x = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || item.empty() || x < 0) throw Error(flag + ": '" + v + "' is not a list of counts >= 0");
    out.push_back(x);
  }
  if (out.empty()) throw Error(flag + " needs a value");
  return out;
}

int positive(const std::string& flag, const std::string& v) {
  const std::vector<int> x = int_list(flag, v);
  if (x.size() != 1 || x[0] < 1) throw Error(flag + ": '" + v + "' is not a count >= 1");
  return x[0];
}

}  // namespace

int cmd_bench(int argc, char** argv) {
  BenchOptions o;
  std::string format = "md", out_json;
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
      o.models.push_back(next());
    } else if (a == "-p" || a == "--n-prompt") {
      o.n_prompt = int_list(a, next());
    } else if (a == "-n" || a == "--n-gen") {
      o.n_gen = int_list(a, next());
    } else if (a == "-d" || a == "--n-depth") {
      o.n_depth = int_list(a, next());
    } else if (a == "-r" || a == "--repetitions") {
      o.reps = positive(a, next());
    } else if (a == "-t" || a == "--threads") {
      o.n_threads = positive(a, next());
    } else if (a == "-b" || a == "--batch-size") {
      o.n_batch = positive(a, next());
    } else if (a == "-ub" || a == "--ubatch-size") {
      o.n_ubatch = positive(a, next());
    } else if (a == "-o" || a == "--output") {
      format = next();
      if (format != "md" && format != "json") throw Error("-o: '" + format + "' is not md or json");
    } else if (a == "--compare") {
      o.compare = true;
      if (i + 1 < argc && argv[i + 1][0] != '-') o.libllama_dir = argv[++i];
    } else if (a == "--out-json") {
      out_json = next();
    } else if (a == "-ngl" || a == "--n-gpu-layers" || a == "--gpu-layers") {
      o.ngl = next();
    } else if (a == "-mmp" || a == "--mmap") {
      const std::string v = next();
      if (v != "0" && v != "1") throw Error("-mmp: '" + v + "' is not 0 or 1");
      o.mmap = v == "1";
    } else if (a == "--no-warmup") {
      o.warmup = false;
    } else if (a == "--seed") {
      o.seed = std::stoull(next());
    } else {
      throw Error("bench: unknown flag " + a + " (see `strix bench -h`)");
    }
  }
  if (o.models.empty()) {
    usage(stderr);
    return 1;
  }

  const bool md = format == "md";
  if (md) {
    std::fputs(bench_markdown_header(o).c_str(), stdout);
    std::fflush(stdout);
  }
  const std::vector<BenchResult> results = run_bench(o, [&](const BenchResult& r) {
    if (md) {
      std::fputs(bench_markdown_row(r, o).c_str(), stdout);
      std::fflush(stdout);
    }
  });
  std::string command = "strix bench";
  for (int i = 1; i < argc; ++i) command += std::string(" ") + argv[i];
  const bool on_gpu = !results.empty() && results.front().backend != "CPU";
  BenchGpu gpu;
  if (on_gpu) gpu = bench_gpu_info();
  const nlohmann::json receipt =
      bench_receipt(o, results, {.strix_version = strix_version(), .command = command}, on_gpu ? &gpu : nullptr);
  if (md && on_gpu) std::printf("\n%s", bench_gpu_summary(gpu, results).c_str());
  if (md) {
    const std::string commit = receipt["build"]["git_commit"];
    std::printf("\nbuild: strix %s (%s%s)\n", strix_version(), commit.substr(0, 12).c_str(),
                receipt["build"]["git_dirty"].get<bool>() ? "+dirty" : "");
  } else {
    std::printf("%s\n", receipt.dump(2).c_str());
  }
  if (!out_json.empty()) {
    std::ofstream f(out_json);
    if (!f) throw Error("cannot write " + out_json);
    f << receipt.dump(2) << "\n";
    if (!f) throw Error("cannot write " + out_json);
  }
  return 0;
}

}  // namespace strix::app
