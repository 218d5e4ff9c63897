// -hf downloads against tests/download/fake_hub.py (no internet): the hub cache layout
// (checked by hf_layout_check.py, written from huggingface_hub's rules and hashing with
// hashlib), the manifest route for tags, split sets, 401/404, resume after a cut
// transfer, a wrong hash, the CDN redirect, and reuse of the cache with the hub down.
#include "core/source_dir.h"
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "core/error.h"
#include "download/hf.h"
#include "download/test_util.h"

namespace fs = std::filesystem;

namespace strix::download {
namespace {

using testing::FakeHub;
using testing::TempDir;

constexpr const char* kCommit = "0123456789abcdef0123456789abcdef01234567";  // fake_hub.py's org/models

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs `fn`, expecting a strix::Error whose message contains `part`.
template <typename Fn>
void expect_error(Fn fn, const std::string& part) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one containing '" << part << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << "message: " << e.what();
  }
}

class HfDownload : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // The fake hub is local: a proxy from the environment must not carry these requests.
    setenv("no_proxy", "localhost,127.0.0.1", 1);
    setenv("NO_PROXY", "localhost,127.0.0.1", 1);
    files_ = new TempDir;
    hub_ = new FakeHub(files_->path());
  }
  static void TearDownTestSuite() {
    delete hub_;
    delete files_;
  }
  void SetUp() override {
    cache_ = std::make_unique<TempDir>();
    use_hub(*hub_);
    unsetenv("HF_TOKEN");
    unsetenv("HF_HUB_OFFLINE");
    unsetenv("MODEL_ENDPOINT");
    hub_->cut_next(0);
    hub_->clear();
  }
  void use_hub(const FakeHub& hub) {
    setenv("HF_HUB_CACHE", cache_->path().c_str(), 1);
    setenv("HF_ENDPOINT", hub.endpoint().c_str(), 1);
  }

  std::string get(const std::string& hf, const std::string& hff = "", const std::string& token = "") {
    return resolve_model(parse_hf_arg(hf, hff, token));
  }
  std::string repo_dir(const std::string& repo) const {
    std::string folder = "models--" + repo;
    for (size_t at; (at = folder.find('/')) != std::string::npos;) folder.replace(at, 1, "--");
    return cache_->path() + "/" + folder;
  }
  std::string source(const std::string& repo, const std::string& file) const {
    return files_->path() + "/" + repo + "/" + file;
  }
  // hf_layout_check.py over the cache; each triple adds "this repo file has these bytes".
  std::string check_layout(const std::vector<std::array<std::string, 2>>& expect, int* status) const {
    std::string cmd =
        "python3 " + std::string(STRIX_SOURCE_DIR) + "/tests/download/hf_layout_check.py " + cache_->path();
    for (const auto& [repo, file] : expect) cmd += " " + repo + " " + file + " " + source(repo, file);
    return testing::run_capture(cmd + " 2>&1", status);
  }
  void expect_layout_ok(const std::vector<std::array<std::string, 2>>& expect) const {
    int status = -1;
    const std::string out = check_layout(expect, &status);
    EXPECT_EQ(status, 0) << out;
    EXPECT_EQ(out, "ok\n");
  }
  static nlohmann::json log() { return nlohmann::json::parse(hub_->log()); }
  static int count(const nlohmann::json& log, const std::string& method, const std::string& path_part) {
    int n = 0;
    for (const auto& r : log) {
      n += r["method"] == method && r["path"].get<std::string>().find(path_part) != std::string::npos;
    }
    return n;
  }

  static TempDir* files_;
  static FakeHub* hub_;
  std::unique_ptr<TempDir> cache_;
};

TempDir* HfDownload::files_ = nullptr;
FakeHub* HfDownload::hub_ = nullptr;

TEST_F(HfDownload, FileLandsInTheHubCacheLayout) {
  const std::string path = get("org/models", "tinyllamas/stories.gguf");
  const std::string dir = repo_dir("org/models");
  EXPECT_EQ(path, dir + "/snapshots/" + kCommit + "/tinyllamas/stories.gguf");
  ASSERT_TRUE(fs::is_symlink(path));
  const std::string target = fs::read_symlink(path).string();
  EXPECT_EQ(target.rfind("../../../blobs/", 0), 0u) << target;  // relative, one level per folder
  EXPECT_EQ(target.size(), std::string("../../../blobs/").size() + 64) << target;
  EXPECT_EQ(slurp(dir + "/refs/main"), kCommit);  // no newline, as huggingface_hub
  EXPECT_EQ(slurp(path), slurp(source("org/models", "tinyllamas/stories.gguf")));
  expect_layout_ok({{"org/models", "tinyllamas/stories.gguf"}});

  const auto l = log();
  EXPECT_EQ(count(l, "HEAD", "/org/models/resolve/main/tinyllamas/stories.gguf"), 1);
  EXPECT_EQ(count(l, "GET", "/cdn/"), 1);
  for (const auto& r : l) EXPECT_NE(r["ua"].get<std::string>().find("llama-cpp"), std::string::npos);
}

