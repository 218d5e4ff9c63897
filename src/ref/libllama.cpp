#include "ref/libllama.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <utility>

#include "core/error.h"

namespace strix::ref {

// Sizes measured on the pinned libllama.v0.5.0.so (objdump of the
// *_default_params functions: the last store ends at this offset, rounded up to
// the struct's 8-byte alignment). The run-time probe in self_check() measures
// them again.
static_assert(sizeof(llama_abi::ModelParams) == 80);
static_assert(offsetof(llama_abi::ModelParams, load_mode) == 0x18);
static_assert(offsetof(llama_abi::ModelParams, main_gpu) == 0x20);
static_assert(offsetof(llama_abi::ModelParams, kv_overrides) == 0x40);
static_assert(offsetof(llama_abi::ModelParams, vocab_only) == 0x48);
static_assert(offsetof(llama_abi::ModelParams, load_mtp) == 0x4d);
static_assert(sizeof(llama_abi::ContextParams) == 160);
static_assert(offsetof(llama_abi::ContextParams, n_threads) == 0x1c);
static_assert(offsetof(llama_abi::ContextParams, flash_attn_type) == 0x34);
static_assert(offsetof(llama_abi::ContextParams, type_k) == 0x68);
static_assert(offsetof(llama_abi::ContextParams, embeddings) == 0x80);
static_assert(offsetof(llama_abi::ContextParams, samplers) == 0x88);
static_assert(offsetof(llama_abi::ContextParams, ctx_other) == 0x98);
static_assert(sizeof(llama_abi::Batch) == 56);
static_assert(sizeof(llama_abi::SamplerChainParams) == 1);
static_assert(sizeof(llama_abi::QuantizeParams) == 64);
static_assert(offsetof(llama_abi::QuantizeParams, allow_requantize) == 0x10);
static_assert(offsetof(llama_abi::QuantizeParams, imatrix) == 0x18);
static_assert(offsetof(llama_abi::QuantizeParams, tail_0x3c) == 0x3c);
static_assert(sizeof(llama_abi::TokenData) == 12);
static_assert(sizeof(llama_abi::TokenDataArray) == 32);
static_assert(sizeof(llama_abi::LogitBias) == 8);

namespace {

constexpr const char* kLibGgml = "libggml.v0.5.0.so";
constexpr const char* kLibLlama = "libllama.v0.5.0.so";

void quiet_log(int /*level*/, const char* /*text*/, void* /*user_data*/) {}

bool verbose() {
  const char* v = std::getenv("STRIX_REF_VERBOSE");
  return v != nullptr && std::string(v) == "1";
}

// What a *_default_params function wrote: the bytes, and the extent of the
// writes rounded up to 8 (bytes never written keep the sentinel).
struct Probe {
  static constexpr size_t kCap = 4096;
  static constexpr uint8_t kSentinel = 0xA5;
  std::array<uint8_t, kCap> bytes{};
  size_t extent = 0;
};

Probe probe_defaults(void* (*fn)(void*), const char* name) {
  Probe p;
  p.bytes.fill(Probe::kSentinel);
  void* ret = fn(p.bytes.data());
  if (ret != p.bytes.data()) {
    throw Error(std::string("libllama ABI self-check: ") + name +
                " did not return its struct through the hidden pointer (x86-64 SysV); not the expected build");
  }
  size_t last = 0;
  for (size_t i = 0; i < Probe::kCap; ++i) {
    if (p.bytes[i] != Probe::kSentinel) last = i + 1;
  }
  p.extent = (last + 7) / 8 * 8;
  return p;
}

[[noreturn]] void abi_mismatch(const std::string& what) {
  throw Error("libllama ABI self-check failed: " + what +
              "; the loaded library does not match the declarations in src/ref/libllama.h (expected the "
              "pinned @node-llama-cpp/linux-x64@3.22.1, llama.cpp build v0.5.0). Refusing to call into it.");
}

template <typename T>
std::string describe(T v) {
  if constexpr (std::is_pointer_v<T>) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%p", static_cast<const void*>(v));
    return buf;
  } else if constexpr (std::is_same_v<T, bool>) {
    return v ? "true" : "false";
  } else {
    return std::to_string(v);
  }
}

template <typename T>
void expect_field(const char* fn, const char* field, T got, T want) {
  if (!(got == want)) {
    abi_mismatch(std::string(fn) + "()." + field + " is " + describe(got) + ", expected " + describe(want));
  }
}

template <typename T>
T from_probe(const Probe& p) {
  T out;
  std::memcpy(&out, p.bytes.data(), sizeof(T));
  return out;
}

}  // namespace

