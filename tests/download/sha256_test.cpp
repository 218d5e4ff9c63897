// SHA-256 against Python's hashlib (an independent implementation) on lengths around
// the 64-byte block and 56-byte padding boundaries, fed whole and in odd chunks.
#include "download/sha256.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "download/test_util.h"

namespace strix::download {
namespace {

std::vector<uint8_t> pattern(size_t n) {
  std::vector<uint8_t> v(n);
  uint32_t x = 12345;
  for (auto& b : v) {
    x = x * 1103515245u + 12345u;
    b = static_cast<uint8_t>(x >> 16);
  }
  return v;
}

std::string hash_of(const std::vector<uint8_t>& data, size_t n, size_t chunk) {
  Sha256 h;
  for (size_t i = 0; i < n; i += chunk) h.update(data.data() + i, std::min(chunk, n - i));
  return h.hex_digest();
}

TEST(Sha256, KnownVectorsFromHashlib) {
  // python3 -c "import hashlib; print(hashlib.sha256(b'...').hexdigest())"
  Sha256 empty;
  EXPECT_EQ(empty.hex_digest(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  Sha256 abc;
  abc.update("abc", 3);
  EXPECT_EQ(abc.hex_digest(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, MatchesHashlibOnEveryLengthAroundBlockBoundaries) {
  const size_t kMax = 300;
  const std::vector<uint8_t> data = pattern(1 << 20);
  const testing::TempDir dir;
  const std::string file = dir.path() + "/data.bin";
  {
    std::ofstream out(file, std::ios::binary);
    out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  }
  // One python call prints the digest of every prefix length we check.
  const std::string script =
      "import hashlib,sys\n"
      "d=open(sys.argv[1],'rb').read()\n"
      "for n in list(range(" +
      std::to_string(kMax + 1) + "))+[len(d)]: print(hashlib.sha256(d[:n]).hexdigest())\n";
  const std::string py = dir.path() + "/h.py";
  std::ofstream(py) << script;
  const std::string out = testing::run_capture("python3 " + py + " " + file);
  std::istringstream lines(out);
  std::vector<std::string> expected;
  for (std::string l; std::getline(lines, l);) expected.push_back(l);
  ASSERT_EQ(expected.size(), kMax + 2) << out;

  for (size_t n = 0; n <= kMax; ++n) {
    EXPECT_EQ(hash_of(data, n, n ? n : 1), expected[n]) << "length " << n;
    EXPECT_EQ(hash_of(data, n, 7), expected[n]) << "length " << n << " in 7-byte chunks";
  }
  EXPECT_EQ(hash_of(data, data.size(), 65537), expected.back());
  EXPECT_EQ(sha256_file_hex(file), expected.back());

  // Negative control: one flipped bit must change the digest.
  std::vector<uint8_t> flipped = data;
  flipped[100] ^= 1;
  EXPECT_NE(hash_of(flipped, 200, 200), expected[200]);
}

TEST(Sha256, UnreadableFileIsAnError) { EXPECT_THROW(sha256_file_hex("/nonexistent/strix/file"), Error); }

}  // namespace
}  // namespace strix::download
