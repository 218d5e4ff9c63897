// strix serve -m FILE [-c N] [-np N] [--host H] [--port P] ...   (also `strix-server`)
// An OpenAI-compatible HTTP server in the shape of llama-server: the model runs
// on one engine thread with continuous batching over -np slots that share the
// -c token KV cache (src/server/engine.h); HTTP runs on its own I/O thread
// (src/server/http_server.h); the endpoints are in src/server/routes.h.
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "apps/strix/commands.h"
#include "backend/cuda/cuda_context.h"
#include "cli/chat_history.h"
#include "core/error.h"
#include "core/mmap.h"
#include "download/hf.h"
#include "models/model.h"
#include "runtime/context.h"
#include "runtime/offload.h"
#include "sampling/think_budget.h"
#include "server/engine.h"
#include "server/http_server.h"
#include "server/reasoning.h"
#include "server/routes.h"
#include "tokenizer/tokenizer.h"

namespace strix::app {

namespace {

void usage(FILE* out) {
  std::fprintf(
      out,
      "usage: strix serve -m FILE [options]   (also strix-server)\n"
      "\n"
      "An OpenAI-compatible HTTP server, as llama-server.\n"
      "\n"
      "  -m,  --model FILE            the GGUF model\n"
      "  -hf, --hf-repo USER/REPO[:QUANT]  a model from the Hugging Face hub, downloaded into its cache\n"
      "                               (as strix download; default quant tag: the repo's 'latest')\n"
      "  -hff, --hf-file FILE         the file of the -hf repo (overrides the quant tag)\n"
      "  -hft, --hf-token TOKEN       the hub access token (default: $HF_TOKEN)\n"
      "  -cb, --cont-batching         accepted: batching is always continuous\n"
      "  --exact                      CUDA: libllama's CPU float order in every op (F32/F16/Q8_0/Q4_K/Q6_K)\n"
      "       --path DIR              serve the files under DIR to GET requests (no API key needed)\n"
      "  -c,  --ctx-size N            KV cache size in tokens, shared by all slots (default: 4096)\n"
      "  -np, --parallel N            requests decoded at once (slots; default: 1); more wait in a queue\n"
      "  -b,  --batch-size N          most tokens per engine step (default: 2048)\n"
      "  -ub, --ubatch-size N         most tokens per forward pass (default: 512)\n"
      "  -t,  --threads N             compute threads (default: all cores)\n"
      "       --host HOST             address to listen on (default: 127.0.0.1)\n"
      "       --port PORT             port to listen on, 0 for any free one (default: 8080)\n"
      "       --api-key KEY[,KEY...]  require \"Authorization: Bearer KEY\" or \"x-api-key: KEY\" (all routes\n"
      "                               but /health)\n"
      "       --api-key-file FILE     more keys, one a line (blank lines and '#' lines skipped)\n"
      "       --alias NAME            the model id reported to clients (default: the file name)\n"
      "       --chat-template T       Jinja chat template source, or a built-in name (chatml)\n"
      "       --chat-template-file F  read the chat template from a file\n"
      "       --jinja                 accepted (templates are always rendered with Jinja)\n"
      "       --body-limit BYTES      largest request body (default: 16777216)\n"
      "       --timeout N             a request still queued or generating N seconds after it came ends\n"
      "                               with a \"timed out\" error and frees its slot (default: 600; 0: none)\n"
      "       --reasoning-format F    none | deepseek | auto (default: auto): deepseek and auto return a\n"
      "                               thinking model's <think> text as reasoning_content, none leaves it\n"
      "                               in the content\n"
      "       --reasoning-budget N    tokens a <think> block may take before \"</think>\" is forced: -1\n"
      "                               unlimited (default), 0 no thinking (enable_thinking = false), N > 0\n"
      "                               (chat requests may set reasoning_budget_tokens / thinking_budget_tokens)\n"
      "  -ngl, --gpu-layers N         layers on the GPU: 0 the CPU, 99 or all every layer, N in between the\n"
      "                               output layer and the last N-1 repeating layers (llama.cpp's count); auto\n"
      "                               (default): the GPU when one is usable and the model runs there, else the\n"
      "                               CPU; without a GPU a count is ignored with a warning\n"
      "       --mmap / --no-mmap      map the model file in place / read it into huge-page memory (default:\n"
      "                               read when it takes at most half of the available memory)\n"
      "       --reasoning-budget-message M  text forced before \"</think>\" when the budget is spent\n"
      "  -rea, --reasoning on|off|auto  on / off render chat templates with enable_thinking true / false\n"
      "                               unless a request's chat_template_kwargs set it; auto (default): the\n"
      "                               template's own default\n"
      "       --metrics               enable GET /metrics (Prometheus text)\n"
      "       --slots / --no-slots    enable / disable GET /slots (default: enabled)\n"
      "       --props                 allow POST /props (no property is writable yet: every field is\n"
      "                               refused by name)\n"
      "       --no-webui              accepted: Strix has no web UI yet, so there is nothing to disable\n"
      "       --cache-reuse N         past the prompt's common prefix with the slot's last sequence, reuse\n"
      "                               matching chunks of at least N tokens by moving their cells (KV\n"
      "                               shifting; default 0: off; prefix caching is automatic: cache_prompt)\n"
      "       --context-shift, --no-context-shift\n"
      "                               a generation that fills n_ctx drops cells after the first n_keep and\n"
      "                               goes on (requests may set n_keep and n_discard; default: off, it ends\n"
      "                               with stop_type limit and truncated)\n"
      "       --keep N                n_keep of requests that set none (default 0; -1: the whole prompt)\n"
      "       --ctx-checkpoints N, --swa-checkpoints N, --swa-full\n"
      "                               accepted: every layer keeps its whole KV (as llama.cpp's --swa-full),\n"
      "                               so a cached prefix of a sliding-window model needs no checkpoint\n"
      "  -h,  --help                  this help\n"
      "\n"
      "Endpoints: GET /health, /v1/models, /props, /slots, /metrics; POST /tokenize, /detokenize,\n"
      "/apply-template, /completion, /v1/completions, /v1/chat/completions, /v1/responses,\n"
      "/v1/messages, /v1/messages/count_tokens (docs/SERVER.md lists every field).\n");
}

int64_t to_int(const std::string& flag, const std::string& v, int64_t lo, int64_t hi) {
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno != 0 || x < lo || x > hi) {
    throw Error("serve: " + flag + " needs an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                "], got '" + v + "'");
  }
  return x;
}

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("serve: cannot read " + path);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// Non-empty trimmed pieces of `text` split at `sep`.
std::vector<std::string> split_keys(const std::string& text, char sep) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= text.size()) {
    size_t end = text.find(sep, at);
    if (end == std::string::npos) end = text.size();
    std::string k = text.substr(at, end - at);
    while (!k.empty() && (k.back() == ' ' || k.back() == '\r' || k.back() == '\t')) k.pop_back();
    while (!k.empty() && (k.front() == ' ' || k.front() == '\t')) k.erase(0, 1);
    if (!k.empty()) out.push_back(k);
    at = end + 1;
  }
  return out;
}

