#include "ops/cpu_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/repack.h"
#include "backend/cpu/vec_ops.h"
#include "kv/kv_cache.h"
#include "quant/fp16.h"

namespace strix::ops {

namespace {

constexpr int64_t kRowBlock = 16;  // weight rows per GEMM tile call
constexpr int64_t kTokBlock = 64;  // activation rows per GEMM tile call

}  // namespace

void get_rows(Exec& e, const Weight& w, const int32_t* tokens, int n, float* out, int64_t out_stride) {
  const DequantizeRowFn to_float = type_traits(w.type).to_float;
  const auto [t0, t1] = e.range(n);
  for (int64_t t = t0; t < t1; ++t) to_float(w.row(tokens[t]), out + t * out_stride, w.ne[0]);
  e.barrier();
}

void rms_norm(Exec& e, const float* x, int64_t n_rows, int64_t dim, int64_t x_stride, float* out, int64_t out_stride,
              const float* w, float eps) {
  const auto [r0, r1] = e.range(n_rows);
  for (int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * x_stride;
    float* yr = out + r * out_stride;
    double sum = 0;
    for (int64_t i = 0; i < dim; ++i) sum += static_cast<double>(xr[i] * xr[i]);
    const float mean = static_cast<float>(sum / static_cast<double>(dim));
    const float scale = 1.0f / std::sqrt(mean + eps);
    if (w) {
      for (int64_t i = 0; i < dim; ++i) yr[i] = (xr[i] * scale) * w[i];
    } else {
      for (int64_t i = 0; i < dim; ++i) yr[i] = xr[i] * scale;
    }
  }
  e.barrier();
}

namespace {

// Quantizes n rows of x for weight type w (nothing for F32); returns the rows and their stride.
std::pair<const uint8_t*, size_t> quantize_rows(Exec& e, GgmlType wtype, int64_t ne0, const float* x, int n,
                                                int64_t x_stride) {
  const GgmlType vdt = e.k.vec_dot_type[static_cast<uint32_t>(wtype)];
  if (vdt == GgmlType::F32) {
    return {reinterpret_cast<const uint8_t*>(x), static_cast<size_t>(x_stride) * sizeof(float)};
  }
  const size_t act_stride = row_size(vdt, ne0);
  const cpu::QuantizeActFn q = e.k.quantize_act[static_cast<uint32_t>(vdt)];
  const auto [t0, t1] = e.range(n);
  for (int64_t t = t0; t < t1; ++t) q(x + t * x_stride, e.ws.act + t * act_stride, ne0);
  e.barrier();
  return {e.ws.act, act_stride};
}

// This thread's rows of one product (no barrier).
void matmul_rows(Exec& e, const Weight& w, const uint8_t* act, size_t act_stride, int n, float* y, int64_t y_stride,
                 const float* bias, int64_t expert) {
  const cpu::GemmFn gemm = e.k.gemm[static_cast<uint32_t>(w.type)];
  const int64_t ne0 = w.ne[0], nr = w.ne[1];
  // libllama's summation order for this product decides the calls (backend/cpu/repack.h).
  const cpu::MatmulOrder order = cpu::libllama_matmul_order(e.k.isa, w.type, nr, w.ne[2] > 1, n, kTokBlock);
  const int64_t tok_block = order.tok_block, vec_dot_tail = order.vec_dot_tail;
  const cpu::VecDotFn dot = e.k.vec_dot[static_cast<uint32_t>(w.type)];
  const auto [r0, r1] = e.range(nr, 8);
  const uint8_t* wbase = w.data + expert * w.nb2;
  for (int64_t rb = r0; rb < r1; rb += kRowBlock) {
    const int64_t nrb = std::min(kRowBlock, r1 - rb);
    if (order.by_vec_dot && e.k.gemm_is_vec_dot[static_cast<uint32_t>(w.type)]) {
      gemm(static_cast<int>(ne0), wbase + rb * w.nb1, w.nb1, static_cast<int>(nrb), act, act_stride, n, y + rb,
           static_cast<size_t>(y_stride));
    } else if (order.by_vec_dot) {
      for (int64_t t = 0; t < n; ++t) {
        for (int64_t r = rb; r < rb + nrb; ++r) {
          dot(static_cast<int>(ne0), y + t * y_stride + r, wbase + r * w.nb1, act + t * act_stride);
        }
      }
    } else {
      for (int64_t t = n - vec_dot_tail; t < n; ++t) {
        for (int64_t r = rb; r < rb + nrb; ++r) {
          dot(static_cast<int>(ne0), y + t * y_stride + r, wbase + r * w.nb1, act + t * act_stride);
        }
      }
      const cpu::GemmFn gemv_cols = e.k.gemv_cols[static_cast<uint32_t>(w.type)];
      if (tok_block == 1 && gemv_cols != nullptr && vec_dot_tail == 0) {  // experts: all columns in gemv order
        gemv_cols(static_cast<int>(ne0), wbase + rb * w.nb1, w.nb1, static_cast<int>(nrb), act, act_stride, n, y + rb,
                  static_cast<size_t>(y_stride));
      } else {
        for (int64_t tb = 0; tb < n - vec_dot_tail; tb += tok_block) {
          int64_t ntb = std::min<int64_t>(tok_block, n - vec_dot_tail - tb);
          if (order.keep_pair_tail && n - tb - ntb == 1) --ntb;  // keep a 2-column tail in tinyBLAS order
          gemm(static_cast<int>(ne0), wbase + rb * w.nb1, w.nb1, static_cast<int>(nrb), act + tb * act_stride,
               act_stride, static_cast<int>(ntb), y + tb * y_stride + rb, static_cast<size_t>(y_stride));
        }
      }
    }
    if (bias) {
      for (int64_t t = 0; t < n; ++t) {
        float* yr = y + t * y_stride;
        for (int64_t r = rb; r < rb + nrb; ++r) yr[r] += bias[r];
      }
    }
  }
}

}  // namespace

void matmul(Exec& e, const Weight& w, const float* x, int n, int64_t x_stride, float* y, int64_t y_stride,
            const float* bias, int64_t expert) {
  const auto [act, act_stride] = quantize_rows(e, w.type, w.ne[0], x, n, x_stride);
  matmul_rows(e, w, act, act_stride, n, y, y_stride, bias, expert);
  e.barrier();
}

void matmul_group(Exec& e, const MatmulOut* outs, int count, const float* x, int n, int64_t x_stride) {
  int i = 0;
  while (i < count) {
    // a run of weights with the same partner type and row length shares one quantization
    const GgmlType vdt = e.k.vec_dot_type[static_cast<uint32_t>(outs[i].w->type)];
    int j = i + 1;
    while (j < count && e.k.vec_dot_type[static_cast<uint32_t>(outs[j].w->type)] == vdt &&
           outs[j].w->ne[0] == outs[i].w->ne[0]) {
      ++j;
    }
    const auto [act, act_stride] = quantize_rows(e, outs[i].w->type, outs[i].w->ne[0], x, n, x_stride);
    for (int k = i; k < j; ++k)
      matmul_rows(e, *outs[k].w, act, act_stride, n, outs[k].y, outs[k].y_stride, outs[k].bias, outs[k].expert);
    e.barrier();
    i = j;
  }
}

namespace {

float yarn_ramp(float low, float high, int64_t i0) {
  const float y = (static_cast<float>(i0 / 2) - low) / std::max(0.001f, high - low);
  return 1.0f - std::min(1.0f, std::max(0.0f, y));
}

void yarn_corr_dims(int n_dims, int n_ctx_orig, float base, float beta_fast, float beta_slow, float dims[2]) {
  auto corr_dim = [&](float n_rot) {
    return static_cast<float>(n_dims) *
           std::log(static_cast<float>(n_ctx_orig) / (n_rot * 2.0f * static_cast<float>(M_PI))) /
           (2.0f * std::log(base));
  };
  const float start = std::floor(corr_dim(beta_fast));
  const float end = std::ceil(corr_dim(beta_slow));
  dims[0] = std::max(0.0f, start);
  dims[1] = std::min(static_cast<float>(n_dims - 1), end);
}

// cos/sin pairs for one position: cache[i0], cache[i0 + 1] for i0 < n_rot.
// ggml-cpu's x86-64 builds (GCC, -ffp-contract=fast, FMA) contract the YaRN
// mix, its magnitude term and the rotations into fmas; the std::fma calls here
// and in rope_apply are those, so results match ggml_rope_ext bit for bit
// (tests/ops/rope_test.cpp).
void rope_cache(float p, const RopeParams& rp, const float* ff, float* cache) {
  const float theta_scale = std::pow(rp.freq_base, -2.0f / static_cast<float>(rp.n_rot));
  float corr[2] = {0, 0};
  if (rp.ext_factor != 0.0f) yarn_corr_dims(rp.n_rot, rp.n_ctx_orig, rp.freq_base, rp.beta_fast, rp.beta_slow, corr);
  float theta = p;
  for (int64_t i0 = 0; i0 < rp.n_rot; i0 += 2) {
    const float f = ff ? ff[i0 / 2] : 1.0f;
    const float theta_extrap = theta / f;
    const float theta_interp = rp.freq_scale * theta_extrap;
    float th = theta_interp;
    float mscale = rp.attn_factor;
    if (rp.ext_factor != 0.0f) {
      const float ramp_mix = yarn_ramp(corr[0], corr[1], i0) * rp.ext_factor;
      th = std::fma(theta_interp, 1 - ramp_mix, theta_extrap * ramp_mix);
      mscale *= std::fma(0.1f, std::log(1.0f / rp.freq_scale), 1.0f);
    }
    cache[i0] = std::cos(th) * mscale;
    cache[i0 + 1] = std::sin(th) * mscale;
    theta *= theta_scale;
  }
}

void rope_apply(float* x, const RopeParams& rp, const float* cache) {
  if (rp.mode == RopeMode::kNeox) {
    const int64_t half = rp.n_rot / 2;
    for (int64_t i0 = 0; i0 < rp.n_rot; i0 += 2) {
      const int64_t ic = i0 / 2;
      const float x0 = x[ic], x1 = x[ic + half];
      x[ic] = std::fma(x0, cache[i0], -(x1 * cache[i0 + 1]));
      x[ic + half] = std::fma(x0, cache[i0 + 1], x1 * cache[i0]);
    }
  } else {
    for (int64_t i0 = 0; i0 < rp.n_rot; i0 += 2) {
      const float x0 = x[i0], x1 = x[i0 + 1];
      x[i0] = std::fma(x0, cache[i0], -(x1 * cache[i0 + 1]));
      x[i0 + 1] = std::fma(x0, cache[i0 + 1], x1 * cache[i0]);
    }
  }
}

}  // namespace

void rope(Exec& e, float* x, int n, int64_t n_heads, int64_t head_dim, int64_t stride, const int32_t* pos,
          const RopeParams& rp, const float* freq_factors) {
  float* cache = e.scratch();
  if (n >= e.nth) {
    const auto [t0, t1] = e.range(n);
    for (int64_t t = t0; t < t1; ++t) {
      rope_cache(static_cast<float>(pos[t]), rp, freq_factors, cache);
      for (int64_t h = 0; h < n_heads; ++h) rope_apply(x + t * stride + h * head_dim, rp, cache);
    }
  } else {
    const auto [j0, j1] = e.range(static_cast<int64_t>(n) * n_heads);
    int64_t cached_t = -1;
    for (int64_t j = j0; j < j1; ++j) {
      const int64_t t = j / n_heads, h = j % n_heads;
      if (t != cached_t) {
        rope_cache(static_cast<float>(pos[t]), rp, freq_factors, cache);
        cached_t = t;
      }
      rope_apply(x + t * stride + h * head_dim, rp, cache);
    }
  }
  e.barrier();
}

RopeShift rope_shift(int32_t delta, const RopeParams& rp, const float* freq_factors) {
  RopeShift sh;
  sh.rp = &rp;
  sh.cache.resize(static_cast<size_t>(rp.n_rot));
  rope_cache(static_cast<float>(delta), rp, freq_factors, sh.cache.data());
  return sh;
}

void rope_shift_row_f16(const RopeShift& sh, const uint16_t* src, uint16_t* dst, int64_t n_heads, int64_t head_dim,
                        float* tmp) {
  const int64_t n = n_heads * head_dim;
  for (int64_t i = 0; i < n; ++i) tmp[i] = fp16_to_fp32(src[i]);
  for (int64_t h = 0; h < n_heads; ++h) rope_apply(tmp + h * head_dim, *sh.rp, sh.cache.data());
  for (int64_t i = 0; i < n; ++i) dst[i] = fp32_to_fp16(tmp[i]);
}

void kv_store(Exec& e, Step& s, int64_t il, const float* k, int64_t k_stride, const float* v, int64_t v_stride) {
  const cpu::VecOps& vo = cpu::vec_ops();
  KvCache& kv = *s.kv;
  const auto [t0, t1] = e.range(s.n_tokens);
  for (int64_t t = t0; t < t1; ++t) {
    vo.to_f16(kv.k_dim(), k + t * k_stride, kv.k_row(il, s.seq[t], s.pos[t]));
    vo.to_f16(kv.v_dim(), v + t * v_stride, kv.v_row(il, s.seq[t], s.pos[t]));
  }
  e.barrier();
}

void attention(Exec& e, Step& s, int64_t il, const float* q, int64_t q_stride, float* out, int64_t out_stride,
               float kq_scale, int64_t n_swa, const float* sinks) {
  const Hparams& hp = *s.hp;
  const KvCache& kv = *s.kv;
  const cpu::VecOps& vo = cpu::vec_ops();
  const int hdk = static_cast<int>(hp.head_dim_k), hdv = static_cast<int>(hp.head_dim_v);
  const int64_t group = hp.n_head / hp.n_head_kv;
  const int bs = kv.block_size();
  const size_t k_dim = static_cast<size_t>(kv.k_dim()), v_dim = static_cast<size_t>(kv.v_dim());

  // per-thread scratch: [acc 64 x hdv][the query rounded to f16, hdk][scores n_ctx]
  float* acc = e.scratch();
  float* qf = acc + 64 * hdv;
  float* scores = acc + 64 * hdv + hdk + 16;

  const int64_t n_tasks = static_cast<int64_t>(s.n_tokens) * hp.n_head;
  int64_t counted_t = -1;
  bool one_token = false;
  for (int64_t j = e.ith; j < n_tasks; j += e.nth) {
    const int64_t t = j / hp.n_head, h = j % hp.n_head;
    const int seq = s.seq[t];
    if (t != counted_t) {
      // ggml-cpu multiplies a sequence's q·K and P·V with tinyBLAS when its
      // micro-batch holds several of the sequence's tokens, and with
      // ggml_vec_dot_f16 when it holds one (llamafile_sgemm declines n < 2):
      // the two sum in different orders, so Strix follows the same split.
      int count = 0;
      for (int u = 0; u < s.n_tokens && count < 2; ++u) count += (s.seq[u] == seq);
      one_token = count == 1;
      counted_t = t;
    }
    const int lanes = one_token ? 64 : 16;
    const int32_t p = s.pos[t];
    const int64_t kvh = h / group;
    const int32_t first = n_swa > 0 ? std::max<int32_t>(0, p - static_cast<int32_t>(n_swa) + 1) : 0;
    const int32_t n_cells = p + 1;

    // scores = (q.k) * scale over cells [0, p]; cells outside the window are masked
    vo.round_f16(hdk, q + t * q_stride + h * hdk, 1.0f, qf);
    for (int32_t c = 0; c < first; ++c) scores[c] = -INFINITY;
    for (int32_t c = first; c <= p;) {
      const int32_t end = std::min(p + 1, (c / bs + 1) * bs);
      const uint16_t* kb = kv.k_row(il, seq, c) + kvh * hdk;
      if (one_token) {
        for (int32_t cc = c; cc < end; ++cc, kb += k_dim) scores[cc] = vo.attn_dot_vecdot(hdk, kb, qf) * kq_scale;
      } else {
        for (int32_t cc = c; cc < end; ++cc, kb += k_dim) scores[cc] = vo.attn_dot(hdk, kb, qf) * kq_scale;
      }
      c = end;
    }
    // softmax as ggml_soft_max_ext (with optional sinks)
    float mx = -INFINITY;
    for (int32_t c = first; c <= p; ++c) mx = std::max(mx, scores[c]);
    if (sinks) mx = std::max(mx, sinks[h]);
    double sum = vo.attn_exp(n_cells, scores, mx);
    if (sinks) sum += static_cast<double>(std::exp(sinks[h] - mx));
    const float inv = static_cast<float>(1.0 / sum);
    // probabilities rounded to f16 (ggml converts kq for the f16 V product)
    vo.round_f16(n_cells - first, scores + first, inv, scores + first);

    std::memset(acc, 0, sizeof(float) * lanes * hdv);
    for (int32_t c = first; c <= p;) {
      const int32_t end = std::min(p + 1, (c / bs + 1) * bs);
      vo.attn_acc(end - c, c, scores + c, kv.v_row(il, seq, c) + kvh * hdv, v_dim, hdv, lanes, acc);
      c = end;
    }
    vo.attn_reduce(hdv, lanes, acc, out + t * out_stride + h * hdv);
  }
  e.barrier();
}

void swiglu(Exec& e, const float* gate, int64_t gate_stride, const float* up, int64_t up_stride, float* out,
            int64_t out_stride, int n, int64_t width) {
  const cpu::VecOps& vo = cpu::vec_ops();
  if (n >= e.nth) {
    const auto [t0, t1] = e.range(n);
    for (int64_t t = t0; t < t1; ++t)
      vo.swiglu(width, gate + t * gate_stride, up + t * up_stride, out + t * out_stride);
  } else {
    const auto [i0, i1] = e.range(width, 16);
    for (int64_t t = 0; t < n; ++t) {
      vo.swiglu(i1 - i0, gate + t * gate_stride + i0, up + t * up_stride + i0, out + t * out_stride + i0);
    }
  }
  e.barrier();
}

void geglu(Exec& e, const float* gate, int64_t gate_stride, const float* up, int64_t up_stride, float* out,
           int64_t out_stride, int n, int64_t width) {
  // ggml-cpu (GGML_GELU_FP16, defined in vec.h): ggml_vec_geglu_f32 rounds x to
  // f16 and looks GELU up in a table of f16 values that ggml_cpu_init fills
  // with fp16(gelu_tanh(x)) for every f16 x; |x| >= 10 bypasses the table
  // (0, or x itself). The table matches libggml's exported ggml_table_gelu_f16
  // bit for bit (tests/backend_cpu/geglu_test.cpp).
  static const std::vector<uint16_t> table = [] {
    constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
    constexpr float kCoef = 0.044715f;
    std::vector<uint16_t> t(1 << 16);
    for (uint32_t i = 0; i < t.size(); ++i) {
      const float x = fp16_to_fp32(static_cast<uint16_t>(i));
      // ggml_gelu_f32, as its x86-64 builds compile it (the inner 1 + a*x*x contracted to an fma)
      const float inner = std::fma(kCoef * x, x, 1.0f);
      t[i] = fp32_to_fp16(0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * inner)));
    }
    return t;
  }();
  auto row = [&](const float* g, const float* u, float* o, int64_t m) {
    for (int64_t i = 0; i < m; ++i) {
      const float x = g[i];
      if (x <= -10.0f) {
        o[i] = 0.0f;
      } else if (x >= 10.0f) {
        o[i] = x * u[i];
      } else {
        o[i] = fp16_to_fp32(table[fp32_to_fp16(x)]) * u[i];
      }
    }
  };
  if (n >= e.nth) {
    const auto [t0, t1] = e.range(n);
    for (int64_t t = t0; t < t1; ++t) row(gate + t * gate_stride, up + t * up_stride, out + t * out_stride, width);
  } else {
    const auto [i0, i1] = e.range(width, 16);
    for (int64_t t = 0; t < n; ++t) {
      row(gate + t * gate_stride + i0, up + t * up_stride + i0, out + t * out_stride + i0, i1 - i0);
    }
  }
  e.barrier();
}

