// Partial GPU offload's CPU-side pieces (the GPU side is tested on a GPU by
// tests/backend_cuda/partial_offload_test.cpp): llama.cpp's -ngl count and
// the layer split it gives, the CPU context that runs only the first layers
// (Context::forward_part: the residual stream it hands over must be the one
// the whole model's forward carries), and the KV cache whose cells live in
// two places (host copy plus the block copier; moving host cells).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "kv/kv_cache.h"
#include "models/model.h"
#include "runtime/context.h"
#include "runtime/offload.h"
#include "synth/synth.h"

namespace strix {
namespace {

// llama.cpp (llama-model.cpp since ggml-org/llama.cpp#18148): n_layer + 1
// slots, the GPU takes the last N, the output layer first.
TEST(Offload, LlamaCppsLayerCount) {
  const Offload none = offload_layers(0, 4);
  EXPECT_FALSE(none.on_gpu());
  EXPECT_FALSE(none.partial());
  const Offload out_only = offload_layers(1, 4);  // the output layer only
  EXPECT_TRUE(out_only.partial());
  EXPECT_EQ(out_only.first_gpu_layer(), 4);
  EXPECT_EQ(offload_layers(2, 4).first_gpu_layer(), 3);  // layer 3 + output
  EXPECT_EQ(offload_layers(4, 4).first_gpu_layer(), 1);  // layers 1..3 + output
  const Offload all = offload_layers(5, 4);
  EXPECT_TRUE(all.full());
  EXPECT_FALSE(all.partial());
  EXPECT_EQ(all.first_gpu_layer(), 0);
  const Offload many = offload_layers(99, 4);
  EXPECT_TRUE(many.full());
  EXPECT_EQ(many.n_gpu, 5);  // clamped to n_layer + 1
  EXPECT_THROW(offload_layers(-1, 4), Error);
  EXPECT_THROW(offload_layers(1, 0), Error);
}

TEST(Offload, DescribesTheSplit) {
  EXPECT_EQ(offload_layers(0, 4).describe(), "every layer on the CPU");
  EXPECT_EQ(offload_layers(99, 4).describe(), "every layer on the GPU");
  EXPECT_EQ(offload_layers(1, 4).describe(), "the output layer on the GPU, repeating layers 0..3 on the CPU");
  EXPECT_EQ(offload_layers(3, 4).describe(),
            "repeating layers 2..3 and the output layer on the GPU, repeating layers 0..1 on the CPU");
}

std::string model_path(int64_t n_layer) {
  const auto p = std::filesystem::temp_directory_path() /
                 ("strix-offload-" + std::to_string(::getpid()) + "-" + std::to_string(n_layer) + ".gguf");
  if (!std::filesystem::exists(p)) {
    synth::SynthOptions o;
    o.arch = "llama";
    o.n_layer = n_layer;
    o.type = "f32";
    o.seed = 3;
    o.out = p.string();
    synth::synth_write(o);
  }
  return p.string();
}

TEST(Offload, NoGpuLayersMakesTheCpuContext) {
  auto model = Model::load(model_path(2));
  const auto ctx = make_context(*model, {.n_ctx = 64, .n_threads = 1}, offload_layers(0, 2));
  EXPECT_NE(dynamic_cast<Context*>(ctx.get()), nullptr);
  EXPECT_EQ(gpu_name(*ctx), "");
}

TEST(PartialContext, RefusesDecodeAndBadLayerCounts) {
  auto model = Model::load(model_path(2));
  Context part(*model, {.n_ctx = 64, .n_threads = 1, .layer_end = 1});
  EXPECT_EQ(part.kv().n_layer(), 1);  // only its layers' cells
  const std::vector<int32_t> t{1}, p{0}, s{0};
  EXPECT_THROW(part.decode(t, p, s), Error);
  EXPECT_THROW(Context(*model, {.n_ctx = 64, .n_threads = 1, .layer_end = 3}), Error);
  Context whole(*model, {.n_ctx = 64, .n_threads = 1});
  std::vector<float> h(64 * model->hparams().n_embd);
  EXPECT_THROW(whole.forward_part(t, p, s, {}, h.data()), Error);
}

const Weight& weight(const Model& m, std::string_view name) {
  for (const Weight& w : m.weights()) {
    if (name == w.name) return w;
  }
  throw Error("no tensor " + std::string(name));
}

// The CPU half with every layer keeps the output rows only; the output norm
// and head on that hidden state (computed here in double, F32 weights) give
// the whole model's logits. Two micro-batches, the second continuing the cache.
TEST(PartialContext, HiddenStateIsTheWholeForwardsResidualStream) {
  auto model = Model::load(model_path(2));
  const Hparams& hp = model->hparams();
  const int64_t d = hp.n_embd;
  Context whole(*model, {.n_ctx = 64, .n_ubatch = 8, .n_threads = 2});
  Context part(*model, {.n_ctx = 64, .n_ubatch = 8, .n_threads = 2, .layer_end = hp.n_layer});
  const std::vector<int32_t> tok{1, 7, 3, 9, 4, 2, 8, 5, 6, 11, 12};
  const std::vector<uint8_t> want{0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 1};
  std::vector<int32_t> pos(tok.size()), seq(tok.size(), 0);
  for (size_t i = 0; i < tok.size(); ++i) pos[i] = static_cast<int32_t>(i);
  whole.decode(tok, pos, seq, want);
  part.kv_cache().reserve_batch(tok, pos, seq, hp.n_vocab, 64, "");
  const Weight& norm = weight(*model, "output_norm.weight");
  const Weight& out = weight(*model, "output.weight");
  std::vector<float> hidden(8 * d);
  for (size_t first = 0; first < tok.size(); first += 8) {
    const size_t count = std::min<size_t>(8, tok.size() - first);
    std::vector<int32_t> out_ids;
    for (size_t i = 0; i < count; ++i) {
      if (want[first + i]) out_ids.push_back(static_cast<int32_t>(i));
    }
    const std::span<const int32_t> sub_t(tok.data() + first, count), sub_p(pos.data() + first, count),
        sub_s(seq.data() + first, count);
    const int rows = part.forward_part(sub_t, sub_p, sub_s, out_ids, hidden.data());
    ASSERT_EQ(rows, static_cast<int>(out_ids.size()));
    for (int r = 0; r < rows; ++r) {
      const float* x = hidden.data() + r * d;
      double ss = 0;
      for (int64_t i = 0; i < d; ++i) ss += static_cast<double>(x[i]) * x[i];
      const double sc = 1.0 / std::sqrt(ss / static_cast<double>(d) + hp.norm_eps);
      const auto* g = reinterpret_cast<const float*>(norm.data);
      const std::span<const float> ref = whole.logits(static_cast<int32_t>(first) + out_ids[r]);
      double worst = 0;
      for (int64_t v = 0; v < hp.n_vocab; ++v) {
        const auto* w = reinterpret_cast<const float*>(out.row(v));
        double l = 0;
        for (int64_t i = 0; i < d; ++i) l += static_cast<double>(w[i]) * (x[i] * sc * g[i]);
        worst = std::max(worst, std::fabs(l - ref[v]));
      }
      EXPECT_LT(worst, 1e-3) << "micro-batch at " << first << ", output row " << r;
    }
    for (size_t i = 0; i < count; ++i) part.kv_cache().commit(seq[first + i], pos[first + i], tok[first + i]);
  }
  // the negative control: one layer short is another residual stream
  Context short_part(*model, {.n_ctx = 64, .n_ubatch = 8, .n_threads = 2, .layer_end = hp.n_layer - 1});
  const std::vector<int32_t> t1{1}, p1{0}, s1{0};
  short_part.kv_cache().reserve_batch(t1, p1, s1, hp.n_vocab, 64, "");
  std::vector<float> h_short(d), h_full(d);
  ASSERT_EQ(short_part.forward_part(t1, p1, s1, {}, h_short.data()), 1);
  Context full_part(*model, {.n_ctx = 64, .n_ubatch = 8, .n_threads = 2, .layer_end = hp.n_layer});
  full_part.kv_cache().reserve_batch(t1, p1, s1, hp.n_vocab, 64, "");
  const std::vector<int32_t> all{0};
  ASSERT_EQ(full_part.forward_part(t1, p1, s1, all, h_full.data()), 1);
  EXPECT_NE(std::memcmp(h_short.data(), h_full.data(), sizeof(float) * d), 0);
}

// A cache with host cells and a block copier copies both on copy-on-write.
TEST(KvCacheTwoPlaces, CopyOnWriteCopiesHostCellsAndCallsTheCopier) {
  KvCache kv({.n_layer = 2, .k_dim = 4, .v_dim = 4, .n_cells = 128, .n_seq_max = 2, .block_size = 32});
  std::vector<std::pair<int32_t, int32_t>> copies;
  kv.set_block_copier(
      [](void* u, int32_t from, int32_t to) {
        static_cast<std::vector<std::pair<int32_t, int32_t>>*>(u)->push_back({from, to});
      },
      &copies);
  kv.reserve(0, 10);
  for (int32_t p = 0; p < 10; ++p) {
    for (int64_t il = 0; il < 2; ++il) {
      for (int i = 0; i < 4; ++i) {
        kv.k_row(il, 0, p)[i] = static_cast<uint16_t>(100 * il + 10 * p + i);
        kv.v_row(il, 0, p)[i] = static_cast<uint16_t>(1000 + 100 * il + 10 * p + i);
      }
    }
    kv.commit(0, p, p);
  }
  kv.share_prefix(0, 1, 10);  // a partly filled block shared: the next write copies it
  kv.reserve(1, 11);
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].first, kv.block_table(0)[0]);
  EXPECT_EQ(copies[0].second, kv.block_table(1)[0]);
  for (int32_t p = 0; p < 10; ++p) {
    for (int64_t il = 0; il < 2; ++il) {
      EXPECT_EQ(kv.k_row(il, 1, p)[3], kv.k_row(il, 0, p)[3]);
      EXPECT_EQ(kv.v_row(il, 1, p)[0], kv.v_row(il, 0, p)[0]);
    }
  }
}

