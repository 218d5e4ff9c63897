// strix apply-template: render a chat template over a conversation, as
// transformers' apply_chat_template(tokenize=False) would.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "apps/strix/commands.h"
#include "chat/chat_template.h"
#include "core/error.h"
#include "gguf/reader.h"

namespace strix::app {

namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "usage: strix apply-template (-m FILE.gguf | --template FILE.jinja) --messages FILE.json\n"
               "                            [--tools FILE.json] [--no-add-generation-prompt]\n"
               "                            [--kwargs JSON] [--bos TEXT] [--eos TEXT]\n"
               "\n"
               "Print the prompt a chat template renders for a conversation, byte for byte as\n"
               "Hugging Face transformers (Python jinja2) renders it.\n"
               "\n"
               "  -m FILE.gguf        template from tokenizer.chat_template; bos/eos token texts\n"
               "                      from the GGUF vocabulary\n"
               "  --template FILE     a Jinja2 template file instead\n"
               "  --messages FILE     JSON list of messages ({\"role\":..., \"content\":...})\n"
               "  --tools FILE        JSON list of tool schemas (passed as `tools`; None if absent)\n"
               "  --no-add-generation-prompt   add_generation_prompt=false (default true)\n"
               "  --kwargs JSON       extra template variables, e.g. '{\"enable_thinking\": false}'\n"
               "  --bos/--eos TEXT    override bos_token / eos_token\n"
               "\n"
               "STRIX_FIXED_DATE=YYYY-MM-DD fixes what strftime_now() returns.\n");
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot open " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string token_text(const GgufFile& g, const char* id_key) {
  const GgufValue* id = g.find(id_key);
  const GgufValue* tokens = g.find("tokenizer.ggml.tokens");
  if (!id || !tokens || !tokens->is_array()) return "";
  uint64_t k = id->as_u64();
  if (k >= tokens->items().size()) throw Error(std::string(id_key) + " is out of range of tokenizer.ggml.tokens");
  return tokens->items()[k].as_string();
}

}  // namespace

int cmd_apply_template(int argc, char** argv) {
  std::string model, tmpl_path, messages_path, tools_path, kwargs_json;
  std::string bos, eos;
  bool have_bos = false, have_eos = false, add_gen = true;
  for (int k = 1; k < argc; ++k) {
    std::string a = argv[k];
    auto next = [&]() -> std::string {
      if (k + 1 >= argc) throw Error("missing value after " + a);
      return argv[++k];
    };
    if (a == "-h" || a == "--help") { usage(stdout); return 0; }
    else if (a == "-m" || a == "--model") model = next();
    else if (a == "--template") tmpl_path = next();
    else if (a == "--messages") messages_path = next();
    else if (a == "--tools") tools_path = next();
    else if (a == "--kwargs") kwargs_json = next();
    else if (a == "--no-add-generation-prompt") add_gen = false;
    else if (a == "--bos") { bos = next(); have_bos = true; }
    else if (a == "--eos") { eos = next(); have_eos = true; }
    else throw Error("unknown flag " + a + " (see strix apply-template -h)");
  }
  if (model.empty() == tmpl_path.empty() || messages_path.empty()) {
    usage(stderr);
    return 1;
  }
  std::string tmpl;
  chat::ChatInputs in;
  if (!model.empty()) {
    auto g = GgufFile::open(model);
    if (!g->find("tokenizer.chat_template")) throw Error(model + " has no tokenizer.chat_template");
    tmpl = g->get_string("tokenizer.chat_template");
    in.bos_token = token_text(*g, "tokenizer.ggml.bos_token_id");
    in.eos_token = token_text(*g, "tokenizer.ggml.eos_token_id");
  } else {
    tmpl = read_file(tmpl_path);
  }
  if (have_bos) in.bos_token = bos;
  if (have_eos) in.eos_token = eos;
  in.messages = jinja::parse_json(read_file(messages_path));
  if (!in.messages.is_list()) throw Error("--messages must hold a JSON list");
  if (!tools_path.empty()) in.tools = jinja::parse_json(read_file(tools_path));
  in.add_generation_prompt = add_gen;
  if (!kwargs_json.empty()) {
    jinja::Value kw = jinja::parse_json(kwargs_json);
    if (!kw.is_dict()) throw Error("--kwargs must be a JSON object");
    for (const auto& kv : kw.dict->items) in.kwargs.push_back(kv);
  }
  std::string out = chat::apply_chat_template(tmpl, in);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace strix::app
