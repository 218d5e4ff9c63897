// Hparam keys and tensor lists per architecture, learned from llama.cpp's loader
// (llama-model.cpp load_hparams / load_tensors, llama-arch.cpp tensor names) and
// from which keys convert_hf_to_gguf.py writes for the matching HF models. Only
// keys the loader reads are written; every tensor listed is one the loader
// creates (it refuses files with extra tensors, so a wrong list fails loudly).
#include "synth/arch_specs.h"

#include <string>

#include "core/error.h"

namespace strix::synth {

namespace {

struct Defaults {
  int64_t n_layer = 2;
  int64_t n_embd = 256;
  int64_t n_head = 4;
  int64_t n_head_kv = 2;
  int64_t head_dim = 0;  // 0: n_embd / n_head
  int64_t n_ff = 512;
  int64_t n_expert = 0;
  int64_t n_expert_used = 0;
  int64_t n_ctx = 4096;
  int64_t n_swa = 0;
  float rms_eps = 1e-5f;
  float rope_base = 10000.0f;
};

int64_t positive(const std::optional<int64_t>& v, int64_t def, const char* flag) {
  const int64_t x = v.value_or(def);
  if (x <= 0) throw Error(std::string(flag) + ": must be a positive integer, got " + std::to_string(x));
  return x;
}

Hparams resolve_with(const SynthOptions& o, const Defaults& d, bool moe) {
  Hparams hp;
  hp.n_layer = positive(o.n_layer, d.n_layer, "--layers");
  hp.n_embd = positive(o.n_embd, d.n_embd, "--embd");
  hp.n_head = positive(o.n_head, d.n_head, "--heads");
  hp.n_head_kv = positive(o.n_head_kv, std::min(d.n_head_kv, hp.n_head), "--kv-heads");
  if (hp.n_head % hp.n_head_kv != 0) {
    throw Error("--kv-heads: " + std::to_string(hp.n_head_kv) + " does not divide --heads " +
                std::to_string(hp.n_head));
  }
  if (o.head_dim || d.head_dim > 0) {
    hp.head_dim = positive(o.head_dim, d.head_dim, "--head-dim");
  } else {
    if (hp.n_embd % hp.n_head != 0) {
      throw Error("--heads: " + std::to_string(hp.n_head) + " does not divide --embd " + std::to_string(hp.n_embd) +
                  " (pass --head-dim)");
    }
    hp.head_dim = hp.n_embd / hp.n_head;
  }
  if (hp.head_dim % 2 != 0) throw Error("--head-dim: RoPE needs an even head size, got " + std::to_string(hp.head_dim));
  hp.n_ff = positive(o.n_ff, d.n_ff, "--ff");
  hp.n_ctx = positive(o.n_ctx, d.n_ctx, "--ctx");
  if (moe) {
    hp.n_expert = positive(o.n_expert, d.n_expert, "--experts");
    hp.n_expert_used = positive(o.n_expert_used, std::min(d.n_expert_used, hp.n_expert), "--experts-used");
    if (hp.n_expert_used > hp.n_expert) {
      throw Error("--experts-used: " + std::to_string(hp.n_expert_used) + " is more than --experts " +
                  std::to_string(hp.n_expert));
    }
    if (hp.n_expert > 512) throw Error("--experts: llama.cpp allows at most 512 experts");
  } else if (o.n_expert || o.n_expert_used) {
    throw Error(std::string(o.n_expert ? "--experts" : "--experts-used") + ": architecture '" + o.arch +
                "' has no experts");
  }
  hp.swa_given = o.n_swa.has_value();
  hp.n_swa = o.n_swa ? positive(o.n_swa, 0, "--sliding-window") : d.n_swa;
  hp.rms_eps = d.rms_eps;
  hp.rope_base = d.rope_base;
  return hp;
}

// For loaders that size the q projection as n_embd (qwen2, phi3, olmoe).
void require_full_width(const Hparams& hp, const char* arch) {
  if (hp.head_dim * hp.n_head != hp.n_embd) {
    throw Error(std::string("--head-dim: ") + arch + " needs head_dim * heads == embd (" + std::to_string(hp.head_dim) +
                " * " + std::to_string(hp.n_head) + " != " + std::to_string(hp.n_embd) + ")");
  }
}

// Rejects --sliding-window for archs whose loader would ignore it.
void no_swa(const SynthOptions& o) {
  if (o.n_swa) throw Error("--sliding-window: architecture '" + o.arch + "' has no sliding-window attention");
}

// ---- keys -------------------------------------------------------------------

struct Keys {
  GgufWriter& w;
  std::string arch;
  void u32(const char* key, int64_t v) { w.set_u32(arch + "." + key, static_cast<uint32_t>(v)); }
  void f32(const char* key, float v) { w.set_f32(arch + "." + key, v); }
  void str(const char* key, const std::string& v) { w.set_str(arch + "." + key, v); }

