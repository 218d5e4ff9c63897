// Helpers for the download tests: temp dirs, running commands, and the fake hub
// (tests/download/fake_hub.py) as a child process.
#pragma once

#include "core/source_dir.h"
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "core/error.h"
#include "download/http.h"

extern char** environ;

namespace strix::download::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "strix-dl-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Runs a shell command; returns its stdout. `status` receives the exit code.
inline std::string run_capture(const std::string& cmd, int* status = nullptr) {
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("popen failed: " + cmd);
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int rc = pclose(p);
  if (status) *status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return out;
}

// tests/download/fake_hub.py on a free port of 127.0.0.1, stopped by the destructor.
class FakeHub {
 public:
  explicit FakeHub(const std::string& files_dir) {
    int fds[2];
    if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    const std::string script = std::string(STRIX_SOURCE_DIR) + "/tests/download/fake_hub.py";
    std::string a0 = "python3";
    std::string a2 = files_dir;
    std::string a1 = script;
    char* argv[] = {a0.data(), a1.data(), a2.data(), nullptr};
    const int rc = posix_spawnp(&pid_, "python3", &fa, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (rc != 0) {
      close(fds[0]);
      throw std::runtime_error("cannot start python3 for the fake hub");
    }
    std::string line;
    char c;
    while (read(fds[0], &c, 1) == 1 && c != '\n') line += c;
    close(fds[0]);
    port_ = std::atoi(line.c_str());
    if (port_ <= 0) {
      stop();
      throw std::runtime_error("the fake hub did not start (printed '" + line + "')");
    }
  }
  ~FakeHub() { stop(); }
  FakeHub(const FakeHub&) = delete;
  FakeHub& operator=(const FakeHub&) = delete;

  void stop() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int st;
      waitpid(pid_, &st, 0);
      pid_ = -1;
    }
  }
  int port() const { return port_; }
  std::string endpoint() const { return "http://localhost:" + std::to_string(port_); }

  // The requests the hub saw, as JSON text; clear() forgets them.
  std::string log() const { return get("/_log"); }
  void clear() const { get("/_log/clear"); }
  void cut_next(int n) const { get("/_control?cut_next=" + std::to_string(n)); }
  void set_down(bool down) const { get(std::string("/_control?down=") + (down ? "1" : "0")); }

 private:
  std::string get(const std::string& path) const {
    HttpRequest req;
    req.url = endpoint() + path;
    HttpResponse res = http_fetch(req);
    if (res.status != 200) throw std::runtime_error("fake hub hook failed: " + path);
    return res.body;
  }

  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace strix::download::testing
