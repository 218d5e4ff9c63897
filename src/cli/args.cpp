// The flag table (see args.h). Texts and defaults follow llama.cpp's
// common/arg.cpp; where Strix behaves differently the help says so.
#include "cli/args.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "chat/builtin_templates.h"
#include "core/error.h"

namespace strix::cli {

namespace {

// "bailing, bailing-think, ..." as llama.cpp's --chat-template help lists them.
std::string builtin_names_text() {
  std::string out;
  for (const std::string& n : chat::builtin_template_names()) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("failed to open file '" + path + "'");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Whole-string integer / float parses: "12x" is an error, as is overflow.
int32_t to_int(const std::string& v) {
  errno = 0;
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno == ERANGE || x < INT32_MIN || x > INT32_MAX) {
    throw Error("'" + v + "' is not an integer");
  }
  return static_cast<int32_t>(x);
}

float to_float(const std::string& v) {
  errno = 0;
  char* end = nullptr;
  const float x = std::strtof(v.c_str(), &end);
  if (v.empty() || *end != '\0' || errno == ERANGE) throw Error("'" + v + "' is not a number");
  return x;
}

bool is_truthy(const std::string& v) { return v == "on" || v == "enabled" || v == "true" || v == "1"; }
bool is_falsey(const std::string& v) { return v == "off" || v == "disabled" || v == "false" || v == "0"; }
bool is_autoy(const std::string& v) { return v == "auto" || v == "-1"; }

std::string fmt(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, x);
  return buf;
}

// llama.cpp's --logit-bias: TOKEN_ID(+/-)BIAS, e.g. 15043+1 or 15043-1.
std::pair<int32_t, float> parse_logit_bias(const std::string& v) {
  size_t i = 0;
  while (i < v.size() && (std::isdigit(static_cast<unsigned char>(v[i])) != 0)) ++i;
  if (i == 0 || i >= v.size() || (v[i] != '+' && v[i] != '-')) {
    throw Error("'" + v + "' is not TOKEN_ID(+/-)BIAS (e.g. 15043+1)");
  }
  const int32_t tok = to_int(v.substr(0, i));
  float bias = 0.0f;
  try {
    bias = to_float(v.substr(i + 1));
  } catch (const Error&) {
    throw Error("'" + v + "' is not TOKEN_ID(+/-)BIAS (e.g. 15043+1)");
  }
  return {tok, v[i] == '-' ? -bias : bias};
}

// The KV cache types llama.cpp accepts; Strix's cache is f16 only.
void check_cache_type(const std::string& flag, const std::string& v) {
  static const char* kKnown[] = {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1"};
  if (std::find(std::begin(kKnown), std::end(kKnown), v) == std::end(kKnown)) {
    throw Error("unsupported cache type '" + v + "' for " + flag +
                " (allowed values: f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1)");
  }
  if (v != "f16") {
    throw Refusal("KV cache type " + v + " (" + flag + ") is not implemented yet; Strix's KV cache is f16");
  }
}

std::vector<Option> build_table() {
  const CliParams d;  // defaults quoted in the help
  const sampling::Params& s = d.sampling;
  std::vector<Option> t;
  auto add = [&](Option o) { t.push_back(std::move(o)); };
  using P = CliParams&;
  using V = const std::string&;
  const Section C = Section::kCommon, S = Section::kSampling, E = Section::kExample;

  // ----- common -----
  add({{"-h", "--help", "--usage"}, {}, nullptr, nullptr, C, "print usage and exit", [](P p, V) { p.help = true; }});
  add({{"--verbose-prompt"},
       {},
       nullptr,
       nullptr,
       C,
       "print a verbose prompt before generation (default: false)",
       [](P p, V v) { p.verbose_prompt = v == "1"; }});
  add({{"--display-prompt"},
       {"--no-display-prompt"},
       nullptr,
       nullptr,
       C,
       "whether to print prompt at generation (default: true)",
       [](P p, V v) { p.display_prompt = v == "1"; }});
  add({{"-co", "--color"},
       {},
       "[on|off|auto]",
       nullptr,
       C,
       "Colorize output to distinguish prompt and user input from generations ('on', 'off', or 'auto', default: "
       "'auto')\n'auto' enables colors when output is to a terminal",
       [](P p, V v) {
         if (is_truthy(v))
           p.color = 1;
         else if (is_falsey(v))
           p.color = 0;
         else if (is_autoy(v))
           p.color = -1;
         else
           throw Error("unknown value for --color: '" + v + "'");
       }});
  add({{"-t", "--threads"},
       {},
       "N",
       "LLAMA_ARG_THREADS",
       C,
       "number of CPU threads to use during generation (default: all cores)",
       [](P p, V v) { p.n_threads = std::max(0, to_int(v)); }});
  add({{"-tb", "--threads-batch"},
       {},
       "N",
       nullptr,
       C,
       "number of threads to use during batch and prompt processing (default: same as --threads; Strix runs one "
       "thread pool: the larger of -t and -tb)",
       [](P p, V v) { p.n_threads_batch = std::max(0, to_int(v)); }});
  add({{"-c", "--ctx-size"},
       {},
       "N",
       "LLAMA_ARG_CTX_SIZE",
       C,
       "size of the prompt context (default: " + std::to_string(d.n_ctx) + ", 0 = loaded from model)",
       [](P p, V v) {
         const int32_t x = to_int(v);
         if (x < 0) throw Error("the context size must be >= 0");
         p.n_ctx = x;
       }});
  add({{"-n", "--predict", "--n-predict"},
       {},
       "N",
       "LLAMA_ARG_N_PREDICT",
       C,
       "number of tokens to predict (default: -1, -1 = infinity, -2 = until context filled)",
       [](P p, V v) {
         const int32_t x = to_int(v);
         if (x < -2) throw Error("-n must be >= -2");
         p.n_predict = x;
       }});
  add({{"-b", "--batch-size"},
       {},
       "N",
       "LLAMA_ARG_BATCH",
       C,
       "logical maximum batch size (default: " + std::to_string(d.n_batch) + ")",
       [](P p, V v) {
         p.n_batch = to_int(v);
         if (p.n_batch < 1) throw Error("the batch size must be >= 1");
       }});
  add({{"-ub", "--ubatch-size"},
       {},
       "N",
       "LLAMA_ARG_UBATCH",
       C,
       "physical maximum batch size (default: " + std::to_string(d.n_ubatch) + ")",
       [](P p, V v) {
         p.n_ubatch = to_int(v);
         if (p.n_ubatch < 1) throw Error("the micro-batch size must be >= 1");
       }});
  add({{"--keep"},
       {},
       "N",
       nullptr,
       C,
       "number of tokens to keep from the initial prompt (default: 0, -1 = all); used by --context-shift",
       [](P p, V v) {
         p.n_keep = to_int(v);
         if (p.n_keep < -1) throw Error("--keep must be >= -1");
       }});
  add({{"-fa", "--flash-attn"},
       {},
       "[on|off|auto]",
       "LLAMA_ARG_FLASH_ATTN",
       C,
       "set Flash Attention use ('on', 'off', or 'auto', default: 'auto'); Strix's CPU attention is the same "
       "computation either way",
       [](P p, V v) {
         if (is_truthy(v))
           p.flash_attn = "on";
         else if (is_falsey(v))
           p.flash_attn = "off";
         else if (is_autoy(v))
           p.flash_attn = "auto";
         else
           throw Error("unknown value for --flash-attn: '" + v + "'");
       }});
  add({{"-p", "--prompt"},
       {},
       "PROMPT",
       nullptr,
       C,
       "prompt to start generation with; for system message, use -sys",
       [](P p, V v) { p.prompt = v; }});
  add({{"-sys", "--system-prompt"},
       {},
       "PROMPT",
       nullptr,
       C,
       "system prompt to use with model (if applicable, depending on chat template)",
       [](P p, V v) { p.system_prompt = v; }});
  add({{"-f", "--file"}, {}, "FNAME", nullptr, C, "a file containing the prompt (default: none)", [](P p, V v) {
         p.prompt = read_text_file(v);
         if (!p.prompt.empty() && p.prompt.back() == '\n') p.prompt.pop_back();
       }});
  add({{"-e", "--escape"},
       {"--no-escape"},
       nullptr,
       nullptr,
       C,
       "whether to process escapes sequences (\\n, \\r, \\t, \\', \\\", \\\\) (default: true)",
       [](P p, V v) { p.escape = v == "1"; }});
  add({{"-r", "--reverse-prompt"},
       {},
       "PROMPT",
       nullptr,
       C,
       "halt generation at PROMPT, return control in interactive mode",
       [](P p, V v) { p.antiprompt.push_back(v); }});
  add({{"-cnv", "--conversation"},
       {"-no-cnv", "--no-conversation"},
       nullptr,
       nullptr,
       C,
       "whether to run in conversation mode:\n- does not print special tokens and suffix/prefix\n- interactive mode "
       "is also enabled\n(default: auto enabled if chat template is available)",
       [](P p, V v) { p.conversation = v == "1" ? 1 : 0; }});
  add({{"-st", "--single-turn"},
       {},
       nullptr,
       nullptr,
       C,
       "run conversation for a single turn only, then exit when done\nwill not be interactive if first turn is "
       "predefined with --prompt\n(default: false)",
       [](P p, V v) { p.single_turn = v == "1"; }});
  add({{"--in-prefix"}, {}, "STRING", nullptr, C, "string to prefix user inputs with (default: empty)", [](P p, V v) {
         p.input_prefix = v;
         p.enable_chat_template = false;
       }});
  add({{"--in-suffix"},
       {},
       "STRING",
       nullptr,
       C,
       "string to suffix after user inputs with (default: empty)",
       [](P p, V v) {
         p.input_suffix = v;
         p.enable_chat_template = false;
       }});
  add({{"--context-shift"},
       {"--no-context-shift"},
       nullptr,
       "LLAMA_ARG_CONTEXT_SHIFT",
       C,
       "when the context is full, drop half of the tokens after the first --keep ones and go on (default: "
       "disabled: generation stops)",
       [](P p, V v) { p.ctx_shift = v == "1"; }});
  add({{"--warmup"},
       {"--no-warmup"},
       nullptr,
       nullptr,
       C,
       "whether to perform warmup with an empty run (default: enabled)",
       [](P p, V v) { p.warmup = v == "1"; }});
  add({{"--exact"},
       {},
       nullptr,
       "STRIX_EXACT",
       C,
       "CUDA: compute every op in libllama's CPU float order, so the logits equal llama.cpp's CPU backend bit for "
       "bit (dense models of F32 / F16 / Q8_0 / Q4_K / Q6_K weights; slower: no tensor cores, no fused kernels)",
       [](P p, V v) { p.exact = v == "1"; }});
  add({{"--mlock"},
       {},
       nullptr,
       "LLAMA_ARG_MLOCK",
       C,
       "force system to keep model in RAM rather than swapping or compressing",
       [](P p, V v) { p.mlock = v == "1"; }});
  add({{"--mmap"},
       {"--no-mmap"},
       nullptr,
       "LLAMA_ARG_MMAP",
       C,
       "--mmap: map the model file in place; --no-mmap: read it into memory (huge pages); default: read it when it "
       "takes at most half of the available memory, else map it",
       [](P p, V v) { p.mmap = v == "1" ? 1 : 0; }});
  add({{"-ngl", "--gpu-layers", "--n-gpu-layers"},
       {},
       "N",
       "LLAMA_ARG_N_GPU_LAYERS",
       C,
       "max. number of layers to store in VRAM, either an exact number, 'auto', or 'all' (default: auto); this "
       "Strix build runs on the CPU and ignores it with a warning, as a CPU build of llama.cpp does",
       [](P p, V v) {
         if (v != "auto" && v != "all") to_int(v);
         p.n_gpu_layers = v;
       }});
  add({{"-ctk", "--cache-type-k"},
       {},
       "TYPE",
       "LLAMA_ARG_CACHE_TYPE_K",
       C,
       "KV cache data type for K\nallowed values: f16 (llama.cpp also has f32, bf16, q8_0, q4_0, q4_1, iq4_nl, "
       "q5_0, q5_1: refused)\n(default: f16)",
       [](P p, V v) {
         check_cache_type("-ctk", v);
         p.cache_type_k = v;
       }});
  add({{"-ctv", "--cache-type-v"},
       {},
       "TYPE",
       "LLAMA_ARG_CACHE_TYPE_V",
       C,
       "KV cache data type for V\nallowed values: f16 (others refused, as for -ctk)\n(default: f16)",
       [](P p, V v) {
         check_cache_type("-ctv", v);
         p.cache_type_v = v;
       }});
  add({{"-m", "--model"}, {}, "FNAME", "LLAMA_ARG_MODEL", C, "model path to load", [](P p, V v) { p.model = v; }});
  add({{"-hf", "-hfr", "--hf-repo"},
       {},
       "<user>/<model>[:quant]",
       "LLAMA_ARG_HF_REPO",
       C,
       "Hugging Face model repository; quant is optional (default: the repo's 'latest' tag)\nexample: "
       "ggml-org/gemma-3-1b-it-GGUF:Q4_K_M\n(default: unused)",
       [](P p, V v) { p.hf_repo = v; }});
  add({{"-hff", "--hf-file"},
       {},
       "FILE",
       "LLAMA_ARG_HF_FILE",
       C,
       "Hugging Face model file. If specified, it will override the quant in --hf-repo (default: unused)",
       [](P p, V v) { p.hf_file = v; }});
  add({{"-hft", "--hf-token"},
       {},
       "TOKEN",
       "HF_TOKEN",
       C,
       "Hugging Face access token (default: value from HF_TOKEN environment variable)",
       [](P p, V v) { p.hf_token = v; }});
  add({{"--log-disable"}, {}, nullptr, nullptr, C, "Log disable", [](P p, V v) { p.log_disable = v == "1"; }});

  // ----- sampling -----
  std::string names, chars;
  for (sampling::Stage st : s.stages) {
    static const char* kName[] = {"penalties", "dry", "top_n_sigma", "top_k",  "typ_p",     "top_p",
                                  "min_p",     "xtc", "temperature", "infill", "adaptive_p"};
    static const char kChar[] = {'e', 'd', 's', 'k', 'y', 'p', 'm', 'x', 't', 'i', 'a'};
    names += std::string(names.empty() ? "" : ";") + kName[static_cast<int>(st)];
    chars += kChar[static_cast<int>(st)];
  }
  add({{"--samplers"},
       {},
       "SAMPLERS",
       nullptr,
       S,
       "samplers that will be used for generation in the order, separated by ';'\n(default: " + names + ")",
       [](P p, V v) { p.sampling.stages = sampling::parse_stages(v, false); }});
  add({{"-s", "--seed"}, {}, "SEED", nullptr, S, "RNG seed (default: -1, use random seed for -1)", [](P p, V v) {
         errno = 0;
         char* end = nullptr;
         const long long x = std::strtoll(v.c_str(), &end, 10);
         if (v.empty() || *end != '\0' || errno == ERANGE || x < -1 || x > 0xFFFFFFFFll) {
           throw Error("'" + v + "' is not a seed (0 .. 4294967295, or -1 for a random one)");
         }
         p.sampling.seed = static_cast<uint32_t>(x);
       }});
  add({{"--sampler-seq", "--sampling-seq"},
       {},
       "SEQUENCE",
       nullptr,
       S,
       "simplified sequence for samplers that will be used (default: " + chars + ")",
       [](P p, V v) { p.sampling.stages = sampling::parse_stages(v, true); }});
  add({{"--ignore-eos"},
       {},
       nullptr,
       nullptr,
       S,
       "ignore end of stream token and continue generating (implies --logit-bias EOS-inf)",
       [](P p, V v) { p.sampling.ignore_eos = v == "1"; }});
  add({{"--temp", "--temperature"},
       {},
       "N",
       nullptr,
       S,
       "temperature (default: " + fmt("%.2f", s.temp) + ")",
       [](P p, V v) { p.sampling.temp = std::max(to_float(v), 0.0f); }});
  add({{"--top-k"},
       {},
       "N",
       "LLAMA_ARG_TOP_K",
       S,
       "top-k sampling (default: " + std::to_string(s.top_k) + ", 0 = disabled)",
       [](P p, V v) { p.sampling.top_k = to_int(v); }});
  add({{"--top-p"},
       {},
       "N",
       nullptr,
       S,
       "top-p sampling (default: " + fmt("%.2f", s.top_p) + ", 1.0 = disabled)",
       [](P p, V v) { p.sampling.top_p = to_float(v); }});
  add({{"--min-p"},
       {},
       "N",
       nullptr,
       S,
       "min-p sampling (default: " + fmt("%.2f", s.min_p) + ", 0.0 = disabled)",
       [](P p, V v) { p.sampling.min_p = to_float(v); }});
  add({{"--top-nsigma", "--top-n-sigma"},
       {},
       "N",
       nullptr,
       S,
       "top-n-sigma sampling (default: " + fmt("%.2f", s.top_n_sigma) + ", -1.0 = disabled)",
       [](P p, V v) { p.sampling.top_n_sigma = to_float(v); }});
  add({{"--xtc-probability"},
       {},
       "N",
       nullptr,
       S,
       "xtc probability (default: " + fmt("%.2f", s.xtc_probability) + ", 0.0 = disabled)",
       [](P p, V v) { p.sampling.xtc_probability = to_float(v); }});
  add({{"--xtc-threshold"},
       {},
       "N",
       nullptr,
       S,
       "xtc threshold (default: " + fmt("%.2f", s.xtc_threshold) + ", 1.0 = disabled)",
       [](P p, V v) { p.sampling.xtc_threshold = to_float(v); }});
  add({{"--typical", "--typical-p"},
       {},
       "N",
       nullptr,
       S,
       "locally typical sampling, parameter p (default: " + fmt("%.2f", s.typ_p) + ", 1.0 = disabled)",
       [](P p, V v) { p.sampling.typ_p = to_float(v); }});
  add({{"--repeat-last-n"},
       {},
       "N",
       nullptr,
       S,
       "last n tokens to consider for penalize (default: " + std::to_string(s.penalty_last_n) +
           ", 0 = disabled, -1 = ctx_size)",
       [](P p, V v) {
         const int32_t x = to_int(v);
         if (x < -1) throw Error("invalid repeat-last-n = " + v);
         p.sampling.penalty_last_n = x;
         p.sampling.n_prev = std::max(p.sampling.n_prev, x);
       }});
  add({{"--repeat-penalty"},
       {},
       "N",
       nullptr,
       S,
       "penalize repeat sequence of tokens (default: " + fmt("%.2f", s.penalty_repeat) + ", 1.0 = disabled)",
       [](P p, V v) { p.sampling.penalty_repeat = to_float(v); }});
  add({{"--presence-penalty"},
       {},
       "N",
       nullptr,
       S,
       "repeat alpha presence penalty (default: " + fmt("%.2f", s.penalty_present) + ", 0.0 = disabled)",
       [](P p, V v) { p.sampling.penalty_present = to_float(v); }});
  add({{"--frequency-penalty"},
       {},
       "N",
       nullptr,
       S,
       "repeat alpha frequency penalty (default: " + fmt("%.2f", s.penalty_freq) + ", 0.0 = disabled)",
       [](P p, V v) { p.sampling.penalty_freq = to_float(v); }});
  add({{"--dry-multiplier"},
       {},
       "N",
       nullptr,
       S,
       "set DRY sampling multiplier (default: " + fmt("%.2f", s.dry_multiplier) + ", 0.0 = disabled)",
       [](P p, V v) { p.sampling.dry_multiplier = to_float(v); }});
  add({{"--dry-base"},
       {},
       "N",
       nullptr,
       S,
       "set DRY sampling base value (default: " + fmt("%.2f", s.dry_base) + "; values below 1.0 are ignored)",
       [](P p, V v) {
         const float x = to_float(v);
         if (x >= 1.0f) p.sampling.dry_base = x;
       }});
  add({{"--dry-allowed-length"},
       {},
       "N",
       nullptr,
       S,
       "set allowed length for DRY sampling (default: " + std::to_string(s.dry_allowed_length) + ")",
       [](P p, V v) { p.sampling.dry_allowed_length = to_int(v); }});
  add({{"--dry-penalty-last-n"},
       {},
       "N",
       nullptr,
       S,
       "set DRY penalty for the last n tokens (default: " + std::to_string(s.dry_penalty_last_n) +
           ", 0 = disable, -1 = context size)",
       [](P p, V v) {
         const int32_t x = to_int(v);
         if (x < -1) throw Error("invalid dry-penalty-last-n = " + v);
         p.sampling.dry_penalty_last_n = x;
       }});
  add({{"--dry-sequence-breaker"},
       {},
       "STRING",
       nullptr,
       S,
       "add sequence breaker for DRY sampling, clearing out default breakers ('\\n', ':', '\"', '*') in the "
       "process; use \"none\" to not use any sequence breakers",
       // The first use on a command line drops the defaults (the parser marks that in a hidden field below).
       [](P p, V v) {
         if (v == "none") {
           p.sampling.dry_sequence_breakers.clear();
         } else {
           p.sampling.dry_sequence_breakers.push_back(v);
         }
       }});
  add({{"--dynatemp-range"},
       {},
       "N",
       nullptr,
       S,
       "dynamic temperature range (default: " + fmt("%.2f", s.dynatemp_range) + ", 0.0 = disabled)",
       [](P p, V v) { p.sampling.dynatemp_range = to_float(v); }});
  add({{"--dynatemp-exp"},
       {},
       "N",
       nullptr,
       S,
       "dynamic temperature exponent (default: " + fmt("%.2f", s.dynatemp_exponent) + ")",
       [](P p, V v) { p.sampling.dynatemp_exponent = to_float(v); }});
  add({{"--adaptive-target"},
       {},
       "N",
       nullptr,
       S,
       "adaptive-p: select tokens near this probability (valid range 0.0 to 1.0; negative = disabled) (default: " +
           fmt("%.2f", s.adaptive_target) + ")\n[(more info)](https://github.com/ggml-org/llama.cpp/pull/17927)",
       [](P p, V v) { p.sampling.adaptive_target = to_float(v); }});
  add({{"--adaptive-decay"},
       {},
       "N",
       nullptr,
       S,
       "adaptive-p: decay rate for target adaptation over time. lower values are more reactive, higher values are "
       "more stable.\n(valid range 0.0 to 0.99) (default: " +
           fmt("%.2f", s.adaptive_decay) + ")",
       [](P p, V v) { p.sampling.adaptive_decay = to_float(v); }});
  add({{"--mirostat"},
       {},
       "N",
       nullptr,
       S,
       "use Mirostat sampling.\nTop K, Nucleus and Locally Typical samplers are ignored if used.\n(default: 0, 0 = "
       "disabled, 1 = Mirostat, 2 = Mirostat 2.0)",
       [](P p, V v) {
         const int32_t x = to_int(v);
         if (x < 0 || x > 2) throw Error("--mirostat must be 0, 1 or 2");
         p.sampling.mirostat = x;
       }});
  add({{"--mirostat-lr"},
       {},
       "N",
       nullptr,
       S,
       "Mirostat learning rate, parameter eta (default: " + fmt("%.2f", s.mirostat_eta) + ")",
       [](P p, V v) { p.sampling.mirostat_eta = to_float(v); }});
  add({{"--mirostat-ent"},
       {},
       "N",
       nullptr,
       S,
       "Mirostat target entropy, parameter tau (default: " + fmt("%.2f", s.mirostat_tau) + ")",
       [](P p, V v) { p.sampling.mirostat_tau = to_float(v); }});
  add({{"-l", "--logit-bias"},
       {},
       "TOKEN_ID(+/-)BIAS",
       nullptr,
       S,
       "modifies the likelihood of token appearing in the completion,\ni.e. `--logit-bias 15043+1` to increase "
       "likelihood of token ' Hello',\nor `--logit-bias 15043-1` to decrease likelihood of token ' Hello'",
       [](P p, V v) { p.sampling.logit_bias.push_back(parse_logit_bias(v)); }});
  add({{"--grammar"},
       {},
       "GRAMMAR",
       nullptr,
       S,
       "BNF-like grammar to constrain generations (see samples in grammars/ dir)",
       [](P p, V v) { p.sampling.grammar = v; }});
  add({{"--grammar-file"}, {}, "FNAME", nullptr, S, "file to read grammar from", [](P p, V v) {
         p.sampling.grammar = read_text_file(v);
       }});
  add({{"-j", "--json-schema"},
       {},
       "SCHEMA",
       nullptr,
       S,
       "JSON schema to constrain generations (https://json-schema.org/), e.g. `{}` for any JSON object",
       [](P p, V v) { p.json_schema = v; }});
  add({{"-jf", "--json-schema-file"},
       {},
       "FILE",
       nullptr,
       S,
       "File containing a JSON schema to constrain generations (https://json-schema.org/), e.g. `{}` for any JSON "
       "object",
       [](P p, V v) { p.json_schema = read_text_file(v); }});

  // ----- example-specific (chat) -----
  add({{"--jinja"},
       {"--no-jinja"},
       nullptr,
       "LLAMA_ARG_JINJA",
       E,
       "whether to use jinja template engine for chat (default: enabled)\n--no-jinja renders with llama.cpp's "
       "built-in formats: the template must then be a built-in name (--chat-template NAME)",
       [](P p, V v) { p.use_jinja = v == "1"; }});
  add({{"--chat-template"},
       {},
       "JINJA_TEMPLATE",
       "LLAMA_ARG_CHAT_TEMPLATE",
       E,
       "set custom jinja chat template (default: template taken from model's metadata)\nif suffix/prefix are "
       "specified, template will be disabled\nonly commonly used templates are accepted (unless --jinja is set "
       "before this flag):\nlist of built-in templates:\n" +
           builtin_names_text(),
       [](P p, V v) { p.chat_template = v; }});
  add({{"--chat-template-file"},
       {},
       "JINJA_TEMPLATE_FILE",
       "LLAMA_ARG_CHAT_TEMPLATE_FILE",
       E,
       "set custom jinja chat template file (default: template taken from model's metadata)",
       [](P p, V v) { p.chat_template = read_text_file(v); }});
  add({{"--chat-template-kwargs"},
       {},
       "STRING",
       "LLAMA_ARG_CHAT_TEMPLATE_KWARGS",
       E,
       "sets additional params for the json template parser, must be a valid json object string, e.g. "
       "'{\"key1\":\"value1\",\"key2\":\"value2\"}'",
       [](P p, V v) { p.chat_template_kwargs = v; }});
  add({{"--reasoning-format"},
       {},
       "FORMAT",
       "LLAMA_ARG_THINK",
       E,
       "controls whether thought tags are allowed and/or extracted from the response; one of: none, deepseek, "
       "deepseek-legacy, auto\n(default: auto; the terminal shows the raw reply either way)",
       [](P p, V v) {
         if (v != "none" && v != "deepseek" && v != "deepseek-legacy" && v != "auto") {
           throw Error("unknown reasoning format '" + v + "' (none, deepseek, deepseek-legacy, auto)");
         }
         p.reasoning_format = v;
       }});
  add({{"--reasoning-budget"},
       {},
       "N",
       "LLAMA_ARG_THINK_BUDGET",
       E,
       "token budget for thinking: -1 for unrestricted, 0 for immediate end, N>0 for token budget (default: -1)",
       [](P p, V v) {
         const int32_t x = to_int(v);
         if (x < -1) throw Error("invalid value");
         p.reasoning_budget = x;
       }});
  add({{"--reasoning-budget-message"},
       {},
       "MESSAGE",
       "LLAMA_ARG_THINK_BUDGET_MESSAGE",
       E,
       "message injected before the end-of-thinking tag when reasoning budget is exhausted (default: none)",
       [](P p, V v) { p.reasoning_budget_message = v; }});
  add({{"-rea", "--reasoning"},
       {},
       "[on|off|auto]",
       "LLAMA_ARG_REASONING",
       E,
       "Use reasoning/thinking in the chat ('on', 'off', or 'auto', default: 'auto' (detect from template))\n"
       "on / off set the template's enable_thinking (a later --chat-template-kwargs replaces it)",
       [](P p, V v) {
         // llama.cpp writes enable_thinking into its default template kwargs; auto writes nothing.
         if (is_autoy(v)) return;
         if (!is_truthy(v) && !is_falsey(v)) throw Error("unknown value '" + v + "' (on, off or auto)");
         nlohmann::ordered_json kw = nlohmann::ordered_json::object();
         if (!p.chat_template_kwargs.empty()) {
           kw = nlohmann::ordered_json::parse(p.chat_template_kwargs, nullptr, false);
           if (!kw.is_object()) throw Error("--chat-template-kwargs must be a JSON object");
         }
         kw["enable_thinking"] = is_truthy(v);
         p.chat_template_kwargs = kw.dump();
       }});
  return t;
}

// llama.cpp flags Strix knows of and does not implement: refused by name rather
// than reported as unknown.
const char* const kNotImplemented[] = {"-i",
                                       "--interactive",
                                       "-if",
                                       "--interactive-first",
                                       "-mli",
                                       "--multiline-input",
                                       "--in-prefix-bos",
                                       "-sp",
                                       "--special",
                                       "--lora",
                                       "--lora-scaled",
                                       "--control-vector",
                                       "-mm",
                                       "--mmproj",
                                       "--image",
                                       "-md",
                                       "--model-draft",
                                       "--prompt-cache",
                                       "--override-kv",
                                       "-ot",
                                       "--override-tensor",
                                       "--rope-scaling",
                                       "--rope-freq-base",
                                       "--rope-freq-scale",
                                       "--rope-scale",
                                       "-np",
                                       "--parallel",
                                       "-sysf",
                                       "--system-prompt-file",
                                       "-bf",
                                       "--binary-file",
                                       "-dev",
                                       "--device",
                                       "--numa",
                                       "-lm",
                                       "--load-mode",
                                       "-mu",
                                       "--model-url",
                                       "-sm",
                                       "--split-mode",
                                       "-ts",
                                       "--tensor-split",
                                       "-mg",
                                       "--main-gpu",
                                       "--n-probs",
                                       "-v",
                                       "--verbose",
                                       "-lv",
                                       "--verbosity",
                                       "-ptc",
                                       "--print-token-count"};

struct Lookup {
  const Option* opt;
  bool positive;
};

}  // namespace

const std::vector<Option>& options() {
  static const std::vector<Option> table = build_table();
  return table;
}

std::string process_escapes(const std::string& in) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '\\' || i + 1 >= in.size()) {
      out += in[i];
      continue;
    }
    const char c = in[++i];
    switch (c) {
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case '\'':
        out += '\'';
        break;
      case '"':
        out += '"';
        break;
      case '\\':
        out += '\\';
        break;
      case 'x':
        if (i + 2 < in.size() && std::isxdigit(static_cast<unsigned char>(in[i + 1])) &&
            std::isxdigit(static_cast<unsigned char>(in[i + 2]))) {
          out += static_cast<char>(std::strtol(in.substr(i + 1, 2).c_str(), nullptr, 16));
          i += 2;
        } else {
          out += "\\x";
        }
        break;
      default:
        out += '\\';
        out += c;
        break;
    }
  }
  return out;
}

