// The built-in chat formats (src/chat/builtin_templates.h) against the pinned
// libllama's own llama_chat_apply_template: every name the library lists,
// several conversations (system / user / assistant, multi-turn, odd roles,
// whitespace to trim, UTF-8), with and without the generation prompt, byte for
// byte. Negative controls: an altered conversation must render differently,
// and an altered name must be unknown to both.
#include "chat/builtin_templates.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "ref/libllama.h"

namespace strix::chat {
namespace {

using Conversation = std::vector<std::pair<std::string, std::string>>;

std::vector<Conversation> conversations() {
  return {
      {{"system", "You are a helpful assistant."},
       {"user", "Hello"},
       {"assistant", "Hi there"},
       {"user", "Who are you"}},
      {{"user", "Only one question?"}},
      {{"user", "  padded user \n"},
       {"assistant", "\t reply with spaces \n\n"},
       {"user", "again"},
       {"assistant", "second reply"}},
      {{"system", " sys with spaces "},
       {"system", "second system"},
       {"user", "u"},
       {"assistant_tool_call", "call()"},
       {"tool", "tool result"},
       {"function", "fn out"},
       {"assistant", "after tools"},
       {"user", "last"}},
      {{"assistant", "assistant speaks first"}, {"user", "then the user"}, {"system", "late system"}},
      {{"user", "Ünïcödé ✓ \xE2\x96\x81 and \xEF\xBD\x9C bars"}, {"assistant", "日本語の返事"}, {"user", ""}},
      {{"xyz", "unknown role"}, {"", "empty role"}, {"user", "ok"}},
      {},
  };
}

std::vector<BuiltinMessage> to_builtin(const Conversation& c) {
  std::vector<BuiltinMessage> out;
  for (const auto& [role, content] : c) out.push_back({role, content});
  return out;
}

std::string show(const std::string& s) {
  std::string out;
  for (char ch : s) out += ch == '\n' ? std::string("\\n") : std::string(1, ch);
  return out;
}

TEST(BuiltinTemplates, names_are_exactly_libllamas) {
  const std::vector<std::string> ref = ref::chat_builtin_templates();
  ASSERT_GE(ref.size(), 40u);
  EXPECT_EQ(std::set<std::string>(ref.begin(), ref.end()),
            std::set<std::string>(builtin_template_names().begin(), builtin_template_names().end()));
  EXPECT_EQ(ref, builtin_template_names()) << "same order (sorted) as llama_chat_builtin_templates";
}

TEST(BuiltinTemplates, every_name_renders_every_conversation_like_libllama) {
  int compared = 0;
  for (const std::string& name : ref::chat_builtin_templates()) {
    ASSERT_TRUE(is_builtin_template(name)) << name;
    for (const Conversation& c : conversations()) {
      for (bool add : {false, true}) {
        const std::optional<std::string> want = ref::chat_apply_template(name, c, add);
        ASSERT_TRUE(want.has_value()) << "libllama refused its own built-in name " << name;
        const std::string got = apply_builtin_template(name, to_builtin(c), add);
        EXPECT_EQ(*want, got) << name << " add_assistant=" << add << "\n want: " << show(*want)
                              << "\n  got: " << show(got);
        ++compared;
      }
    }
  }
  EXPECT_GE(compared, 40 * 16);
}

// Negative control 1: a conversation with one changed character renders
// differently from libllama's rendering of the original, for every name.
TEST(BuiltinTemplates, negative_control_altered_conversation_differs) {
  const Conversation original = {{"system", "S"}, {"user", "Hello"}, {"assistant", "Hi"}, {"user", "Bye"}};
  Conversation altered = original;
  altered[1].second = "Hellp";
  for (const std::string& name : ref::chat_builtin_templates()) {
    const std::optional<std::string> want = ref::chat_apply_template(name, original, true);
    ASSERT_TRUE(want.has_value()) << name;
    EXPECT_NE(*want, apply_builtin_template(name, to_builtin(altered), true)) << name;
    EXPECT_EQ(*want, apply_builtin_template(name, to_builtin(original), true)) << name;
  }
}

// Negative control 2: altered names are unknown to libllama (it returns < 0)
// and refused by Strix.
TEST(BuiltinTemplates, negative_control_altered_name_is_unknown_to_both) {
  const Conversation c = {{"user", "Hello"}};
  for (const std::string name : {"llama3x", "Chatml", "gemma ", "granite-4.2", "gpt_oss", "phi5"}) {
    EXPECT_FALSE(ref::chat_apply_template(name, c, true).has_value()) << name;
    EXPECT_FALSE(is_builtin_template(name)) << name;
    EXPECT_THROW(apply_builtin_template(name, to_builtin(c), true), Error) << name;
  }
}

// Template sources (markers llama.cpp looks for, and real templates) rendered
// by libllama's llama_chat_apply_template, which guesses the format, and by
// Strix's detect_builtin_template + apply_builtin_template.
std::vector<std::string> detection_sources() {
  std::vector<std::string> v = {
      "<|im_start|>", "<|im_start|><|im_sep|>", "<|im_start|><end_of_utterance>", "mistral", "[INST]",
      "[INST][SYSTEM_PROMPT]", "[INST]' [INST] ' + system_message", "[INST][AVAILABLE_TOOLS]",
      "[INST][AVAILABLE_TOOLS]\"[INST]\"", "[INST]<<SYS>>", "[INST]bos_token + '[INST]", "[INST]content.strip()",
      "<|assistant|><|end|>", "[gMASK]<sop>", "<|assistant|><|user|></s>", "<|assistant|><|user|>",
      "<|{{ item['role'] }}|><|begin_of_image|>", "<|user|><|endoftext|>", "bos_token + message['role']",
      "<start_of_turn>", "'\\n\\nAssistant: ' + eos_token", "GPT4 Correct ",
      "USER: ASSISTANT: ", "USER: ASSISTANT: SYSTEM: ", "### Instruction:<|EOT|>",
      "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>", "<|start_header_id|><|end_header_id|>", "[gMASK]sop", "<用户>",
      "'Assistant: ' + message['content'] + eos_token", "<｜Assistant｜><｜User｜><｜end▁of▁sentence｜>",
      "[|system|][|assistant|][|endofturn|]", "[|system|][|assistant|][|endofturn|][|tool|]", "rwkv-world",
      "{{- 'User: ' + message['content']|trim + '\\n\\n' -}}", "<|start_of_role|>",
      "message['role'] + additional_special_tokens[0] + message['content'] + additional_special_tokens[1]",
      "<|role_start|>", " Ассистент:", "<role>ASSISTANT</role>'HUMAN'", "<role>ASSISTANT</role>\"HUMAN\"<think>",
      "<role>ASSISTANT</role><role>HUMAN</role><|role_end|>", "<role>ASSISTANT</role>",
      "<|header_start|><|header_end|>", "<|endofuserprompt|>", "<|extra_0|><|extra_4|>", "<|start|><|channel|>",
      "<｜hy_Assistant｜><｜hy_place▁holder▁no▁3｜>", "<|im_assistant|>assistant<|im_middle|>", "<seed:bos>",
      "'Assistant: '  + message['content'] + '<|separator|>", "[unused9]系统：[unused10]",
      // earlier markers win over later ones
      "<|im_start|>[INST]<start_of_turn>", "[INST]<|start_header_id|><|end_header_id|>", "<start_of_turn><|im_sep|>",
      // no marker: unknown to both
      "", "hello", "{{ messages[0]['content'] }}", "<|startoftext|><|extra_4|>", "mistra"};
  for (const std::string& n : ref::chat_builtin_templates()) v.push_back(n);
  return v;
}

TEST(BuiltinTemplates, format_detection_from_jinja_source_like_libllama) {
  const Conversation c = {{"system", " S "}, {"user", " U1 "}, {"assistant", "A1"}, {"tool", "T"}, {"user", "U2"}};
  for (const std::string& src : detection_sources()) {
    const std::string name = detect_builtin_template(src);
    for (bool add : {false, true}) {
      const std::optional<std::string> want = ref::chat_apply_template(src, c, add);
      if (name.empty()) {
        EXPECT_FALSE(want.has_value()) << "libllama recognizes '" << src << "', Strix does not";
        continue;
      }
      ASSERT_TRUE(want.has_value()) << "Strix guessed " << name << " for '" << src << "', libllama nothing";
      EXPECT_EQ(*want, apply_builtin_template(name, to_builtin(c), add)) << "'" << src << "' -> " << name;
    }
  }
  EXPECT_EQ(detect_builtin_template("<|endofuserprompt|>"), "dots1");
  EXPECT_FALSE(is_builtin_template("dots1")) << "libllama does not list it";
  // negative control: a wrong guess renders differently
  EXPECT_NE(*ref::chat_apply_template("<start_of_turn>", c, true),
            apply_builtin_template("chatml", to_builtin(c), true));
}

}  // namespace
}  // namespace strix::chat