TEST_F(HfDownload, LayoutCheckerRejectsABrokenCache) {
  // Negative control for hf_layout_check.py: an absolute link and a ref with a newline.
  const std::string path = get("org/models", "model-Q8_0.gguf");
  const fs::path abs_target = fs::canonical(path);
  fs::remove(path);
  fs::create_symlink(abs_target, path);
  int status = 0;
  EXPECT_NE(check_layout({}, &status).find("absolute"), std::string::npos);
  EXPECT_EQ(status, 1);
  fs::remove(path);
  fs::create_symlink(fs::relative(abs_target, fs::path(path).parent_path()), path);
  expect_layout_ok({});
  std::ofstream(repo_dir("org/models") + "/refs/main") << kCommit << "\n";
  EXPECT_NE(check_layout({}, &status).find("refs/main"), std::string::npos);
  EXPECT_EQ(status, 1);
}

TEST_F(HfDownload, SecondRunReusesTheBlob) {
  const std::string first = get("org/models", "model-Q8_0.gguf");
  hub_->clear();
  EXPECT_EQ(get("org/models", "model-Q8_0.gguf"), first);
  const auto l = log();
  EXPECT_EQ(count(l, "HEAD", "/resolve/"), 1);  // the commit is checked...
  EXPECT_EQ(count(l, "GET", "/cdn/"), 0);       // ...but nothing is downloaded again
}

TEST_F(HfDownload, QuantTagGoesThroughTheManifest) {
  const std::string q8 = get("org/models:Q8_0");
  EXPECT_EQ(fs::path(q8).filename(), "model-Q8_0.gguf");
  EXPECT_EQ(slurp(q8), slurp(source("org/models", "model-Q8_0.gguf")));
  const std::string latest = get("org/models");
  EXPECT_EQ(fs::path(latest).filename(), "model-Q4_K_M.gguf");
  const auto l = log();
  EXPECT_EQ(count(l, "GET", "/v2/org/models/manifests/Q8_0"), 1);
  EXPECT_EQ(count(l, "GET", "/v2/org/models/manifests/latest"), 1);
  EXPECT_EQ(count(l, "HEAD", "mmproj"), 0);  // the manifest's mmprojFile is ignored
  expect_layout_ok({{"org/models", "model-Q8_0.gguf"}, {"org/models", "model-Q4_K_M.gguf"}});
}

TEST_F(HfDownload, SplitSetDownloadsEveryPart) {
  const std::string first = get("org/models:split");
  EXPECT_EQ(fs::path(first).filename(), "big-00001-of-00003.gguf");
  for (const char* part : {"big-00002-of-00003.gguf", "big-00003-of-00003.gguf"}) {
    EXPECT_TRUE(fs::is_regular_file(fs::path(first).parent_path() / part)) << part;
  }
  expect_layout_ok({{"org/models", "split/big-00001-of-00003.gguf"},
                    {"org/models", "split/big-00002-of-00003.gguf"},
                    {"org/models", "split/big-00003-of-00003.gguf"}});
}

TEST_F(HfDownload, MissingRepoFileOrTagIsOneClearSentence) {
  expect_error([&] { get("org/models", "nope.gguf"); }, "no such repo or file: org/models/nope.gguf");
  expect_error([&] { get("org/nothing", "x.gguf"); }, "no such repo or file");
  expect_error([&] { get("org/nothing"); }, "no such repo or file");
  expect_error([&] { get("org/models:Q2_K"); }, "tag is not available");
  EXPECT_FALSE(fs::exists(repo_dir("org/models") + "/snapshots/" + kCommit + "/nope.gguf"));
}