void parse_args(int argc, char** argv, CliParams& p) {
  std::unordered_map<std::string, Lookup> by_name;
  for (const Option& o : options()) {
    for (const auto& n : o.names) by_name[n] = {&o, true};
    for (const auto& n : o.neg_names) by_name[n] = {&o, false};
  }
  auto run = [&](const Option& o, const std::string& shown, const std::string& value) {
    try {
      o.handler(p, value);
    } catch (const Refusal&) {
      throw;
    } catch (const std::exception& e) {
      throw Error("error while handling " + shown + ": " + e.what());
    }
  };
  // Environment first (LLAMA_ARG_*), so the command line wins.
  for (const Option& o : options()) {
    if (o.env == nullptr) continue;
    const char* v = std::getenv(o.env);
    if (v == nullptr) continue;
    const std::string shown = std::string("environment variable ") + o.env;
    if (o.value_hint != nullptr) {
      run(o, shown, v);
    } else {
      run(o, shown, is_truthy(v) ? "1" : "0");
    }
  }
  bool breakers_cleared = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    // llama.cpp: "--foo_bar" is "--foo-bar"
    if (arg.rfind("--", 0) == 0) std::replace(arg.begin(), arg.end(), '_', '-');
    const auto it = by_name.find(arg);
    if (it == by_name.end()) {
      for (const char* n : kNotImplemented) {
        if (arg == n) throw Refusal("the llama.cpp flag " + arg + " is not implemented in Strix");
      }
      throw Error("invalid argument: " + arg + " (strix run -h lists the flags)");
    }
    const Option& o = *it->second.opt;
    if (o.value_hint == nullptr) {
      run(o, arg, it->second.positive ? "1" : "0");
      continue;
    }
    if (i + 1 >= argc) throw Error("expected value for argument " + arg);
    const std::string value = argv[++i];
    if (o.names.front() == "--dry-sequence-breaker" && !breakers_cleared) {
      p.sampling.dry_sequence_breakers.clear();
      breakers_cleared = true;
    }
    run(o, arg, value);
  }
  if (p.escape) {
    p.prompt = process_escapes(p.prompt);
    p.input_prefix = process_escapes(p.input_prefix);
    p.input_suffix = process_escapes(p.input_suffix);
    for (auto& a : p.antiprompt) a = process_escapes(a);
    for (auto& b : p.sampling.dry_sequence_breakers) b = process_escapes(b);
  }
}

