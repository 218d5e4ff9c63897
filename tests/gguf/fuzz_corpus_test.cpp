// Regression: every file of the minimized fuzz corpus (tests/data/gguf-corpus,
// from fuzz/gguf_reader_fuzz) parses or is refused with strix::Error; nothing
// else escapes and nothing reads out of bounds (run this binary under ASan).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/reader.h"

namespace {

namespace fs = std::filesystem;

TEST(GgufFuzzCorpus, every_file_parses_or_is_refused_cleanly) {
  const fs::path dir = fs::path(STRIX_SOURCE_DIR) / "tests" / "data" / "gguf-corpus";
  ASSERT_TRUE(fs::is_directory(dir)) << dir;
  size_t n = 0, accepted = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream f(entry.path(), std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    ++n;
    try {
      auto g = strix::GgufFile::parse(bytes.data(), bytes.size(), entry.path().filename().string());
      ++accepted;
      for (const auto& t : g->tensors()) {
        ASSERT_GE(t.data, bytes.data()) << entry.path();
        ASSERT_LE(t.data + t.nbytes, bytes.data() + bytes.size()) << entry.path();
      }
      for (const auto& kv : g->kvs()) (void)kv.value.to_display();
    } catch (const strix::Error& e) {
      const std::string m = e.what();
      EXPECT_EQ(m.find('\n'), std::string::npos) << entry.path() << ": " << m;
      EXPECT_NE(m.find(" at byte "), std::string::npos) << entry.path() << ": " << m;
    }
  }
  EXPECT_GT(n, 10u);
  std::printf("[ corpus   ] %zu files, %zu accepted, %zu refused\n", n, accepted, n - accepted);
}

}  // namespace
