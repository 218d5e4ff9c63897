// `strix inspect` end to end: the built binary (STRIX_BINARY_PATH) on the real
// model and on a malformed file.
#include "core/source_dir.h"
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "gguf/gguf_bytes.h"

namespace {

using namespace gguf_test;
namespace fs = std::filesystem;

const std::string kStories = std::string(STRIX_SOURCE_DIR) + "/../shared/data/stories260K.gguf";

struct CliRun {
  int code = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Runs `strix ARGS` with stdout and stderr captured to files.
CliRun run_strix(const std::string& args) {
  const fs::path dir = fs::temp_directory_path();
  const std::string tag = std::to_string(::getpid());
  const fs::path out = dir / ("strix_cli_out_" + tag), err = dir / ("strix_cli_err_" + tag);
  const std::string cmd = std::string(STRIX_BINARY_PATH) + " " + args + " >" + out.string() + " 2>" + err.string();
  const int status = std::system(cmd.c_str());
  CliRun r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  fs::remove(out);
  fs::remove(err);
  return r;
}

TEST(InspectCli, stories260k_shows_arch_tensors_and_vocab) {
  if (!fs::exists(kStories)) GTEST_SKIP() << kStories << " is absent";
  const CliRun r = run_strix(std::string("inspect ") + kStories);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("GGUF v3, 19 KV, 48 tensors, alignment 32, data offset "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("architecture llama, 48 tensors, 512 tokens"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("general.architecture"), std::string::npos);
  EXPECT_NE(r.out.find("... 512 items]"), std::string::npos) << "long arrays are summarized";
  EXPECT_NE(r.out.find("blk.4.ffn_norm.weight"), std::string::npos);
  EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST(InspectCli, json_is_one_object_with_metadata_and_tensors) {
  if (!fs::exists(kStories)) GTEST_SKIP() << kStories << " is absent";
  const CliRun r = run_strix(std::string("inspect ") + kStories + " --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["version"], 3);
  EXPECT_EQ(j["metadata"]["general.architecture"]["value"], "llama");
  EXPECT_EQ(j["metadata"]["general.architecture"]["type"], "string");
  const auto& tokens = j["metadata"]["tokenizer.ggml.tokens"];
  EXPECT_EQ(tokens["count"], 512);
  EXPECT_EQ(tokens["truncated"], true);
  EXPECT_EQ(tokens["value"].size(), 8u);
  EXPECT_EQ(tokens["value"][1], "<s>");
  ASSERT_EQ(j["tensors"].size(), 48u);
  EXPECT_EQ(j["tensors"][0]["name"], "token_embd.weight");
  EXPECT_EQ(j["tensors"][0]["type"], "f32");
  EXPECT_EQ(j["tensors"][0]["shape"], nlohmann::json::array({64, 512}));
  EXPECT_EQ(j["tensors"][0]["bytes"], 131072);

  const CliRun full = run_strix(std::string("inspect --json --full ") + kStories);
  ASSERT_EQ(full.code, 0) << full.err;
  const auto jf = nlohmann::json::parse(full.out);
  EXPECT_EQ(jf["metadata"]["tokenizer.ggml.tokens"]["value"].size(), 512u);
  EXPECT_EQ(jf["metadata"]["tokenizer.ggml.tokens"]["truncated"], false);
}

TEST(InspectCli, malformed_file_exits_1_with_one_line_on_stderr) {
  Spec s;
  s.kvs = {kv_str("general.architecture", "llama")};
  s.tensors = {{"blk.0.attn_q.weight", {8, 8}}};
  s.data_bytes = 100;  // the tensor needs 256
  const Built b = build(s);
  const std::string path =
      (fs::temp_directory_path() / ("strix_cli_bad_" + std::to_string(::getpid()) + ".gguf")).string();
  write_file(path, b.bytes);
  const CliRun r = run_strix("inspect " + path);
  fs::remove(path);
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(r.out.empty()) << r.out;
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "exactly one line: " << r.err;
  EXPECT_EQ(r.err.rfind("error: " + path + ": tensor 'blk.0.attn_q.weight' at byte " +
                            std::to_string(b.offset_field_at[0]) + ": data [",
                        0),
            0u)
      << r.err;
  EXPECT_NE(r.err.find("extends past the end of the file (size " + std::to_string(b.bytes.size()) + ")"),
            std::string::npos)
      << r.err;
}

TEST(InspectCli, missing_file_and_bad_flag_exit_1) {
  CliRun r = run_strix("inspect /nonexistent/x.gguf");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("/nonexistent/x.gguf"), std::string::npos) << r.err;
  r = run_strix("inspect --bogus");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--bogus"), std::string::npos) << r.err;
}

TEST(InspectCli, help_prints_usage) {
  const CliRun r = run_strix("inspect -h");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("usage: strix inspect FILE [--json] [--full]"), std::string::npos) << r.out;
}

}  // namespace