namespace {

// llama.cpp's break_str_into_lines: words, at most `width` characters a line;
// explicit newlines start new lines.
std::vector<std::string> wrap(const std::string& text, size_t width) {
  std::vector<std::string> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string w, cur;
    while (words >> w) {
      if (!cur.empty() && cur.size() + 1 + w.size() > width) {
        out.push_back(cur);
        cur.clear();
      }
      cur += (cur.empty() ? "" : " ") + w;
    }
    out.push_back(cur);
  }
  return out;
}

std::string option_text(const Option& o) {
  constexpr size_t kLead = 40;
  std::string s;
  std::vector<std::string> all = o.names;
  all.insert(all.end(), o.neg_names.begin(), o.neg_names.end());
  for (size_t i = 0; i < all.size(); ++i) {
    if (i == 0 && all.size() > 1) {
      std::string first = all[0] + ", ";
      s += first + std::string(first.size() < 7 ? 7 - first.size() : 0, ' ');
    } else {
      s += all[i] + (i + 1 < all.size() ? ", " : "");
    }
  }
  if (o.value_hint != nullptr) s += std::string(" ") + o.value_hint;
  if (s.size() > kLead - 3) {
    s += "\n" + std::string(kLead, ' ');
  } else {
    s += std::string(kLead - s.size(), ' ');
  }
  std::string help = o.help;
  if (o.env != nullptr) help += std::string("\n(env: ") + o.env + ")";
  const auto lines = wrap(help, 70);
  for (size_t i = 0; i < lines.size(); ++i) s += (i == 0 ? "" : std::string(kLead, ' ')) + lines[i] + "\n";
  return s;
}

}  // namespace

std::string usage_text() {
  std::string out;
  const std::pair<Section, const char*> sections[] = {{Section::kCommon, "common params"},
                                                      {Section::kSampling, "sampling params"},
                                                      {Section::kExample, "example-specific params"}};
  bool first = true;
  for (const auto& [sec, title] : sections) {
    out += std::string(first ? "" : "\n\n") + "----- " + title + " -----\n\n";
    first = false;
    for (const Option& o : options()) {
      if (o.section == sec) out += option_text(o);
    }
  }
  return out;
}

}  // namespace strix::cli
