#include "core/cpu_features.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace strix {

// The kernel's own view of the CPU (/proc/cpuinfo) is the independent reference.
TEST(CpuFeatures, agree_with_proc_cpuinfo) {
  std::ifstream in("/proc/cpuinfo");
  if (!in) GTEST_SKIP() << "no /proc/cpuinfo";
  std::string line, flags;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) == 0) {
      flags = line.substr(line.find(':') + 1);
      flags.push_back(' ');
      break;
    }
  }
  ASSERT_FALSE(flags.empty());
  auto has = [&](const std::string& f) {
    std::string needle = " ";
    needle.append(f).push_back(' ');
    return flags.find(needle) != std::string::npos;
  };
  const CpuFeatures& c = cpu_features();
  EXPECT_EQ(c.avx2, has("avx2"));
  EXPECT_EQ(c.fma, has("fma"));
  EXPECT_EQ(c.f16c, has("f16c"));
  EXPECT_EQ(c.avx512f, has("avx512f"));
  EXPECT_EQ(c.avx512bw, has("avx512bw"));
  EXPECT_EQ(c.avx512vnni, has("avx512_vnni"));
  EXPECT_EQ(c.avx512bf16, has("avx512_bf16"));
  EXPECT_FALSE(c.to_string().empty());
}

}  // namespace strix