  // What convert_hf_to_gguf.py's TextModel writes for every decoder.
  void common(const Hparams& hp) {
    u32("context_length", hp.n_ctx);
    u32("embedding_length", hp.n_embd);
    u32("feed_forward_length", hp.n_ff);
    u32("block_count", hp.n_layer);
    u32("attention.head_count", hp.n_head);
    u32("attention.head_count_kv", hp.n_head_kv);
    f32("rope.freq_base", hp.rope_base);
    f32("attention.layer_norm_rms_epsilon", hp.rms_eps);
  }
  // key_length / value_length: written when the HF config has head_dim (always
  // for qwen3, gemma3, gpt-oss) and whenever it differs from n_embd / n_head.
  void head_dims(const Hparams& hp, bool always) {
    if (always || hp.head_dim * hp.n_head != hp.n_embd) {
      u32("attention.key_length", hp.head_dim);
      u32("attention.value_length", hp.head_dim);
    }
  }
  void experts(const Hparams& hp) {
    u32("expert_count", hp.n_expert);
    u32("expert_used_count", hp.n_expert_used);
  }
};

// ---- tensors ----------------------------------------------------------------

struct Tensors {
  std::vector<TensorSpec> list;
  void add(std::string name, std::vector<int64_t> ne, TensorRole role) {
    list.push_back({std::move(name), std::move(ne), role});
  }
  static std::string blk(int64_t il, const char* rest) { return "blk." + std::to_string(il) + "." + rest; }
  void norm(int64_t il, const char* name, int64_t n) { add(blk(il, name), {n}, TensorRole::kNorm); }
  void weight(int64_t il, const char* name, int64_t in, int64_t out) {
    add(blk(il, name), {in, out}, TensorRole::kWeight);
  }
  void bias(int64_t il, const char* name, std::vector<int64_t> ne) {
    add(blk(il, name), std::move(ne), TensorRole::kBias);
  }