void add(Exec& e, const float* a, const float* b, float* out, int n, int64_t width, int64_t stride) {
  const auto [t0, t1] = e.range(n);
  for (int64_t t = t0; t < t1; ++t) {
    const float* ar = a + t * stride;
    const float* br = b + t * stride;
    float* o = out + t * stride;
    for (int64_t i = 0; i < width; ++i) o[i] = ar[i] + br[i];
  }
  e.barrier();
}

void add_rms_norm(Exec& e, float* x, const float* y, float* out, int n, int64_t dim, const float* w, float eps) {
  const auto [t0, t1] = e.range(n);
  for (int64_t t = t0; t < t1; ++t) {
    float* xr = x + t * dim;
    const float* yr = y + t * dim;
    float* o = out + t * dim;
    for (int64_t i = 0; i < dim; ++i) xr[i] = xr[i] + yr[i];
    double sum = 0;
    for (int64_t i = 0; i < dim; ++i) sum += static_cast<double>(xr[i] * xr[i]);
    const float mean = static_cast<float>(sum / static_cast<double>(dim));
    const float sc = 1.0f / std::sqrt(mean + eps);
    if (w) {
      for (int64_t i = 0; i < dim; ++i) o[i] = (xr[i] * sc) * w[i];
    } else {
      for (int64_t i = 0; i < dim; ++i) o[i] = xr[i] * sc;
    }
  }
  e.barrier();
}

void scale(Exec& e, float* x, float s, int n, int64_t width, int64_t stride) {
  const auto [t0, t1] = e.range(n);
  for (int64_t t = t0; t < t1; ++t) {
    float* r = x + t * stride;
    for (int64_t i = 0; i < width; ++i) r[i] *= s;
  }
  e.barrier();
}

void gather_rows(Exec& e, float* buf, int64_t stride, int64_t width, const int32_t* ids, int m) {
  if (e.ith == 0) {
    for (int i = 0; i < m; ++i) {
      if (ids[i] != i)
        std::memmove(buf + i * stride, buf + static_cast<int64_t>(ids[i]) * stride, sizeof(float) * width);
    }
  }
  e.barrier();
}

}  // namespace strix::ops