// cut_cells with move_host_cells inside moves the host cells as cut does.
TEST(KvCacheTwoPlaces, MoveHostCellsInsideCutCellsEqualsCut) {
  auto fill = [](KvCache& kv) {
    kv.reserve(0, 70);
    for (int32_t p = 0; p < 70; ++p) {
      for (int64_t il = 0; il < 2; ++il) {
        for (int i = 0; i < 4; ++i) {
          kv.k_row(il, 0, p)[i] = static_cast<uint16_t>(7 * p + i + 500 * il);
          kv.v_row(il, 0, p)[i] = static_cast<uint16_t>(3 * p + i + 900 * il);
        }
      }
      kv.commit(0, p, p);
    }
  };
  const KvCache::Options o{.n_layer = 2, .k_dim = 4, .v_dim = 4, .n_cells = 128, .n_seq_max = 1, .block_size = 32};
  KvCache a(o), b(o);
  fill(a);
  fill(b);
  auto move_k = [](int64_t, const uint16_t* src, uint16_t* dst) {
    for (int i = 0; i < 4; ++i) dst[i] = static_cast<uint16_t>(src[i] + 1);
  };
  a.cut(0, 5, 40, move_k);
  int32_t moved = -1;
  b.cut_cells(0, 5, 40, [&](int32_t n) {
    moved = n;
    b.move_host_cells(0, 5, 40, n, move_k);
  });
  EXPECT_EQ(moved, 30);
  ASSERT_EQ(a.seq_len(0), b.seq_len(0));
  for (int32_t p = 0; p < a.seq_len(0); ++p) {
    for (int64_t il = 0; il < 2; ++il) {
      EXPECT_EQ(0, std::memcmp(a.k_row(il, 0, p), b.k_row(il, 0, p), 8)) << p;
      EXPECT_EQ(0, std::memcmp(a.v_row(il, 0, p), b.v_row(il, 0, p), 8)) << p;
    }
  }
}

}  // namespace
}  // namespace strix
