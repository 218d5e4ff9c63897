// The reference libllama (llama.cpp build "v0.5.0" from the pinned npm package
// @node-llama-cpp/linux-x64@3.22.1), loaded with dlopen and driven through OUR
// OWN declarations of the subset of its C API we use. Nothing of llama.cpp is
// linked or included; tests, `strix parity` and `strix bench --compare` use this
// to run libllama on the same file and token ids as Strix.
//
// Usage:
//
//   #include "ref/libllama.h"
//   using namespace strix::ref;
//
//   LlamaModel vocab(path, {.vocab_only = true});       // tokenizer only, no weights
//   std::vector<int32_t> ids = vocab.tokenize("Once upon a time", /*add_special=*/true,
//                                              /*parse_special=*/false);
//   std::string text = vocab.detokenize(ids, /*remove_special=*/true, /*unparse_special=*/false);
//
//   LlamaModel model(path);                              // full load (CPU)
//   LlamaContext ctx(model, {.n_ctx = 256, .n_batch = 64, .n_threads = 2});
//   // one ragged batch: tokens, their positions and sequence ids; every token gets logits
//   ctx.decode(ids, positions, seq_ids);
//   std::span<const float> row = ctx.logits(i);          // [n_vocab] for batch index i
//   ctx.clear();                                         // empty the KV cache
//
//   LlamaSampler greedy = LlamaSampler::greedy();
//   int32_t next = greedy.sample(ctx, -1);               // -1: the last output of the batch
//   LlamaSampler chain;                                  // top_k -> top_p -> temp -> dist
//   chain.top_k(40).top_p(0.95f).temp(0.8f).dist(1234);
//
//   quantize_model(in_path, out_path, "Q8_0", /*nthreads=*/2);
//
// Every failure throws strix::Error naming what went wrong: a missing library or
// symbol, a load that libllama refused, a decode error. Never a skip.
//
// ABI safety: the parameter structs below are declared by us and their layout was
// measured on the pinned binary (objdump of *_default_params and a run-time probe).
// LibLlama::get() re-checks it on every start: it calls each *_default_params into
// an oversized sentinel-filled buffer, checks how many bytes were written and the
// default values at every offset we rely on, and throws before any other call if
// they differ. Parameters are only ever obtained from *_default_params and then a
// few named fields are set.
//
// libllama's logging is silenced unless STRIX_REF_VERBOSE=1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ref/reference.h"

