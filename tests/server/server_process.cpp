#include "core/source_dir.h"
#include "server/server_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

namespace server_test {

namespace fs = std::filesystem;

std::string strix_binary() { return STRIX_BINARY_PATH; }

std::string stories_model() {
  const fs::path p = fs::path(STRIX_SOURCE_DIR) / ".." / "shared" / "data" / "stories260K.gguf";
  return fs::exists(p) ? p.string() : std::string();
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

}  // namespace server_test