namespace llama_abi {

// The defaults of the pinned build at every offset we rely on (objdump of the
// *_default_params functions). A shifted or resized field lands another value here.
void check_model_defaults(const ModelParams& m) {
  const char* fn = "llama_model_default_params";
  expect_field(fn, "devices", m.devices, static_cast<void*>(nullptr));
  expect_field(fn, "tensor_buft_overrides", m.tensor_buft_overrides, static_cast<const void*>(nullptr));
  expect_field(fn, "n_gpu_layers", m.n_gpu_layers, -1);
  expect_field(fn, "split_mode", m.split_mode, 1);
  expect_field(fn, "load_mode", m.load_mode, -1);
  expect_field(fn, "lazy_mode", m.lazy_mode, 1);
  expect_field(fn, "main_gpu", m.main_gpu, 0);
  expect_field(fn, "tensor_split", m.tensor_split, static_cast<const float*>(nullptr));
  expect_field(fn, "progress_callback", m.progress_callback, static_cast<void*>(nullptr));
  expect_field(fn, "kv_overrides", m.kv_overrides, static_cast<const void*>(nullptr));
  expect_field(fn, "vocab_only", m.vocab_only, false);
  expect_field(fn, "check_tensors", m.check_tensors, false);
  expect_field(fn, "use_extra_bufts", m.use_extra_bufts, true);
  expect_field(fn, "no_host", m.no_host, false);
  expect_field(fn, "no_alloc", m.no_alloc, false);
  expect_field(fn, "load_mtp", m.load_mtp, false);
}

void check_context_defaults(const ContextParams& c) {
  const char* fn = "llama_context_default_params";
  expect_field(fn, "n_ctx", c.n_ctx, 512u);
  expect_field(fn, "n_batch", c.n_batch, 2048u);
  expect_field(fn, "n_ubatch", c.n_ubatch, 512u);
  expect_field(fn, "n_seq_max", c.n_seq_max, 1u);
  expect_field(fn, "n_rs_seq", c.n_rs_seq, 0u);
  expect_field(fn, "n_outputs_max", c.n_outputs_max, 0u);
  expect_field(fn, "n_outputs_max_per_seq", c.n_outputs_max_per_seq, 1u);
  expect_field(fn, "n_threads", c.n_threads, 4);
  expect_field(fn, "n_threads_batch", c.n_threads_batch, 4);
  expect_field(fn, "ctx_type", c.ctx_type, 0);
  expect_field(fn, "rope_scaling_type", c.rope_scaling_type, -1);
  expect_field(fn, "pooling_type", c.pooling_type, -1);
  expect_field(fn, "attention_type", c.attention_type, -1);
  expect_field(fn, "flash_attn_type", c.flash_attn_type, -1);
  expect_field(fn, "rope_freq_base", c.rope_freq_base, 0.0f);
  expect_field(fn, "yarn_ext_factor", c.yarn_ext_factor, -1.0f);
  expect_field(fn, "yarn_beta_slow", c.yarn_beta_slow, -1.0f);
  expect_field(fn, "yarn_orig_ctx", c.yarn_orig_ctx, 0u);
  expect_field(fn, "defrag_thold", c.defrag_thold, -1.0f);
  expect_field(fn, "cb_eval", c.cb_eval, static_cast<void*>(nullptr));
  expect_field(fn, "type_k", c.type_k, 1);
  expect_field(fn, "type_v", c.type_v, 1);
  expect_field(fn, "abort_callback", c.abort_callback, static_cast<void*>(nullptr));
  expect_field(fn, "embeddings", c.embeddings, false);
  expect_field(fn, "offload_kqv", c.offload_kqv, true);
  expect_field(fn, "no_perf", c.no_perf, true);
  expect_field(fn, "op_offload", c.op_offload, true);
  expect_field(fn, "swa_full", c.swa_full, true);
  expect_field(fn, "kv_unified", c.kv_unified, false);
  expect_field(fn, "samplers", c.samplers, static_cast<void*>(nullptr));
  expect_field(fn, "n_samplers", c.n_samplers, size_t{0});
  expect_field(fn, "ctx_other", c.ctx_other, static_cast<Context*>(nullptr));
}

void check_quantize_defaults(const QuantizeParams& q) {
  const char* fn = "llama_model_quantize_default_params";
  expect_field(fn, "nthread", q.nthread, 0);
  expect_field(fn, "ftype", q.ftype, 7);
  expect_field(fn, "output_tensor_type", q.output_tensor_type, q.token_embedding_type);  // both "unset"
  expect_field(fn, "allow_requantize", q.allow_requantize, false);
  expect_field(fn, "quantize_output_tensor", q.quantize_output_tensor, true);
  expect_field(fn, "only_copy", q.only_copy, false);
  expect_field(fn, "pure", q.pure, false);
  expect_field(fn, "dry_run", q.dry_run, false);
  expect_field(fn, "imatrix", q.imatrix, static_cast<const void*>(nullptr));
  expect_field(fn, "kv_overrides", q.kv_overrides, static_cast<const void*>(nullptr));
  expect_field(fn, "tt_overrides", q.tt_overrides, static_cast<const void*>(nullptr));
  expect_field(fn, "prune_layers", q.prune_layers, static_cast<const int32_t*>(nullptr));
  expect_field(fn, "tail_0x38", q.tail_0x38, 0);
  expect_field(fn, "tail_0x3c", q.tail_0x3c, 2);
}

}  // namespace llama_abi

// ---------------------------------------------------------------------------
// LibLlama

const LibLlama& LibLlama::get() {
  static const LibLlama instance;
  return instance;
}