namespace strix::ref {

// ---------------------------------------------------------------------------
// Our declarations of the C ABI (llama.h of the pinned build). Offsets are in
// the comments; sizes are static_asserted in libllama.cpp and re-measured at
// run time.
namespace llama_abi {

struct Model;    // opaque llama_model
struct Context;  // opaque llama_context
struct Vocab;    // opaque llama_vocab
struct Sampler;  // opaque llama_sampler
struct Memory;   // opaque llama_memory_i

// llama_model_params, 80 bytes. The pinned build has `load_mode` + `lazy_mode`
// where older headers had use_mmap/use_mlock/use_direct_io booleans.
struct ModelParams {
  void* devices;                      // 0x00
  const void* tensor_buft_overrides;  // 0x08
  int32_t n_gpu_layers;               // 0x10  default -1
  int32_t split_mode;                 // 0x14  default 1 (LAYER)
  int32_t load_mode;                  // 0x18  default -1 (AUTO); 0 NONE, 1 MMAP, 2 MLOCK, 3 MMAP_MLOCK, 4 DIRECT_IO
  int32_t lazy_mode;                  // 0x1c  default 1
  int32_t main_gpu;                   // 0x20  default 0
  const float* tensor_split;          // 0x28
  void* progress_callback;            // 0x30
  void* progress_callback_user_data;  // 0x38
  const void* kv_overrides;           // 0x40
  bool vocab_only;                    // 0x48
  bool check_tensors;                 // 0x49
  bool use_extra_bufts;               // 0x4a  default true
  bool no_host;                       // 0x4b
  bool no_alloc;                      // 0x4c
  bool load_mtp;                      // 0x4d
};

// llama_context_params, 160 bytes.
struct ContextParams {
  uint32_t n_ctx;                  // 0x00  default 512
  uint32_t n_batch;                // 0x04  default 2048
  uint32_t n_ubatch;               // 0x08  default 512
  uint32_t n_seq_max;              // 0x0c  default 1
  uint32_t n_rs_seq;               // 0x10
  uint32_t n_outputs_max;          // 0x14  0 = n_batch
  uint32_t n_outputs_max_per_seq;  // 0x18  default 1
  int32_t n_threads;               // 0x1c  default 4
  int32_t n_threads_batch;         // 0x20  default 4
  int32_t ctx_type;                // 0x24  0 DEFAULT
  int32_t rope_scaling_type;       // 0x28  -1
  int32_t pooling_type;            // 0x2c  -1
  int32_t attention_type;          // 0x30  -1
  int32_t flash_attn_type;         // 0x34  -1 AUTO, 0 off, 1 on
  float rope_freq_base;            // 0x38
  float rope_freq_scale;           // 0x3c
  float yarn_ext_factor;           // 0x40  -1
  float yarn_attn_factor;          // 0x44  -1
  float yarn_beta_fast;            // 0x48  -1
  float yarn_beta_slow;            // 0x4c  -1
  uint32_t yarn_orig_ctx;          // 0x50
  float defrag_thold;              // 0x54  -1
  void* cb_eval;                   // 0x58
  void* cb_eval_user_data;         // 0x60
  int32_t type_k;                  // 0x68  1 (F16)
  int32_t type_v;                  // 0x6c  1 (F16)
  void* abort_callback;            // 0x70
  void* abort_callback_data;       // 0x78
  bool embeddings;                 // 0x80
  bool offload_kqv;                // 0x81  true
  bool no_perf;                    // 0x82  true
  bool op_offload;                 // 0x83  true
  bool swa_full;                   // 0x84  true
  bool kv_unified;                 // 0x85
  void* samplers;                  // 0x88  backend sampler configs (unused: null)
  size_t n_samplers;               // 0x90
  Context* ctx_other;              // 0x98
};

// llama_batch, 56 bytes. We build it ourselves over our own vectors.
struct Batch {
  int32_t n_tokens;
  int32_t* token;
  float* embd;
  int32_t* pos;
  int32_t* n_seq_id;
  int32_t** seq_id;
  int8_t* logits;  // non-zero: output logits for this token
};

// llama_sampler_chain_params, 1 byte (returned in a register).
struct SamplerChainParams {
  bool no_perf;
};

// llama_model_quantize_params, 64 bytes.
struct QuantizeParams {
  int32_t nthread;               // 0x00  <= 0: hardware_concurrency
  int32_t ftype;                 // 0x04  llama_ftype, default 7 (Q8_0)
  int32_t output_tensor_type;    // 0x08  ggml_type, default GGML_TYPE_COUNT (= unset)
  int32_t token_embedding_type;  // 0x0c  same
  bool allow_requantize;         // 0x10
  bool quantize_output_tensor;   // 0x11  default true
  bool only_copy;                // 0x12
  bool pure;                     // 0x13
  bool keep_split;               // 0x14
  bool dry_run;                  // 0x15
  const void* imatrix;           // 0x18
  const void* kv_overrides;      // 0x20
  const void* tt_overrides;      // 0x28
  const int32_t* prune_layers;   // 0x30
  int32_t tail_0x38;             // 0x38  newer than any public header we found; default 0, left as is
  int32_t tail_0x3c;             // 0x3c  default 2, left as is
};

// llama_token_data / llama_token_data_array (used with llama_sampler_apply).
struct TokenData {
  int32_t id;
  float logit;
  float p;
};
struct TokenDataArray {
  TokenData* data;
  size_t size;
  int64_t selected;  // index into data
  bool sorted;
};
// llama_logit_bias, 8 bytes (llama_sampler_init_logit_bias takes an array of them).
// llama_chat_message, 16 bytes: {role, content}, both NUL-terminated.
struct ChatMessage {
  const char* role;
  const char* content;
};

struct LogitBias {
  int32_t token;
  float bias;
};

using LogCallback = void (*)(int level, const char* text, void* user_data);

// Throw Error unless the given defaults (as a *_default_params of the library
// returned them) hold the pinned build's default at every declared field. Used by
// LibLlama's start-up self-check; public so a test can show that a shifted
// layout is caught.
void check_model_defaults(const ModelParams& params);
void check_context_defaults(const ContextParams& params);
void check_quantize_defaults(const QuantizeParams& params);

}  // namespace llama_abi

// ---------------------------------------------------------------------------
// The loaded libraries and function pointers. Loading order: libggml.v0.5.0.so
// (backend registry), libllama.v0.5.0.so, then the CPU backend
// (libggml-cpu-<arch>.so chosen by libggml for this CPU's features).
class LibLlama {
 public:
  // The process-wide instance; the first call loads, self-checks and may throw.
  static const LibLlama& get();

