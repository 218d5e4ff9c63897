// Subcommands of the one `strix` binary. Each returns the process exit code and
// reports errors by throwing strix::Error (printed by main as "error: ...", exit 1).
#pragma once

#include <string>
#include <vector>

namespace strix::app {

int cmd_inspect(int argc, char** argv);  // cmd_inspect.cpp
int cmd_synth(int argc, char** argv);    // cmd_synth.cpp
int cmd_tokenize(int argc, char** argv);  // cmd_tokenize.cpp
int cmd_apply_template(int argc, char** argv);  // cmd_apply_template.cpp
int cmd_run(int argc, char** argv);             // cmd_run.cpp (also `strix -m ...`)
int cmd_parity(int argc, char** argv);          // cmd_parity.cpp
int cmd_bench(int argc, char** argv);           // cmd_bench.cpp
int cmd_bench_serve(int argc, char** argv);     // cmd_bench_serve.cpp
int cmd_batched_bench(int argc, char** argv);   // cmd_batched_bench.cpp
int cmd_quantize(int argc, char** argv);        // cmd_quantize.cpp
int cmd_download(int argc, char** argv);        // cmd_download.cpp
int cmd_serve(int argc, char** argv);           // cmd_serve.cpp (also `strix-server`)

// "0.1.0" (main.cpp)
const char* strix_version();

// A flag's value as a count >= 0, and a comma-separated list of them; an Error
// "TOOL: FLAG needs a count >= 0, got 'V'" otherwise (main.cpp).
int count_arg(const std::string& tool, const std::string& flag, const std::string& v);
std::vector<int> count_list_arg(const std::string& tool, const std::string& flag, const std::string& v);

}  // namespace strix::app