TEST_F(HfDownload, PrivateRepoNeedsAToken) {
  expect_error([&] { get("org/private", "secret-Q4_K_M.gguf"); }, "set HF_TOKEN or pass --hf-token");
  expect_error([&] { get("org/private"); }, "set HF_TOKEN or pass --hf-token");
  expect_error([&] { get("org/private", "secret-Q4_K_M.gguf", "hf_wrong"); }, "check HF_TOKEN / --hf-token");
  hub_->clear();
  const std::string path = get("org/private", "", "hf_secret");
  EXPECT_EQ(slurp(path), slurp(source("org/private", "secret-Q4_K_M.gguf")));
  for (const auto& r : log()) {
    const bool to_cdn = r["path"].get<std::string>().rfind("/cdn/", 0) == 0;
    // The hub gets the token; the CDN (another host) must not.
    EXPECT_EQ(r["auth"], to_cdn ? "" : "Bearer hf_secret") << r.dump();
  }
  setenv("HF_TOKEN", "hf_secret", 1);  // the variable works as the flag does
  fs::remove_all(cache_->path() + "/models--org--private");
  EXPECT_EQ(slurp(get("org/private", "secret-Q4_K_M.gguf")), slurp(source("org/private", "secret-Q4_K_M.gguf")));
}

TEST_F(HfDownload, CutTransferIsResumedWithRange) {
  hub_->cut_next(1);
  const std::string path = get("org/models", "tinyllamas/stories.gguf");
  EXPECT_EQ(slurp(path), slurp(source("org/models", "tinyllamas/stories.gguf")));
  std::vector<std::string> ranges;
  for (const auto& r : log()) {
    if (r["path"].get<std::string>().rfind("/cdn/", 0) == 0) ranges.push_back(r["range"]);
  }
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[0], "");
  EXPECT_EQ(ranges[1], "bytes=150000-");  // the hub cut after half of 300000 bytes
  expect_layout_ok({{"org/models", "tinyllamas/stories.gguf"}});
}

TEST_F(HfDownload, CutTransferResumesOnTheNextRun) {
  hub_->cut_next(3);  // every attempt of this run is cut
  expect_error([&] { get("org/models", "tinyllamas/stories.gguf"); }, "run again to resume");
  std::string part;
  for (const auto& e : fs::directory_iterator(repo_dir("org/models") + "/blobs")) part = e.path().string();
  ASSERT_NE(part.find(".incomplete"), std::string::npos) << part;
  const uintmax_t have = fs::file_size(part);
  EXPECT_GT(have, 0u);
  EXPECT_LT(have, 300000u);
  EXPECT_FALSE(fs::exists(repo_dir("org/models") + "/snapshots/" + kCommit + "/tinyllamas/stories.gguf"));

  hub_->clear();
  const std::string path = get("org/models", "tinyllamas/stories.gguf");
  EXPECT_EQ(slurp(path), slurp(source("org/models", "tinyllamas/stories.gguf")));
  std::vector<std::string> ranges;
  for (const auto& r : log()) {
    if (r["path"].get<std::string>().rfind("/cdn/", 0) == 0) ranges.push_back(r["range"]);
  }
  ASSERT_EQ(ranges.size(), 1u);
  EXPECT_EQ(ranges[0], "bytes=" + std::to_string(have) + "-");
  expect_layout_ok({{"org/models", "tinyllamas/stories.gguf"}});
}

TEST_F(HfDownload, WrongHashIsRefusedAndNotKept) {
  expect_error([&] { get("org/badhash", "bad.gguf"); }, "does not match its SHA-256");
  const std::string blobs = repo_dir("org/badhash") + "/blobs";
  EXPECT_TRUE(fs::is_empty(blobs)) << "a bad blob or its .incomplete was kept";
  EXPECT_FALSE(fs::exists(repo_dir("org/badhash") + "/snapshots"));
}

TEST_F(HfDownload, CacheIsUsedWhenTheHubIsDown) {
  TempDir files;
  auto hub = std::make_unique<FakeHub>(files.path());
  use_hub(*hub);
  const std::string by_file = get("org/models", "tinyllamas/stories.gguf");
  const std::string by_tag = get("org/models:Q8_0");
  hub->stop();  // nothing listens on that port any more
  EXPECT_EQ(get("org/models", "tinyllamas/stories.gguf"), by_file);
  EXPECT_EQ(get("org/models:Q8_0"), by_tag);  // the tag is matched among cached files
  expect_error([&] { get("org/models", "model-Q4_K_M.gguf"); }, "cannot reach");
  expect_error([&] { get("org/models:split"); }, "cannot reach");
}