  void embedding(const Hparams& hp) { add("token_embd.weight", {hp.n_embd, hp.n_vocab}, TensorRole::kEmbd); }
  void head(const Hparams& hp, bool tied) {
    add("output_norm.weight", {hp.n_embd}, TensorRole::kNorm);
    if (!tied) add("output.weight", {hp.n_embd, hp.n_vocab}, TensorRole::kOutput);
  }
  // q/k/v/o projections: q [n_embd, n_head*hd], k/v [n_embd, n_head_kv*hd], o [n_head*hd, n_embd].
  void attention(const Hparams& hp, int64_t il) {
    const int64_t q = hp.n_head * hp.head_dim, kv = hp.n_head_kv * hp.head_dim;
    weight(il, "attn_q.weight", hp.n_embd, q);
    weight(il, "attn_k.weight", hp.n_embd, kv);
    weight(il, "attn_v.weight", hp.n_embd, kv);
    weight(il, "attn_output.weight", q, hp.n_embd);
  }
  void ffn(const Hparams& hp, int64_t il) {
    weight(il, "ffn_gate.weight", hp.n_embd, hp.n_ff);
    weight(il, "ffn_down.weight", hp.n_ff, hp.n_embd);
    weight(il, "ffn_up.weight", hp.n_embd, hp.n_ff);
  }
  // Router [n_embd, n_expert] and the expert stacks [in, out, n_expert].
  void moe(const Hparams& hp, int64_t il) {
    add(blk(il, "ffn_gate_inp.weight"), {hp.n_embd, hp.n_expert}, TensorRole::kRouter);
    add(blk(il, "ffn_gate_exps.weight"), {hp.n_embd, hp.n_ff, hp.n_expert}, TensorRole::kExpert);
    add(blk(il, "ffn_down_exps.weight"), {hp.n_ff, hp.n_embd, hp.n_expert}, TensorRole::kExpert);
    add(blk(il, "ffn_up_exps.weight"), {hp.n_embd, hp.n_ff, hp.n_expert}, TensorRole::kExpert);
  }
};

// ---- llama ------------------------------------------------------------------
// Dense by default; --experts turns it into the Mixtral layout the llama loader
// also accepts. convert writes vocab_size and rope.dimension_count for llama.

Hparams llama_resolve(const SynthOptions& o) {
  no_swa(o);
  return resolve_with(o, Defaults{}, o.n_expert.has_value());
}
void llama_keys(const Hparams& hp, GgufWriter& w) {
  Keys k{w, "llama"};
  k.common(hp);
  if (hp.n_expert > 0) k.experts(hp);
  k.u32("vocab_size", hp.n_vocab);
  k.u32("rope.dimension_count", hp.head_dim);
  k.head_dims(hp, false);
}
std::vector<TensorSpec> llama_tensors(const Hparams& hp) {
  Tensors t;
  t.embedding(hp);
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    t.norm(il, "attn_norm.weight", hp.n_embd);
    t.attention(hp, il);
    t.norm(il, "ffn_norm.weight", hp.n_embd);
    if (hp.n_expert > 0) {
      t.moe(hp, il);
    } else {
      t.ffn(hp, il);
    }
  }
  t.head(hp, false);
  return t.list;
}

// ---- qwen2: llama plus q/k/v biases ------------------------------------------

// The loader sizes q as [n_embd, n_embd]: head_dim * heads must equal n_embd.
Hparams qwen2_resolve(const SynthOptions& o) {
  no_swa(o);
  Defaults d;
  d.rms_eps = 1e-6f;
  d.rope_base = 1000000.0f;
  Hparams hp = resolve_with(o, d, false);
  require_full_width(hp, "qwen2");
  return hp;
}
void qwen2_keys(const Hparams& hp, GgufWriter& w) {
  Keys k{w, "qwen2"};
  k.common(hp);
}
std::vector<TensorSpec> qwen2_tensors(const Hparams& hp) {
  Tensors t;
  t.embedding(hp);
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    t.norm(il, "attn_norm.weight", hp.n_embd);
    t.attention(hp, il);
    t.bias(il, "attn_q.bias", {hp.n_head * hp.head_dim});
    t.bias(il, "attn_k.bias", {hp.n_head_kv * hp.head_dim});
    t.bias(il, "attn_v.bias", {hp.n_head_kv * hp.head_dim});
    t.norm(il, "ffn_norm.weight", hp.n_embd);
    t.ffn(hp, il);
  }
  t.head(hp, false);
  return t.list;
}

// ---- qwen3 / qwen3moe: per-head q/k RMS norms [head_dim] ---------------------

Hparams qwen3_resolve(const SynthOptions& o) {
  no_swa(o);
  Defaults d;
  d.rms_eps = 1e-6f;
  d.rope_base = 1000000.0f;
  return resolve_with(o, d, false);
}
void qwen3_keys(const Hparams& hp, GgufWriter& w) {
  Keys k{w, "qwen3"};
  k.common(hp);
  k.head_dims(hp, true);
}
std::vector<TensorSpec> qwen3_tensors(const Hparams& hp) {
  Tensors t;
  t.embedding(hp);
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    t.norm(il, "attn_norm.weight", hp.n_embd);
    t.attention(hp, il);
    t.norm(il, "attn_q_norm.weight", hp.head_dim);
    t.norm(il, "attn_k_norm.weight", hp.head_dim);
    t.norm(il, "ffn_norm.weight", hp.n_embd);
    t.ffn(hp, il);
  }
  t.head(hp, false);
  return t.list;
}

Hparams qwen3moe_resolve(const SynthOptions& o) {
  no_swa(o);
  Defaults d;
  d.rms_eps = 1e-6f;
  d.rope_base = 1000000.0f;
  d.n_expert = 4;
  d.n_expert_used = 2;
  return resolve_with(o, d, true);
}
void qwen3moe_keys(const Hparams& hp, GgufWriter& w) {
  Keys k{w, "qwen3moe"};
  k.common(hp);
  k.experts(hp);
  k.u32("expert_feed_forward_length", hp.n_ff);
  k.head_dims(hp, true);
}
std::vector<TensorSpec> qwen3moe_tensors(const Hparams& hp) {
  Tensors t;
  t.embedding(hp);
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    t.norm(il, "attn_norm.weight", hp.n_embd);
    t.attention(hp, il);
    t.norm(il, "attn_q_norm.weight", hp.head_dim);
    t.norm(il, "attn_k_norm.weight", hp.head_dim);
    t.norm(il, "ffn_norm.weight", hp.n_embd);
    t.moe(hp, il);
  }
  t.head(hp, false);
  return t.list;
}

