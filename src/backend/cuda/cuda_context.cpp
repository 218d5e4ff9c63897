// The CUDA forward of the prenorm decoders (llama, qwen2, qwen3, and the
// mixture-of-experts qwen3moe and olmoe), step for step the structure of
// graph::prenorm_decoder (src/graph/decoder.h) with graph::self_attention and
// graph::gated_ffn or graph::moe_ffn (moe_block), each op a kernel of
// backend/cuda/kernels.h on one stream. Matrix products: the GEMV kernel for
// up to 8 tokens, else the weight dequantized to f16 (a copy kept from the
// first forward on when memory allows) and cuBLAS (f32 accumulation), q/k/v
// and gate/up as one GEMM each; F32 weights go to
// cublasSgemm. Activations are first rounded to each weight's CPU partner type
// (round_activations; for the GEMM rounded and converted to f16 in one pass,
// activations_f16, with SwiGLU fused for the down projection), as libllama's
// CPU path multiplies them. Prefill attention runs as the tensor-core
// attention_prefill (STRIX_CUDA_FA=0: attention()). One-token decode runs as a
// CUDA graph (on by default, STRIX_CUDA_GRAPHS=0 turns it off) and its
// attention as one fused kernel (attention_decode); graphs per batch bucket
// are a later step.
#include "backend/cuda/cuda_context.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/cuda/device.h"
#include "backend/cuda/exact.h"
#include "backend/cuda/kernels.h"
#include "core/error.h"
#include "ops/cpu_ops.h"

namespace strix::cuda {

namespace {

constexpr int kGemvMaxTokens = 8;  // more tokens than this: dequantize + GEMM

std::string path_of(const Model& m) { return m.path(); }

// STRIX_CUDA_PROFILE=1: a CUDA event after each step of every forward pass of
// more than one token (not the captured decode graph); the time between two
// events is charged to the step that ends at the second. Summed per kind and
// printed to stderr when the context ends. The context's first such forward
// (cuBLAS and module loading: a bench warmup) is left out. The events
// themselves cost a little.
class Profile {
 public:
  enum Kind { kDequant, kAct, kGemm, kGemv, kAttention, kRopeKv, kNorm, kSwiglu, kOther, kKinds };
  Profile() {
    const char* e = std::getenv("STRIX_CUDA_PROFILE");
    on_ = e && e[0] == '1';
  }
  ~Profile() {
    if (on_ && forwards_ > 0) print();
    for (cudaEvent_t e : pool_) cudaEventDestroy(e);
  }
  Profile(const Profile&) = delete;
  Profile& operator=(const Profile&) = delete;
  void begin(cudaStream_t st, int tokens) {
    if (!on_) return;
    active_ = true;
    used_ = 0;
    kinds_.clear();
    if (warm_) tokens_ += tokens;
    record(st, -1);
  }
  void mark(cudaStream_t st, Kind k) {
    if (active_) record(st, k);
  }
  // after the stream was synchronized
  void end() {
    if (!active_) return;
    active_ = false;
    if (!warm_) {
      warm_ = true;
      return;
    }
    ++forwards_;
    for (size_t i = 1; i < used_; ++i) {
      float t = 0;
      check(cudaEventElapsedTime(&t, pool_[i - 1], pool_[i]), "the profile's events");
      ms_[kinds_[i]] += t;
      ++steps_[kinds_[i]];
    }
  }

 private:
  void record(cudaStream_t st, int kind) {
    if (used_ == pool_.size()) {
      cudaEvent_t e = nullptr;
      check(cudaEventCreate(&e), "the profile's events");
      pool_.push_back(e);
    }
    check(cudaEventRecord(pool_[used_], st), "the profile's events");
    kinds_.push_back(kind);
    ++used_;
  }
  void print() const {
    static const char* names[kKinds] = {"dequant_f16", "act round/f16", "gemm (cuBLAS)", "gemv", "attention",
                                        "rope+kv",     "norm",          "swiglu",        "other"};
    double total = 0;
    for (double m : ms_) total += m;
    std::fprintf(stderr,
                 "strix cuda profile: %ld forwards of >1 token after the first, %ld tokens, %.2f ms of steps (%.3f "
                 "ms/forward)\n",
                 forwards_, tokens_, total, total / static_cast<double>(forwards_));
    for (int k = 0; k < kKinds; ++k) {
      if (steps_[k] == 0) continue;
      std::fprintf(stderr, "  %-14s %9.2f ms %5.1f%%  %7.3f ms/forward  %6ld steps\n", names[k], ms_[k],
                   total > 0 ? 100.0 * ms_[k] / total : 0.0, ms_[k] / static_cast<double>(forwards_), steps_[k]);
    }
  }

  bool on_ = false, active_ = false, warm_ = false;
  std::vector<cudaEvent_t> pool_;
  size_t used_ = 0;
  std::vector<int> kinds_;
  double ms_[kKinds] = {};
  long steps_[kKinds] = {};
  long forwards_ = 0, tokens_ = 0;
};

// The mixture-of-experts architectures the CUDA forward runs, with the
// routing their architecture files give graph::moe_ffn (softmax gating, SiLU
// experts, no router or expert biases): whether the selected weights are
// renormalised to sum 1.
struct MoeArch {
  const char* arch;
  bool norm_weights;
};
const MoeArch* moe_arch(const std::string& arch) {
  static constexpr MoeArch kArchs[] = {{"qwen3moe", true}, {"olmoe", false}};
  for (const MoeArch& a : kArchs) {
    if (arch == a.arch) return &a;
  }
  return nullptr;
}

// Weights by name (the architecture took exactly these).
std::unordered_map<std::string, const Weight*> by_name(const Model& m) {
  std::unordered_map<std::string, const Weight*> out;
  for (const Weight& w : m.weights()) out[w.name] = &w;
  return out;
}

}  // namespace

bool available(std::string* why) { return device_available(why); }

void check_model(const Model& m) {
  const Hparams& hp = m.hparams();
  const std::string& arch = hp.arch;
  const std::string file = path_of(m);
  if (arch != "llama" && arch != "qwen2" && arch != "qwen3" && !moe_arch(arch)) {
    throw Refusal(file + ": the CUDA backend runs llama, qwen2, qwen3, qwen3moe and olmoe so far, not " + arch +
                  " (use -ngl 0)");
  }
  if (hp.n_expert > 0 && !moe_arch(arch)) {
    throw Refusal(file + ": the mixture of experts of " + arch + " is not implemented on CUDA yet (use -ngl 0)");
  }
  if (hp.n_swa > 0) throw Refusal(file + ": sliding-window attention is not implemented on CUDA yet (use -ngl 0)");
  if (hp.attn_sinks) throw Refusal(file + ": attention sinks are not implemented on CUDA yet (use -ngl 0)");
  if (hp.head_dim_k > 512 || hp.head_dim_v > 256 || hp.head_dim_k % 2 || hp.head_dim_v % 2) {
    throw Refusal(file + ": head sizes " + std::to_string(hp.head_dim_k) + "/" + std::to_string(hp.head_dim_v) +
                  " are not run on CUDA yet");
  }
  if (hp.rope.mode != RopeMode::kNorm && hp.rope.mode != RopeMode::kNeox) {
    throw Refusal(file + ": this RoPE mode is not implemented on CUDA yet");
  }
  for (const Weight& w : m.weights()) {
    const bool vector = w.ne[1] == 1 && w.ne[2] == 1;
    if (vector) {
      if (w.type != GgmlType::F32) {
        throw Refusal(file + ": tensor " + w.name + " is a " + type_name(static_cast<uint32_t>(w.type)) +
                      " vector; the CUDA backend reads F32 vectors only");
      }
      continue;
    }
    if (const char* why = type_unsupported_reason(w.type, w.ne[0])) {
      throw Refusal(file + ": tensor " + std::string(w.name) + " has type " + type_name(static_cast<uint32_t>(w.type)) +
                    ": " + why + " (use -ngl 0)");
    }
  }
}

Offload parse_ngl(std::string_view value, int64_t n_layer) {
  if (value == "all") return offload_layers(n_layer + 1, n_layer);
  if (value == "auto") return offload_layers(available() ? n_layer + 1 : 0, n_layer);
  int64_t n = -1;
  const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc() || p != value.data() + value.size() || n < 0) {
    throw Error("-ngl: '" + std::string(value) + "' is not a layer count (0 .. " + std::to_string(n_layer + 1) +
                ", more is all), 'all' or 'auto'");
  }
  return offload_layers(n, n_layer);
}

GpuInfo gpu_info(bool measure_bandwidth) {
  Device dev;
  GpuInfo g;
  g.name = dev.name();
  if (measure_bandwidth) g.copy_bytes_per_s = copy_bandwidth(dev, size_t{1} << 30, 20);
  return g;
}

// ---------------------------------------------------------------------------

struct CudaContext::Impl {
  struct Layer {
    const float *attn_norm = nullptr, *ffn_norm = nullptr;
    DevWeight wq, wk, wv, wqkv, wo, gate, up, down;
    const float *bq = nullptr, *bk = nullptr, *bv = nullptr, *bqkv = nullptr, *bo = nullptr;
    const float *q_norm = nullptr, *k_norm = nullptr;
    bool qk_norm_full = false;  // q/k norms over whole q/k rows (olmoe), not per head
    // mixture of experts (moe): the router [n_embd, n_expert] and the expert stacks
    bool moe = false;
    DevWeight gate_inp;
    DevExperts gate_exps, up_exps, down_exps;
  };

  const Model& model;
  ContextOptions opts;
  // partial offload: layers [part.first_layer, n_layer) and the head (0: the whole model)
  GpuPart part;
  int64_t first_layer = 0;
  DevMem hidden_in;            // the CPU's residual stream of a micro-batch [n_ubatch, n_embd]
  HostVec<float> hidden_host;  // the same on the host
  Device dev;
  DevMem weights;  // every weight, 256-byte aligned
  uint64_t weight_bytes = 0;
  std::map<const uint8_t*, const uint8_t*> dev_of;  // host (mmap) data -> device copy
  DevWeight tok_embd, output;
  const float* output_norm = nullptr;
  const float* rope_freqs = nullptr;
  std::vector<Layer> layers;