LibLlama::LibLlama() : ggml_(reference_dir() + "/" + kLibGgml), llama_(reference_dir() + "/" + kLibLlama) {
  const SharedLib& L = llama_;
  raw_model_defaults_ = L.fn<RawDefaultsFn>("llama_model_default_params");
  raw_context_defaults_ = L.fn<RawDefaultsFn>("llama_context_default_params");
  raw_quantize_defaults_ = L.fn<RawDefaultsFn>("llama_model_quantize_default_params");
  ftype_name_ = L.fn<decltype(ftype_name_)>("llama_ftype_name");

  backend_init = L.fn<decltype(backend_init)>("llama_backend_init");
  model_load_from_file = L.fn<decltype(model_load_from_file)>("llama_model_load_from_file");
  model_free = L.fn<decltype(model_free)>("llama_model_free");
  model_get_vocab = L.fn<decltype(model_get_vocab)>("llama_model_get_vocab");
  model_n_embd = L.fn<decltype(model_n_embd)>("llama_model_n_embd");
  model_n_layer = L.fn<decltype(model_n_layer)>("llama_model_n_layer");
  model_n_head = L.fn<decltype(model_n_head)>("llama_model_n_head");
  model_n_head_kv = L.fn<decltype(model_n_head_kv)>("llama_model_n_head_kv");
  model_n_ctx_train = L.fn<decltype(model_n_ctx_train)>("llama_model_n_ctx_train");
  model_n_params = L.fn<decltype(model_n_params)>("llama_model_n_params");
  model_desc = L.fn<decltype(model_desc)>("llama_model_desc");
  model_meta_val_str = L.fn<decltype(model_meta_val_str)>("llama_model_meta_val_str");
  model_quantize = L.fn<decltype(model_quantize)>("llama_model_quantize");

  vocab_n_tokens = L.fn<decltype(vocab_n_tokens)>("llama_vocab_n_tokens");
  vocab_type = L.fn<decltype(vocab_type)>("llama_vocab_type");
  vocab_bos = L.fn<decltype(vocab_bos)>("llama_vocab_bos");
  vocab_eos = L.fn<decltype(vocab_eos)>("llama_vocab_eos");
  vocab_get_add_bos = L.fn<decltype(vocab_get_add_bos)>("llama_vocab_get_add_bos");
  vocab_is_eog = L.fn<decltype(vocab_is_eog)>("llama_vocab_is_eog");
  tokenize = L.fn<decltype(tokenize)>("llama_tokenize");
  token_to_piece = L.fn<decltype(token_to_piece)>("llama_token_to_piece");
  detokenize = L.fn<decltype(detokenize)>("llama_detokenize");

  init_from_model = L.fn<decltype(init_from_model)>("llama_init_from_model");
  free_context = L.fn<decltype(free_context)>("llama_free");
  n_ctx = L.fn<decltype(n_ctx)>("llama_n_ctx");
  n_batch = L.fn<decltype(n_batch)>("llama_n_batch");
  n_ubatch = L.fn<decltype(n_ubatch)>("llama_n_ubatch");
  n_seq_max = L.fn<decltype(n_seq_max)>("llama_n_seq_max");
  decode = L.fn<decltype(decode)>("llama_decode");
  get_logits_ith = L.fn<decltype(get_logits_ith)>("llama_get_logits_ith");
  get_memory = L.fn<decltype(get_memory)>("llama_get_memory");
  memory_clear = L.fn<decltype(memory_clear)>("llama_memory_clear");
  memory_seq_rm = L.fn<decltype(memory_seq_rm)>("llama_memory_seq_rm");
  memory_seq_add = L.fn<decltype(memory_seq_add)>("llama_memory_seq_add");
  synchronize = L.fn<decltype(synchronize)>("llama_synchronize");

  sampler_chain_default_params = L.fn<decltype(sampler_chain_default_params)>("llama_sampler_chain_default_params");
  sampler_chain_init = L.fn<decltype(sampler_chain_init)>("llama_sampler_chain_init");
  sampler_chain_add = L.fn<decltype(sampler_chain_add)>("llama_sampler_chain_add");
  sampler_init_greedy = L.fn<decltype(sampler_init_greedy)>("llama_sampler_init_greedy");
  sampler_init_dist = L.fn<decltype(sampler_init_dist)>("llama_sampler_init_dist");
  sampler_init_top_k = L.fn<decltype(sampler_init_top_k)>("llama_sampler_init_top_k");
  sampler_init_top_p = L.fn<decltype(sampler_init_top_p)>("llama_sampler_init_top_p");
  sampler_init_min_p = L.fn<decltype(sampler_init_min_p)>("llama_sampler_init_min_p");
  sampler_init_temp = L.fn<decltype(sampler_init_temp)>("llama_sampler_init_temp");
  sampler_init_penalties = L.fn<decltype(sampler_init_penalties)>("llama_sampler_init_penalties");
  sampler_init_typical = L.fn<decltype(sampler_init_typical)>("llama_sampler_init_typical");
  sampler_init_temp_ext = L.fn<decltype(sampler_init_temp_ext)>("llama_sampler_init_temp_ext");
  sampler_init_xtc = L.fn<decltype(sampler_init_xtc)>("llama_sampler_init_xtc");
  sampler_init_top_n_sigma = L.fn<decltype(sampler_init_top_n_sigma)>("llama_sampler_init_top_n_sigma");
  sampler_init_mirostat = L.fn<decltype(sampler_init_mirostat)>("llama_sampler_init_mirostat");
  sampler_init_mirostat_v2 = L.fn<decltype(sampler_init_mirostat_v2)>("llama_sampler_init_mirostat_v2");
  sampler_init_dry = L.fn<decltype(sampler_init_dry)>("llama_sampler_init_dry");
  sampler_init_logit_bias = L.fn<decltype(sampler_init_logit_bias)>("llama_sampler_init_logit_bias");
  sampler_init_grammar = L.fn<decltype(sampler_init_grammar)>("llama_sampler_init_grammar");
  sampler_init_grammar_lazy_patterns =
      L.fn<decltype(sampler_init_grammar_lazy_patterns)>("llama_sampler_init_grammar_lazy_patterns");
  sampler_init_infill = L.fn<decltype(sampler_init_infill)>("llama_sampler_init_infill");
  sampler_init_adaptive_p = L.fn<decltype(sampler_init_adaptive_p)>("llama_sampler_init_adaptive_p");
  chat_builtin_templates = L.fn<decltype(chat_builtin_templates)>("llama_chat_builtin_templates");
  chat_apply_template = L.fn<decltype(chat_apply_template)>("llama_chat_apply_template");
  vocab_get_suppress_tokens = L.fn<decltype(vocab_get_suppress_tokens)>("llama_vocab_get_suppress_tokens");
  sampler_get_seed = L.fn<decltype(sampler_get_seed)>("llama_sampler_get_seed");
  sampler_name = L.fn<decltype(sampler_name)>("llama_sampler_name");
  sampler_chain_n = L.fn<decltype(sampler_chain_n)>("llama_sampler_chain_n");
  sampler_chain_get = L.fn<decltype(sampler_chain_get)>("llama_sampler_chain_get");
  sampler_sample = L.fn<decltype(sampler_sample)>("llama_sampler_sample");
  sampler_accept = L.fn<decltype(sampler_accept)>("llama_sampler_accept");
  sampler_apply = L.fn<decltype(sampler_apply)>("llama_sampler_apply");
  sampler_reset = L.fn<decltype(sampler_reset)>("llama_sampler_reset");
  sampler_free = L.fn<decltype(sampler_free)>("llama_sampler_free");

  // Every signature is resolved; check the struct layouts before the first real call.
  self_check();

  // llama_log_set also routes libggml's logger (backend loading, graph warnings).
  log_set = L.fn<decltype(log_set)>("llama_log_set");
  restore_log();
  backend_init();

  // The CPU backend is a separate libggml-cpu-<arch>.so; libggml scores the
  // variants against this CPU's features and registers the best one, unless
  // reference_cpu_variant() names one.
  const std::string dir = reference_dir();
  const std::string variant = reference_cpu_variant();
  if (variant.empty()) {
    ggml_.fn<void (*)(const char*)>("ggml_backend_load_all_from_path")(dir.c_str());
  } else {
    const std::string path = dir + "/libggml-cpu-" + variant + ".so";
    if (ggml_.fn<void* (*)(const char*)>("ggml_backend_load")(path.c_str()) == nullptr) {
      throw Error("the reference libggml could not load " + path +
                  " (STRIX_REF_CPU_VARIANT names a libggml-cpu build this CPU runs; \"best\" for libggml's pick)");
    }
  }
  const size_t n_dev = ggml_.fn<size_t (*)()>("ggml_backend_dev_count")();
  if (n_dev == 0) {
    throw Error("the reference libggml registered no backend device after loading from " + dir +
                ": no libggml-cpu-*.so there loads on this CPU");
  }
}