// ---- gemma3 -----------------------------------------------------------------
// Tied embeddings; q/k norms; post-attention and post-FFN norms; GELU FFN. The
// loader fixes the sliding-window pattern at 5 local : 1 global, so the default
// has 6 layers (one global layer) and a window of 8 that a 16-token test crosses.
// Without a sliding window llama.cpp takes the non-iswa graph, which divides by
// final_logit_softcapping (0 for gemma3): the window is always written.

Hparams gemma3_resolve(const SynthOptions& o) {
  Defaults d;
  d.n_layer = 6;
  d.head_dim = 64;
  d.rms_eps = 1e-6f;
  d.rope_base = 1000000.0f;
  d.n_swa = 8;
  return resolve_with(o, d, false);
}
void gemma3_keys(const Hparams& hp, GgufWriter& w) {
  Keys k{w, "gemma3"};
  k.common(hp);
  k.head_dims(hp, true);
  k.u32("attention.sliding_window", hp.n_swa);
}
std::vector<TensorSpec> gemma3_tensors(const Hparams& hp) {
  Tensors t;
  t.embedding(hp);
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    t.norm(il, "attn_norm.weight", hp.n_embd);
    t.attention(hp, il);
    t.norm(il, "attn_q_norm.weight", hp.head_dim);
    t.norm(il, "attn_k_norm.weight", hp.head_dim);
    t.norm(il, "post_attention_norm.weight", hp.n_embd);
    t.norm(il, "ffn_norm.weight", hp.n_embd);
    t.ffn(hp, il);
    t.norm(il, "post_ffw_norm.weight", hp.n_embd);
  }
  t.head(hp, true);
  return t.list;
}

// ---- phi3 -------------------------------------------------------------------
// Fused qkv [n_embd, n_embd + 2*n_embd_kv] and fused gate|up [n_embd, 2*n_ff];
// the loader sizes the q part as n_embd, so head_dim * heads must equal n_embd.

Hparams phi3_resolve(const SynthOptions& o) {
  Hparams hp = resolve_with(o, Defaults{}, false);
  require_full_width(hp, "phi3");
  return hp;
}
void phi3_keys(const Hparams& hp, GgufWriter& w) {
  Keys k{w, "phi3"};
  k.common(hp);
  k.u32("rope.scaling.original_context_length", hp.n_ctx);
  k.u32("rope.dimension_count", hp.head_dim);
  // llama.cpp reads it but currently runs phi3 without SWA; written only on request.
  if (hp.swa_given) k.u32("attention.sliding_window", hp.n_swa);
}
std::vector<TensorSpec> phi3_tensors(const Hparams& hp) {
  Tensors t;
  t.embedding(hp);
  const int64_t kv = hp.n_head_kv * hp.head_dim;
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    t.norm(il, "attn_norm.weight", hp.n_embd);
    t.weight(il, "attn_qkv.weight", hp.n_embd, hp.n_embd + 2 * kv);
    t.weight(il, "attn_output.weight", hp.n_embd, hp.n_embd);
    t.norm(il, "ffn_norm.weight", hp.n_embd);
    t.weight(il, "ffn_down.weight", hp.n_ff, hp.n_embd);
    t.weight(il, "ffn_up.weight", hp.n_embd, 2 * hp.n_ff);
  }
  t.head(hp, false);
  return t.list;
}

// ---- olmoe ------------------------------------------------------------------
// q/k norms over the whole projection [n_embd]: needs kv heads == heads and
// head_dim * heads == n_embd. feed_forward_length is the per-expert width.

Hparams olmoe_resolve(const SynthOptions& o) {
  no_swa(o);
  Defaults d;
  d.n_head_kv = d.n_head;
  d.n_expert = 4;
  d.n_expert_used = 2;
  SynthOptions oo = o;
  if (!oo.n_head_kv && oo.n_head) oo.n_head_kv = oo.n_head;
  Hparams hp = resolve_with(oo, d, true);
  if (hp.n_head_kv != hp.n_head) {
    throw Error("--kv-heads: olmoe's k norm spans n_embd, so kv heads must equal heads (" + std::to_string(hp.n_head) +
                ")");
  }
  require_full_width(hp, "olmoe");
  return hp;
}
void olmoe_keys(const Hparams& hp, GgufWriter& w) {
  Keys k{w, "olmoe"};
  k.common(hp);
  k.experts(hp);
}
std::vector<TensorSpec> olmoe_tensors(const Hparams& hp) {
  Tensors t;
  t.embedding(hp);
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    t.norm(il, "attn_norm.weight", hp.n_embd);
    t.attention(hp, il);
    t.norm(il, "attn_q_norm.weight", hp.n_embd);
    t.norm(il, "attn_k_norm.weight", hp.n_embd);
    t.norm(il, "ffn_norm.weight", hp.n_embd);
    t.moe(hp, il);
  }
  t.head(hp, false);
  return t.list;
}