  // activations [n_ubatch, width]
  DevMem x, x_alt, normed, cur, qkv, k, v, att, ff_a, ff_b, tmp, logits_dev;
  DevMem top_dev, top_ids_dev;  // each output row's kTopLogits largest logits and their ids
  DevMem top_scratch;           // top_logits' per-part lists and counters (zeroed once)
  DevMem ff_ab;                 // gate | up rows of the merged prefill GEMM [n_ubatch, 2 n_ff]
  DevMem ids;                   // tokens, pos, seq, out_ids: 4 x n_ubatch int32
  HostVec<int32_t> ids_host;    // the same on the host: one copy per micro-batch
  DevMem xr;                    // activations rounded to a weight's partner type (round_activations)
  DevMem xq, xqd;               // the same quantized, for the integer GEMV (quantize_act): int8 and block scales
  DevMem w16, x16;              // GEMM scratch: one dequantized weight, activations in f16
  // The MoE FFN's scratch (moe_block), with P = n_ubatch * n_expert_used (token, slot) pairs:
  // router logits [ub, n_expert], moe_ids / moe_w [P] (per pair: expert, weight), moe_map [2 P]
  // (prefill: token of each grouped row | grouped row of each pair), moe_xg [P, n_embd] (prefill:
  // the inputs grouped by expert), moe_y [P, n_embd] (each pair's expert output, unweighted), and
  // for the decode GEMVs (up to 8 tokens) moe_g / moe_u [8 k, n_ff_exp] and the activations of the
  // pairs quantized (moe_xq, moe_xqd) or rounded (moe_xr).
  DevMem moe_logits, moe_ids, moe_w, moe_map, moe_xg, moe_y, moe_g, moe_u, moe_xq, moe_xqd, moe_xr;
  std::vector<int32_t> moe_host;  // prefill: the ids read back, then the map uploaded
  bool moe_norm_weights = false;
  // Prefill experts of more than 8 rows: the tensor-core GEMM (on: the
  // default), or, with STRIX_CUDA_MOE_GEMM=0, the integer GEMV for Q8_0 / Q4_K
  // / Q6_K experts (exact block dots as libllama's CPU, the weights read once
  // per 8 rows; moe_pq / moe_pqd: the rows quantized), an A/B switch. H200
  // (this branch's run 2): quantized synthetic MoE models miss the parity bar
  // in prefill through routing flips (qwen3moe q8_0 mean KL 6.3e-3 vs 2.4e-4 in
  // decode), and the integer GEMV does not help (9.3e-3): the flips come from
  // the rest of the prefill path (its dense GEMMs, attention), not the experts.
  bool moe_gemm_on = true;
  DevMem moe_pq, moe_pqd;
  // The paged KV cache: the block bookkeeping on the host (no host cells), the
  // cells per layer as [block][32][dim] halves here, and every sequence's
  // block table (max_blocks entries each) uploaded before each forward.
  std::unique_ptr<KvCache> kvc_own;
  KvCache* kvc = nullptr;  // kvc_own, or a partial offload's shared bookkeeping (part.kv)
  DevMem kcache, vcache, tables;
  std::vector<int32_t> tables_host, tables_sent;  // tables_sent: what `tables` holds
  int max_blocks = 0;
  DevMem cut_cs, cut_scratch;  // seq_cut: each layer's cos/sin of the shift, the moved rows (made on first use)
  int64_t seq_cap = 0;         // the most cells one sequence holds
  static constexpr int kMaxDecodeSplit = 64;
  DevMem split_ml, split_o, split_count;
  int max_split = 1, min_chunk = kDecodeMinChunk;
  bool split_off = false;
  int64_t wide = 0;

  // The one-token forward (decode of one sequence, its logits) as a CUDA
  // graph, captured on first use and replayed: one launch instead of ~10 a
  // layer. Attention's score buffer is sized for the whole context there, so
  // the same graph serves every position. On by default (parity and greedy
  // tokens measured equal with and without it); STRIX_CUDA_GRAPHS=0 turns it off.
  cudaGraphExec_t decode_graph = nullptr;
  bool use_graphs = false;

  // Prefill attention through the tensor-core kernel (attention_prefill) for
  // batches of at least kFaTokensPerRun tokens per run of one sequence;
  // STRIX_CUDA_FA=0 keeps attention() for every batch (A/B runs).
  static constexpr int kFaTokensPerRun = 4;
  bool fa_on = true;
  // Prefill GEMMs of q/k/v and of gate/up as one cuBLAS call each (the weights
  // dequantized into consecutive rows of w16); STRIX_CUDA_MERGE=0: one per weight.
  bool merge_on = true;
  bool fa_batch = false;  // this micro-batch takes attention_prefill
  // A micro-batch of at most kFusedMaxTokens tokens, each of its own sequence
  // (batched decode), runs attention_decode for all of them in one launch;
  // STRIX_CUDA_BATCH_DECODE=0 keeps rope_kv_store + attention() for it.
  static constexpr int kFusedMaxTokens = 512;
  bool fused_on = true;
  // Each forward's top_logits (device greedy); STRIX_CUDA_TOP_LOGITS=0 leaves it out (A/B of its
  // cost: top_logits() is then empty and a greedy sampler reads the whole row, as before it).
  bool top_on = true;
  // Exact numerics (ContextOptions::exact_numerics or STRIX_CUDA_EXACT=1; exact.h): libllama's
  // CPU float order in every op, for dense models of F32 / F16 / Q8_0 / Q4_K / Q6_K weights; rope_table holds the
  // host's cos/sin of every position (ops::rope_shift), n_rot floats a position.
  bool exact = false;
  DevMem rope_table;
  bool fused_batch = false;  // this micro-batch takes the batched attention_decode
  std::vector<uint8_t> seq_seen;
  Profile prof;
  // f16 copies of the weights for the GEMM path (prefill, batched decode of
  // more than 8 tokens), made on first use and kept, instead of dequantizing
  // every weight into w16 at every forward: the same values, so the same
  // results. On when the copies take at most a quarter of the GPU's memory and
  // fit in what is free after the context's own buffers;
  // STRIX_CUDA_F16_WEIGHTS=0 / 1 turns them off / on.
  bool f16_keep = false;
  // by the weights of one GEMM: its first weight's data and their count (the
  // forward always groups the same weights)
  std::map<std::pair<const uint8_t*, size_t>, DevMem> f16_of;
  void mark(Profile::Kind k) { prof.mark(st(), k); }

  std::vector<int32_t> output_of, out_rows;
  std::vector<int32_t> out_ids_mb;  // one micro-batch's output rows (decode's scratch)
  // The logits of the last decode's outputs: copied after each micro-batch
  // when the decode took several, else all at once when logits() first asks
  // (on_host), so a greedy step copies only top_host / top_ids_host, the
  // kTopLogits largest of each row.
  // All three in page-locked memory (HostVec), as llama.cpp keeps its outputs.
  HostVec<float> logits;
  bool on_host = true;
  HostVec<float> top_host;
  HostVec<int32_t> top_ids_host;
  int32_t n_outputs = 0;

  // The output row of batch index i (negative: from the end), or throws.
  int32_t output_row(int32_t i) const {
    int32_t row = -1;
    if (i < 0) {
      row = n_outputs + i;
    } else if (static_cast<size_t>(i) < output_of.size()) {
      row = output_of[static_cast<size_t>(i)];
    }
    if (row < 0 || row >= n_outputs) throw Error("logits: batch index " + std::to_string(i) + " has no output");
    return row;
  }
  std::span<const float> logits_row(int32_t row) {
    const int64_t n_vocab = model.hparams().n_vocab;
    if (!on_host) {
      check(cudaMemcpyAsync(logits.data(), F(logits_dev), sizeof(float) * logits.size(), cudaMemcpyDeviceToHost, st()),
            "downloading logits");
      dev.sync("downloading logits");
      on_host = true;
    }
    return {logits.data() + static_cast<size_t>(row) * n_vocab, static_cast<size_t>(n_vocab)};
  }

  Impl(const Model& m, const ContextOptions& o, GpuPart p = {})
      : model(m), opts(o), part(std::move(p)), first_layer(part.first_layer) {
    check_model(m);
    const Hparams& hp = m.hparams();
    if (first_layer < 0 || first_layer > hp.n_layer || (first_layer > 0 && (!part.kv || !part.hidden))) {
      throw Error("CUDA context: a partial offload needs its first layer (0.." + std::to_string(hp.n_layer) +
                  "), the shared KV bookkeeping and the CPU's hidden state");
    }
    if (o.n_ubatch <= 0 || o.n_ctx <= 0 || o.n_seq_max <= 0) throw Error("CUDA context: bad n_ctx/n_ubatch/n_seq_max");
    const int64_t most = attention_max_cells(static_cast<int>(hp.head_dim_k));
    if (o.n_ctx > most && o.n_seq_max == 1) {
      throw Refusal("the CUDA attention runs at most " + std::to_string(most) + " cells per sequence so far; lower -c");
    }
    seq_cap = std::min<int64_t>(o.n_ctx, most);
    const char* ex = std::getenv("STRIX_CUDA_EXACT");
    exact = o.exact_numerics || (ex && std::string(ex) == "1");
    if (exact) check_exact(m);
    const char* mg = std::getenv("STRIX_CUDA_MERGE");  // read before allocate(): it sizes the scratch
    merge_on = !(mg && std::string(mg) == "0");
    upload();
    bind();
    allocate();
    if (exact) upload_rope_table();
    choose_f16_copies();
    const char* g = std::getenv("STRIX_CUDA_GRAPHS");
    use_graphs = !(g && std::string(g) == "0");
    const char* fa = std::getenv("STRIX_CUDA_FA");
    fa_on = !(fa && std::string(fa) == "0");
    const char* bd = std::getenv("STRIX_CUDA_BATCH_DECODE");
    fused_on = !(bd && std::string(bd) == "0");
    const char* tl = std::getenv("STRIX_CUDA_TOP_LOGITS");
    top_on = !(tl && std::string(tl) == "0");
    seq_seen.assign(static_cast<size_t>(o.n_seq_max), 0);
  }
  ~Impl() {
    if (decode_graph) cudaGraphExecDestroy(decode_graph);
  }

