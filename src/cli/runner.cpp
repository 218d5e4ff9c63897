// The CLI session (see runner.h). The flow follows llama-completion's main():
// warm-up, prompt (rendered through the chat template in conversation mode),
// then generation; in conversation mode a loop of user turns where each turn
// feeds only the text its message adds to the rendered chat.
#include "cli/runner.h"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backend/cuda/cuda_context.h"
#include "chat/builtin_templates.h"
#include "cli/chat_history.h"
#include "cli/console.h"
#include "cli/generator.h"
#include "core/error.h"
#include "core/mmap.h"
#include "download/hf.h"
#include "grammar/json_schema.h"
#include "models/model.h"
#include "runtime/batch_context.h"
#include "runtime/context.h"
#include "runtime/offload.h"
#include "sampling/sampler.h"
#include "sampling/suppress_tokens.h"
#include "sampling/think_budget.h"
#include "tokenizer/tokenizer.h"

namespace strix::cli {

namespace {

const char* context_full_message(bool ctx_shift) {
  return ctx_shift ? "\n\nmain: context full and nothing after --keep left to shift out => stopping\n"
                   : "\n\nmain: context full and context shift is disabled => stopping\n";
}

// llama-completion's n_keep for context shift: the whole prompt when --keep is
// -1 or longer than it, else --keep plus the BOS token.
int32_t context_shift_keep(int32_t keep, size_t n_prompt, bool add_bos) {
  if (keep < 0 || static_cast<size_t>(keep) > n_prompt) return static_cast<int32_t>(n_prompt);
  return keep + (add_bos ? 1 : 0);
}

using Clock = std::chrono::steady_clock;

std::string token_text(const tok::Vocab& v, int32_t id) {
  return id >= 0 && id < v.n_tokens() ? v.tokens[static_cast<size_t>(id)].text : std::string();
}

// The text add_generation_prompt appends to the rendered chat (llama.cpp's
// common_chat_params::generation_prompt), e.g. "<|im_start|>assistant\n<think>\n".
std::string generation_prompt(const ChatHistory& chat) {
  const std::string with = chat.render(/*add_generation_prompt=*/true);
  const std::string without = chat.render(/*add_generation_prompt=*/false);
  size_t n = 0;
  while (n < with.size() && n < without.size() && with[n] == without[n]) ++n;
  return with.substr(n);
}

void log(const CliParams& p, const std::string& line) {
  if (!p.log_disable) std::fprintf(stderr, "%s", line.c_str());
}

// --verbose-prompt, as llama-completion prints it.
void print_verbose_prompt(const tok::Tokenizer& tk, const std::string& prompt, const std::vector<int32_t>& ids) {
  std::fprintf(stderr, "\nmain: prompt: '%s'\n", prompt.c_str());
  std::fprintf(stderr, "main: number of tokens in prompt = %zu\n", ids.size());
  for (int32_t id : ids) std::fprintf(stderr, "%6d -> '%s'\n", id, tk.token_to_piece(id, true).c_str());
  std::fprintf(stderr, "\n");
}

std::string resolve_model_path(const CliParams& p) {
  if (!p.hf_file.empty() && p.hf_repo.empty()) throw Error("-hff needs -hf (the repository to take the file from)");
  if (!p.hf_repo.empty()) {
    return download::resolve_model(download::parse_hf_arg(p.hf_repo, p.hf_file, p.hf_token));
  }
  if (p.model.empty()) throw Error("--model is required (or -hf user/repo); strix run -h lists the flags");
  return p.model;
}

// -j / -jf: the schema becomes a GBNF grammar (src/grammar/json_schema.h);
// keywords a grammar cannot enforce are refused by name there.
void fill_grammar(CliParams& p) {
  if (p.json_schema.empty()) return;
  if (!p.sampling.grammar.empty()) throw Error("use either --grammar/--grammar-file or -j/--json-schema, not both");
  p.sampling.grammar = grammar::json_schema_to_grammar(p.json_schema);
}

}  // namespace

int run(CliParams& p) {
  Perf perf;
  perf.t_start = Clock::now();
  fill_grammar(p);
  const std::string path = resolve_model_path(p);
  // -ngl: as llama.cpp, ignored with a warning when no GPU is usable; "auto"
  // (the default) offloads when a GPU is usable and the model runs there.
  std::string no_gpu;
  const bool gpu_usable = cuda::available(&no_gpu);
  if (!gpu_usable && p.n_gpu_layers != "auto" && p.n_gpu_layers != "0") {
    log(p, "warning: no usable GPU found, --gpu-layers option will be ignored\nwarning: " + no_gpu + "\n");
  }
  const bool may_offload = gpu_usable && p.n_gpu_layers != "0";
  set_weight_memory(p.mmap == 1 || (p.mmap < 0 && may_offload) ? WeightMemory::kMap
                    : p.mmap == 0                              ? WeightMemory::kCopy
                                                               : WeightMemory::kAuto);
  auto model = Model::load(path);
  const int64_t n_layer = model->hparams().n_layer;
  Offload offload = offload_layers(0, n_layer);
  if (may_offload && p.n_gpu_layers == "auto") {
    try {
      cuda::check_model(*model);
      offload = offload_layers(n_layer + 1, n_layer);
    } catch (const Refusal& e) {
      log(p, std::string("main: the model runs on the CPU: ") + e.what() + "\n");
    }
  } else if (may_offload) {
    offload = cuda::parse_ngl(p.n_gpu_layers, n_layer);
    if (offload.on_gpu()) cuda::check_model(*model);
  }
  const tok::Tokenizer tk = tok::Tokenizer::from_file(path);
  if (p.mlock && mlockall(MCL_CURRENT) != 0) {
    log(p, "warning: failed to mlock the model: raise RLIMIT_MEMLOCK (ulimit -l) or run without --mlock\n");
  }
  const int64_t n_ctx = p.n_ctx == 0 ? model->hparams().n_ctx_train : p.n_ctx;
  ContextOptions co;
  co.n_ctx = n_ctx;
  co.n_ubatch = std::min(p.n_ubatch, p.n_batch);
  co.exact_numerics = p.exact;
  co.n_threads = p.n_threads_batch > 0 && p.n_threads > 0 ? std::max(p.n_threads, p.n_threads_batch) : p.n_threads;
  std::unique_ptr<BatchContext> ctx_owner = make_context(*model, co, offload);
  if (offload.on_gpu()) {
    log(p, "main: offloaded " + std::to_string(offload.n_gpu) + "/" + std::to_string(n_layer + 1) +
               " layers to the GPU (" + gpu_name(*ctx_owner) + ")" +
               (offload.partial() ? ": " + offload.describe() : std::string()) + "\n");
  }
  BatchContext& ctx = *ctx_owner;
  const tok::Vocab& vocab = tk.vocab();

  if (p.warmup) {
    // llama.cpp's warm-up: bos (and eos) through the model once, then forgotten
    std::vector<int32_t> w;
    if (vocab.bos != tok::kNoToken) w.push_back(vocab.bos);
    if (vocab.eos != tok::kNoToken) w.push_back(vocab.eos);
    if (w.empty()) w.push_back(0);
    ctx.decode_seq(w);
    ctx.clear();
  }
  perf.t_load_ms = std::chrono::duration<double, std::milli>(Clock::now() - perf.t_start).count();

  // chat template: --chat-template(-file), else the model's. A built-in name
  // (llama3, gemma, ...) renders through chat/builtin_templates.h.
  std::string tmpl = p.chat_template;
  if (!tmpl.empty() && !chat::is_builtin_template(tmpl) && tmpl.find("{{") == std::string::npos &&
      tmpl.find("{%") == std::string::npos) {
    throw Refusal("--chat-template '" + tmpl +
                  "' is neither a built-in template name (strix run -h lists them) nor Jinja source; "
                  "pass the template text or --chat-template-file");
  }
  if (tmpl.empty()) tmpl = model->file().get_string("tokenizer.chat_template");
  const bool has_template = !tmpl.empty();
  bool conversation = p.conversation == -1 ? has_template : p.conversation == 1;
  if (p.conversation == -1 && has_template) {
    log(p, "main: chat template is available, enabling conversation mode (disable it with -no-cnv)\n");
  }
  if (conversation && !has_template) {
    log(p,
        "main: chat template is not available or is not supported. This may cause the model to output "
        "suboptimal responses\n");
    tmpl = "chatml";
  }
  if (conversation && p.enable_chat_template && !p.use_jinja && !chat::is_builtin_template(tmpl)) {
    // --no-jinja: llama.cpp guesses the built-in format from the Jinja source
    // (llm_chat_detect_template) and renders that instead.
    const std::string detected = chat::detect_builtin_template(tmpl);
    if (detected.empty()) {
      throw Refusal(
          "--no-jinja: this chat template matches none of the built-in formats Strix can detect (llama.cpp's newest "
          "formats are only reachable by name here); use --chat-template NAME or drop --no-jinja");
    }
    tmpl = detected;
  }
  const bool format_chat = conversation && p.enable_chat_template;

  // the model's suppressed tokens get a -inf bias, as common_sampler adds them
  p.sampling.suppress_tokens = sampling::load_suppress_tokens(model->file(), vocab.n_tokens());
  // --reasoning-budget N > 0: the reasoning-budget sampler over the chat
  // template's thinking tags (<think> ... </think>), as llama.cpp configures it
  // from the chat parameters; without a chat, or with a template that has no
  // thinking tags, there is nothing to count and the budget has no effect.
  if (p.reasoning_budget > 0) {
    if (format_chat && sampling::template_thinks(tmpl)) {
      sampling::set_think_budget(p.sampling, tk, p.reasoning_budget, p.reasoning_budget_message);
    } else {
      log(p, "main: --reasoning-budget: no chat template with thinking tags (<think>), the budget has no effect\n");
    }
  }
  sampling::Sampler sampler(p.sampling, tk, static_cast<int32_t>(n_ctx));
  log(p, "main: sampler seed: " + std::to_string(sampler.seed()) + "\n" + "main: " + sampler.describe() + "\n");
  const bool color = p.color == -1 ? stdout_can_color() : p.color == 1;
  Console console(color);
  Generator gen(ctx, tk, sampler, console, perf, p.n_batch);
  const int32_t n_predict = p.n_predict < 0 ? -1 : p.n_predict;
  int exit_code = 0;

  if (!conversation) {
    // ---- completion mode ----
    std::vector<int32_t> ids = tk.tokenize(p.prompt, /*add_special=*/true, /*parse_special=*/true);
    if (ids.empty()) {
      if (vocab.bos == tok::kNoToken) throw Error("the prompt is empty and the vocabulary has no BOS token");
      ids.push_back(vocab.bos);
    }
    if (static_cast<int64_t>(ids.size()) > n_ctx - 4) {
      throw Error("prompt is too long (" + std::to_string(ids.size()) + " tokens, max " + std::to_string(n_ctx - 4) +
                  ")");
    }
    if (p.verbose_prompt) print_verbose_prompt(tk, p.prompt, ids);
    if (p.ctx_shift) gen.enable_context_shift(context_shift_keep(p.n_keep, ids.size(), vocab.add_bos));
    tok::StreamDetokenizer detok(tk);
    std::string echo;
    for (int32_t id : ids) echo += detok.push(id);
    if (p.display_prompt) {
      console.set_display(Display::kPrompt);
      console.write(echo);
      console.set_display(Display::kReset);
    }
    gen.queue(ids, /*into_history=*/true);
    std::string text;
    const auto stop = gen.generate(n_predict, p.antiprompt, detok, text);
    console.write(detok.flush());
    if (stop == Generator::Stop::kEog) console.write(" [end of text]\n");
    if (stop == Generator::Stop::kContextFull) log(p, context_full_message(p.ctx_shift));
    if (stop == Generator::Stop::kInterrupted) exit_code = 130;
    console.write("\n\n");
  } else {
    // ---- conversation mode ----
    ChatHistory chat(tmpl, token_text(vocab, vocab.bos), token_text(vocab, vocab.eos), p.chat_template_kwargs,
                     /*enable_thinking=*/p.reasoning_budget != 0);
    log(p,
        "== Running in interactive mode. ==\n"
        " - Press Ctrl+C to interject at any time.\n"
        " - Press Return to return control to the AI.\n"
        " - If you want to submit another line, end your input with '\\'.\n"
        " - /exit or Ctrl+D ends the conversation.\n");
    if (p.system_prompt.empty())
      log(p, " - Not using system message. To change it, set a different value via -sys PROMPT\n");
    log(p, "\n");
    const bool first_turn_given = !p.prompt.empty();
    bool need_insert_eot = false;
    auto reply = [&]() -> Generator::Stop {
      // Each reply starts from the generation prompt's state: counting when
      // the template opened a thinking block for it.
      if (format_chat && sampler.has_reasoning_budget()) sampler.prime_reasoning_budget(generation_prompt(chat));
      tok::StreamDetokenizer detok(tk);
      std::string text;
      const auto stop = gen.generate(n_predict, p.antiprompt, detok, text);
      const std::string tail = detok.flush();
      console.write(tail);
      text += tail;
      if (format_chat) chat.add("assistant", text);
      if (stop == Generator::Stop::kInterrupted) need_insert_eot = true;
      if (stop == Generator::Stop::kContextFull) log(p, context_full_message(p.ctx_shift));
      if (stop == Generator::Stop::kEog || stop == Generator::Stop::kInterrupted) console.write("\n");
      return stop;
    };

    if (format_chat && (!p.system_prompt.empty() || first_turn_given)) {
      if (!p.system_prompt.empty()) chat.add("system", p.system_prompt);
      if (first_turn_given) chat.add("user", p.prompt);
      const std::string rendered = chat.render(/*add_generation_prompt=*/first_turn_given);
      const std::vector<int32_t> ids = tk.tokenize(rendered, true, true);
      if (static_cast<int64_t>(ids.size()) > n_ctx - 4) {
        throw Error("prompt is too long (" + std::to_string(ids.size()) + " tokens, max " + std::to_string(n_ctx - 4) +
                    ")");
      }
      if (p.verbose_prompt) print_verbose_prompt(tk, rendered, ids);
      if (p.display_prompt) {
        console.set_display(Display::kPrompt);
        console.write(tk.detokenize(ids, /*remove_special=*/true, /*unparse_special=*/false));
        console.set_display(Display::kReset);
      }
      gen.queue(ids, true);
      if (p.ctx_shift) gen.enable_context_shift(context_shift_keep(p.n_keep, ids.size(), vocab.add_bos));
    } else if (!format_chat && first_turn_given) {
      // raw interactive mode (--in-prefix/--in-suffix): the prompt as text
      const std::vector<int32_t> ids = tk.tokenize(p.prompt, true, true);
      if (p.display_prompt) console.write(tk.detokenize(ids, true, false));
      gen.queue(ids, true);
      if (p.ctx_shift) gen.enable_context_shift(context_shift_keep(p.n_keep, ids.size(), vocab.add_bos));
    } else if (p.ctx_shift) {
      gen.enable_context_shift(context_shift_keep(p.n_keep, 0, vocab.add_bos));
    }
    bool done = false;
    if (first_turn_given) {
      const auto stop = reply();
      if (stop == Generator::Stop::kContextFull || p.single_turn) done = true;
    }
    while (!done) {
      std::string line;
      console.write("\n");
      if (!format_chat && !p.input_prefix.empty()) console.write(p.input_prefix);
      console.set_display(Display::kUserInput);
      const auto r = console.read_line("> ", line);
      console.set_display(Display::kReset);
      if (r == Console::Read::kEof) {
        console.write("\n");
        break;
      }
      if (r == Console::Read::kInterrupted) {
        console.write("\n");
        exit_code = 130;
        break;
      }
      if (line == "/exit") break;
      if (line.empty()) continue;
      if (!format_chat && !p.input_suffix.empty()) console.write(p.input_suffix);
      std::vector<int32_t> ids;
      if (need_insert_eot && format_chat) {
        // the interrupted reply gets its end-of-turn token, as llama.cpp does
        const int32_t eot = vocab.eot != tok::kNoToken ? vocab.eot : vocab.eos;
        if (eot != tok::kNoToken) ids.push_back(eot);
      }
      need_insert_eot = false;
      const std::string user_inp = format_chat ? chat.add_and_format("user", line) : line + "\n";
      const auto pfx = tk.tokenize(p.input_prefix, false, true);
      const auto inp = tk.tokenize(user_inp, false, format_chat);
      const auto sfx = tk.tokenize(p.input_suffix, false, true);
      ids.insert(ids.end(), pfx.begin(), pfx.end());
      ids.insert(ids.end(), inp.begin(), inp.end());
      ids.insert(ids.end(), sfx.begin(), sfx.end());
      gen.queue(ids, true);
      const auto stop = reply();
      if (stop == Generator::Stop::kContextFull || p.single_turn) done = true;
    }
  }
  if (!p.log_disable) {
    std::fprintf(stderr, "\n");
    perf.print();
  }
  return exit_code;
}

}  // namespace strix::cli