  const SharedLib& llama() const { return llama_; }
  const SharedLib& ggml() const { return ggml_; }

  // Defaults, taken from the library through the checked probe.
  llama_abi::ModelParams model_default_params() const;
  llama_abi::ContextParams context_default_params() const;
  llama_abi::QuantizeParams quantize_default_params() const;

  // Name of a llama_ftype in this build ("Q8_0", "Q4_K - Medium", ...), or
  // nullptr when the build does not know it.
  const char* ftype_name(int32_t ftype) const;

  using ModelP = llama_abi::Model*;
  using CModelP = const llama_abi::Model*;
  using ContextP = llama_abi::Context*;
  using VocabP = const llama_abi::Vocab*;
  using SamplerP = llama_abi::Sampler*;

  // logging (ggml_log_callback); null restores libllama's default (stderr)
  void (*log_set)(llama_abi::LogCallback callback, void* user_data);
  // Re-applies the default policy: silent unless STRIX_REF_VERBOSE=1.
  void restore_log() const;

  // backend / model
  void (*backend_init)();
  ModelP (*model_load_from_file)(const char* path, llama_abi::ModelParams params);
  void (*model_free)(ModelP model);
  VocabP (*model_get_vocab)(CModelP model);
  int32_t (*model_n_embd)(CModelP model);
  int32_t (*model_n_layer)(CModelP model);
  int32_t (*model_n_head)(CModelP model);
  int32_t (*model_n_head_kv)(CModelP model);
  int32_t (*model_n_ctx_train)(CModelP model);
  uint64_t (*model_n_params)(CModelP model);
  int32_t (*model_desc)(CModelP model, char* buf, size_t buf_size);
  int32_t (*model_meta_val_str)(CModelP model, const char* key, char* buf, size_t buf_size);
  uint32_t (*model_quantize)(const char* fname_inp, const char* fname_out, const llama_abi::QuantizeParams* params);

  // vocab
  int32_t (*vocab_n_tokens)(VocabP vocab);
  int32_t (*vocab_type)(VocabP vocab);
  int32_t (*vocab_bos)(VocabP vocab);
  int32_t (*vocab_eos)(VocabP vocab);
  bool (*vocab_get_add_bos)(VocabP vocab);
  bool (*vocab_is_eog)(VocabP vocab, int32_t token);
  int32_t (*tokenize)(VocabP vocab, const char* text, int32_t text_len, int32_t* tokens, int32_t n_tokens_max,
                      bool add_special, bool parse_special);
  int32_t (*token_to_piece)(VocabP vocab, int32_t token, char* buf, int32_t length, int32_t lstrip, bool special);
  int32_t (*detokenize)(VocabP vocab, const int32_t* tokens, int32_t n_tokens, char* text, int32_t text_len_max,
                        bool remove_special, bool unparse_special);

