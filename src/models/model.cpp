#include "models/model.h"

#include <cmath>
#include <string>

#include "backend/cpu/kernels.h"
#include "core/error.h"
#include "models/archs.h"

namespace strix {

ArchLoadFn find_arch_loader(const std::string& arch);

ModelLoader::ModelLoader(const GgufFile& file, std::string arch) : file_(file), arch_(std::move(arch)) {}

const GgufValue* ModelLoader::key(std::string_view suffix) {
  const std::string k = full(suffix);
  const GgufValue* v = file_.find(k);
  if (v) used_keys_.insert(k);
  return v;
}

bool ModelLoader::has(std::string_view suffix) const { return file_.find(full(suffix)) != nullptr; }

uint32_t ModelLoader::u32(std::string_view suffix) {
  const GgufValue* v = key(suffix);
  if (!v) throw Refusal(file_.splits()[0].path + ": missing key " + full(suffix));
  return u32_or(suffix, 0);
}

uint32_t ModelLoader::u32_or(std::string_view suffix, uint32_t def) {
  const GgufValue* v = key(suffix);
  if (!v) return def;
  if (v->is_array()) {
    // per-layer arrays whose entries are all equal are the scalar
    const auto items = v->as_i64_array();
    if (items.empty()) throw Error(file_.splits()[0].path + ": key " + full(suffix) + " is an empty array");
    for (int64_t x : items) {
      if (x != items[0]) {
        throw Refusal(file_.splits()[0].path + ": key " + full(suffix) +
                      " differs between layers, which Strix does not run yet");
      }
    }
    return static_cast<uint32_t>(items[0]);
  }
  const uint64_t x = v->as_u64();
  if (x > 0xffffffffull) throw Error(file_.splits()[0].path + ": key " + full(suffix) + " is out of range");
  return static_cast<uint32_t>(x);
}

std::vector<int32_t> ModelLoader::u32_array_or(std::string_view suffix, size_t n, uint32_t def) {
  const GgufValue* v = key(suffix);
  std::vector<int32_t> out(n, static_cast<int32_t>(def));
  if (!v) return out;
  if (!v->is_array()) {
    std::fill(out.begin(), out.end(), static_cast<int32_t>(v->as_u64()));
    return out;
  }
  const auto items = v->as_i64_array();
  if (items.size() != n) {
    throw Error(file_.splits()[0].path + ": key " + full(suffix) + " has " + std::to_string(items.size()) +
                " entries, expected " + std::to_string(n));
  }
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<int32_t>(items[i]);
  return out;
}

float ModelLoader::f32(std::string_view suffix) {
  const GgufValue* v = key(suffix);
  if (!v) throw Refusal(file_.splits()[0].path + ": missing key " + full(suffix));
  return static_cast<float>(v->as_f64());
}

float ModelLoader::f32_or(std::string_view suffix, float def) {
  const GgufValue* v = key(suffix);
  return v ? static_cast<float>(v->as_f64()) : def;
}

bool ModelLoader::bool_or(std::string_view suffix, bool def) {
  const GgufValue* v = key(suffix);
  return v ? v->as_bool() : def;
}

std::string ModelLoader::str_or(std::string_view suffix, const std::string& def) {
  const GgufValue* v = key(suffix);
  return v ? v->as_string() : def;
}

void ModelLoader::accept(std::string_view suffix) { key(suffix); }

void ModelLoader::refuse_unless(std::string_view suffix, double allowed, std::string_view what) {
  const GgufValue* v = key(suffix);
  if (!v) return;
  const double x = v->is_array() ? allowed : v->as_f64();
  if (v->is_array() || x != allowed) {
    throw Refusal(file_.splits()[0].path + ": key " + full(suffix) + " (" + std::string(what) +
                  ") is not implemented for " + arch_ + " yet");
  }
}

void ModelLoader::require_use(const Weight& w, WeightUse use) const {
  const std::string where = file_.splits()[0].path + ": tensor " + w.name;
  switch (use) {
    case WeightUse::kMatmul:
      if (cpu::cpu_kernels().vec_dot[static_cast<uint32_t>(w.type)] == nullptr) {
        throw Refusal(where + " has type " + type_name(static_cast<uint32_t>(w.type)) +
                      ", which has no CPU matmul kernel in Strix yet");
      }
      break;
    case WeightUse::kRows:
      if (type_traits(w.type).to_float == nullptr) {
        throw Refusal(where + " has type " + type_name(static_cast<uint32_t>(w.type)) +
                      ", which Strix cannot dequantize");
      }
      break;
    case WeightUse::kVector:
      if (w.type != GgmlType::F32) {
        throw Refusal(where + " has type " + type_name(static_cast<uint32_t>(w.type)) +
                      "; Strix reads this tensor only as F32");
      }
      break;
  }
}

Weight ModelLoader::optional(const std::string& name, std::initializer_list<int64_t> ne, WeightUse use) {
  const GgufTensor* t = file_.find_tensor(name);
  if (!t) return Weight{};
  int64_t want[4] = {1, 1, 1, 1};
  int i = 0;
  for (int64_t d : ne) want[i++] = d;
  for (int d = 0; d < 4; ++d) {
    if (t->ne[d] != want[d]) {
      throw Error(file_.splits()[0].path + ": tensor " + name + " has shape [" + std::to_string(t->ne[0]) + ", " +
                  std::to_string(t->ne[1]) + ", " + std::to_string(t->ne[2]) + ", " + std::to_string(t->ne[3]) +
                  "], expected [" + std::to_string(want[0]) + ", " + std::to_string(want[1]) + ", " +
                  std::to_string(want[2]) + ", " + std::to_string(want[3]) + "]");
    }
  }
  const TypeTraits* tt = type_traits(t->type);
  if (!tt)
    throw Refusal(file_.splits()[0].path + ": tensor " + name + " has unknown type id " + std::to_string(t->type));
  Weight w;
  w.name = t->name.c_str();
  w.type = static_cast<GgmlType>(t->type);
  for (int d = 0; d < 4; ++d) w.ne[d] = t->ne[d];
  w.nb1 = row_size(w.type, t->ne[0]);
  w.nb2 = w.nb1 * static_cast<size_t>(t->ne[1]);
  w.data = t->data;
  require_use(w, use);
  used_tensors_.insert(name);
  weights_.push_back(w);
  return w;
}

Weight ModelLoader::tensor(const std::string& name, std::initializer_list<int64_t> ne, WeightUse use) {
  if (!file_.find_tensor(name)) throw Refusal(file_.splits()[0].path + ": missing tensor " + name);
  return optional(name, ne, use);
}

void ModelLoader::finish() {
  const std::string prefix = arch_ + ".";
  for (const GgufKV& kv : file_.kvs()) {
    if (kv.key.compare(0, prefix.size(), prefix) == 0 && !used_keys_.count(kv.key)) {
      throw Refusal(file_.splits()[0].path + ": key " + kv.key + " is not implemented for " + arch_ + " in Strix yet");
    }
  }
  for (const GgufTensor& t : file_.tensors()) {
    if (!used_tensors_.count(t.name)) {
      throw Refusal(file_.splits()[0].path + ": tensor " + t.name + " is not used by Strix's " + arch_ +
                    " (a feature not implemented yet)");
    }
  }
}

float yarn_attn_factor(const RopeParams& r) {
  if (r.ext_factor == 0.0f) return r.attn_factor;
  // llama_context: get_mscale(factor, 1), then "cancel this factor" because
  // ggml's rope multiplies 1 + 0.1 ln(1 / freq_scale) back in; the product is
  // 1 up to float rounding, which is kept; then times rope.scaling.attn_factor.
  const float factor = 1.0f / r.freq_scale;
  float af = factor <= 1.0f ? 1.0f : 0.1f * 1.0f * std::log(factor) + 1.0f;
  af *= 1.0f / (1.0f + 0.1f * std::log(factor));
  return af * r.attn_factor;
}

void read_common_hparams(ModelLoader& ld, Hparams& hp, bool rms_norm) {
  hp.n_embd = ld.u32("embedding_length");
  hp.n_layer = ld.u32("block_count");
  hp.n_head = ld.u32("attention.head_count");
  hp.n_head_kv = ld.u32_or("attention.head_count_kv", static_cast<uint32_t>(hp.n_head));
  hp.n_ff = ld.u32_or("feed_forward_length", 0);
  hp.n_ctx_train = ld.u32_or("context_length", 2048);
  if (hp.n_head <= 0 || hp.n_head_kv <= 0 || hp.n_head % hp.n_head_kv != 0) {
    throw Error(ld.file().splits()[0].path + ": attention.head_count " + std::to_string(hp.n_head) +
                " is not a multiple of head_count_kv " + std::to_string(hp.n_head_kv));
  }
  hp.head_dim_k = ld.u32_or("attention.key_length", static_cast<uint32_t>(hp.n_embd / hp.n_head));
  hp.head_dim_v = ld.u32_or("attention.value_length", static_cast<uint32_t>(hp.n_embd / hp.n_head));
  hp.norm_eps = rms_norm ? ld.f32("attention.layer_norm_rms_epsilon") : ld.f32("attention.layer_norm_epsilon");
  ld.accept("vocab_size");

  RopeParams& r = hp.rope;
  r.n_rot = static_cast<int>(ld.u32_or("rope.dimension_count", static_cast<uint32_t>(hp.head_dim_k)));
  r.freq_base = ld.f32_or("rope.freq_base", 10000.0f);
  const std::string scaling = ld.str_or("rope.scaling.type", "linear");
  // llama.cpp reads the old rope.scale_linear only when rope.scaling.factor is absent
  float factor = 0.0f;
  if (ld.has("rope.scaling.factor")) {
    factor = ld.f32("rope.scaling.factor");
    ld.accept("rope.scale_linear");
  } else {
    factor = ld.f32_or("rope.scale_linear", 0.0f);
  }
  r.freq_scale = factor == 0.0f ? 1.0f : 1.0f / factor;
  r.n_ctx_orig =
      static_cast<int>(ld.u32_or("rope.scaling.original_context_length", static_cast<uint32_t>(hp.n_ctx_train)));
  // for YaRN the architecture file multiplies in yarn_attn_factor() (llama_context does it for all)
  r.attn_factor = ld.f32_or("rope.scaling.attn_factor", 1.0f);
  ld.accept("rope.scaling.finetuned");  // informational
  // rope.scaling.yarn_{beta_fast,beta_slow,ext_factor,attn_factor,log_multiplier}
  // are left to the architectures whose llama.cpp loader reads them (the rest
  // refuse them, or accept them where llama.cpp ignores them): betas stay 32 / 1.
  if (scaling == "none") {
    r.freq_scale = 1.0f;
  } else if (scaling == "linear") {
  } else if (scaling == "yarn") {
    r.ext_factor = 1.0f;
  } else {
    throw Refusal(ld.file().splits()[0].path + ": rope scaling type '" + scaling + "' (" + ld.arch() +
                  ".rope.scaling.type) is not implemented in Strix yet");
  }
  if (r.n_rot > hp.head_dim_k || r.n_rot % 2 != 0) {
    throw Error(ld.file().splits()[0].path + ": rope.dimension_count " + std::to_string(r.n_rot) +
                " does not fit head dim " + std::to_string(hp.head_dim_k));
  }
  hp.rope_swa = hp.rope;
  hp.kq_scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim_k));
  hp.swa_layers.assign(hp.n_layer, 0);
}

std::unique_ptr<Model> Model::load(const std::string& path) {
  auto m = std::unique_ptr<Model>(new Model());
  m->path_ = path;
  m->file_ = GgufFile::open(path);
  const std::string arch = m->file_->architecture();
  if (arch.empty()) throw Error(path + ": no general.architecture key");
  const ArchLoadFn fn = find_arch_loader(arch);
  if (!fn) throw Refusal(path + ": architecture '" + arch + "' is not supported by Strix yet");
  ModelLoader ld(*m->file_, arch);
  m->hp_.arch = arch;
  m->hp_.name = m->file_->get_string("general.name");
  m->arch_ = fn(ld, m->hp_);
  ld.finish();
  m->weights_ = std::move(ld.weights());
  return m;
}

uint64_t Model::n_params() const {
  uint64_t n = 0;
  for (const GgufTensor& t : file_->tensors()) n += static_cast<uint64_t>(t.n_elements());
  return n;
}

uint64_t Model::n_bytes() const {
  uint64_t n = 0;
  for (const GgufTensor& t : file_->tensors()) n += t.nbytes;
  return n;
}

}  // namespace strix
