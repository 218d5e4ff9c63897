// GGUF rewrites for the parity tests (keys set, F32 tensors added) and, for
// architectures whose loaders accept
// either fused or separate attention projections (llama.cpp's
// create_tensor_qkv): fuse attn_q/k/v into attn_qkv, or split attn_qkv into
// attn_q/k/v. Rows are independent in every ggml type, so the bytes are cut
// and joined at row boundaries; both libllama and Strix load the result.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gguf/reader.h"
#include "gguf/writer.h"

namespace strix::test {

struct GgufRewrite {
  std::vector<std::pair<std::string, uint32_t>> set_u32 = {};
  std::vector<std::pair<std::string, float>> set_f32 = {};
  std::vector<std::pair<std::string, std::string>> set_str = {};
  std::vector<std::pair<std::string, std::vector<float>>> add = {};  // F32 1-D tensors
  bool fuse_qkv = false;   // blk.N.attn_{q,k,v}.{weight,bias} -> blk.N.attn_qkv.*
  bool split_qkv = false;  // blk.N.attn_qkv.weight -> attn_{q,k,v}.weight (q rows: q_rows)
  int64_t q_rows = 0;      // rows of q in a fused projection (split_qkv)
};

inline bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

inline void write_rewrite(const std::string& src, const std::string& dst, const GgufRewrite& r) {
  auto f = GgufFile::open(src);
  GgufWriter w;
  w.set_alignment(static_cast<uint32_t>(f->alignment()));
  for (const GgufKV& kv : f->kvs()) {
    if (kv.key != "general.alignment") w.set(kv.key, kv.value);
  }
  for (const auto& [k, v] : r.set_u32) w.set_u32(k, v);
  for (const auto& [k, v] : r.set_f32) w.set_f32(k, v);
  for (const auto& [k, v] : r.set_str) w.set_str(k, v);
  for (const GgufTensor& t : f->tensors()) {
    const std::vector<int64_t> ne(t.ne, t.ne + t.n_dims);
    const size_t q_at = t.name.find(".attn_q.");
    const bool is_k_or_v = t.name.find(".attn_k.") != std::string::npos || t.name.find(".attn_v.") != std::string::npos;
    if (r.fuse_qkv && q_at != std::string::npos) {
      const std::string blk = t.name.substr(0, q_at), kind = t.name.substr(q_at + 8);  // weight / bias
      const GgufTensor* k = f->find_tensor(blk + ".attn_k." + kind);
      const GgufTensor* v = f->find_tensor(blk + ".attn_v." + kind);
      std::vector<uint8_t> bytes(t.data, t.data + t.nbytes);
      bytes.insert(bytes.end(), k->data, k->data + k->nbytes);
      bytes.insert(bytes.end(), v->data, v->data + v->nbytes);
      std::vector<int64_t> fne = ne;
      fne.back() += k->ne[t.n_dims - 1] + v->ne[t.n_dims - 1];
      w.add_tensor(blk + ".attn_qkv." + kind, t.type, fne, bytes.data(), bytes.size());
    } else if (r.fuse_qkv && is_k_or_v) {
      continue;  // joined into attn_qkv above
    } else if (r.split_qkv && ends_with(t.name, ".attn_qkv.weight")) {
      const std::string blk = t.name.substr(0, t.name.size() - std::string("attn_qkv.weight").size());
      const size_t row = t.nbytes / static_cast<size_t>(t.ne[1]);
      const int64_t q = r.q_rows, kv = (t.ne[1] - q) / 2;
      w.add_tensor(blk + "attn_q.weight", t.type, {t.ne[0], q}, t.data, row * q);
      w.add_tensor(blk + "attn_k.weight", t.type, {t.ne[0], kv}, t.data + row * q, row * kv);
      w.add_tensor(blk + "attn_v.weight", t.type, {t.ne[0], kv}, t.data + row * (q + kv), row * kv);
    } else {
      w.add_tensor(t.name, t.type, ne, t.data, t.nbytes);
    }
  }
  for (const auto& [name, data] : r.add) {
    w.add_tensor(name, 0, {static_cast<int64_t>(data.size())}, data.data(), data.size() * sizeof(float));
  }
  w.write(dst);
}

}  // namespace strix::test