  // context
  ContextP (*init_from_model)(ModelP model, llama_abi::ContextParams params);
  void (*free_context)(ContextP ctx);
  uint32_t (*n_ctx)(const llama_abi::Context* ctx);
  uint32_t (*n_batch)(const llama_abi::Context* ctx);
  uint32_t (*n_ubatch)(const llama_abi::Context* ctx);
  uint32_t (*n_seq_max)(const llama_abi::Context* ctx);
  int32_t (*decode)(ContextP ctx, llama_abi::Batch batch);
  float* (*get_logits_ith)(ContextP ctx, int32_t i);
  llama_abi::Memory* (*get_memory)(const llama_abi::Context* ctx);
  void (*memory_clear)(llama_abi::Memory* mem, bool data);
  bool (*memory_seq_rm)(llama_abi::Memory* mem, int32_t seq_id, int32_t p0, int32_t p1);
  void (*memory_seq_add)(llama_abi::Memory* mem, int32_t seq_id, int32_t p0, int32_t p1, int32_t delta);
  void (*synchronize)(ContextP ctx);

  // samplers
  llama_abi::SamplerChainParams (*sampler_chain_default_params)();
  SamplerP (*sampler_chain_init)(llama_abi::SamplerChainParams params);
  void (*sampler_chain_add)(SamplerP chain, SamplerP smpl);
  SamplerP (*sampler_init_greedy)();
  SamplerP (*sampler_init_dist)(uint32_t seed);
  SamplerP (*sampler_init_top_k)(int32_t k);
  SamplerP (*sampler_init_top_p)(float p, size_t min_keep);
  SamplerP (*sampler_init_min_p)(float p, size_t min_keep);
  SamplerP (*sampler_init_temp)(float t);
  // The pinned build takes n_vocab first (5 arguments; older headers had 4).
  SamplerP (*sampler_init_penalties)(int32_t n_vocab, int32_t penalty_last_n, float penalty_repeat, float penalty_freq,
                                     float penalty_present);
  // The remaining initialisers, argument registers checked against the pinned
  // binary's disassembly (x86-64 SysV: integer/pointer and float arguments are
  // counted separately, so only the order within each class matters there).
  SamplerP (*sampler_init_typical)(float p, size_t min_keep);
  SamplerP (*sampler_init_temp_ext)(float t, float delta, float exponent);
  SamplerP (*sampler_init_xtc)(float p, float t, size_t min_keep, uint32_t seed);
  SamplerP (*sampler_init_top_n_sigma)(float n);
  SamplerP (*sampler_init_mirostat)(int32_t n_vocab, uint32_t seed, float tau, float eta, int32_t m);
  SamplerP (*sampler_init_mirostat_v2)(uint32_t seed, float tau, float eta);
  // The pinned build's DRY has no n_ctx_train argument (7 arguments; public
  // headers had 8): penalty_last_n must already be resolved (> 0, -1 is not
  // mapped to the context size here) or the stage is a no-op.
  SamplerP (*sampler_init_dry)(VocabP vocab, float dry_multiplier, float dry_base, int32_t dry_allowed_length,
                               int32_t dry_penalty_last_n, const char** seq_breakers, size_t num_breakers);
  SamplerP (*sampler_init_logit_bias)(int32_t n_vocab, int32_t n_logit_bias, const llama_abi::LogitBias* logit_bias);
  // Returns null when the grammar does not parse.
  SamplerP (*sampler_init_grammar)(VocabP vocab, const char* grammar_str, const char* grammar_root);
  SamplerP (*sampler_init_grammar_lazy_patterns)(VocabP vocab, const char* grammar_str, const char* grammar_root,
                                                 const char** trigger_patterns, size_t num_trigger_patterns,
                                                 const int32_t* trigger_tokens, size_t num_trigger_tokens);
  SamplerP (*sampler_init_infill)(VocabP vocab);
  SamplerP (*sampler_init_adaptive_p)(float target, float decay, uint32_t seed);
  // Built-in chat formats: the names (sorted; returns how many exist, fills at
  // most len), and rendering by name or by Jinja source (libllama's heuristic
  // detection); returns the full length, or < 0 for an unknown format.
  int32_t (*chat_builtin_templates)(const char** output, size_t len);
  int32_t (*chat_apply_template)(const char* tmpl, const llama_abi::ChatMessage* chat, size_t n_msg, bool add_ass,
                                 char* buf, int32_t length);
  // tokenizer.ggml.suppress_tokens as libllama loaded it (n: how many).
  const int32_t* (*vocab_get_suppress_tokens)(VocabP vocab, int32_t* n);
  // The seed a (dist, xtc, mirostat, chain) sampler drew; LLAMA_DEFAULT_SEED for others.
  uint32_t (*sampler_get_seed)(const llama_abi::Sampler* smpl);
  const char* (*sampler_name)(const llama_abi::Sampler* smpl);
  int (*sampler_chain_n)(const llama_abi::Sampler* chain);
  // Stage i of a chain (null when out of range; i = -1: the chain itself).
  SamplerP (*sampler_chain_get)(SamplerP chain, int32_t i);
  int32_t (*sampler_sample)(SamplerP smpl, ContextP ctx, int32_t idx);
  void (*sampler_accept)(SamplerP smpl, int32_t token);
  void (*sampler_apply)(SamplerP smpl, llama_abi::TokenDataArray* cur_p);
  void (*sampler_reset)(SamplerP smpl);
  void (*sampler_free)(SamplerP smpl);

