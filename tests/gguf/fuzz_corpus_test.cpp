// Robustness of the GGUF reader on damaged files: seed files written by our
// GgufWriter (every value type, nested arrays, aligned tensors of several
// types) and thousands of deterministic mutants of them (every truncation
// length, seeded byte and bit flips, counts and lengths set to huge values)
// must each parse, with every tensor's bytes inside the input, or be refused
// with one strix::Error line saying where; nothing else escapes and nothing
// reads out of bounds (this binary runs under ASan+UBSan in CI). Nothing is
// stored in the repository: the inputs are made here. With
// STRIX_FUZZ_SEEDS_DIR set, the seeds and mutants are also written there for
// the libFuzzer replay in .ci/run.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "quant/types.h"

namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

std::vector<Bytes> seeds() {
  std::vector<Bytes> out;
  {
    strix::GgufWriter w;
    w.set_str("general.architecture", "llama");
    w.set("u8", strix::GgufValue::u8(7));
    w.set("i8", strix::GgufValue::i8(-7));
    w.set("u16", strix::GgufValue::u16(700));
    w.set("i16", strix::GgufValue::i16(-700));
    w.set_u32("u32", 70000);
    w.set_i32("i32", -70000);
    w.set_u64("u64", 1ull << 40);
    w.set("i64", strix::GgufValue::i64(-(1ll << 40)));
    w.set_f32("f32", 0.5f);
    w.set("f64", strix::GgufValue::f64(0.25));
    w.set_bool("b", true);
    w.set("strs", strix::GgufValue::str_array({"a", "bc", ""}));
    w.set("ints", strix::GgufValue::i32_array({1, -2, 3}));
    w.set("nested", strix::GgufValue::array(strix::GgufType::ARRAY, {strix::GgufValue::u32_array({1, 2})}));
    std::vector<float> f(64, 1.0f);
    w.add_tensor("a.weight", static_cast<uint32_t>(strix::GgmlType::F32), {16, 4}, f.data(), f.size() * sizeof(float));
    std::vector<uint8_t> q(2 * 34, 0);  // two Q8_0 blocks
    w.add_tensor("b.weight", static_cast<uint32_t>(strix::GgmlType::Q8_0), {64}, q.data(), q.size());
    out.push_back(w.to_bytes());
  }
  {
    strix::GgufWriter w;
    w.set_alignment(64);
    w.set_str("general.name", "x");
    std::vector<uint16_t> h(32, 0x3c00);
    w.add_tensor("h", static_cast<uint32_t>(strix::GgmlType::F16), {32}, h.data(), h.size() * 2);
    out.push_back(w.to_bytes());
  }
  return out;
}

std::vector<Bytes> mutants(const std::vector<Bytes>& base) {
  std::vector<Bytes> out;
  uint64_t x = 0x9E3779B97F4A7C15ull;
  auto rnd = [&] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  for (const Bytes& b : base) {
    out.push_back(b);
    for (size_t len = 0; len < b.size(); len += (len < 64 ? 1 : 7)) out.emplace_back(b.begin(), b.begin() + len);
    for (int i = 0; i < 1500; ++i) {
      Bytes m = b;
      const int flips = 1 + static_cast<int>(rnd() % 4);
      for (int k = 0; k < flips; ++k) {
        const size_t at = rnd() % m.size();
        if (rnd() & 1) {
          m[at] ^= static_cast<uint8_t>(1u << (rnd() % 8));
        } else {
          m[at] = static_cast<uint8_t>(rnd());
        }
      }
      out.push_back(std::move(m));
    }
    // header counts (tensors at 8, kvs at 16) and the first key's length (24) set huge
    for (size_t off : {8, 16, 24}) {
      for (uint64_t v : {0xFFFFFFFFFFFFFFFFull, 0x7FFFFFFFFFFFFFFFull, 0x100000000ull, 1000000ull}) {
        Bytes m = b;
        if (off + 8 <= m.size()) std::memcpy(m.data() + off, &v, 8);
        out.push_back(std::move(m));
      }
    }
  }
  return out;
}

TEST(GgufFuzzCorpus, damaged_files_parse_or_are_refused_cleanly) {
  const std::vector<Bytes> base = seeds();
  const std::vector<Bytes> inputs = mutants(base);
  const char* dump = std::getenv("STRIX_FUZZ_SEEDS_DIR");
  if (dump) fs::create_directories(dump);
  size_t accepted = 0, n = 0;
  for (const Bytes& bytes : inputs) {
    if (dump) {
      std::ofstream(fs::path(dump) / ("seed-" + std::to_string(n)), std::ios::binary)
          .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    }
    ++n;
    try {
      auto g = strix::GgufFile::parse(bytes.data(), bytes.size(), "mutant-" + std::to_string(n));
      ++accepted;
      for (const auto& t : g->tensors()) {
        ASSERT_GE(t.data, bytes.data()) << "mutant " << n;
        ASSERT_LE(t.data + t.nbytes, bytes.data() + bytes.size()) << "mutant " << n;
      }
      for (const auto& kv : g->kvs()) (void)kv.value.to_display();
    } catch (const strix::Error& e) {
      const std::string m = e.what();
      EXPECT_EQ(m.find('\n'), std::string::npos) << "mutant " << n << ": " << m;
      EXPECT_NE(m.find(" at byte "), std::string::npos) << "mutant " << n << ": " << m;
    }
  }
  // the unmutated seeds must parse (else every mutant is refused for one reason)
  for (const Bytes& b : base) EXPECT_NO_THROW(strix::GgufFile::parse(b.data(), b.size(), "seed"));
  EXPECT_GT(accepted, base.size()) << "some mutants (flips inside tensor data) must still parse";
  EXPECT_LT(accepted, n) << "most mutants must be refused";
  std::printf("[ mutants  ] %zu inputs, %zu accepted, %zu refused\n", n, accepted, n - accepted);
}

}  // namespace
