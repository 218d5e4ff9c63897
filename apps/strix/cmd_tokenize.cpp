// strix tokenize -m FILE (-p TEXT | -f FILE | --stdin) [--ids] [--no-bos]
//                [--no-parse-special] [--show-count]
// Tokenizes text with a GGUF file's vocabulary (a vocab-only file is enough),
// printing like llama.cpp's llama-tokenize: one `ID -> 'piece'` line per token,
// or `[1, 2, 3]` with --ids.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>

#include "apps/strix/commands.h"
#include "core/error.h"
#include "tokenizer/tokenizer.h"

namespace strix::app {

namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "usage: strix tokenize -m FILE (-p TEXT | -f FILE | --stdin) [--ids] [--no-bos]\n"
               "                      [--no-parse-special] [--show-count]\n"
               "\n"
               "Tokenize text with the vocabulary of a GGUF file (tensors are not needed).\n"
               "\n"
               "  -m, --model FILE     the GGUF file\n"
               "  -p, --prompt TEXT    text to tokenize\n"
               "  -f, --file FILE      read the text from a file\n"
               "  --stdin              read the text from standard input\n"
               "  --ids                print only the ids, as [1, 2, 3]\n"
               "  --no-bos             do not add bos/eos (add_special = false)\n"
               "  --no-parse-special   treat control-token text as plain text\n"
               "  --show-count         print the number of tokens at the end\n"
               "  -h                   this help\n");
}

std::string read_all(std::istream& in) {
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

int cmd_tokenize(int argc, char** argv) {
  std::string model, text;
  bool have_text = false, ids_only = false, add_special = true, parse_special = true, show_count = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Error("tokenize: " + a + " needs a value");
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else if (a == "-m" || a == "--model") {
      model = value();
    } else if (a == "-p" || a == "--prompt") {
      text = value();
      have_text = true;
    } else if (a == "-f" || a == "--file") {
      const std::string path = value();
      std::ifstream f(path, std::ios::binary);
      if (!f) throw Error("tokenize: cannot open " + path);
      text = read_all(f);
      have_text = true;
    } else if (a == "--stdin") {
      text = read_all(std::cin);
      have_text = true;
    } else if (a == "--ids") {
      ids_only = true;
    } else if (a == "--no-bos") {
      add_special = false;
    } else if (a == "--no-parse-special") {
      parse_special = false;
    } else if (a == "--show-count") {
      show_count = true;
    } else {
      usage(stderr);
      throw Error("tokenize: unknown argument '" + a + "'");
    }
  }
  if (model.empty()) throw Error("tokenize: -m FILE is required");
  if (!have_text) throw Error("tokenize: give the text with -p, -f or --stdin");

  const tok::Tokenizer tokenizer = tok::Tokenizer::from_file(model);
  const std::vector<int32_t> ids = tokenizer.tokenize(text, add_special, parse_special);
  if (ids_only) {
    std::string line = "[";
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i) line += ", ";
      line += std::to_string(ids[i]);
    }
    std::printf("%s]\n", line.c_str());
  } else {
    for (const int32_t id : ids) {
      const std::string piece = tokenizer.token_to_piece(id, true);
      std::printf("%6d -> '", id);
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::printf("'\n");
    }
  }
  if (show_count) std::printf("Total number of tokens: %zu\n", ids.size());
  return 0;
}

}  // namespace strix::app