 private:
  LibLlama();
  void self_check() const;

  SharedLib ggml_;
  SharedLib llama_;
  using RawDefaultsFn = void* (*)(void* out);  // the hidden-pointer return ABI, made explicit
  RawDefaultsFn raw_model_defaults_ = nullptr;
  RawDefaultsFn raw_context_defaults_ = nullptr;
  RawDefaultsFn raw_quantize_defaults_ = nullptr;
  const char* (*ftype_name_)(int32_t ftype) = nullptr;
};

// ---------------------------------------------------------------------------
// A model loaded by libllama (CPU only, n_gpu_layers = 0).
class LlamaModel {
 public:
  struct Options {
    bool vocab_only = false;  // tokenizer only, no tensors
    bool use_mmap = true;
  };
  explicit LlamaModel(const std::string& path, const Options& options);
  explicit LlamaModel(const std::string& path) : LlamaModel(path, Options{}) {}
  ~LlamaModel();
  LlamaModel(const LlamaModel&) = delete;
  LlamaModel& operator=(const LlamaModel&) = delete;

  int32_t n_vocab() const;
  int32_t n_embd() const;
  int32_t n_layer() const;
  int32_t n_head() const;
  int32_t n_head_kv() const;
  int32_t n_ctx_train() const;
  uint64_t n_params() const;
  int32_t bos() const;  // -1 when the vocabulary has none
  int32_t eos() const;
  bool add_bos() const;
  bool is_eog(int32_t token) const;
  // llama_vocab_get_suppress_tokens (tokenizer.ggml.suppress_tokens).
  std::vector<int32_t> suppress_tokens() const;
  std::string desc() const;                                       // e.g. "llama ?B all F32"
  std::optional<std::string> meta(const std::string& key) const;  // scalar GGUF metadata as text

  std::vector<int32_t> tokenize(std::string_view text, bool add_special, bool parse_special) const;
  std::string token_to_piece(int32_t token, bool special) const;
  std::string detokenize(std::span<const int32_t> tokens, bool remove_special, bool unparse_special) const;

  llama_abi::Model* raw() const { return model_; }
  const llama_abi::Vocab* vocab() const { return vocab_; }
  const std::string& path() const { return path_; }

