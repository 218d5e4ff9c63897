// strix [run] -m FILE -p PROMPT [-n N] [-c N] [-t N] [-b N] [-ub N] [--temp 0] ...
// Text completion like llama.cpp's llama-completion: prints the prompt and the
// continuation, then timings on stderr. Greedy (--temp 0) only for now: the
// sampler chain of llama.cpp arrives with the CLI work; other temperatures are
// refused by name.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "apps/strix/commands.h"
#include "core/error.h"
#include "models/model.h"
#include "runtime/context.h"
#include "tokenizer/tokenizer.h"

namespace strix::app {

namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "usage: strix [run] -m FILE (-p PROMPT | -f FILE) [-n N] [-c N] [-t N] [-b N] [-ub N]\n"
               "                   --temp 0 [--ignore-eos] [-s SEED] [-no-cnv]\n"
               "\n"
               "Complete a prompt greedily, like llama-completion --temp 0.\n"
               "\n"
               "  -m, --model FILE        the GGUF model\n"
               "  -p, --prompt TEXT       the prompt\n"
               "  -f, --file FILE         read the prompt from a file\n"
               "  -n, --n-predict N       tokens to generate (default -1: until end of text or context)\n"
               "  -c, --ctx-size N        context size (default 4096; 0: the model's training context)\n"
               "  -t, --threads N         threads (default: all cores)\n"
               "  -b, --batch-size N      logical batch (accepted; prompts run in micro-batches of -ub)\n"
               "  -ub, --ubatch-size N    tokens per forward pass (default 512)\n"
               "  --temp T                sampling temperature; only 0 (greedy) is implemented so far\n"
               "  -s, --seed N            accepted (greedy does not draw)\n"
               "  --ignore-eos            keep generating past end-of-text tokens\n"
               "  -ctk, -ctv TYPE         KV cache types: f16 (q8_0 / q4_0 are refused until implemented)\n"
               "  -no-cnv                 accepted: this command never enters conversation mode\n");
}

}  // namespace

int cmd_run(int argc, char** argv) {
  std::string path, prompt;
  bool have_prompt = false, ignore_eos = false;
  int64_t n_predict = -1, n_ctx = 4096, n_ubatch = 512;
  int n_threads = 0;
  float temp = 0.8f;
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
    } else if (a == "-p" || a == "--prompt") {
      prompt = next();
      have_prompt = true;
    } else if (a == "-f" || a == "--file") {
      const std::string f = next();
      std::ifstream in(f, std::ios::binary);
      if (!in) throw Error("cannot read prompt file " + f);
      prompt.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      have_prompt = true;
    } else if (a == "-n" || a == "--n-predict" || a == "--predict") {
      n_predict = std::stoll(next());
    } else if (a == "-c" || a == "--ctx-size") {
      n_ctx = std::stoll(next());
    } else if (a == "-t" || a == "--threads") {
      n_threads = std::stoi(next());
    } else if (a == "-b" || a == "--batch-size") {
      next();
    } else if (a == "-ub" || a == "--ubatch-size") {
      n_ubatch = std::stoll(next());
    } else if (a == "--temp") {
      temp = std::stof(next());
    } else if (a == "-s" || a == "--seed") {
      next();
    } else if (a == "--ignore-eos") {
      ignore_eos = true;
    } else if (a == "-ctk" || a == "--cache-type-k" || a == "-ctv" || a == "--cache-type-v") {
      const std::string t = next();
      if (t != "f16") {
        throw Refusal("KV cache type " + t + " (" + a + ") is not implemented yet; Strix's KV cache is f16");
      }
    } else if (a == "-no-cnv" || a == "--no-conversation") {
    } else {
      throw Error("unknown or not yet implemented flag " + a + " (strix run -h lists the flags)");
    }
  }
  if (path.empty()) {
    usage(stderr);
    return 1;
  }
  if (temp != 0.0f) {
    throw Refusal("sampling at --temp " + std::to_string(temp) +
                  " is not implemented yet (llama.cpp's sampler chain comes with the CLI work); pass --temp 0");
  }
  auto model = Model::load(path);
  const tok::Tokenizer tk = tok::Tokenizer::from_file(path);
  if (n_ctx == 0) n_ctx = model->hparams().n_ctx_train;
  ContextOptions co;
  co.n_ctx = n_ctx;
  co.n_ubatch = n_ubatch;
  co.n_threads = n_threads;
  Context ctx(*model, co);

  std::vector<int32_t> ids = tk.tokenize(prompt, /*add_special=*/true, /*parse_special=*/true);
  if (ids.empty()) throw Error("the prompt is empty and the vocabulary adds no BOS token");
  if (static_cast<int64_t>(ids.size()) >= n_ctx) {
    throw Error("the prompt is " + std::to_string(ids.size()) + " tokens, the context holds " + std::to_string(n_ctx) +
                " (raise -c)");
  }
  (void)have_prompt;
  std::fwrite(prompt.data(), 1, prompt.size(), stdout);
  std::fflush(stdout);

  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  ctx.decode_seq(ids);
  const auto t1 = clock::now();
  tok::StreamDetokenizer detok(tk);
  int64_t n_gen = 0;
  std::vector<int32_t> one(1);
  while (n_predict < 0 || n_gen < n_predict) {
    const auto lg = ctx.logits(-1);
    int32_t best = 0;
    for (int32_t v = 1; v < static_cast<int32_t>(lg.size()); ++v) {
      if (lg[v] > lg[best]) best = v;
    }
    if (!ignore_eos && tk.vocab().is_eog(best)) break;
    const std::string piece = detok.push(best);
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
    ++n_gen;
    if (ctx.seq_len(0) >= n_ctx) break;
    if (n_predict >= 0 && n_gen >= n_predict) break;
    one[0] = best;
    ctx.decode_seq(one);
  }
  const std::string tail = detok.flush();
  std::fwrite(tail.data(), 1, tail.size(), stdout);
  std::printf("\n");
  const auto t2 = clock::now();
  const double pp_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  const double tg_ms = std::chrono::duration<double, std::milli>(t2 - t1).count();
  const double n_eval = static_cast<double>(n_gen > 0 ? n_gen - 1 : 0);
  std::fprintf(stderr, "\nstrix: prompt eval time = %10.2f ms / %5zu tokens (%8.2f ms per token, %8.2f tokens per second)\n",
               pp_ms, ids.size(), pp_ms / ids.size(), 1e3 * ids.size() / pp_ms);
  std::fprintf(stderr, "strix:        eval time = %10.2f ms / %5.0f runs   (%8.2f ms per token, %8.2f tokens per second)\n",
               tg_ms, n_eval, n_eval > 0 ? tg_ms / n_eval : 0.0, n_eval > 0 ? 1e3 * n_eval / tg_ms : 0.0);
  return 0;
}

}  // namespace strix::app