// ---- gpt-oss ----------------------------------------------------------------
// Attention with biases and per-head sinks, sliding window on every other layer
// (pattern fixed at 2 by the loader), YaRN RoPE, a post-attention norm in front
// of the MoE, biased router and experts (SwiGLU-OAI). Experts are MXFP4 in the
// released model; see SynthOptions::expert_type.

Hparams gptoss_resolve(const SynthOptions& o) {
  Defaults d;
  d.head_dim = 64;
  d.n_expert = 4;
  d.n_expert_used = 2;
  d.n_swa = 8;
  d.rope_base = 150000.0f;
  return resolve_with(o, d, true);
}
void gptoss_keys(const Hparams& hp, GgufWriter& w) {
  Keys k{w, "gpt-oss"};
  k.common(hp);
  k.experts(hp);
  k.head_dims(hp, true);
  k.u32("attention.sliding_window", hp.n_swa);
  k.u32("expert_feed_forward_length", hp.n_ff);
  // YaRN as in the released config (factor 32 over 4096); scaled to the tiny context.
  k.str("rope.scaling.type", "yarn");
  k.f32("rope.scaling.factor", 4.0f);
  k.u32("rope.scaling.original_context_length", std::max<int64_t>(1, hp.n_ctx / 4));
}
std::vector<TensorSpec> gptoss_tensors(const Hparams& hp) {
  Tensors t;
  t.embedding(hp);
  const int64_t q = hp.n_head * hp.head_dim, kv = hp.n_head_kv * hp.head_dim;
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    t.norm(il, "attn_norm.weight", hp.n_embd);
    t.attention(hp, il);
    t.bias(il, "attn_q.bias", {q});
    t.bias(il, "attn_k.bias", {kv});
    t.bias(il, "attn_v.bias", {kv});
    t.bias(il, "attn_output.bias", {hp.n_embd});
    t.add(Tensors::blk(il, "attn_sinks.weight"), {hp.n_head}, TensorRole::kSinks);
    t.norm(il, "post_attention_norm.weight", hp.n_embd);
    t.moe(hp, il);
    t.bias(il, "ffn_gate_inp.bias", {hp.n_expert});
    t.bias(il, "ffn_gate_exps.bias", {hp.n_ff, hp.n_expert});
    t.bias(il, "ffn_down_exps.bias", {hp.n_embd, hp.n_expert});
    t.bias(il, "ffn_up_exps.bias", {hp.n_ff, hp.n_expert});
  }
  t.head(hp, false);
  return t.list;
}

const ArchSpec kArchs[] = {
    {"llama", false, false, llama_resolve, llama_keys, llama_tensors},
    {"qwen2", false, false, qwen2_resolve, qwen2_keys, qwen2_tensors},
    {"qwen3", false, false, qwen3_resolve, qwen3_keys, qwen3_tensors},
    {"qwen3moe", true, false, qwen3moe_resolve, qwen3moe_keys, qwen3moe_tensors},
    {"gemma3", false, true, gemma3_resolve, gemma3_keys, gemma3_tensors},
    {"phi3", false, false, phi3_resolve, phi3_keys, phi3_tensors},
    {"olmoe", true, false, olmoe_resolve, olmoe_keys, olmoe_tensors},
    {"gpt-oss", true, false, gptoss_resolve, gptoss_keys, gptoss_tensors},
};

}  // namespace

const ArchSpec* find_arch(std::string_view name) {
  for (const auto& a : kArchs) {
    if (name == a.name) return &a;
  }
  return nullptr;
}

const std::vector<const ArchSpec*>& all_archs() {
  static const std::vector<const ArchSpec*> list = [] {
    std::vector<const ArchSpec*> v;
    for (const auto& a : kArchs) v.push_back(&a);
    return v;
  }();
  return list;
}

}  // namespace strix::synth