 private:
  const LibLlama& lib_;
  llama_abi::Model* model_ = nullptr;
  const llama_abi::Vocab* vocab_ = nullptr;
  std::string path_;
};

// ---------------------------------------------------------------------------
// A libllama context (KV cache + compute) on a loaded model.
class LlamaContext {
 public:
  struct Options {
    uint32_t n_ctx = 512;
    uint32_t n_batch = 512;   // most tokens one decode() may take
    uint32_t n_ubatch = 512;  // physical micro-batch
    uint32_t n_seq_max = 1;   // distinct sequence ids in use
    int32_t n_threads = 1;    // used for both generation and batch
    int32_t flash_attn = 0;   // -1 auto, 0 off, 1 on (off: the plain attention path)
  };
  LlamaContext(const LlamaModel& model, const Options& options);
  ~LlamaContext();
  LlamaContext(const LlamaContext&) = delete;
  LlamaContext& operator=(const LlamaContext&) = delete;

  // Decodes one batch. tokens/positions/seq_ids have one entry per token;
  // want_logits is empty (all tokens get logits) or one flag per token. Throws
  // Error on a size mismatch or when llama_decode fails.
  void decode(std::span<const int32_t> tokens, std::span<const int32_t> positions, std::span<const int32_t> seq_ids,
              std::span<const uint8_t> want_logits = {});
  // Convenience: one sequence, positions pos0.., logits for every token.
  void decode_seq(std::span<const int32_t> tokens, int32_t pos0, int32_t seq_id = 0);

  // Logits of batch index i of the last decode (negative counts from the end):
  // [n_vocab], owned by libllama and valid until the next decode/clear. Throws
  // Error when that token had no output.
  std::span<const float> logits(int32_t i) const;

  void clear();                                                   // empties the KV cache
  void remove(int32_t seq_id, int32_t p0 = -1, int32_t p1 = -1);  // drops positions [p0, p1) of a sequence
  // llama_memory_seq_add: positions [p0, p1) of a sequence move by delta (keys re-rotated at the next decode)
  void shift(int32_t seq_id, int32_t p0, int32_t p1, int32_t delta);

  uint32_t n_ctx() const;
  uint32_t n_batch() const;
  int32_t n_vocab() const { return n_vocab_; }
  llama_abi::Context* raw() const { return ctx_; }

 private:
  const LibLlama& lib_;
  llama_abi::Context* ctx_ = nullptr;
  int32_t n_vocab_ = 0;
};

// ---------------------------------------------------------------------------
// A libllama sampler chain. Stages are applied in the order they are added.
class LlamaSampler {
 public:
  LlamaSampler();  // an empty chain
  ~LlamaSampler();
  LlamaSampler(LlamaSampler&& other) noexcept;
  LlamaSampler& operator=(LlamaSampler&& other) noexcept;
  LlamaSampler(const LlamaSampler&) = delete;
  LlamaSampler& operator=(const LlamaSampler&) = delete;

  static LlamaSampler greedy();  // a chain holding just greedy

