#include "core/source_dir.h"
#include "cli/cli_process.h"

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace cli_test {

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void exec_child(const std::string& exe, const std::vector<std::string>& args,
                             const std::vector<std::pair<std::string, std::string>>& env) {
  for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(exe.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(exe.c_str(), argv.data());
  _exit(127);
}

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

Result run(const std::string& exe, const std::vector<std::string>& args, const std::string& input,
           const std::vector<std::pair<std::string, std::string>>& env, int timeout_s) {
  int in[2], out[2], err[2];
  if (pipe(in) != 0 || pipe(out) != 0 || pipe(err) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) close(fd);
    exec_child(exe, args, env);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  signal(SIGPIPE, SIG_IGN);
  size_t written = 0;
  if (input.empty()) {
    close(in[1]);
    in[1] = -1;
  } else {
    fcntl(in[1], F_SETFL, O_NONBLOCK);
  }
  Result r;
  const auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
  bool out_open = true, err_open = true;
  while (out_open || err_open) {
    std::vector<pollfd> fds;
    if (out_open) fds.push_back({out[0], POLLIN, 0});
    if (err_open) fds.push_back({err[0], POLLIN, 0});
    if (in[1] >= 0) fds.push_back({in[1], POLLOUT, 0});
    if (Clock::now() > deadline) {
      kill(pid, SIGKILL);
      break;
    }
    if (poll(fds.data(), fds.size(), 200) <= 0) continue;
    for (const auto& f : fds) {
      if (f.revents == 0) continue;
      if (f.fd == in[1]) {
        const ssize_t n = write(in[1], input.data() + written, input.size() - written);
        if (n > 0) written += static_cast<size_t>(n);
        if (n < 0 || written == input.size()) {
          close(in[1]);
          in[1] = -1;
        }
        continue;
      }
      char buf[4096];
      const ssize_t n = read(f.fd, buf, sizeof(buf));
      if (n <= 0) {
        (f.fd == out[0] ? out_open : err_open) = false;
      } else {
        (f.fd == out[0] ? r.out : r.err).append(buf, static_cast<size_t>(n));
      }
    }
  }
  if (in[1] >= 0) close(in[1]);
  close(out[0]);
  close(err[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  r.code = decode_status(status);
  return r;
}

std::string strix_binary() { return STRIX_BINARY_PATH; }

std::string stories_model() {
  const std::string p = std::string(STRIX_SOURCE_DIR) + "/../shared/data/stories260K.gguf";
  return std::filesystem::exists(p) ? p : std::string();
}

Pty::Pty(const std::string& exe, const std::vector<std::string>& args,
         const std::vector<std::pair<std::string, std::string>>& env) {
  struct winsize ws {};
  ws.ws_row = 40;
  ws.ws_col = 200;
  const pid_t pid = forkpty(&fd_, nullptr, nullptr, &ws);
  if (pid < 0) throw std::runtime_error("forkpty failed");
  if (pid == 0) exec_child(exe, args, env);
  pid_ = pid;
}

Pty::~Pty() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (fd_ >= 0) close(fd_);
}

bool Pty::read_some(int timeout_ms) {
  pollfd p{fd_, POLLIN, 0};
  if (poll(&p, 1, timeout_ms) <= 0) return false;
  char buf[4096];
  const ssize_t n = read(fd_, buf, sizeof(buf));
  if (n <= 0) return false;  // EIO: the child closed the terminal
  transcript_.append(buf, static_cast<size_t>(n));
  return true;
}

bool Pty::wait_for(const std::string& needle, size_t from, int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    if (transcript_.size() > from && transcript_.find(needle, from) != std::string::npos) return true;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    if (!read_some(static_cast<int>(std::min<long>(left, 100))) && reap()) {
      return transcript_.find(needle, from) != std::string::npos;
    }
  }
}

bool Pty::reap() {
  if (pid_ <= 0) return true;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) != pid_) return false;
  pid_ = -1;
  exit_code_ = decode_status(status);
  while (read_some(50)) {
  }
  return true;
}

void Pty::send(const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd_, bytes.data() + done, bytes.size() - done);
    if (n <= 0) throw std::runtime_error("write to the pty failed");
    done += static_cast<size_t>(n);
  }
}

int Pty::wait_exit(int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!reap()) {
    if (Clock::now() > deadline) return -1;
    read_some(50);
  }
  return exit_code_;
}

}  // namespace cli_test
