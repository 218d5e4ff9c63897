// A loaded model: the mmap'd GGUF, its hyperparameters and the architecture's
// forward pass. Weights are views into the mmap (no copies).
//
//   auto model = Model::load("model.gguf");   // Refusal naming what is missing
//   model->hparams().n_embd; model->arch().name();
//
// Loading is strict: every {arch}.* key must be one the architecture file
// understands and every tensor must be consumed, or the load is refused naming
// the key or tensor, so a file is never run with a part of it ignored.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "gguf/reader.h"
#include "models/hparams.h"
#include "quant/types.h"

namespace strix {

class Exec;
struct Step;

// A weight tensor in place in the mmap: ne[0] is the row length; rows are nb1
// bytes apart; the 3rd dimension (experts) is nb2 bytes apart.
struct Weight {
  const char* name = nullptr;  // points into the GgufFile's tensor list
  GgmlType type = GgmlType::F32;
  int64_t ne[4] = {1, 1, 1, 1};
  size_t nb1 = 0;
  size_t nb2 = 0;
  const uint8_t* data = nullptr;

  bool present() const { return data != nullptr; }
  const uint8_t* row(int64_t i1, int64_t i2 = 0) const { return data + i1 * nb1 + i2 * nb2; }
};

// How the forward pass reads a weight, which decides the types it may have.
enum class WeightUse {
  kMatmul,  // multiplied with activations: needs a CPU dot-product kernel for its type
  kRows,    // rows are looked up (token embeddings): needs a dequantizer
  kVector,  // read as floats (norm scales, biases, sinks, rope factors): must be F32
};

// One architecture's forward pass. All pool threads run forward() together;
// the ops inside split the work and meet at barriers (ops/cpu_ops.h).
// The RoPE of a layer's keys: its parameters and frequency factors (null:
// none). rope null: the architecture's cached keys cannot move to other
// positions.
struct KeyRope {
  const RopeParams* rope = nullptr;
  const float* freq_factors = nullptr;
};

class Arch {
 public:
  virtual ~Arch() = default;
  virtual void forward(Exec& e, Step& s) const = 0;
  // Layer il's key RoPE in a context of n_ctx_seq cells per sequence (what
  // llama.cpp's build_rope_shift uses to move cached keys).
  virtual KeyRope key_rope(const Hparams& hp, int64_t il, int64_t n_ctx_seq) const = 0;
};

// Reads keys and tensors for an architecture file, remembering what was used.
class ModelLoader {
 public:
  ModelLoader(const GgufFile& file, std::string arch);

  const std::string& arch() const { return arch_; }
  const GgufFile& file() const { return file_; }

  // {arch}.<suffix> keys. The required forms refuse naming the key when absent.
  bool has(std::string_view suffix) const;
  uint32_t u32(std::string_view suffix);
  uint32_t u32_or(std::string_view suffix, uint32_t def);
  float f32(std::string_view suffix);
  float f32_or(std::string_view suffix, float def);
  bool bool_or(std::string_view suffix, bool def);
  std::string str_or(std::string_view suffix, const std::string& def);
  // An array of integers (or one integer repeated) with n entries, e.g. per-layer head counts.
  std::vector<int32_t> u32_array_or(std::string_view suffix, size_t n, uint32_t def);
  // Marks a key as understood without reading it (keys that do not change the
  // computation, e.g. context_length is read elsewhere).
  void accept(std::string_view suffix);
  // Refuses a key when it is present with a value other than `allowed`
  // (a feature the architecture has but Strix does not implement yet).
  void refuse_unless(std::string_view suffix, double allowed, std::string_view what);

  // Tensors. `ne` lists the expected dims (trailing 1s implied). The required
  // form refuses naming the tensor when absent, Error when its shape differs.
  Weight tensor(const std::string& name, std::initializer_list<int64_t> ne, WeightUse use = WeightUse::kMatmul);
  Weight optional(const std::string& name, std::initializer_list<int64_t> ne, WeightUse use = WeightUse::kMatmul);
  // A weight used both ways (a tied lm head is token_embd.weight, also looked up as rows).
  void require_use(const Weight& w, WeightUse use) const;
  bool has_tensor(const std::string& name) const { return file_.find_tensor(name) != nullptr; }

  // After the architecture took what it uses: any {arch}.* key or tensor left
  // over is refused by name.
  void finish();

  std::vector<Weight>& weights() { return weights_; }

 private:
  const GgufValue* key(std::string_view suffix);
  std::string full(std::string_view suffix) const { return arch_ + "." + std::string(suffix); }

  const GgufFile& file_;
  std::string arch_;
  std::unordered_set<std::string> used_keys_;
  std::unordered_set<std::string> used_tensors_;
  std::vector<Weight> weights_;
};

class Model {
 public:
  // Opens and validates `path`; throws Refusal naming the architecture, key,
  // tensor or type Strix does not run, Error for malformed files.
  static std::unique_ptr<Model> load(const std::string& path);

  const GgufFile& file() const { return *file_; }
  const Hparams& hparams() const { return hp_; }
  const Arch& arch() const { return *arch_; }
  const std::string& path() const { return path_; }
  // All weights the architecture took, for sizing scratch (activation rows) and reports.
  const std::vector<Weight>& weights() const { return weights_; }
  uint64_t n_params() const;
  uint64_t n_bytes() const;

  // Architectures Strix runs (the registry's names).
  static std::vector<std::string> supported_archs();

 private:
  std::unique_ptr<GgufFile> file_;
  Hparams hp_;
  std::unique_ptr<Arch> arch_;
  std::vector<Weight> weights_;
  std::string path_;
  friend class ModelLoader;
  friend struct ArchRegistry;
};

}  // namespace strix