void LibLlama::self_check() const {
  {
    const Probe p = probe_defaults(raw_model_defaults_, "llama_model_default_params");
    expect_field("llama_model_default_params", "sizeof", p.extent, sizeof(llama_abi::ModelParams));
    llama_abi::check_model_defaults(from_probe<llama_abi::ModelParams>(p));
  }
  {
    const Probe p = probe_defaults(raw_context_defaults_, "llama_context_default_params");
    expect_field("llama_context_default_params", "sizeof", p.extent, sizeof(llama_abi::ContextParams));
    llama_abi::check_context_defaults(from_probe<llama_abi::ContextParams>(p));
  }
  {
    const Probe p = probe_defaults(raw_quantize_defaults_, "llama_model_quantize_default_params");
    expect_field("llama_model_quantize_default_params", "sizeof", p.extent, sizeof(llama_abi::QuantizeParams));
    llama_abi::check_quantize_defaults(from_probe<llama_abi::QuantizeParams>(p));
  }
  // llama_batch: llama_batch_get_one returns one through the hidden pointer.
  {
    int32_t token = 7;
    Probe p;
    p.bytes.fill(Probe::kSentinel);
    using GetOne = void* (*)(void* out, int32_t* tokens, int32_t n_tokens);
    llama_.fn<GetOne>("llama_batch_get_one")(p.bytes.data(), &token, 1);
    size_t last = 0;
    for (size_t i = 0; i < Probe::kCap; ++i) {
      if (p.bytes[i] != Probe::kSentinel) last = i + 1;
    }
    expect_field("llama_batch_get_one", "sizeof", (last + 7) / 8 * 8, sizeof(llama_abi::Batch));
    const auto b = from_probe<llama_abi::Batch>(p);
    expect_field("llama_batch_get_one", "n_tokens", b.n_tokens, 1);
    expect_field("llama_batch_get_one", "token", b.token, &token);
    expect_field("llama_batch_get_one", "logits", b.logits, static_cast<int8_t*>(nullptr));
  }
  // llama_sampler_chain_params and the load-mode enum values we set.
  expect_field("llama_sampler_chain_default_params", "no_perf", sampler_chain_default_params().no_perf, true);
  using ModeName = const char* (*)(int32_t);
  const auto mode_name = llama_.fn<ModeName>("llama_load_mode_name");
  const auto name_is = [&](int32_t mode, const char* want) {
    const char* got = mode_name(mode);
    if (got == nullptr || std::strcmp(got, want) != 0) {
      abi_mismatch(std::string("llama_load_mode_name(") + std::to_string(mode) + ") is \"" + (got ? got : "(null)") +
                   "\", expected \"" + want + "\"");
    }
  };
  name_is(0, "none");
  name_is(1, "mmap");
}

void LibLlama::restore_log() const { log_set(verbose() ? nullptr : &quiet_log, nullptr); }

llama_abi::ModelParams LibLlama::model_default_params() const {
  return from_probe<llama_abi::ModelParams>(probe_defaults(raw_model_defaults_, "llama_model_default_params"));
}

llama_abi::ContextParams LibLlama::context_default_params() const {
  return from_probe<llama_abi::ContextParams>(probe_defaults(raw_context_defaults_, "llama_context_default_params"));
}

llama_abi::QuantizeParams LibLlama::quantize_default_params() const {
  return from_probe<llama_abi::QuantizeParams>(
      probe_defaults(raw_quantize_defaults_, "llama_model_quantize_default_params"));
}

const char* LibLlama::ftype_name(int32_t ftype) const {
  const char* name = ftype_name_(ftype);
  // The build answers "unknown, may not work" (or "(guessed) ...") for ids it lacks.
  if (name == nullptr || std::strstr(name, "unknown") != nullptr) return nullptr;
  return name;
}

// ---------------------------------------------------------------------------
// LlamaModel

LlamaModel::LlamaModel(const std::string& path, const Options& options) : lib_(LibLlama::get()), path_(path) {
  llama_abi::ModelParams params = lib_.model_default_params();
  params.n_gpu_layers = 0;
  params.vocab_only = options.vocab_only;
  params.load_mode = options.use_mmap ? 1 /* MMAP */ : 0 /* NONE */;
  model_ = lib_.model_load_from_file(path.c_str(), params);
  if (model_ == nullptr) {
    throw Error("libllama could not load " + path + (options.vocab_only ? " (vocab only)" : "") +
                " (set STRIX_REF_VERBOSE=1 for its log)");
  }
  vocab_ = lib_.model_get_vocab(model_);
}

LlamaModel::~LlamaModel() {
  if (model_ != nullptr) lib_.model_free(model_);
}

