// `strix serve` as a child process for the server tests, and the node client
// that talks to it.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace server_test {

std::string strix_binary();
std::string stories_model();  // "" when ../shared/data is absent

struct Result {
  int code = -1;  // exit status, or 128 + signal
  std::string out, err;
};

// Runs exe with args (no shell), stdout/stderr captured; killed after timeout_s.
Result run(const std::string& exe, const std::vector<std::string>& args,
           const std::vector<std::pair<std::string, std::string>>& env = {}, int timeout_s = 60);

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

}  // namespace server_test