  void decode_one(const int32_t* d_ids, int ub) {
    if (!decode_graph) {
      cudaGraph_t g = nullptr;
      check(cudaStreamBeginCapture(st(), cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
      try {
        forward(1, d_ids, d_ids + ub, d_ids + 2 * ub, d_ids + 3 * ub, 1, static_cast<int>(seq_cap));
      } catch (...) {
        cudaStreamEndCapture(st(), &g);
        if (g) cudaGraphDestroy(g);
        throw;
      }
      check(cudaStreamEndCapture(st(), &g), "cudaStreamEndCapture");
      const cudaError_t e = cudaGraphInstantiate(&decode_graph, g, 0);
      cudaGraphDestroy(g);
      check(e, "cudaGraphInstantiate");
    }
    check(cudaGraphLaunch(decode_graph, st()), "cudaGraphLaunch");
  }

  // Whether weight w runs here: all of them, or under partial offload those
  // of layers [first_layer, n_layer), the output norm and head (the token
  // embedding only when it is also the head) and the model-wide vectors.
  bool on_gpu(const Weight& w) const {
    if (first_layer == 0) return true;
    const std::string_view name = w.name;
    if (name.starts_with("blk.")) {
      int64_t il = -1;
      std::from_chars(name.data() + 4, name.data() + name.size(), il);
      return il >= first_layer;
    }
    if (name == "token_embd.weight") {
      for (const Weight& o : model.weights()) {
        if (std::string_view(o.name) == "output.weight") return false;
      }
      return true;  // tied: the output head
    }
    return true;
  }

  void upload() {
    // one allocation for all weights; tied weights (same mmap data) once
    std::map<const uint8_t*, size_t> offset;
    size_t total = 0;
    for (const Weight& w : model.weights()) {
      if (offset.count(w.data) || !on_gpu(w)) continue;
      offset[w.data] = total;
      const size_t bytes = w.nb2 ? w.nb2 * static_cast<size_t>(w.ne[2]) : w.nb1 * static_cast<size_t>(w.ne[1]);
      total += (bytes + 255) / 256 * 256;
    }
    weights = DevMem(total, "the model weights");
    weight_bytes = total;
    std::vector<std::pair<const uint8_t*, size_t>> sizes;
    for (const Weight& w : model.weights()) {
      if (!on_gpu(w)) continue;
      const uint8_t* d = weights.as<uint8_t>() + offset.at(w.data);
      if (dev_of.count(w.data)) continue;
      dev_of[w.data] = d;
      const size_t bytes = w.nb2 ? w.nb2 * static_cast<size_t>(w.ne[2]) : w.nb1 * static_cast<size_t>(w.ne[1]);
      check(cudaMemcpy(const_cast<uint8_t*>(d), w.data, bytes, cudaMemcpyHostToDevice), "uploading the weights");
    }
  }

  // Exact numerics cover dense models whose matrices are F32, F16, Q8_0, Q6_K or Q4_K (rows a
  // multiple of 8: the ones libllama repacks) (exact.h).
  static void check_exact(const Model& m) {
    const std::string file = path_of(m);
    if (m.hparams().n_expert > 0) {
      throw Refusal(file + ": exact numerics (--exact) do not cover mixtures of experts on CUDA yet");
    }
    for (const Weight& w : m.weights()) {
      if (w.ne[1] == 1 && w.ne[2] == 1) continue;
      const GgmlType t = w.type;
      const bool covered = t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::Q8_0 || t == GgmlType::Q6_K ||
                           (t == GgmlType::Q4_K && w.ne[1] % 8 == 0);
      if (!covered) {
        throw Refusal(file +
                      ": exact numerics (--exact) cover F32, F16, Q8_0, Q6_K and Q4_K weights (Q4_K with rows a "
                      "multiple of 8) on CUDA so far; tensor " +
                      std::string(w.name) + " is " + type_name(static_cast<uint32_t>(t)) + " with " +
                      std::to_string(w.ne[1]) + " rows");
      }
    }
  }

  // The host's cos/sin of every position a sequence may take (the CPU's rope_cache).
  void upload_rope_table() {
    const Hparams& hp = model.hparams();
    const int64_t n_rot = hp.rope.n_rot;
    const auto names = by_name(model);
    const auto ff = names.find("rope_freqs.weight");
    const float* ff_host = ff == names.end() ? nullptr : reinterpret_cast<const float*>(ff->second->data);
    std::vector<float> tab(static_cast<size_t>(seq_cap * n_rot));
    for (int64_t p = 0; p < seq_cap; ++p) {
      const ops::RopeShift sh = ops::rope_shift(static_cast<int32_t>(p), hp.rope, ff_host);
      std::copy(sh.cache.begin(), sh.cache.end(), tab.begin() + p * n_rot);
    }
    rope_table = DevMem(sizeof(float) * std::max<size_t>(tab.size(), 1), "the RoPE table of exact numerics");
    check(cudaMemcpy(rope_table.as<void>(), tab.data(), sizeof(float) * tab.size(), cudaMemcpyHostToDevice),
          "uploading the RoPE table");
  }

  DevWeight dw(const Weight& w) const {
    if (!w.present()) return {};
    return {w.type, w.ne[0], w.ne[1], w.nb1, dev_of.at(w.data)};
  }
  const float* dv(const Weight* w) const { return w ? reinterpret_cast<const float*>(dev_of.at(w->data)) : nullptr; }

  void bind() {
    const Hparams& hp = model.hparams();
    const auto names = by_name(model);
    auto get = [&](const std::string& n) -> const Weight* {
      const auto it = names.find(n);
      return it == names.end() ? nullptr : it->second;
    };
    auto need = [&](const std::string& n) -> const Weight& {
      const Weight* w = get(n);
      if (!w) throw Error(model.path() + ": the CUDA forward expected tensor " + n);
      return *w;
    };
    if (first_layer == 0) tok_embd = dw(need("token_embd.weight"));  // partial offload: the CPU looks tokens up
    const Weight* out = get("output.weight");
    output = dw(out ? *out : need("token_embd.weight"));
    output_norm = dv(&need("output_norm.weight"));
    rope_freqs = dv(get("rope_freqs.weight"));
    if (const MoeArch* a = moe_arch(hp.arch)) moe_norm_weights = a->norm_weights;
    layers.resize(hp.n_layer);
    for (int64_t il = first_layer; il < hp.n_layer; ++il) {
      const std::string p = "blk." + std::to_string(il) + ".";
      Layer& L = layers[il];
      L.attn_norm = dv(&need(p + "attn_norm.weight"));
      L.ffn_norm = dv(&need(p + "ffn_norm.weight"));
      if (const Weight* w = get(p + "attn_qkv.weight")) {
        L.wqkv = dw(*w);
        L.bqkv = dv(get(p + "attn_qkv.bias"));
      } else {
        L.wq = dw(need(p + "attn_q.weight"));
        L.wk = dw(need(p + "attn_k.weight"));
        L.wv = dw(need(p + "attn_v.weight"));
        L.bq = dv(get(p + "attn_q.bias"));
        L.bk = dv(get(p + "attn_k.bias"));
        L.bv = dv(get(p + "attn_v.bias"));
      }
      L.wo = dw(need(p + "attn_output.weight"));
      L.bo = dv(get(p + "attn_output.bias"));
      L.q_norm = dv(get(p + "attn_q_norm.weight"));
      L.k_norm = dv(get(p + "attn_k_norm.weight"));
      if (const Weight* qn = get(p + "attn_q_norm.weight")) L.qk_norm_full = qn->ne[0] != hp.head_dim_k;
      if (const Weight* r = get(p + "ffn_gate_inp.weight")) {
        auto experts = [&](const Weight& w) { return DevExperts{dw(w), w.nb2, w.ne[2]}; };
        L.moe = true;
        L.gate_inp = dw(*r);
        L.gate_exps = experts(need(p + "ffn_gate_exps.weight"));
        L.up_exps = experts(need(p + "ffn_up_exps.weight"));
        L.down_exps = experts(need(p + "ffn_down_exps.weight"));
        continue;
      }
      L.gate = dw(need(p + "ffn_gate.weight"));
      L.up = dw(need(p + "ffn_up.weight"));
      L.down = dw(need(p + "ffn_down.weight"));
    }
  }

  void allocate() {
    const Hparams& hp = model.hparams();
    const int64_t ub = opts.n_ubatch;
    const int64_t qkv_w = hp.q_dim() + hp.k_dim() + hp.v_dim();
    const int64_t att_w = hp.n_head * hp.head_dim_v;
    const int64_t ffw = std::max(hp.n_ff, hp.n_ff_exp);  // the widest FFN: dense, or one expert's
    wide = std::max({hp.n_embd, hp.q_dim(), att_w, ffw});
    int64_t max_ne0 = 0, max_w = 0;
    for (const Weight& w : model.weights()) {
      if (w.ne[1] <= 1) continue;
      max_ne0 = std::max(max_ne0, w.ne[0]);
      if (w.type != GgmlType::F32) max_w = std::max(max_w, w.ne[0] * w.ne[1]);
    }
    auto f32 = [&](int64_t width, const char* what) { return DevMem(sizeof(float) * ub * width, what); };
    x = f32(hp.n_embd, "the residual stream");
    x_alt = f32(hp.n_embd, "the residual stream");
    normed = f32(hp.n_embd, "normed activations");
    cur = f32(wide, "activations");
    qkv = f32(qkv_w, "q/k/v activations");
    k = f32(hp.k_dim(), "k activations");
    v = f32(hp.v_dim(), "v activations");
    att = f32(att_w, "attention output");
    ff_a = f32(ffw, "feed-forward activations");
    ff_b = f32(ffw, "feed-forward activations");
    tmp = f32(hp.n_embd, "activations");
    logits_dev = f32(hp.n_vocab, "the logits");
    top_dev = f32(kTopLogits, "the largest logits");
    top_ids_dev = DevMem(sizeof(int32_t) * ub * kTopLogits, "the ids of the largest logits");
    top_scratch = DevMem(top_logits_scratch_bytes(ub, hp.n_vocab), "the largest logits' scratch");
    check(cudaMemset(top_scratch.as(), 0, top_scratch.bytes()), "zeroing the largest logits' scratch");
    ids = DevMem(sizeof(int32_t) * 4 * ub, "batch ids");
    ids_host.resize(static_cast<size_t>(4 * ub), "batch ids");
    xr = DevMem(sizeof(float) * ub * std::max<int64_t>(max_ne0, 1), "rounded activations");
    const int64_t gq = (exact ? ub : std::min<int64_t>(ub, kGemvMaxTokens)) * std::max<int64_t>(max_ne0, 32);
    xq = DevMem(static_cast<size_t>(gq), "quantized activations");
    xqd = DevMem(sizeof(float) * static_cast<size_t>(gq / 32), "quantized activation scales");
    if (ub > kGemvMaxTokens) {
      if (merge_on) {
        for (const Layer& L : layers) {
          if (L.wq.data) max_w = std::max(max_w, L.wq.ne0 * (L.wq.ne1 + L.wk.ne1 + L.wv.ne1));
          max_w = std::max(max_w, L.gate.ne0 * (L.gate.ne1 + L.up.ne1));
          if (L.moe) max_w = std::max(max_w, L.gate_exps.w.ne0 * (L.gate_exps.w.ne1 + L.up_exps.w.ne1));
        }
        ff_ab = DevMem(sizeof(float) * ub * 2 * ffw, "the gate/up activations of the prefill GEMM");
      }
      w16 = DevMem(sizeof(uint16_t) * std::max<int64_t>(max_w, 1), "the f16 weight scratch of the prefill GEMM");
      x16 = DevMem(sizeof(uint16_t) * ub * max_ne0, "the f16 activation scratch of the prefill GEMM");
    }
    if (hp.n_expert > 0) {
      const int64_t ne = hp.n_expert, pairs = ub * hp.n_expert_used;
      const int64_t dec = std::min<int64_t>(ub, kGemvMaxTokens) * hp.n_expert_used;  // decode pairs
      const int64_t dec_w = std::max(hp.n_embd, hp.n_ff_exp);
      moe_logits = f32(ne, "the router logits");
      moe_ids = DevMem(sizeof(int32_t) * pairs, "the selected experts");
      moe_w = DevMem(sizeof(float) * pairs, "the expert weights");
      moe_map = DevMem(sizeof(int32_t) * 2 * pairs, "the expert grouping");
      moe_y = DevMem(sizeof(float) * pairs * hp.n_embd, "the expert outputs");
      if (ub > kGemvMaxTokens) moe_xg = DevMem(sizeof(float) * pairs * hp.n_embd, "the expert inputs");
      moe_g = DevMem(sizeof(float) * dec * hp.n_ff_exp, "the expert gate activations");
      moe_u = DevMem(sizeof(float) * dec * hp.n_ff_exp, "the expert up activations");
      moe_xq = DevMem(static_cast<size_t>(dec * dec_w), "the quantized expert activations");
      moe_xqd = DevMem(sizeof(float) * static_cast<size_t>(dec * dec_w / 32), "the expert activation scales");
      moe_xr = DevMem(sizeof(float) * static_cast<size_t>(dec * dec_w), "the rounded expert activations");
      const char* mg = std::getenv("STRIX_CUDA_MOE_GEMM");
      moe_gemm_on = !(mg && std::string(mg) == "0");
      if (!moe_gemm_on && ub > kGemvMaxTokens) {
        moe_pq = DevMem(static_cast<size_t>(ub * dec_w), "the quantized expert rows");
        moe_pqd = DevMem(sizeof(float) * static_cast<size_t>(ub * dec_w / 32), "the expert row scales");
      }
    }
    if (part.kv) {  // partial offload: the CPU context's bookkeeping, the GPU layers' cells here
      kvc = part.kv;
      if (kvc->n_seq_max() != opts.n_seq_max || kvc->k_dim() != hp.k_dim() || kvc->v_dim() != hp.v_dim()) {
        throw Error("CUDA context: the shared KV bookkeeping has other sequences or rows than this context");
      }
      hidden_in = f32(hp.n_embd, "the CPU layers' hidden state");
      hidden_host.resize(static_cast<size_t>(ub * hp.n_embd), "the CPU layers' hidden state");
      std::fill_n(hidden_host.data(), hidden_host.size(), 0.0f);
    } else {
      kvc_own = std::make_unique<KvCache>(KvCache::Options{.n_layer = hp.n_layer,
                                                           .k_dim = hp.k_dim(),
                                                           .v_dim = hp.v_dim(),
                                                           .n_cells = opts.n_ctx,
                                                           .n_seq_max = opts.n_seq_max,
                                                           .host_storage = false});
      kvc = kvc_own.get();
    }
    kvc->set_block_copier(&Impl::copy_block, this);
    const size_t cells = static_cast<size_t>(n_kv_layers()) * kvc->n_blocks() * kvc->block_size();
    kcache = DevMem(sizeof(uint16_t) * cells * hp.k_dim(), "the K cache");
    vcache = DevMem(sizeof(uint16_t) * cells * hp.v_dim(), "the V cache");
    max_blocks = static_cast<int>((seq_cap + kvc->block_size() - 1) / kvc->block_size());
    tables_host.assign(static_cast<size_t>(opts.n_seq_max) * max_blocks, 0);
    tables_sent = tables_host;
    tables = DevMem(sizeof(int32_t) * tables_host.size(), "the KV block tables");
    check(cudaMemset(tables.as<void>(), 0, tables.bytes()), "zeroing the KV block tables");
    // the one-token attention's split context (attention_decode)
    // STRIX_CUDA_DECODE_SPLIT: 0 turns the split off, N > 1 sets the fewest cells per split (A/B runs)
    if (const char* e = std::getenv("STRIX_CUDA_DECODE_SPLIT")) {
      const int v = std::atoi(e);
      if (v == 0) split_off = true;
      if (v >= 64 && v % 64 == 0) min_chunk = v;
    }
    max_split = split_off ? 1
                          : attention_decode_splits(static_cast<int>(hp.n_head_kv), static_cast<int>(seq_cap),
                                                    kMaxDecodeSplit, min_chunk);
    if (max_split > 1) {
      // the most token-splits of one launch: one token, or a batch of up to kFusedMaxTokens
      const int n_fused = static_cast<int>(std::min<int64_t>(ub, kFusedMaxTokens));
      int64_t ts = 0;
      for (int n = 1; n <= n_fused; ++n) {
        ts = std::max<int64_t>(ts, static_cast<int64_t>(n) * attention_decode_splits(static_cast<int>(hp.n_head_kv) * n,
                                                                                     static_cast<int>(seq_cap),
                                                                                     kMaxDecodeSplit, min_chunk));
      }
      split_ml = DevMem(sizeof(float) * 2 * hp.n_head * ts, "the split attention's partial sums");
      split_o = DevMem(sizeof(float) * hp.n_head * ts * hp.head_dim_v, "the split attention's partial outputs");
      split_count = DevMem(sizeof(unsigned) * hp.n_head_kv * n_fused, "the split attention's counters");
      check(cudaMemset(split_count.as<void>(), 0, split_count.bytes()), "zeroing the split attention's counters");
    }
  }

  cudaStream_t st() const { return dev.stream(); }
  float* F(const DevMem& m) const { return m.as<float>(); }
  int64_t n_kv_layers() const { return model.hparams().n_layer - first_layer; }  // layers whose cells live here

  KvLayout kv_layer(int64_t il) const {
    const Hparams& hp = model.hparams();
    const size_t per = static_cast<size_t>(kvc->n_blocks()) * kvc->block_size();
    const int64_t at = il - first_layer;  // the GPU's cells start at its first layer
    KvLayout l{kcache.as<uint16_t>() + at * per * hp.k_dim(), vcache.as<uint16_t>() + at * per * hp.v_dim(), hp.k_dim(),
               hp.v_dim()};
    l.blocks = tables.as<int32_t>();
    l.block_shift = __builtin_ctz(static_cast<unsigned>(kvc->block_size()));
    l.max_blocks = max_blocks;
    return l;
  }

  // KvCache's copy-on-write: block `from`'s cells of every layer into `to` (in stream order).
  static void copy_block(void* user, int32_t from, int32_t to) {
    Impl& m = *static_cast<Impl*>(user);
    if (m.n_kv_layers() == 0) return;  // partial offload of the output layer alone: no cells here
    const Hparams& hp = m.model.hparams();
    const size_t bs = static_cast<size_t>(m.kvc->block_size()), nb = static_cast<size_t>(m.kvc->n_blocks());
    for (const auto& [mem, dim] : {std::pair{&m.kcache, hp.k_dim()}, std::pair{&m.vcache, hp.v_dim()}}) {
      const size_t row = sizeof(uint16_t) * bs * static_cast<size_t>(dim);  // one block of one layer
      uint8_t* base = mem->as<uint8_t>();
      check(cudaMemcpy2DAsync(base + row * to, row * nb, base + row * from, row * nb, row,
                              static_cast<size_t>(m.n_kv_layers()), cudaMemcpyDeviceToDevice, m.st()),
            "copying a KV block");
    }
  }

  // Context::seq_cut on the GPU's cells: each layer's cos/sin of the shift
  // made on the host as the CPU's rope_shift makes them (Arch::key_rope), the
  // cells moved by kv_move through the block tables KvCache::cut_cells leaves.
  void cut(int seq, int32_t p0, int32_t p1) {
    if (seq < 0 || seq >= opts.n_seq_max) throw Error("seq_cut: sequence id out of range");
    if (p0 == p1) return;
    const Hparams& hp = model.hparams();
    const int n_rot = static_cast<int>(hp.rope.n_rot);
    std::vector<float> cs(static_cast<size_t>(hp.n_layer) * n_rot);
    bool neox = false;
    for (int64_t il = first_layer; il < hp.n_layer; ++il) {
      const KeyRope kr = model.arch().key_rope(hp, il, seq_cap);
      if (kr.rope == nullptr || kr.rope->n_rot != n_rot) {
        throw Refusal("moving cached cells: this model's layers do not share one RoPE, which the CUDA backend needs");
      }
      const ops::RopeShift sh = ops::rope_shift(p0 - p1, *kr.rope, kr.freq_factors);
      std::copy(sh.cache.begin(), sh.cache.end(), cs.begin() + il * n_rot);
      neox = kr.rope->mode == RopeMode::kNeox;
    }
    if (!cut_cs.as()) {
      cut_cs = DevMem(sizeof(float) * cs.size(), "the KV shift's cos/sin table");
      cut_scratch = DevMem(sizeof(uint16_t) * static_cast<size_t>(seq_cap) * (hp.k_dim() + hp.v_dim()),
                           "the scratch of moved KV cells");
    }
    check(cudaMemcpyAsync(cut_cs.as(), cs.data(), sizeof(float) * cs.size(), cudaMemcpyHostToDevice, st()),
          "uploading the KV shift's cos/sin table");
    kvc->cut_cells(seq, p0, p1, [&](int32_t n) {
      if (part.move_cells) part.move_cells(seq, p0, p1, n);  // partial offload: the CPU layers' cells
      upload_tables();
      for (int64_t il = first_layer; il < hp.n_layer; ++il) {
        kv_move(kv_layer(il), seq, p0, p1, n, F(cut_cs) + il * n_rot, n_rot, neox, static_cast<int>(hp.head_dim_k),
                cut_scratch.as<uint16_t>(), st());
      }
      dev.sync("moving cached cells");  // cs and the tables are host memory the copies read
    });
  }

  // Every sequence's block table into `tables` (entries past a table's end stay
  // stale and unread); skipped when the tables did not change since the last
  // upload (a decode step takes a new block once in 32 tokens).
  void upload_tables() {
    for (int s = 0; s < opts.n_seq_max; ++s) {
      const int32_t n = std::min<int32_t>(kvc->n_seq_blocks(s), max_blocks);
      std::copy_n(kvc->block_table(s), n, tables_host.begin() + static_cast<ptrdiff_t>(s) * max_blocks);
    }
    if (tables_host == tables_sent) return;
    check(cudaMemcpyAsync(tables.as<void>(), tables_host.data(), tables.bytes(), cudaMemcpyHostToDevice, st()),
          "uploading the KV block tables");
    tables_sent = tables_host;
  }

  // Weights of one class multiply the same activations: the same CPU partner
  // rounding (round_partner) and the same GEMV kind (integer or float).
  static int act_class(GgmlType t) { return static_cast<int>(round_partner(t)) * 2 + (gemv_q_supported(t) ? 1 : 0); }
  struct Act {
    const float* p;
    int64_t stride;
    const int8_t* q = nullptr;  // the integer GEMV's quantized activations (gemv_q), when set
    const float* d = nullptr;
    int cls = -1;  // act_class they were quantized for
  };
  // Whether n rows of `width` activations for weight type t go through the integer GEMV.
  bool integer_gemv(GgmlType t, int n, int64_t width) const {
    if (exact) {  // gemv_q_exact: any n
      return (t == GgmlType::Q8_0 && width % 32 == 0) ||
             ((t == GgmlType::Q4_K || t == GgmlType::Q6_K) && width % 256 == 0);
    }
    return n <= kGemvMaxTokens && gemv_q_supported(t) && width % gemv_q_block(t) == 0;
  }
  Act rounded(GgmlType t, const float* in, int64_t in_stride, int n, int64_t width) {
    if (integer_gemv(t, n, width)) {
      quantize_act(t, in, in_stride, n, width, xq.as<int8_t>(), F(xqd), st());
      mark(Profile::kAct);
      return {nullptr, 0, xq.as<int8_t>(), F(xqd), act_class(t)};
    }
    if (round_activations(t, in, in_stride, n, width, F(xr), width, st())) {
      mark(Profile::kAct);
      return {F(xr), width};
    }
    return {in, in_stride};
  }

  void matmul_act(const DevWeight& w, Act a, int n, float* y, int64_t y_stride, const float* bias) {
    if (n == 0) return;
    if (a.q) {
      if (exact) {
        gemv_q_exact(w, a.q, a.d, n, y, y_stride, st());
      } else {
        gemv_q(w, a.q, a.d, n, y, y_stride, st());
      }
      mark(Profile::kGemv);
    } else if (exact) {
      gemv_float_exact(w, a.p, a.stride, n, y, y_stride, st());
      mark(Profile::kGemv);
    } else if (n <= kGemvMaxTokens) {
      gemv(w, a.p, a.stride, n, y, y_stride, st());
      mark(Profile::kGemv);
    } else if (w.type == GgmlType::F32) {
      const float one = 1.0f, zero = 0.0f;
      check_blas(cublasSgemm(dev.blas(), CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(w.ne1), n, static_cast<int>(w.ne0),
                             &one, reinterpret_cast<const float*>(w.data), static_cast<int>(w.nb1 / sizeof(float)), a.p,
                             static_cast<int>(a.stride), &zero, y, static_cast<int>(y_stride)),
                 "cublasSgemm");
      mark(Profile::kGemm);
    } else {
      to_f16(a.p, a.stride, n, w.ne0, x16.as<uint16_t>(), st());
      mark(Profile::kAct);
      gemm_f16_ready({&w}, n, y, y_stride);
    }
    if (bias) {
      add_bias(y, y_stride, bias, n, w.ne1, st());
      mark(Profile::kOther);
    }
  }

  void choose_f16_copies() {
    if (opts.n_ubatch <= kGemvMaxTokens || exact) return;  // no GEMM path
    const char* e = std::getenv("STRIX_CUDA_F16_WEIGHTS");
    if (e && std::string(e) == "0") return;
    size_t bytes = 0;
    for (const Weight& w : model.weights()) {
      if (w.ne[1] > 1 && w.type != GgmlType::F32 && on_gpu(w)) {
        bytes += sizeof(uint16_t) * static_cast<size_t>(w.ne[0] * w.ne[1] * std::max<int64_t>(w.ne[2], 1));
      }
    }
    size_t free_b = 0, total_b = 0;
    check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
    f16_keep = (e && std::string(e) == "1") || (bytes <= total_b / 4 && bytes + (size_t{1} << 30) <= free_b);
  }

  // The f16 rows of these weights, one after the other: the kept copy (made
  // now if this is its first use), or w16 freshly dequantized.
  const void* f16_rows(std::initializer_list<const DevWeight*> ws) {
    const int64_t k = (*ws.begin())->ne0;
    const std::pair<const uint8_t*, size_t> key{(*ws.begin())->data, ws.size()};
    int64_t rows = 0;
    for (const DevWeight* w : ws) rows += w->ne1;
    if (f16_keep) {
      const auto it = f16_of.find(key);
      if (it != f16_of.end()) return it->second.as();
    }
    DevMem copy;
    if (f16_keep)
      copy = DevMem(sizeof(uint16_t) * static_cast<size_t>(rows * k), "an f16 copy of weights for the GEMM");
    uint16_t* out = f16_keep ? copy.as<uint16_t>() : w16.as<uint16_t>();
    rows = 0;
    for (const DevWeight* w : ws) {
      dequant_f16(*w, out + rows * k, st());
      rows += w->ne1;
    }
    mark(Profile::kDequant);
    if (f16_keep) f16_of.emplace(key, std::move(copy));
    return out;
  }

  // The prefill GEMM: x16 (activations_f16 of the weights' class) times the
  // weights in f16 (f16_rows), in one cublasGemmEx (f32 accumulation):
  // y[t][r] over the weights' rows in order.
  void gemm_f16_ready(std::initializer_list<const DevWeight*> ws, int n, float* y, int64_t y_stride) {
    const int64_t k = (*ws.begin())->ne0;
    int64_t rows = 0;
    for (const DevWeight* w : ws) rows += w->ne1;
    const void* wf = f16_rows(ws);
    const float one = 1.0f, zero = 0.0f;
    check_blas(cublasGemmEx(dev.blas(), CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(rows), n, static_cast<int>(k), &one,
                            wf, CUDA_R_16F, static_cast<int>(k), x16.as(), CUDA_R_16F, static_cast<int>(k), &zero, y,
                            CUDA_R_32F, static_cast<int>(y_stride), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx");
    mark(Profile::kGemm);
  }
  void gemm_f16(std::initializer_list<const DevWeight*> ws, const float* in, int64_t in_stride, int n, float* y,
                int64_t y_stride) {
    const DevWeight& w0 = **ws.begin();
    activations_f16(w0.type, in, in_stride, n, w0.ne0, x16.as<uint16_t>(), st());
    mark(Profile::kAct);
    gemm_f16_ready(ws, n, y, y_stride);
  }
  bool gemm_path(const DevWeight& w, int n) const { return !exact && n > kGemvMaxTokens && w.type != GgmlType::F32; }
  // Whether these weights go through one merged prefill GEMM.
  bool mergeable(std::initializer_list<const DevWeight*> ws, int n) const {
    if (!merge_on) return false;
    const DevWeight& w0 = **ws.begin();
    for (const DevWeight* w : ws) {
      if (!w->data || !gemm_path(*w, n) || act_class(w->type) != act_class(w0.type) || w->ne0 != w0.ne0) return false;
    }
    return true;
  }

  void matmul(const DevWeight& w, const float* in, int64_t in_stride, int n, float* y, int64_t y_stride,
              const float* bias) {
    if (n == 0) return;
    if (gemm_path(w, n)) {
      gemm_f16({&w}, in, in_stride, n, y, y_stride);
      if (bias) {
        add_bias(y, y_stride, bias, n, w.ne1, st());
        mark(Profile::kOther);
      }
      return;
    }
    matmul_act(w, rounded(w.type, in, in_stride, n, w.ne0), n, y, y_stride, bias);
  }

  // Several products of one input: rounded once when the weights share a class and a row length.
  struct Out {
    const DevWeight* w;
    float* y;
    int64_t y_stride;
    const float* bias;
  };
  void matmul_group(std::initializer_list<Out> outs, const float* in, int64_t in_stride, int n) {
    matmul_group(outs, in, in_stride, n, Act{nullptr, 0});
  }
  // `pre`: the input already quantized (rms_norm_quant), used by the weights of its class.
  void matmul_group(std::initializer_list<Out> outs, const float* in, int64_t in_stride, int n, Act pre) {
    const Out& first = *outs.begin();
    auto usable = [&](const Out& o) { return pre.q && pre.cls == act_class(o.w->type) && o.w->ne0 == first.w->ne0; };
    bool shared = true;
    for (const Out& o : outs) {
      shared = shared && act_class(o.w->type) == act_class(first.w->type) && o.w->ne0 == first.w->ne0;
    }
    if (shared && gemm_path(*first.w, n)) {  // the activations rounded and converted once
      activations_f16(first.w->type, in, in_stride, n, first.w->ne0, x16.as<uint16_t>(), st());
      mark(Profile::kAct);
      for (const Out& o : outs) {
        gemm_f16_ready({o.w}, n, o.y, o.y_stride);
        if (o.bias) {
          add_bias(o.y, o.y_stride, o.bias, n, o.w->ne1, st());
          mark(Profile::kOther);
        }
      }
      return;
    }
    if (!shared) {
      for (const Out& o : outs) {
        if (usable(o)) {
          matmul_act(*o.w, pre, n, o.y, o.y_stride, o.bias);
        } else {
          matmul(*o.w, in, in_stride, n, o.y, o.y_stride, o.bias);
        }
      }
      return;
    }
    const Act a = usable(first) ? pre : rounded(first.w->type, in, in_stride, n, first.w->ne0);
    if (a.q && outs.size() > 1 && !exact) {  // one launch for all of them
      GemvOut g[3];
      int count = 0;
      for (const Out& o : outs) g[count++] = {o.w, o.y, o.y_stride};
      gemv_q_multi(g, count, a.q, a.d, n, st());
      mark(Profile::kGemv);
      for (const Out& o : outs) {
        if (o.bias) add_bias(o.y, o.y_stride, o.bias, n, o.w->ne1, st());
      }
      mark(Profile::kOther);
      return;
    }
    for (const Out& o : outs) matmul_act(*o.w, a, n, o.y, o.y_stride, o.bias);
  }

  // x += add (when set), cur = rms_norm(x) * w; quantized at once for `next`
  // when the integer GEMV multiplies it (the fused kernel).
  Act norm(const float* add, const float* w, const DevWeight& next, int n) {
    const Hparams& hp = model.hparams();
    const int64_t d = hp.n_embd;
    if (next.ne0 == d && integer_gemv(next.type, n, d)) {
      // the residual sum goes to the other residual buffer, the normed rows to `normed`
      rms_norm_quant(F(x), add, F(x_alt), n, d, w, hp.norm_eps, F(normed), next.type, xq.as<int8_t>(), F(xqd), st());
      mark(Profile::kNorm);
      if (add) std::swap(x, x_alt);
      return {F(normed), d, xq.as<int8_t>(), F(xqd), act_class(next.type)};
    }
    if (add) {
      add_rms_norm(F(x), add, F(cur), n, d, w, hp.norm_eps, st());
    } else {
      rms_norm(F(x), n, d, d, F(cur), d, w, hp.norm_eps, st());
    }
    mark(Profile::kNorm);
    return {F(cur), d};
  }
  const DevWeight& first_attn_weight(int64_t il) const {
    return layers[il].wqkv.data ? layers[il].wqkv : layers[il].wq;
  }

  // graph::self_attention: cur (normed) -> cur
  void attention_block(int64_t il, int n, const int32_t* d_pos, const int32_t* d_seq, int max_cells, Act in) {
    const Hparams& hp = model.hparams();
    const Layer& L = layers[il];
    const int64_t d = hp.n_embd, hd = hp.head_dim_k, qd = hp.q_dim(), kd = hp.k_dim(), vd = hp.v_dim();
    float *q, *kk, *vv;
    int64_t qs, ks, vs;
    if (L.wqkv.data) {
      const int64_t width = qd + kd + vd;
      matmul_group({{&L.wqkv, F(qkv), width, L.bqkv}}, in.p, d, n, in);
      if (L.q_norm) {
        // per-head norms need packed heads: unpack [q | k | v] rows (as qwen3.cpp's fused path)
        const size_t fs = sizeof(float);
        check(cudaMemcpy2DAsync(F(att), qd * fs, F(qkv), width * fs, qd * fs, n, cudaMemcpyDeviceToDevice, st()),
              "unpacking q");
        check(cudaMemcpy2DAsync(F(k), kd * fs, F(qkv) + qd, width * fs, kd * fs, n, cudaMemcpyDeviceToDevice, st()),
              "unpacking k");
        check(
            cudaMemcpy2DAsync(F(v), vd * fs, F(qkv) + qd + kd, width * fs, vd * fs, n, cudaMemcpyDeviceToDevice, st()),
            "unpacking v");
        check(cudaMemcpyAsync(F(qkv), F(att), qd * fs * n, cudaMemcpyDeviceToDevice, st()), "unpacking q");
        mark(Profile::kOther);
        q = F(qkv), kk = F(k), vv = F(v);
        qs = qd, ks = kd, vs = vd;
      } else {
        q = F(qkv), kk = F(qkv) + qd, vv = F(qkv) + qd + kd;
        qs = ks = vs = width;
      }
    } else if (!L.q_norm && mergeable({&L.wq, &L.wk, &L.wv}, n)) {
      // one GEMM into [q | k | v] rows, as the fused-qkv models' layout
      const int64_t width = qd + kd + vd;
      gemm_f16({&L.wq, &L.wk, &L.wv}, in.p, d, n, F(qkv), width);
      const float* bias[3] = {L.bq, L.bk, L.bv};
      const int64_t off[3] = {0, qd, qd + kd}, wd[3] = {qd, kd, vd};
      for (int i = 0; i < 3; ++i) {
        if (bias[i]) add_bias(F(qkv) + off[i], width, bias[i], n, wd[i], st());
      }
      mark(Profile::kOther);
      q = F(qkv), kk = F(qkv) + qd, vv = F(qkv) + qd + kd;
      qs = ks = vs = width;
    } else {
      matmul_group({{&L.wq, F(qkv), qd, L.bq}, {&L.wk, F(k), kd, L.bk}, {&L.wv, F(v), vd, L.bv}}, in.p, d, n, in);
      q = F(qkv), kk = F(k), vv = F(v);
      qs = qd, ks = kd, vs = vd;
    }
    // the q/k norms in place, before RoPE (and so before the fused decode attention, which
    // starts with RoPE: H200 run 23, qwen3moe tg128 @ d4096 was 13.5 t/s without it)
    if (L.q_norm && L.qk_norm_full) {  // graph::QkNorm::kFull
      rms_norm(q, n, qd, qs, q, qs, L.q_norm, hp.norm_eps, st());
      rms_norm(kk, n, kd, ks, kk, ks, L.k_norm, hp.norm_eps, st());
      mark(Profile::kNorm);
    } else if (L.q_norm) {
      rms_norm(q, static_cast<int64_t>(n) * hp.n_head, hd, hd, q, hd, L.q_norm, hp.norm_eps, st());
      rms_norm(kk, static_cast<int64_t>(n) * hp.n_head_kv, hd, hd, kk, hd, L.k_norm, hp.norm_eps, st());
      mark(Profile::kNorm);
    }
    const KvLayout kv = kv_layer(il);
    // one token, or one token of each of several sequences: RoPE, KV store, attention and the
    // o-projection's quantizer in one kernel (H200, run 9: 1B tg128 982 vs 928 t/s with the three kernels)
    if (exact) {
      rope_kv_store_exact(q, qs, kk, ks, vv, vs, n, hp.n_head, hp.n_head_kv, hd, static_cast<int>(hp.rope.n_rot),
                          hp.rope.mode == RopeMode::kNeox, d_pos, d_seq, F(rope_table), kv, st());
      mark(Profile::kRopeKv);
      AttnArgs a;
      a.q = q, a.q_stride = qs, a.pos = d_pos, a.seq = d_seq, a.n_tokens = n;
      a.n_head = static_cast<int>(hp.n_head), a.n_head_kv = static_cast<int>(hp.n_head_kv);
      a.head_dim_k = static_cast<int>(hp.head_dim_k), a.head_dim_v = static_cast<int>(hp.head_dim_v);
      a.kq_scale = hp.kq_scale, a.max_cells = max_cells;
      a.out = F(att), a.out_stride = hp.n_head * hp.head_dim_v;
      attention_exact(kv, a, st());
      mark(Profile::kAttention);
      matmul(L.wo, F(att), a.out_stride, n, F(cur), d, L.bo);
      return;
    }
    if ((n == 1 || fused_batch) &&
        attention_decode_fits(static_cast<int>(hp.n_head), static_cast<int>(hp.n_head_kv),
                              static_cast<int>(hp.head_dim_k), static_cast<int>(hp.head_dim_v), max_cells, max_split,
                              min_chunk, n)) {
      const int64_t att_w = hp.n_head * hp.head_dim_v;
      const int64_t group = hp.n_head / hp.n_head_kv * hp.head_dim_v;
      AttnDecode ad;
      ad.q = q, ad.k = kk, ad.v = vv;
      ad.pos = d_pos, ad.seq = d_seq;
      ad.n_tokens = n;
      ad.q_stride = qs, ad.k_stride = ks, ad.v_stride = vs, ad.out_stride = att_w;
      ad.n_head = static_cast<int>(hp.n_head), ad.n_head_kv = static_cast<int>(hp.n_head_kv);
      ad.head_dim_k = static_cast<int>(hp.head_dim_k), ad.head_dim_v = static_cast<int>(hp.head_dim_v);
      ad.kq_scale = hp.kq_scale;
      ad.max_cells = max_cells;
      ad.out = F(att);
      ad.min_chunk = min_chunk;
      if (max_split > 1) {
        ad.split_ml = F(split_ml), ad.split_o = F(split_o), ad.split_count = split_count.as<unsigned>();
        ad.max_split = max_split;
      }
      const bool quant = L.wo.ne0 == att_w && integer_gemv(L.wo.type, n, att_w) && group % gemv_q_block(L.wo.type) == 0;
      if (quant) ad.q8 = xq.as<int8_t>(), ad.d8 = F(xqd), ad.q8_block = gemv_q_block(L.wo.type);
      attention_decode(ad, hp.rope, rope_freqs, kv, st());
      mark(Profile::kAttention);
      if (quant) {
        matmul_act(L.wo, {nullptr, 0, xq.as<int8_t>(), F(xqd), act_class(L.wo.type)}, n, F(cur), d, L.bo);
      } else {
        matmul(L.wo, F(att), att_w, n, F(cur), d, L.bo);
      }
      return;
    }
    rope_kv_store(q, qs, kk, ks, vv, vs, n, hp.n_head, hp.n_head_kv, hd, d_pos, d_seq, hp.rope, rope_freqs, kv, st());
    mark(Profile::kRopeKv);
    AttnArgs a;
    a.q = q;
    a.q_stride = qs;
    a.pos = d_pos;
    a.seq = d_seq;
    a.n_tokens = n;
    a.n_head = static_cast<int>(hp.n_head);
    a.n_head_kv = static_cast<int>(hp.n_head_kv);
    a.head_dim_k = static_cast<int>(hp.head_dim_k);
    a.head_dim_v = static_cast<int>(hp.head_dim_v);
    a.kq_scale = hp.kq_scale;
    a.max_cells = max_cells;
    a.out = F(att);
    a.out_stride = hp.n_head * hp.head_dim_v;
    if (fa_batch && attention_prefill_fits(a.head_dim_k, a.head_dim_v)) {
      attention_prefill(kv, a, st());
    } else {
      attention(kv, a, st());
    }
    mark(Profile::kAttention);
    matmul(L.wo, F(att), a.out_stride, n, F(cur), d, L.bo);
  }

  // graph::gated_ffn with SiLU, or graph::moe_ffn: cur (normed) -> cur
  void ffn_block(int64_t il, int n, Act in) {
    const Layer& L = layers[il];
    if (L.moe) {
      moe_block(L, n, in);
      return;
    }
    gated_ffn(L.gate, L.up, L.down, in, n, F(cur), model.hparams().n_embd);
  }
  // The weight the FFN's input multiplies first (its type decides the norm's fused quantization).
  const DevWeight& first_ffn_weight(int64_t il) const {
    return layers[il].moe ? layers[il].gate_exps.w : layers[il].gate;
  }

  // out = down(silu(gate(in)) * up(in)) for n rows of `in` (in.stride apart)
  void gated_ffn(const DevWeight& gate, const DevWeight& up, const DevWeight& down, Act in, int n, float* out,
                 int64_t out_stride) {
    const int64_t ff = gate.ne1;
    if (ff_ab.as<void>() && up.ne1 == ff && mergeable({&gate, &up}, n)) {
      gemm_f16({&gate, &up}, in.p, in.stride, n, F(ff_ab), 2 * ff);
      if (gemm_path(down, n) && down.ne0 == ff) {  // SwiGLU fused into the down projection's input
        activations_f16_swiglu(down.type, F(ff_ab), 2 * ff, F(ff_ab) + ff, 2 * ff, n, ff, x16.as<uint16_t>(), st());
        mark(Profile::kAct);
        gemm_f16_ready({&down}, n, out, out_stride);
        return;
      }
      swiglu(F(ff_ab), 2 * ff, F(ff_ab) + ff, 2 * ff, F(ff_b), ff, n, ff, st());
      mark(Profile::kSwiglu);
      matmul(down, F(ff_b), ff, n, out, out_stride, nullptr);
      return;
    }
    matmul_group({{&gate, F(ff_a), ff, nullptr}, {&up, F(ff_b), ff, nullptr}}, in.p, in.stride, n, in);
    if (exact) {
      swiglu_exact(F(ff_a), ff, F(ff_b), ff, F(ff_b), ff, n, ff, st());
      mark(Profile::kSwiglu);
      matmul(down, F(ff_b), ff, n, out, out_stride, nullptr);
      return;
    }
    if (down.ne0 == ff && integer_gemv(down.type, n, ff)) {
      swiglu_quant(down.type, F(ff_a), ff, F(ff_b), ff, n, ff, xq.as<int8_t>(), F(xqd), nullptr, 0, st());
      mark(Profile::kSwiglu);
      matmul_act(down, {nullptr, 0, xq.as<int8_t>(), F(xqd), act_class(down.type)}, n, out, out_stride, nullptr);
      return;
    }
    swiglu(F(ff_a), ff, F(ff_b), ff, F(ff_b), ff, n, ff, st());
    mark(Profile::kSwiglu);
    matmul(down, F(ff_b), ff, n, out, out_stride, nullptr);
  }

  // graph::moe_ffn (softmax router, top-k, SiLU experts): in (normed) -> cur.
  // Up to kGemvMaxTokens tokens (decode) run without a host sync, so the
  // one-token forward stays one CUDA graph: the indirect GEMVs read each
  // pair's expert id on the device. More tokens (prefill, batched decode of
  // more than 8) read the ids back (one host sync per MoE layer, as
  // llama.cpp's mul_mat_id does), group the pairs by expert on the host as
  // ops::moe_group does, and run each used expert's FFN over its rows
  // through gated_ffn (tensor-core GEMMs, or the GEMV for up to 8 rows).
  // Either way each pair's output is weighted and the slots added in order.
  void moe_block(const Layer& L, int n, Act in) {
    const Hparams& hp = model.hparams();
    const int64_t d = hp.n_embd;
    const int k = static_cast<int>(hp.n_expert_used), n_expert = static_cast<int>(hp.n_expert);
    const DevWeight& r = L.gate_inp;
    if (in.q && integer_gemv(r.type, n, r.ne0) && in.cls != act_class(r.type)) {
      // a router of another partner type: quantized apart, xq keeps the experts' activations
      quantize_act(r.type, in.p, in.stride, n, r.ne0, moe_xq.as<int8_t>(), F(moe_xqd), st());
      mark(Profile::kAct);
      matmul_act(r, {nullptr, 0, moe_xq.as<int8_t>(), F(moe_xqd), act_class(r.type)}, n, F(moe_logits), n_expert,
                 nullptr);
    } else {
      matmul_group({{&r, F(moe_logits), n_expert, nullptr}}, in.p, in.stride, n, in);
    }
    moe_route(F(moe_logits), n_expert, n, n_expert, k, moe_norm_weights, 0.0f, moe_ids.as<int32_t>(), F(moe_w), st());
    mark(Profile::kOther);
    const int np = n * k;
    if (n <= kGemvMaxTokens) {
      moe_decode(L, n, in);
      moe_weighted_sum(F(moe_y), d, nullptr, F(moe_w), n, k, d, F(cur), d, st());
      mark(Profile::kOther);
      return;
    }
    // the one host sync: the ids, grouped as ops::moe_group (each expert's pairs in token order)
    moe_host.resize(static_cast<size_t>(np));
    check(cudaMemcpyAsync(moe_host.data(), moe_ids.as(), sizeof(int32_t) * np, cudaMemcpyDeviceToHost, st()),
          "reading the selected experts");
    dev.sync("the MoE router");
    std::vector<int32_t> offsets(static_cast<size_t>(n_expert) + 1, 0);
    for (int p = 0; p < np; ++p) {
      const int32_t x = moe_host[p];
      if (x < 0 || x >= n_expert) throw Error("the CUDA MoE router selected expert " + std::to_string(x));
      ++offsets[x + 1];
    }
    for (int x = 0; x < n_expert; ++x) offsets[x + 1] += offsets[x];
    std::vector<int32_t> map(2 * static_cast<size_t>(np));  // token of each grouped row | grouped row of each pair
    std::vector<int32_t> next(offsets.begin(), offsets.end() - 1);
    for (int p = 0; p < np; ++p) {
      const int32_t row = next[moe_host[p]]++;
      map[row] = p / k;
      map[np + p] = row;
    }
    moe_host = std::move(map);  // kept alive past the (pageable, so staged at once) upload
    int32_t* d_map = moe_map.as<int32_t>();
    check(cudaMemcpyAsync(d_map, moe_host.data(), sizeof(int32_t) * 2 * np, cudaMemcpyHostToDevice, st()),
          "uploading the expert grouping");
    gather_rows(in.p, d, d, d_map, np, F(moe_xg), st());
    mark(Profile::kOther);
    for (int x = 0; x < n_expert; ++x) {
      const int cnt = offsets[x + 1] - offsets[x];
      if (cnt == 0) continue;
      const DevWeight g = L.gate_exps.slice(x), u = L.up_exps.slice(x), dn = L.down_exps.slice(x);
      if (!moe_gemm_on && cnt > kGemvMaxTokens &&
          expert_gemv_q(g, u, dn, F(moe_xg) + offsets[x] * d, cnt, F(moe_y) + offsets[x] * d)) {
        continue;
      }
      gated_ffn(g, u, dn, Act{F(moe_xg) + offsets[x] * d, d}, cnt, F(moe_y) + offsets[x] * d, d);
    }
    moe_weighted_sum(F(moe_y), d, d_map + np, F(moe_w), n, k, d, F(cur), d, st());
    mark(Profile::kOther);
  }

  // One expert's FFN over n rows (packed, n_embd wide) through the integer
  // GEMV (STRIX_CUDA_MOE_GEMM=0); false (nothing done) unless all three are
  // Q8_0 / Q4_K / Q6_K and gate and up share their activations' type.
  bool expert_gemv_q(const DevWeight& g, const DevWeight& u, const DevWeight& dn, const float* in, int n, float* out) {
    const int64_t d = model.hparams().n_embd, ff = g.ne1;
    auto whole = [](const DevWeight& w) { return gemv_q_supported(w.type) && w.ne0 % gemv_q_block(w.type) == 0; };
    if (!whole(g) || !whole(u) || !whole(dn) || act_class(g.type) != act_class(u.type) || dn.ne0 != ff) return false;
    quantize_act(g.type, in, d, n, d, moe_pq.as<int8_t>(), F(moe_pqd), st());
    const GemvOut o[2] = {{&g, F(ff_a), ff}, {&u, F(ff_b), ff}};
    gemv_q_multi(o, 2, moe_pq.as<int8_t>(), F(moe_pqd), n, st());
    swiglu_quant(dn.type, F(ff_a), ff, F(ff_b), ff, n, ff, moe_pq.as<int8_t>(), F(moe_pqd), nullptr, 0, st());
    gemv_q(dn, moe_pq.as<int8_t>(), F(moe_pqd), n, out, d, st());
    mark(Profile::kGemv);
    return true;
  }

  // The experts' FFN of up to kGemvMaxTokens tokens through the indirect
  // GEMVs: moe_y[p] = down(silu(gate(x)) * up(x)) of pair p's expert.
  void moe_decode(const Layer& L, int n, Act in) {
    const Hparams& hp = model.hparams();
    const int64_t d = hp.n_embd, ff = L.gate_exps.w.ne1;
    const int k = static_cast<int>(hp.n_expert_used), np = n * k;
    const int32_t* ids = moe_ids.as<int32_t>();
    const DevExperts &G = L.gate_exps, &U = L.up_exps, &D = L.down_exps;
    auto integer = [](const DevExperts& e) {
      return gemv_q_supported(e.w.type) && e.w.ne0 % gemv_q_block(e.w.type) == 0;
    };
    if (integer(G) && integer(U) && act_class(G.w.type) == act_class(U.w.type)) {  // gate and up in one launch
      const int8_t* q = in.q;
      const float* qd = in.d;
      if (!q || in.cls != act_class(G.w.type)) {
        quantize_act(G.w.type, in.p, in.stride, n, d, moe_xq.as<int8_t>(), F(moe_xqd), st());
        mark(Profile::kAct);
        q = moe_xq.as<int8_t>(), qd = F(moe_xqd);
      }
      const GemvIdOut o[2] = {{&G, F(moe_g), ff}, {&U, F(moe_u), ff}};
      gemv_q_id(o, 2, ids, np, k, q, qd, st());
      mark(Profile::kGemv);
    } else {
      expert_gemv(G, in, n, np, k, F(moe_g), ff);
      expert_gemv(U, in, n, np, k, F(moe_u), ff);
    }
    if (integer(D) && D.w.ne0 == ff) {
      swiglu_quant(D.w.type, F(moe_g), ff, F(moe_u), ff, np, ff, moe_xq.as<int8_t>(), F(moe_xqd), nullptr, 0, st());
      mark(Profile::kSwiglu);
      const GemvIdOut o{&D, F(moe_y), d};
      gemv_q_id(&o, 1, ids, np, 1, moe_xq.as<int8_t>(), F(moe_xqd), st());
      mark(Profile::kGemv);
      return;
    }
    swiglu(F(moe_g), ff, F(moe_u), ff, F(moe_g), ff, np, ff, st());
    mark(Profile::kSwiglu);
    expert_gemv(D, Act{F(moe_g), ff}, np, np, 1, F(moe_y), d);
  }
  // One expert stack over np pairs, activation row p / act_div of `in` (rows
  // of them): quantized or rounded for its type as matmul() would.
  void expert_gemv(const DevExperts& e, Act in, int rows, int np, int act_div, float* y, int64_t y_stride) {
    const int64_t width = e.w.ne0;
    const int32_t* ids = moe_ids.as<int32_t>();
    if (gemv_q_supported(e.w.type) && width % gemv_q_block(e.w.type) == 0) {
      const int8_t* q = in.q;
      const float* qd = in.d;
      if (!q || in.cls != act_class(e.w.type)) {
        quantize_act(e.w.type, in.p, in.stride, rows, width, moe_xq.as<int8_t>(), F(moe_xqd), st());
        mark(Profile::kAct);
        q = moe_xq.as<int8_t>(), qd = F(moe_xqd);
      }
      const GemvIdOut o{&e, y, y_stride};
      gemv_q_id(&o, 1, ids, np, act_div, q, qd, st());
    } else {
      const float* x = in.p;
      int64_t xs = in.stride;
      if (round_activations(e.w.type, in.p, in.stride, rows, width, F(moe_xr), width, st())) {
        mark(Profile::kAct);
        x = F(moe_xr), xs = width;
      }
      gemv_id(e, ids, np, act_div, x, xs, y, y_stride, st());
    }
    mark(Profile::kGemv);
  }

  // graph::prenorm_decoder for one micro-batch; logits of its outputs land in
  // logits_dev rows [0, n_out).
  void forward(int n, const int32_t* d_tok, const int32_t* d_pos, const int32_t* d_seq, const int32_t* d_out, int n_out,
               int max_cells) {
    const Hparams& hp = model.hparams();
    const int64_t d = hp.n_embd;
    if (n > 1) prof.begin(st(), n);
    if (first_layer == 0) {
      get_rows(tok_embd, d_tok, n, F(x), d, st());
    } else {  // partial offload: the CPU layers' residual stream (a copy inside the captured decode graph)
      check(cudaMemcpyAsync(F(x), F(hidden_in), sizeof(float) * d * n, cudaMemcpyDeviceToDevice, st()),
            "taking the CPU layers' hidden state");
    }
    mark(Profile::kOther);
    const bool any_layer = first_layer < hp.n_layer;  // else the GPU runs the output layer only
    Act in =
        any_layer ? norm(nullptr, layers[first_layer].attn_norm, first_attn_weight(first_layer), n) : Act{nullptr, 0};
    for (int64_t il = first_layer; il < hp.n_layer; ++il) {
      attention_block(il, n, d_pos, d_seq, max_cells, in);
      if (il == hp.n_layer - 1 && n_out < n) {
        if (n_out == 0) return;  // no row of this micro-batch wants logits (its KV is written)
        const size_t bytes = sizeof(float) * d * n_out;
        gather_rows(F(x), d, d, d_out, n_out, F(tmp), st());
        check(cudaMemcpyAsync(F(x), F(tmp), bytes, cudaMemcpyDeviceToDevice, st()), "gathering output rows");
        gather_rows(F(cur), d, d, d_out, n_out, F(tmp), st());
        check(cudaMemcpyAsync(F(cur), F(tmp), bytes, cudaMemcpyDeviceToDevice, st()), "gathering output rows");
        mark(Profile::kOther);
        n = n_out;
      }
      ffn_block(il, n, norm(F(cur), layers[il].ffn_norm, first_ffn_weight(il), n));
      if (il + 1 < hp.n_layer) in = norm(F(cur), layers[il + 1].attn_norm, first_attn_weight(il + 1), n);
    }
    // the last residual add fused with the output norm (with no layer here, the CPU added it)
    const Act out = norm(any_layer ? F(cur) : nullptr, output_norm, output, n);
    matmul_group({{&output, F(logits_dev), hp.n_vocab, nullptr}}, out.p, d, n, out);
    if (top_on) {
      cuda::top_logits(F(logits_dev), n, hp.n_vocab, F(top_dev), top_ids_dev.as<int32_t>(), top_scratch.as(),
                       top_scratch.bytes(), st());
      mark(Profile::kOther);
    }
  }

  void decode(std::span<const int32_t> tokens, std::span<const int32_t> pos, std::span<const int32_t> seq,
              std::span<const uint8_t> want) {
    const size_t n = tokens.size();
    if (n == 0) throw Error("decode: empty batch");
    if (pos.size() != n || seq.size() != n || (!want.empty() && want.size() != n)) {
      throw Error("decode: tokens, positions, sequence ids and logit flags differ in length");
    }
    const int64_t n_vocab = model.hparams().n_vocab;
    kvc->reserve_batch(
        tokens, pos, seq, n_vocab, seq_cap,
        seq_cap < opts.n_ctx ? " (the most the CUDA attention runs per sequence so far)" : " (raise -c)");
    upload_tables();
    output_of.assign(n, -1);
    out_rows.clear();
    for (size_t i = 0; i < n; ++i) {
      if (want.empty() ? (i + 1 == n) : want[i] != 0) {
        output_of[i] = static_cast<int32_t>(out_rows.size());
        out_rows.push_back(static_cast<int32_t>(i));
      }
    }
    n_outputs = static_cast<int32_t>(out_rows.size());
    logits.resize(static_cast<size_t>(n_outputs) * n_vocab, "the logits");
    top_host.resize(static_cast<size_t>(n_outputs) * kTopLogits, "the largest logits");
    top_ids_host.resize(static_cast<size_t>(n_outputs) * kTopLogits, "the largest logits");
    const bool lazy = n <= static_cast<size_t>(opts.n_ubatch);  // one micro-batch: logits_dev holds every row
    on_host = !lazy;

    const int ub = static_cast<int>(opts.n_ubatch);
    int32_t* d_ids = ids.as<int32_t>();
    std::vector<int32_t>& out_ids = out_ids_mb;  // kept: no allocation per decode step
    for (size_t first = 0; first < n; first += ub) {
      const int count = static_cast<int>(std::min<size_t>(ub, n - first));
      out_ids.clear();
      int32_t first_out = -1;
      int max_cells = 0, runs = 0;
      for (int i = 0; i < count; ++i) {
        if (i == 0 || seq[first + i] != seq[first + i - 1]) ++runs;
        max_cells = std::max(max_cells, pos[first + i] + 1);
        if (output_of[first + i] >= 0) {
          if (first_out < 0) first_out = output_of[first + i];
          out_ids.push_back(i);
        }
      }
      // partial offload: the CPU's layers of this micro-batch, their hidden state to the GPU
      int rows = count;
      if (part.hidden) {
        rows = part.hidden(first, count, out_ids, hidden_host.data());
        check(cudaMemcpyAsync(F(hidden_in), hidden_host.data(), sizeof(float) * rows * model.hparams().n_embd,
                              cudaMemcpyHostToDevice, st()),
              "uploading the CPU layers' hidden state");
      }
      // tokens, positions, sequence ids and output ids in one copy (the host side is page-locked)
      int32_t* h_ids = ids_host.data();
      std::copy_n(tokens.data() + first, count, h_ids);
      std::copy_n(pos.data() + first, count, h_ids + ub);
      std::copy_n(seq.data() + first, count, h_ids + 2 * ub);
      std::copy(out_ids.begin(), out_ids.end(), h_ids + 3 * ub);
      check(cudaMemcpyAsync(d_ids, h_ids, sizeof(int32_t) * (3 * static_cast<size_t>(ub) + out_ids.size()),
                            cudaMemcpyHostToDevice, st()),
            "uploading the batch ids");
      fa_batch = fa_on && count > 1 && count >= kFaTokensPerRun * runs;
      fused_batch = false;
      if (fused_on && count > 1 && count <= kFusedMaxTokens && runs == count) {
        fused_batch = true;  // every token of its own sequence
        for (int i = 0; i < count && fused_batch; ++i) {
          uint8_t& seen = seq_seen[static_cast<size_t>(seq[first + i])];
          fused_batch = seen == 0;
          seen = 1;
        }
        for (int i = 0; i < count; ++i) seq_seen[static_cast<size_t>(seq[first + i])] = 0;
      }
      if (use_graphs && count == 1 && out_ids.size() == 1) {
        decode_one(d_ids, ub);
      } else if (rows > 0) {  // rows < count: the CPU ran every layer and kept the output rows only
        forward(rows, d_ids, d_ids + ub, d_ids + 2 * ub, d_ids + 3 * ub, static_cast<int>(out_ids.size()), max_cells);
      }
      if (!out_ids.empty()) {
        if (!lazy) {
          check(cudaMemcpyAsync(logits.data() + static_cast<size_t>(first_out) * n_vocab, F(logits_dev),
                                sizeof(float) * out_ids.size() * n_vocab, cudaMemcpyDeviceToHost, st()),
                "downloading logits");
        }
        const size_t tb = out_ids.size() * kTopLogits, at = static_cast<size_t>(first_out) * kTopLogits;
        if (top_on) {
          check(cudaMemcpyAsync(top_host.data() + at, F(top_dev), sizeof(float) * tb, cudaMemcpyDeviceToHost, st()),
                "downloading the largest logits");
          check(cudaMemcpyAsync(top_ids_host.data() + at, top_ids_dev.as<int32_t>(), sizeof(int32_t) * tb,
                                cudaMemcpyDeviceToHost, st()),
                "downloading the largest logits");
        }
      }
      // the host vectors above (out_ids, the batch spans, the tables) must outlive the copies
      dev.sync("the CUDA forward pass");
      prof.end();
      // the token ids go with the cells: full blocks of a caching sequence are registered for reuse
      for (int i = 0; i < count; ++i) kvc->commit(seq[first + i], pos[first + i], tokens[first + i]);
    }
  }
};

CudaContext::CudaContext(const Model& model, const ContextOptions& opts) : impl_(std::make_unique<Impl>(model, opts)) {}
CudaContext::CudaContext(const Model& model, const ContextOptions& opts, GpuPart part)
    : impl_(std::make_unique<Impl>(model, opts, std::move(part))) {}
CudaContext::~CudaContext() = default;

void CudaContext::decode(std::span<const int32_t> tokens, std::span<const int32_t> pos, std::span<const int32_t> seq,
                         std::span<const uint8_t> want) {
  impl_->decode(tokens, pos, seq, want);
}

std::span<const float> CudaContext::logits(int32_t i) const { return impl_->logits_row(impl_->output_row(i)); }

BatchContext::TopLogits CudaContext::top_logits(int32_t i) const {
  const size_t at = static_cast<size_t>(impl_->output_row(i)) * kTopLogits;
  if (!impl_->top_on) return {};
  if (impl_->top_ids_host[at] < 0) return {};  // a NaN or +inf in the row
  return {{impl_->top_host.data() + at, static_cast<size_t>(kTopLogits)},
          {impl_->top_ids_host.data() + at, static_cast<size_t>(kTopLogits)}};
}

void CudaContext::clear() { impl_->kvc->clear(); }

void CudaContext::seq_truncate(int seq, int32_t p0) {
  if (seq < 0 || seq >= impl_->opts.n_seq_max) throw Error("seq_truncate: sequence id out of range");
  impl_->kvc->truncate(seq, p0);
}

void CudaContext::seq_cut(int seq, int32_t p0, int32_t p1) { impl_->cut(seq, p0, p1); }

int64_t CudaContext::n_ctx() const { return impl_->seq_cap; }
const KvCache& CudaContext::kv() const { return *impl_->kvc; }
KvCache& CudaContext::kv_cache() { return *impl_->kvc; }

const Model& CudaContext::model() const { return impl_->model; }
int64_t CudaContext::n_vocab() const { return impl_->model.hparams().n_vocab; }
std::string CudaContext::device_name() const { return impl_->dev.name(); }
uint64_t CudaContext::weight_bytes() const { return impl_->weight_bytes; }

}  // namespace strix::cuda