std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

int cmd_serve(int argc, char** argv) {
  std::string model_path, host = "127.0.0.1", alias, tmpl, reasoning_format = "auto";
  std::vector<std::string> api_keys;
  bool exact = false;
  int64_t n_ctx = 4096, n_parallel = 1, n_batch = 2048, n_ubatch = 512, n_threads = 0, port = 8080;
  int64_t body_limit = 16 << 20, timeout_s = 600, reasoning_budget = -1, cache_reuse = 0, n_keep = 0;
  bool ctx_shift = false;
  int reasoning = -1;  // -rea: 1 on, 0 off, -1 auto
  std::string reasoning_budget_message;
  bool metrics = false, slots = true, props = false;
  int mmap_mode = -1;  // --mmap 1, --no-mmap 0, -1: WeightMemory::kAuto
  std::string ngl = "auto";
  std::string hf_repo, hf_file, hf_token, static_dir;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Error("serve: " + a + " needs a value");
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else if (a == "-m" || a == "--model") {
      model_path = value();
    } else if (a == "-hf" || a == "-hfr" || a == "--hf-repo") {
      hf_repo = value();
    } else if (a == "-hff" || a == "--hf-file") {
      hf_file = value();
    } else if (a == "-hft" || a == "--hf-token") {
      hf_token = value();
    } else if (a == "--exact") {
      exact = true;
    } else if (a == "-cb" || a == "--cont-batching") {
      // llama-server's default; the engine always batches continuously
    } else if (a == "-nocb" || a == "--no-cont-batching") {
      throw Refusal("serve: " + a + " is not implemented (the engine always batches continuously)");
    } else if (a == "-c" || a == "--ctx-size") {
      n_ctx = to_int(a, value(), 1, 1 << 24);
    } else if (a == "-np" || a == "--parallel") {
      n_parallel = to_int(a, value(), 1, 256);
    } else if (a == "-b" || a == "--batch-size") {
      n_batch = to_int(a, value(), 1, 1 << 20);
    } else if (a == "-ub" || a == "--ubatch-size") {
      n_ubatch = to_int(a, value(), 1, 1 << 20);
    } else if (a == "-t" || a == "--threads") {
      n_threads = to_int(a, value(), 0, 1024);
    } else if (a == "--host") {
      host = value();
    } else if (a == "--port") {
      port = to_int(a, value(), 0, 65535);
    } else if (a == "--api-key") {
      for (const std::string& k : split_keys(value(), ',')) api_keys.push_back(k);
    } else if (a == "--api-key-file") {
      for (const std::string& k : split_keys(read_text(value()), '\n')) {
        if (k[0] != '#') api_keys.push_back(k);
      }
    } else if (a == "--timeout" || a == "-to") {
      timeout_s = to_int(a, value(), 0, 1 << 30);
    } else if (a == "--reasoning-format") {
      reasoning_format = value();
      if (reasoning_format != "none" && reasoning_format != "deepseek" && reasoning_format != "auto") {
        throw Refusal("serve: --reasoning-format '" + reasoning_format +
                      "' is not implemented (none, deepseek and auto are)");
      }
    } else if (a == "--reasoning-budget") {
      reasoning_budget = to_int(a, value(), -1, INT32_MAX);
    } else if (a == "--reasoning-budget-message") {
      reasoning_budget_message = value();
    } else if (a == "-rea" || a == "--reasoning") {
      reasoning = server::parse_reasoning_switch(value());
    } else if (a == "--metrics") {
      metrics = true;
    } else if (a == "--slots") {
      slots = true;
    } else if (a == "--no-slots") {
      slots = false;
    } else if (a == "--props") {
      props = true;
    } else if (a == "--no-webui") {
      // Strix has no web UI to disable.
    } else if (a == "--path") {
      static_dir = value();
      if (!std::filesystem::is_directory(static_dir)) throw Error("serve: --path " + static_dir + ": not a directory");
    } else if (a == "--cache-reuse") {
      cache_reuse = to_int(a, value(), 0, 1 << 30);
    } else if (a == "--context-shift") {
      ctx_shift = true;
    } else if (a == "--no-context-shift") {
      ctx_shift = false;
    } else if (a == "--keep") {
      n_keep = to_int(a, value(), -1, INT32_MAX);
    } else if (a == "--ctx-checkpoints" || a == "--swa-checkpoints") {
      // llama.cpp checkpoints a sliding-window cache because it drops the cells
      // behind the window; Strix keeps them (as --swa-full), so prefix reuse of
      // such a model works without one.
      to_int(a, value(), 0, 1 << 30);
    } else if (a == "--swa-full") {
      // always so in Strix
    } else if (a == "--alias" || a == "-a") {
      alias = value();
    } else if (a == "--chat-template") {
      tmpl = value();
      if (tmpl.find("{{") == std::string::npos && tmpl.find("{%") == std::string::npos) {
        const std::string builtin = cli::builtin_chat_template(tmpl);
        if (builtin.empty()) {
          throw Refusal("--chat-template '" + tmpl +
                        "' is neither Jinja source nor a built-in template Strix has (chatml)");
        }
        tmpl = builtin;
      }
    } else if (a == "--chat-template-file") {
      tmpl = read_text(value());
    } else if (a == "--jinja") {
      // llama-server needs it for Jinja templates; Strix always renders them with its Jinja engine.
    } else if (a == "--body-limit") {
      body_limit = to_int(a, value(), 1, int64_t(1) << 40);
    } else if (a == "--mmap") {
      mmap_mode = 1;
    } else if (a == "--no-mmap") {
      mmap_mode = 0;
    } else if (a == "-ngl" || a == "--gpu-layers" || a == "--n-gpu-layers") {
      ngl = value();
    } else {
      throw Error("serve: unknown flag '" + a + "' (run `strix serve -h` for the list)");
    }
  }
  if (model_path.empty() && !hf_repo.empty()) {
    model_path = download::resolve_model(download::parse_hf_arg(hf_repo, hf_file, hf_token));
  }
  if (model_path.empty()) throw Error("serve: -m FILE (or -hf USER/REPO) is required");
  // -ngl: as llama-server, ignored with a warning when no GPU is usable; "auto"
  // (the default) offloads when a GPU is usable and the model runs there.
  std::string no_gpu;
  const bool gpu_usable = cuda::available(&no_gpu);
  if (!gpu_usable && ngl != "auto" && ngl != "0") {
    std::fprintf(stderr, "warning: no usable GPU found, --gpu-layers option will be ignored\nwarning: %s\n",
                 no_gpu.c_str());
  }
  const bool may_offload = gpu_usable && ngl != "0";
  set_weight_memory(mmap_mode == 1 || (mmap_mode < 0 && may_offload) ? WeightMemory::kMap
                    : mmap_mode == 0                                 ? WeightMemory::kCopy
                                                                     : WeightMemory::kAuto);
  if (alias.empty()) alias = base_name(model_path);

  auto model = Model::load(model_path);
  const int64_t n_layer = model->hparams().n_layer;
  Offload offload = offload_layers(0, n_layer);
  if (may_offload && ngl == "auto") {
    try {
      cuda::check_model(*model);
      offload = offload_layers(n_layer + 1, n_layer);
    } catch (const Refusal& e) {
      std::fprintf(stderr, "strix serve: the model runs on the CPU: %s\n", e.what());
    }
  } else if (may_offload) {
    offload = cuda::parse_ngl(ngl, n_layer);
    if (offload.on_gpu()) cuda::check_model(*model);
  }
  tok::Tokenizer tk(tok::Vocab::load(model->file()));
  if (tmpl.empty()) tmpl = model->file().get_string("tokenizer.chat_template");
  ContextOptions co;
  co.n_ctx = n_ctx;
  co.n_ubatch = n_ubatch;
  co.n_threads = static_cast<int>(n_threads);
  co.n_seq_max = static_cast<int>(n_parallel);
  co.exact_numerics = exact;
  std::unique_ptr<BatchContext> ctx_owner = make_context(*model, co, offload);
  std::string where;
  if (offload.full()) {
    where = "the GPU (" + gpu_name(*ctx_owner) + ")";
  } else if (offload.partial()) {
    where = "the GPU (" + gpu_name(*ctx_owner) + ") and " + std::to_string(ctx_owner->n_threads()) +
            " CPU thread(s): " + offload.describe();
  } else {
    where = std::to_string(ctx_owner->n_threads()) + " CPU thread(s)";
  }
  BatchContext& ctx = *ctx_owner;

  std::signal(SIGPIPE, SIG_IGN);  // a client that hangs up is a failed write, not a dead server
  server::Engine engine(ctx, tk,
                        {.n_parallel = static_cast<int>(n_parallel),
                         .n_batch = static_cast<int32_t>(n_batch),
                         .timeout_s = static_cast<double>(timeout_s),
                         .n_cache_reuse = static_cast<int32_t>(cache_reuse),
                         .ctx_shift = ctx_shift,
                         .n_keep = static_cast<int32_t>(n_keep)});
  server::Routes routes(engine, tk, *model,
                        {.alias = alias,
                         .api_keys = api_keys,
                         .chat_template = tmpl,
                         .n_ctx = n_ctx,
                         .reasoning_format = reasoning_format,
                         .reasoning_budget = static_cast<int32_t>(reasoning_budget),
                         .reasoning_budget_message = reasoning_budget_message,
                         .reasoning = reasoning,
                         .metrics = metrics,
                         .slots = slots,
                         .props_write = props,
                         .model_path = model_path,
                         .static_dir = static_dir});
  server::HttpServer http(
      {.host = host, .port = static_cast<int>(port), .body_limit = static_cast<uint64_t>(body_limit)},
      [&routes](const server::HttpRequest& r) { return routes.handle(r); });
  std::fprintf(stderr, "strix serve: model %s, n_ctx %lld, %lld slot(s), on %s\n", alias.c_str(),
               static_cast<long long>(n_ctx), static_cast<long long>(n_parallel), where.c_str());
  if (reasoning_budget != -1 && !sampling::template_thinks(tmpl)) {
    std::fprintf(stderr,
                 "strix serve: --reasoning-budget: the chat template has no <think> blocks, so no budget is counted\n");
  }
  std::fprintf(stderr, "strix serve: listening on http://%s:%d\n", host.c_str(), http.port());
  std::fflush(stderr);
  http.run();
  // The engine ends what is still running before the HTTP side (which its streams notify) goes away.
  engine.stop();
  std::fprintf(stderr, "strix serve: stopped\n");
  return 0;
}

}  // namespace strix::app