int32_t LlamaModel::n_vocab() const { return lib_.vocab_n_tokens(vocab_); }
int32_t LlamaModel::n_embd() const { return lib_.model_n_embd(model_); }
int32_t LlamaModel::n_layer() const { return lib_.model_n_layer(model_); }
int32_t LlamaModel::n_head() const { return lib_.model_n_head(model_); }
int32_t LlamaModel::n_head_kv() const { return lib_.model_n_head_kv(model_); }
int32_t LlamaModel::n_ctx_train() const { return lib_.model_n_ctx_train(model_); }
uint64_t LlamaModel::n_params() const { return lib_.model_n_params(model_); }
int32_t LlamaModel::bos() const { return lib_.vocab_bos(vocab_); }
int32_t LlamaModel::eos() const { return lib_.vocab_eos(vocab_); }
bool LlamaModel::add_bos() const { return lib_.vocab_get_add_bos(vocab_); }
bool LlamaModel::is_eog(int32_t token) const { return lib_.vocab_is_eog(vocab_, token); }

std::vector<int32_t> LlamaModel::suppress_tokens() const {
  int32_t n = 0;
  const int32_t* ids = lib_.vocab_get_suppress_tokens(vocab_, &n);
  if (ids == nullptr || n <= 0) return {};
  return std::vector<int32_t>(ids, ids + n);
}

std::string LlamaModel::desc() const {
  std::array<char, 256> buf{};
  const int32_t n = lib_.model_desc(model_, buf.data(), buf.size());
  if (n < 0) return {};
  return std::string(buf.data(), std::min<size_t>(static_cast<size_t>(n), buf.size() - 1));
}

std::optional<std::string> LlamaModel::meta(const std::string& key) const {
  std::vector<char> buf(256);
  int32_t n = lib_.model_meta_val_str(model_, key.c_str(), buf.data(), buf.size());
  if (n < 0) return std::nullopt;
  if (static_cast<size_t>(n) >= buf.size()) {
    buf.resize(static_cast<size_t>(n) + 1);
    n = lib_.model_meta_val_str(model_, key.c_str(), buf.data(), buf.size());
    if (n < 0) return std::nullopt;
  }
  return std::string(buf.data(), static_cast<size_t>(n));
}