  LlamaSampler& greedy_stage();
  LlamaSampler& dist(uint32_t seed);
  LlamaSampler& top_k(int32_t k);
  LlamaSampler& top_p(float p, size_t min_keep = 1);
  LlamaSampler& min_p(float p, size_t min_keep = 1);
  LlamaSampler& temp(float t);
  LlamaSampler& penalties(int32_t n_vocab, int32_t last_n, float repeat, float freq, float present);
  LlamaSampler& typical(float p, size_t min_keep = 1);
  LlamaSampler& temp_ext(float t, float delta, float exponent);
  LlamaSampler& xtc(float p, float t, size_t min_keep, uint32_t seed);
  LlamaSampler& top_n_sigma(float n);
  LlamaSampler& mirostat(int32_t n_vocab, uint32_t seed, float tau, float eta, int32_t m = 100);
  LlamaSampler& mirostat_v2(uint32_t seed, float tau, float eta);
  // breakers: sequence-breaker strings, tokenized by libllama with the model's
  // vocab. model may be null only when the parameters disable DRY.
  LlamaSampler& dry(const LlamaModel* model, float multiplier, float base, int32_t allowed_length,
                    int32_t penalty_last_n, const std::vector<std::string>& breakers);
  LlamaSampler& logit_bias(int32_t n_vocab, std::span<const llama_abi::LogitBias> biases);
  // Throws Error when libllama does not parse the grammar (it returns null).
  LlamaSampler& grammar(const LlamaModel& model, const std::string& gbnf, const std::string& root = "root");
  LlamaSampler& grammar_lazy(const LlamaModel& model, const std::string& gbnf, const std::string& root,
                             const std::vector<std::string>& trigger_patterns, std::span<const int32_t> trigger_tokens);
  LlamaSampler& infill(const LlamaModel& model);
  LlamaSampler& adaptive_p(float target, float decay, uint32_t seed);

  // The seed the chain reports (that of its last seeded stage; llama_sampler_get_seed).
  uint32_t seed() const;
  int32_t n_stages() const;
  // common_sampler_print: "logits -> name -> name ... " (llama_sampler_name of each stage).
  std::string describe() const;
  // Runs the chain on a candidates array the caller owns (llama_sampler_apply):
  // for tests that look at what the stages left, not only the selected token.
  void apply(llama_abi::TokenDataArray& cur) const;
  llama_abi::Sampler* raw() const { return chain_; }

  // Samples from the context's logits of batch index idx (-1: last output).
  // libllama accepts the sampled token into the chain itself.
  int32_t sample(const LlamaContext& ctx, int32_t idx) const;
  // Samples from given logits [n_vocab] (token ids 0..n-1) without a context.
  // Does not accept the token; call accept() to feed it to stateful stages.
  int32_t sample_logits(std::span<const float> logits) const;
  void accept(int32_t token) const;
  void reset() const;

 private:
  void add(llama_abi::Sampler* stage, const char* what);
  const LibLlama* lib_;
  llama_abi::Sampler* chain_ = nullptr;
};

// ---------------------------------------------------------------------------
// Collects libllama's log while alive (e.g. to read back what it reports about
// the parameters it received); restores the default policy afterwards. The log
// callback is process-wide: use one at a time, not across threads.
class LlamaLogCapture {
 public:
  LlamaLogCapture();
  ~LlamaLogCapture();
  LlamaLogCapture(const LlamaLogCapture&) = delete;
  LlamaLogCapture& operator=(const LlamaLogCapture&) = delete;
  const std::string& text() const { return text_; }

 private:
  static void on_log(int level, const char* text, void* self);
  std::string text_;
};

// ---------------------------------------------------------------------------
// llama_model_quantize. ftype is a name as this build spells it in
// llama_ftype_name ("Q8_0", "Q4_0", "F16", "Q4_K - Medium") or the short form
// llama-quantize accepts ("Q4_K_M"); or a numeric id.
int32_t llama_ftype_from_name(const std::string& name);  // throws Error naming the unknown ftype
// llama_chat_builtin_templates: every built-in chat format name.
std::vector<std::string> chat_builtin_templates();
// llama_chat_apply_template over (role, content) pairs; nullopt when libllama
// does not know the format (it returns < 0).
std::optional<std::string> chat_apply_template(const std::string& tmpl,
                                               const std::vector<std::pair<std::string, std::string>>& messages,
                                               bool add_assistant);

// allow_requantize: an already quantized input is accepted (llama-quantize --allow-requantize).
void quantize_model(const std::string& in_path, const std::string& out_path, const std::string& ftype, int32_t nthreads,
                    bool allow_requantize = false);
void quantize_model(const std::string& in_path, const std::string& out_path, int32_t ftype, int32_t nthreads,
                    bool allow_requantize = false);

}  // namespace strix::ref
