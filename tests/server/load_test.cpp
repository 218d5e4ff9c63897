// Load: 64 concurrent streaming requests against a real `strix serve` process
// (16 slots, so requests queue too) on a synthetic model of Llama 3.2 1B's
// shape (Q8_0; under the sanitizers a tiny one),
// three rounds driven by tests/server/load_client.mjs. Every stream must end
// with a finish_reason and [DONE], no request may fail, every KV block must be
// back in the pool after each round (strix:kv_blocks_used in /metrics) and the
// server's resident memory must stay flat across the rounds.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "core/source_dir.h"
#include "server/server_process.h"
#include "synth/synth.h"

namespace {

using json = nlohmann::json;

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

std::string load_model() {
  static const std::string path = [] {
    const auto p = std::filesystem::temp_directory_path() / ("strix-load-" + std::to_string(::getpid()) + ".gguf");
    strix::synth::SynthOptions o;
    o.arch = "llama";
    o.type = "q8_0";
    if (kSanitized) {
      o.n_layer = 1;  // the synth defaults' widths
    } else {
      // Llama 3.2 1B's shape: 16 layers, 2048 wide, 32 / 8 heads, ff 8192, Llama 3 vocabulary, tied output
      o.n_layer = 16;
      o.n_embd = 2048;
      o.n_head = 32;
      o.n_head_kv = 8;
      o.head_dim = 64;
      o.n_ff = 8192;
      o.vocab = "llama3_1";
      o.tied_output = true;
    }
    o.out = p.string();
    strix::synth::synth_write(o);
    // 1.3 GB: gone when this test process exits. The handler must not read
    // `path`: registered before `path` is constructed, it runs after `path`'s
    // destructor (ASan: heap-use-after-free at exit). A copy that is never freed does.
    static const std::string* const doomed = new std::string(p.string());
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove(*doomed, ec);
    });
    return p.string();
  }();
  return path;
}

// The server child's pid: the process whose parent is this test and whose command line says "serve".
int server_pid() {
  for (const auto& d : std::filesystem::directory_iterator("/proc")) {
    const std::string name = d.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(d.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    std::string state;
    int ppid = 0;
    rest >> state >> ppid;
    if (ppid != ::getpid()) continue;
    std::ifstream cmd(d.path() / "cmdline");
    const std::string args((std::istreambuf_iterator<char>(cmd)), std::istreambuf_iterator<char>());
    if (args.find("serve") != std::string::npos) return std::stoi(name);
  }
  return -1;
}

int64_t rss_kib(int pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atoll(line.c_str() + 6);
  }
  return -1;
}

// A metric's value in Prometheus text, or -1 when it is absent.
double metric(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > name.size() && line.compare(0, name.size(), name) == 0 && line[name.size()] == ' ') {
      return std::stod(line.substr(name.size() + 1));
    }
  }
  return -1;
}

TEST(ServeLoad, SixtyFourConcurrentStreamsThreeRoundsNoLeaks) {
  const int kStreams = 64, kTokens = kSanitized ? 3 : 4;
  server_test::Server server(
      {"-m", load_model(), "-np", "16", "-c", "2048", "-t", "2", "--metrics", "--alias", "load"});
  ASSERT_TRUE(server.ok()) << server.log();
  const int pid = server_pid();
  ASSERT_GT(pid, 0);
  std::vector<int64_t> rss;
  for (int round = 0; round < 3; ++round) {
    const server_test::Result r =
        server_test::run("node",
                         {std::string(STRIX_SOURCE_DIR) + "/tests/server/load_client.mjs", server.url(),
                          std::to_string(kStreams), std::to_string(kTokens), std::to_string(round)},
                         {}, 300);
    ASSERT_EQ(r.code, 0) << r.out << r.err << "\nserver log:\n" << server.log();
    const json j = json::parse(r.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << r.out;
    EXPECT_EQ(j["completed"], kStreams) << "round " << round << ": " << j["errors"].dump(1);
    EXPECT_TRUE(j["errors"].empty()) << j["errors"].dump(1);
    EXPECT_GE(j["tokens"].get<int>(), kStreams) << "every stream sends text";
    const std::string m = j["metrics"].get<std::string>();
    EXPECT_EQ(metric(m, "llamacpp:requests_processing"), 0) << m;
    const double used = metric(m, "strix:kv_blocks_used");
    EXPECT_GE(used, 0) << "GET /metrics lacks strix:kv_blocks_used (Routes::metrics should include "
                          "Engine::metrics_text())\n"
                       << m;
    if (used >= 0) {
      EXPECT_EQ(used, 0) << "round " << round << ": KV blocks still held\n" << m;
      EXPECT_GT(metric(m, "strix:kv_blocks_total"), 0);
    }
    rss.push_back(rss_kib(pid));
  }
  // The first round sizes every buffer; later rounds may not grow (slack for allocator noise).
  const int64_t slack = 16 * 1024 + rss[0] / 20;
  EXPECT_LE(rss[1], rss[0] + slack) << "VmRSS (KiB) after each round: " << rss[0] << " " << rss[1] << " " << rss[2];
  EXPECT_LE(rss[2], rss[0] + slack) << "VmRSS (KiB) after each round: " << rss[0] << " " << rss[1] << " " << rss[2];
  std::printf("    VmRSS after each round (KiB): %lld %lld %lld\n", static_cast<long long>(rss[0]),
              static_cast<long long>(rss[1]), static_cast<long long>(rss[2]));
  EXPECT_EQ(server.stop(), 0) << server.log();
}

}  // namespace