std::vector<int32_t> LlamaModel::tokenize(std::string_view text, bool add_special, bool parse_special) const {
  if (text.size() > static_cast<size_t>(INT32_MAX / 2)) throw Error("text too long for llama_tokenize");
  const auto len = static_cast<int32_t>(text.size());
  std::vector<int32_t> out(text.size() + 8);
  int32_t n =
      lib_.tokenize(vocab_, text.data(), len, out.data(), static_cast<int32_t>(out.size()), add_special, parse_special);
  if (n < 0) {
    if (n == INT32_MIN) throw Error("llama_tokenize overflowed int32 on a text of " + std::to_string(len) + " bytes");
    out.resize(static_cast<size_t>(-n));
    n = lib_.tokenize(vocab_, text.data(), len, out.data(), static_cast<int32_t>(out.size()), add_special,
                      parse_special);
    if (n < 0) throw Error("llama_tokenize failed twice (" + std::to_string(n) + ")");
  }
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string LlamaModel::token_to_piece(int32_t token, bool special) const {
  std::vector<char> buf(64);
  int32_t n = lib_.token_to_piece(vocab_, token, buf.data(), static_cast<int32_t>(buf.size()), 0, special);
  if (n < 0) {
    buf.resize(static_cast<size_t>(-n));
    n = lib_.token_to_piece(vocab_, token, buf.data(), static_cast<int32_t>(buf.size()), 0, special);
    if (n < 0) throw Error("llama_token_to_piece failed for token " + std::to_string(token));
  }
  return std::string(buf.data(), static_cast<size_t>(n));
}

std::string LlamaModel::detokenize(std::span<const int32_t> tokens, bool remove_special, bool unparse_special) const {
  if (tokens.size() > static_cast<size_t>(INT32_MAX / 64)) throw Error("too many tokens for llama_detokenize");
  const auto n_tok = static_cast<int32_t>(tokens.size());
  std::vector<char> buf(tokens.size() * 8 + 16);
  int32_t n = lib_.detokenize(vocab_, tokens.data(), n_tok, buf.data(), static_cast<int32_t>(buf.size()),
                              remove_special, unparse_special);
  if (n < 0) {
    buf.resize(static_cast<size_t>(-n));
    n = lib_.detokenize(vocab_, tokens.data(), n_tok, buf.data(), static_cast<int32_t>(buf.size()), remove_special,
                        unparse_special);
    if (n < 0) throw Error("llama_detokenize failed twice (" + std::to_string(n) + ")");
  }
  return std::string(buf.data(), static_cast<size_t>(n));
}

// ---------------------------------------------------------------------------
// LlamaContext

LlamaContext::LlamaContext(const LlamaModel& model, const Options& options) : lib_(LibLlama::get()) {
  if (options.n_ctx == 0 || options.n_batch == 0 || options.n_ubatch == 0 || options.n_seq_max == 0 ||
      options.n_threads <= 0) {
    throw Error("LlamaContext: n_ctx, n_batch, n_ubatch, n_seq_max and n_threads must be positive");
  }
  llama_abi::ContextParams params = lib_.context_default_params();
  params.n_ctx = options.n_ctx;
  params.n_batch = options.n_batch;
  params.n_ubatch = std::min(options.n_ubatch, options.n_batch);
  params.n_seq_max = options.n_seq_max;
  params.n_threads = options.n_threads;
  params.n_threads_batch = options.n_threads;
  params.flash_attn_type = options.flash_attn;
  // Every token of a batch may ask for logits; not only one per sequence.
  params.n_outputs_max = options.n_batch;
  params.n_outputs_max_per_seq = options.n_batch;
  ctx_ = lib_.init_from_model(model.raw(), params);
  if (ctx_ == nullptr) {
    throw Error("libllama could not create a context on " + model.path() + " (n_ctx " + std::to_string(options.n_ctx) +
                ", n_batch " + std::to_string(options.n_batch) + "; set STRIX_REF_VERBOSE=1 for its log)");
  }
  n_vocab_ = model.n_vocab();
}

LlamaContext::~LlamaContext() {
  if (ctx_ != nullptr) lib_.free_context(ctx_);
}

void LlamaContext::decode(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                          std::span<const int32_t> seq_ids, std::span<const uint8_t> want_logits) {
  const size_t n = tokens.size();
  if (n == 0) throw Error("LlamaContext::decode: empty batch");
  if (positions.size() != n || seq_ids.size() != n || (!want_logits.empty() && want_logits.size() != n)) {
    throw Error("LlamaContext::decode: tokens (" + std::to_string(n) + "), positions (" +
                std::to_string(positions.size()) + "), seq_ids (" + std::to_string(seq_ids.size()) +
                ") and want_logits (" + std::to_string(want_logits.size()) + ") differ in length");
  }
  if (n > lib_.n_batch(ctx_)) {
    throw Error("LlamaContext::decode: " + std::to_string(n) + " tokens exceed n_batch " +
                std::to_string(lib_.n_batch(ctx_)));
  }
  // Our own storage for the batch; libllama only reads it during the call.
  std::vector<int32_t> tok(tokens.begin(), tokens.end());
  std::vector<int32_t> pos(positions.begin(), positions.end());
  std::vector<int32_t> seq(seq_ids.begin(), seq_ids.end());
  std::vector<int32_t> n_seq(n, 1);
  std::vector<int32_t*> seq_ptr(n);
  std::vector<int8_t> out(n, 1);
  for (size_t i = 0; i < n; ++i) {
    seq_ptr[i] = &seq[i];
    if (!want_logits.empty()) out[i] = want_logits[i] ? 1 : 0;
  }
  llama_abi::Batch batch{};
  batch.n_tokens = static_cast<int32_t>(n);
  batch.token = tok.data();
  batch.embd = nullptr;
  batch.pos = pos.data();
  batch.n_seq_id = n_seq.data();
  batch.seq_id = seq_ptr.data();
  batch.logits = out.data();
  const int32_t rc = lib_.decode(ctx_, batch);
  if (rc != 0) {
    const char* why = rc == 1    ? "no KV slot for the batch (context full)"
                      : rc == 2  ? "aborted"
                      : rc == -1 ? "invalid batch"
                                 : "compute error";
    throw Error("llama_decode failed (" + std::to_string(rc) + "): " + why);
  }
}

void LlamaContext::decode_seq(std::span<const int32_t> tokens, int32_t pos0, int32_t seq_id) {
  std::vector<int32_t> pos(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) pos[i] = pos0 + static_cast<int32_t>(i);
  const std::vector<int32_t> seq(tokens.size(), seq_id);
  decode(tokens, pos, seq);
}

std::span<const float> LlamaContext::logits(int32_t i) const {
  const float* row = lib_.get_logits_ith(ctx_, i);
  if (row == nullptr) {
    throw Error("libllama has no logits for batch index " + std::to_string(i) +
                " (out of range, or that token was decoded without want_logits)");
  }
  return {row, static_cast<size_t>(n_vocab_)};
}

void LlamaContext::clear() { lib_.memory_clear(lib_.get_memory(ctx_), true); }

void LlamaContext::remove(int32_t seq_id, int32_t p0, int32_t p1) {
  if (!lib_.memory_seq_rm(lib_.get_memory(ctx_), seq_id, p0, p1)) {
    throw Error("llama_memory_seq_rm refused to remove [" + std::to_string(p0) + ", " + std::to_string(p1) +
                ") of sequence " + std::to_string(seq_id));
  }
}

void LlamaContext::shift(int32_t seq_id, int32_t p0, int32_t p1, int32_t delta) {
  lib_.memory_seq_add(lib_.get_memory(ctx_), seq_id, p0, p1, delta);
}

uint32_t LlamaContext::n_ctx() const { return lib_.n_ctx(ctx_); }
uint32_t LlamaContext::n_batch() const { return lib_.n_batch(ctx_); }

// ---------------------------------------------------------------------------
// LlamaSampler

LlamaSampler::LlamaSampler() : lib_(&LibLlama::get()) {
  chain_ = lib_->sampler_chain_init(lib_->sampler_chain_default_params());
  if (chain_ == nullptr) throw Error("llama_sampler_chain_init returned null");
}

LlamaSampler::~LlamaSampler() {
  if (chain_ != nullptr) lib_->sampler_free(chain_);
}

LlamaSampler::LlamaSampler(LlamaSampler&& other) noexcept
    : lib_(other.lib_), chain_(std::exchange(other.chain_, nullptr)) {}

LlamaSampler& LlamaSampler::operator=(LlamaSampler&& other) noexcept {
  if (this != &other) {
    if (chain_ != nullptr) lib_->sampler_free(chain_);
    lib_ = other.lib_;
    chain_ = std::exchange(other.chain_, nullptr);
  }
  return *this;
}

LlamaSampler LlamaSampler::greedy() {
  LlamaSampler s;
  s.greedy_stage();
  return s;
}

void LlamaSampler::add(llama_abi::Sampler* stage, const char* what) {
  if (chain_ == nullptr) throw Error("LlamaSampler used after move");
  if (stage == nullptr) throw Error(std::string("libllama returned no sampler for ") + what);
  lib_->sampler_chain_add(chain_, stage);  // the chain owns the stage from here on
}

LlamaSampler& LlamaSampler::greedy_stage() {
  add(lib_->sampler_init_greedy(), "greedy");
  return *this;
}
LlamaSampler& LlamaSampler::dist(uint32_t seed) {
  add(lib_->sampler_init_dist(seed), "dist");
  return *this;
}
LlamaSampler& LlamaSampler::top_k(int32_t k) {
  add(lib_->sampler_init_top_k(k), "top_k");
  return *this;
}
LlamaSampler& LlamaSampler::top_p(float p, size_t min_keep) {
  add(lib_->sampler_init_top_p(p, min_keep), "top_p");
  return *this;
}
LlamaSampler& LlamaSampler::min_p(float p, size_t min_keep) {
  add(lib_->sampler_init_min_p(p, min_keep), "min_p");
  return *this;
}
LlamaSampler& LlamaSampler::temp(float t) {
  add(lib_->sampler_init_temp(t), "temp");
  return *this;
}
LlamaSampler& LlamaSampler::penalties(int32_t n_vocab, int32_t last_n, float repeat, float freq, float present) {
  add(lib_->sampler_init_penalties(n_vocab, last_n, repeat, freq, present), "penalties");
  return *this;
}

LlamaSampler& LlamaSampler::typical(float p, size_t min_keep) {
  add(lib_->sampler_init_typical(p, min_keep), "typical");
  return *this;
}
LlamaSampler& LlamaSampler::temp_ext(float t, float delta, float exponent) {
  add(lib_->sampler_init_temp_ext(t, delta, exponent), "temp_ext");
  return *this;
}
LlamaSampler& LlamaSampler::xtc(float p, float t, size_t min_keep, uint32_t seed) {
  add(lib_->sampler_init_xtc(p, t, min_keep, seed), "xtc");
  return *this;
}
LlamaSampler& LlamaSampler::top_n_sigma(float n) {
  add(lib_->sampler_init_top_n_sigma(n), "top_n_sigma");
  return *this;
}
LlamaSampler& LlamaSampler::mirostat(int32_t n_vocab, uint32_t seed, float tau, float eta, int32_t m) {
  add(lib_->sampler_init_mirostat(n_vocab, seed, tau, eta, m), "mirostat");
  return *this;
}
LlamaSampler& LlamaSampler::mirostat_v2(uint32_t seed, float tau, float eta) {
  add(lib_->sampler_init_mirostat_v2(seed, tau, eta), "mirostat_v2");
  return *this;
}
LlamaSampler& LlamaSampler::dry(const LlamaModel* model, float multiplier, float base, int32_t allowed_length,
                                int32_t penalty_last_n, const std::vector<std::string>& breakers) {
  const bool enabled = multiplier != 0.0f && base >= 1.0f && penalty_last_n > 0;
  if (model == nullptr && enabled) throw Error("LlamaSampler::dry: an enabled DRY stage needs the model's vocab");
  std::vector<const char*> ptrs;
  ptrs.reserve(breakers.size());
  for (const std::string& b : breakers) ptrs.push_back(b.c_str());
  add(lib_->sampler_init_dry(model != nullptr ? model->vocab() : nullptr, multiplier, base, allowed_length,
                             penalty_last_n, ptrs.data(), ptrs.size()),
      "dry");
  return *this;
}
LlamaSampler& LlamaSampler::logit_bias(int32_t n_vocab, std::span<const llama_abi::LogitBias> biases) {
  add(lib_->sampler_init_logit_bias(n_vocab, static_cast<int32_t>(biases.size()), biases.data()), "logit_bias");
  return *this;
}
LlamaSampler& LlamaSampler::grammar(const LlamaModel& model, const std::string& gbnf, const std::string& root) {
  llama_abi::Sampler* g = lib_->sampler_init_grammar(model.vocab(), gbnf.c_str(), root.c_str());
  if (g == nullptr) throw Error("libllama could not parse the grammar (set STRIX_REF_VERBOSE=1 for its log)");
  add(g, "grammar");
  return *this;
}
LlamaSampler& LlamaSampler::grammar_lazy(const LlamaModel& model, const std::string& gbnf, const std::string& root,
                                         const std::vector<std::string>& trigger_patterns,
                                         std::span<const int32_t> trigger_tokens) {
  std::vector<const char*> ptrs;
  ptrs.reserve(trigger_patterns.size());
  for (const std::string& p : trigger_patterns) ptrs.push_back(p.c_str());
  llama_abi::Sampler* g =
      lib_->sampler_init_grammar_lazy_patterns(model.vocab(), gbnf.c_str(), root.c_str(), ptrs.data(), ptrs.size(),
                                               trigger_tokens.data(), trigger_tokens.size());
  if (g == nullptr) throw Error("libllama could not parse the lazy grammar (set STRIX_REF_VERBOSE=1 for its log)");
  add(g, "grammar_lazy");
  return *this;
}
LlamaSampler& LlamaSampler::infill(const LlamaModel& model) {
  add(lib_->sampler_init_infill(model.vocab()), "infill");
  return *this;
}
LlamaSampler& LlamaSampler::adaptive_p(float target, float decay, uint32_t seed) {
  add(lib_->sampler_init_adaptive_p(target, decay, seed), "adaptive_p");
  return *this;
}

uint32_t LlamaSampler::seed() const {
  if (chain_ == nullptr) throw Error("LlamaSampler used after move");
  return lib_->sampler_get_seed(chain_);
}

int32_t LlamaSampler::n_stages() const {
  if (chain_ == nullptr) throw Error("LlamaSampler used after move");
  return lib_->sampler_chain_n(chain_);
}

std::string LlamaSampler::describe() const {
  if (chain_ == nullptr) throw Error("LlamaSampler used after move");
  std::string out = "logits ";
  const int n = lib_->sampler_chain_n(chain_);
  for (int i = 0; i < n; ++i) out += std::string("-> ") + lib_->sampler_name(lib_->sampler_chain_get(chain_, i)) + " ";
  return out;
}

void LlamaSampler::apply(llama_abi::TokenDataArray& cur) const {
  if (chain_ == nullptr) throw Error("LlamaSampler used after move");
  lib_->sampler_apply(chain_, &cur);
}

int32_t LlamaSampler::sample(const LlamaContext& ctx, int32_t idx) const {
  if (chain_ == nullptr) throw Error("LlamaSampler used after move");
  (void)ctx.logits(idx);  // a clear Error instead of libllama aborting on a missing row
  return lib_->sampler_sample(chain_, ctx.raw(), idx);
}

int32_t LlamaSampler::sample_logits(std::span<const float> logits) const {
  if (chain_ == nullptr) throw Error("LlamaSampler used after move");
  std::vector<llama_abi::TokenData> cand(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) cand[i] = {static_cast<int32_t>(i), logits[i], 0.0f};
  llama_abi::TokenDataArray arr{cand.data(), cand.size(), -1, false};
  lib_->sampler_apply(chain_, &arr);
  if (arr.selected < 0 || static_cast<size_t>(arr.selected) >= arr.size) {
    throw Error("the libllama sampler chain selected no token (end the chain with greedy or dist)");
  }
  return arr.data[arr.selected].id;
}

void LlamaSampler::accept(int32_t token) const {
  if (chain_ != nullptr) lib_->sampler_accept(chain_, token);
}

void LlamaSampler::reset() const {
  if (chain_ != nullptr) lib_->sampler_reset(chain_);
}

// ---------------------------------------------------------------------------
// LlamaLogCapture

LlamaLogCapture::LlamaLogCapture() { LibLlama::get().log_set(&LlamaLogCapture::on_log, this); }

LlamaLogCapture::~LlamaLogCapture() { LibLlama::get().restore_log(); }

void LlamaLogCapture::on_log(int /*level*/, const char* text, void* self) {
  if (text != nullptr) static_cast<LlamaLogCapture*>(self)->text_ += text;
}

// ---------------------------------------------------------------------------
// Quantization

namespace {

// "Q4_K - Medium" -> "Q4_K_M"; "IQ2_XXS - 2.0625 bpw" -> "IQ2_XXS"; "all F32" -> "F32".
std::string short_ftype_name(const std::string& full) {
  if (full.rfind("all ", 0) == 0) return full.substr(4);
  const size_t dash = full.find(" - ");
  if (dash == std::string::npos) return full;
  const std::string base = full.substr(0, dash);
  const std::string rest = full.substr(dash + 3);
  if (rest == "Small") return base + "_S";
  if (rest == "Medium") return base + "_M";
  if (rest == "Large") return base + "_L";
  return base;
}

}  // namespace

int32_t llama_ftype_from_name(const std::string& name) {
  const LibLlama& lib = LibLlama::get();
  if (!name.empty() && std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    const long id = std::strtol(name.c_str(), nullptr, 10);
    if (id < 0 || id > 1023 || lib.ftype_name(static_cast<int32_t>(id)) == nullptr) {
      throw Error("the reference libllama knows no llama_ftype " + name);
    }
    return static_cast<int32_t>(id);
  }
  // llama-quantize names that the descriptive names do not spell out.
  static const std::pair<const char*, int32_t> kAliases[] = {{"Q2_K", 10}, {"IQ3_M", 27}, {"MXFP4_MOE", 38}};
  for (const auto& [alias, id] : kAliases) {
    if (name == alias && lib.ftype_name(id) != nullptr) return id;
  }
  std::string known;
  // ftype ids are small; the build's llama_ftype_name is the table.
  for (int32_t id = 0; id < 128; ++id) {
    const char* full = lib.ftype_name(id);
    if (full == nullptr) continue;
    const std::string shrt = short_ftype_name(full);
    if (name == full || name == shrt) return id;
    known += (known.empty() ? "" : ", ") + shrt;
  }
  throw Error("the reference libllama knows no llama_ftype named \"" + name + "\" (known: " + known + ")");
}

void quantize_model(const std::string& in_path, const std::string& out_path, int32_t ftype, int32_t nthreads,
                    bool allow_requantize) {
  const LibLlama& lib = LibLlama::get();
  if (lib.ftype_name(ftype) == nullptr) {
    throw Error("the reference libllama knows no llama_ftype " + std::to_string(ftype));
  }
  llama_abi::QuantizeParams params = lib.quantize_default_params();
  params.ftype = ftype;
  params.nthread = nthreads;
  params.allow_requantize = allow_requantize;
  const uint32_t rc = lib.model_quantize(in_path.c_str(), out_path.c_str(), &params);
  if (rc != 0) {
    throw Error("llama_model_quantize of " + in_path + " to " + lib.ftype_name(ftype) + " failed (" +
                std::to_string(rc) + "; set STRIX_REF_VERBOSE=1 for its log)");
  }
}

void quantize_model(const std::string& in_path, const std::string& out_path, const std::string& ftype, int32_t nthreads,
                    bool allow_requantize) {
  quantize_model(in_path, out_path, llama_ftype_from_name(ftype), nthreads, allow_requantize);
}

std::vector<std::string> chat_builtin_templates() {
  const LibLlama& lib = LibLlama::get();
  const int32_t n = lib.chat_builtin_templates(nullptr, 0);
  std::vector<const char*> names(static_cast<size_t>(std::max(n, 0)));
  lib.chat_builtin_templates(names.data(), names.size());
  return std::vector<std::string>(names.begin(), names.end());
}

std::optional<std::string> chat_apply_template(const std::string& tmpl,
                                               const std::vector<std::pair<std::string, std::string>>& messages,
                                               bool add_assistant) {
  const LibLlama& lib = LibLlama::get();
  std::vector<llama_abi::ChatMessage> chat;
  for (const auto& [role, content] : messages) chat.push_back({role.c_str(), content.c_str()});
  // The first call may only measure: libllama returns the full length and
  // copies at most `length` bytes.
  std::string buf(256, '\0');
  for (int attempt = 0; attempt < 2; ++attempt) {
    const int32_t n = lib.chat_apply_template(tmpl.c_str(), chat.data(), chat.size(), add_assistant, buf.data(),
                                              static_cast<int32_t>(buf.size()));
    if (n < 0) return std::nullopt;
    if (static_cast<size_t>(n) <= buf.size()) {
      buf.resize(static_cast<size_t>(n));
      return buf;
    }
    buf.assign(static_cast<size_t>(n), '\0');
  }
  throw Error("llama_chat_apply_template asked for a larger buffer twice");
}

}  // namespace strix::ref