TEST_F(HfDownload, CacheIsUsedWhenTheHubFailsOnItsSide) {
  const std::string path = get("org/models", "model-Q8_0.gguf");
  hub_->set_down(true);  // /resolve/ answers 503
  EXPECT_EQ(get("org/models", "model-Q8_0.gguf"), path);
  expect_error([&] { get("org/models", "model-Q4_K_M.gguf"); }, "HTTP 503");
  hub_->set_down(false);
}

TEST_F(HfDownload, OfflineModeNeverTouchesTheNetwork) {
  const std::string path = get("org/models", "model-Q8_0.gguf");
  hub_->clear();
  setenv("HF_HUB_OFFLINE", "1", 1);
  EXPECT_EQ(get("org/models", "model-Q8_0.gguf"), path);
  EXPECT_EQ(get("org/models:q8_0"), path);
  expect_error([&] { get("org/models", "model-Q4_K_M.gguf"); }, "offline");
  expect_error([&] { get("org/models:split"); }, "offline");
  EXPECT_EQ(log().size(), 0u);
}

TEST_F(HfDownload, RenamedRepoFollowsTheRelativeRedirect) {
  const std::string path = get("org/old-name", "model-Q8_0.gguf");
  EXPECT_EQ(path.rfind(repo_dir("org/old-name"), 0), 0u) << path;  // cached under the name asked for
  EXPECT_EQ(slurp(path), slurp(source("org/models", "model-Q8_0.gguf")));
}

TEST_F(HfDownload, ManifestNamingAnUnsafePathIsRefused) {
  expect_error([&] { get("evil/repo"); }, "unsafe path");
  EXPECT_FALSE(fs::exists(fs::path(cache_->path()).parent_path() / "escape.gguf"));
}

TEST_F(HfDownload, PlainGitFileIsNamedByItsGitBlobId) {
  const std::string path = get("org/models", "README.md");
  EXPECT_EQ(slurp(path), slurp(source("org/models", "README.md")));
  EXPECT_EQ(fs::read_symlink(path).filename().string().size(), 40u);
  expect_layout_ok({{"org/models", "README.md"}});
}

TEST_F(HfDownload, CommandPrintsThePath) {
  const std::string bin = STRIX_BINARY_PATH;
  int status = -1;
  const std::string out =
      testing::run_capture(bin + " download -hf org/models -hff tinyllamas/stories.gguf 2>/dev/null", &status);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(out, repo_dir("org/models") + "/snapshots/" + kCommit + "/tinyllamas/stories.gguf\n");

  const std::string err = testing::run_capture(bin + " download -hf notarepo 2>&1", &status);
  EXPECT_EQ(status, 1);
  EXPECT_EQ(err.rfind("error: ", 0), 0u) << err;
  testing::run_capture(bin + " download --bogus 2>&1", &status);
  EXPECT_EQ(status, 1);
  const std::string help = testing::run_capture(bin + " download -h", &status);
  EXPECT_EQ(status, 0);
  EXPECT_NE(help.find("mmproj"), std::string::npos);
}

// strix serve takes llama-server's -hf / -hff / -hft: the model is resolved
// and downloaded as `strix download` does before the server loads it (these
// hub files are not GGUFs, so loading then fails naming the downloaded file).
// Negative control: without -m or -hf nothing is fetched and the error says
// what is missing.
TEST_F(HfDownload, ServeResolvesHfBeforeLoading) {
  const std::string bin = STRIX_BINARY_PATH;
  int status = -1;
  const std::string err = testing::run_capture(
      bin + " serve -cb -hf org/models -hff tinyllamas/stories.gguf --port 0 2>&1 >/dev/null", &status);
  EXPECT_EQ(status, 1) << err;
  const std::string path = repo_dir("org/models") + "/snapshots/" + kCommit + "/tinyllamas/stories.gguf";
  EXPECT_NE(err.find(path), std::string::npos) << err;
  expect_layout_ok({{"org/models", "tinyllamas/stories.gguf"}});

  hub_->clear();
  const std::string none = testing::run_capture(bin + " serve --port 0 2>&1 >/dev/null", &status);
  EXPECT_EQ(status, 1);
  EXPECT_NE(none.find("-hf USER/REPO"), std::string::npos) << none;
  EXPECT_EQ(log().size(), 0u);
  const std::string nocb = testing::run_capture(bin + " serve -nocb -m x.gguf 2>&1 >/dev/null", &status);
  EXPECT_NE(status, 0);
  EXPECT_NE(nocb.find("-nocb"), std::string::npos) << nocb;
}

}  // namespace
}  // namespace strix::download
