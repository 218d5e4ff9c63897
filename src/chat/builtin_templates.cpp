// The built-in chat formats (see builtin_templates.h). Each renderer appends to
// one output string; families that differ by a few spaces or markers share a
// renderer with the variant as a parameter. Whitespace trimming is ASCII
// isspace in the "C" locale, as libllama's trim() sees bytes (UTF-8 bytes >= 0x80
// are never space).
#include "chat/builtin_templates.h"

#include <algorithm>
#include <functional>

#include "core/error.h"

namespace strix::chat {

namespace {

using Msgs = std::vector<BuiltinMessage>;
using Renderer = std::function<void(const Msgs&, bool, std::string&)>;

bool is_c_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && is_c_space(s[b])) ++b;
  while (e > b && is_c_space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

std::string ascii_upper(std::string s) {
  for (char& c : s) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return s;
}

// "<open>role<close>content<end>" for every message, then the assistant header.
Renderer role_framed(std::string open, std::string close, std::string end, std::string gen) {
  return [=](const Msgs& msgs, bool add, std::string& out) {
    for (const auto& m : msgs) out += open + m.role + close + m.content + end;
    if (add) out += gen;
  };
}

void mistral_v7(const Msgs& msgs, bool tekken, std::string& out) {
  const std::string sp = tekken ? "" : " ";
  for (const auto& m : msgs) {
    if (m.role == "system") {
      out += "[SYSTEM_PROMPT]" + sp + m.content + "[/SYSTEM_PROMPT]";
    } else if (m.role == "user") {
      out += "[INST]" + sp + m.content + "[/INST]";
    } else {
      out += sp + m.content + "</s>";
    }
  }
}

// v1: " [INST] ... [/INST]"; v3: "[INST] ... [/INST]" with trimmed replies;
// v3-tekken: "[INST]...[/INST]". A system message opens the turn like a user one.
enum class MistralOld { kV1, kV3, kV3Tekken };
void mistral_old(const Msgs& msgs, MistralOld v, std::string& out) {
  const std::string lead = v == MistralOld::kV1 ? " " : "";
  const std::string trail = v == MistralOld::kV3Tekken ? "" : " ";
  bool in_turn = false;
  for (const auto& m : msgs) {
    if (!in_turn) {
      out += lead + "[INST]" + trail;
      in_turn = true;
    }
    if (m.role == "system") {
      out += m.content + "\n\n";
    } else if (m.role == "user") {
      out += m.content + lead + "[/INST]";
    } else {
      out += trail + (v == MistralOld::kV3 ? trim(m.content) : m.content) + "</s>";
      in_turn = false;
    }
  }
}

enum class Llama2 { kPlain, kSys, kSysBos, kSysStrip };
void llama2(const Msgs& msgs, Llama2 v, std::string& out) {
  // The first "[INST] " has no BOS: the tokenizer adds it.
  out += "[INST] ";
  bool in_turn = true;
  for (const auto& m : msgs) {
    const std::string content = v == Llama2::kSysStrip ? trim(m.content) : m.content;
    if (!in_turn) {
      in_turn = true;
      out += v == Llama2::kSysBos ? "<s>[INST] " : "[INST] ";
    }
    if (m.role == "system") {
      // the plain variant has no <<SYS>> block: the text just leads the turn
      out += v == Llama2::kPlain ? content + "\n" : "<<SYS>>\n" + content + "\n<</SYS>>\n\n";
    } else if (m.role == "user") {
      out += content + " [/INST]";
    } else {
      out += content + "</s>";
      in_turn = false;
    }
  }
}

void monarch(const Msgs& msgs, bool add, std::string& out) {
  for (size_t i = 0; i < msgs.size(); ++i) {
    out += (i == 0 ? "" : "<s>") + msgs[i].role + "\n" + msgs[i].content + "</s>\n";
  }
  if (add) out += "<s>assistant\n";
}

// Gemma has no system turn: system text is held and put in front of the next
// non-model turn.
void gemma(const Msgs& msgs, bool add, std::string& out) {
  std::string system;
  for (const auto& m : msgs) {
    if (m.role == "system") {
      system += trim(m.content);
      continue;
    }
    const std::string role = m.role == "assistant" ? "model" : m.role;
    out += "<start_of_turn>" + role + "\n";
    if (!system.empty() && role != "model") {
      out += system + "\n\n";
      system.clear();
    }
    out += trim(m.content) + "<end_of_turn>\n";
  }
  if (add) out += "<start_of_turn>model\n";
}

void orion(const Msgs& msgs, std::string& out) {
  std::string system;
  for (const auto& m : msgs) {
    if (m.role == "system") {
      system += m.content;
    } else if (m.role == "user") {
      out += "Human: ";
      if (!system.empty()) {
        out += system + "\n\n";
        system.clear();
      }
      out += m.content + "\n\nAssistant: </s>";
    } else {
      out += m.content + "</s>";
    }
  }
}

void openchat(const Msgs& msgs, bool add, std::string& out) {
  for (const auto& m : msgs) {
    if (m.role == "system") {
      out += m.content + "<|end_of_turn|>";
      continue;
    }
    std::string role = m.role;
    if (!role.empty() && role[0] >= 'a' && role[0] <= 'z') role[0] = static_cast<char>(role[0] - 'a' + 'A');
    out += "GPT4 Correct " + role + ": " + m.content + "<|end_of_turn|>";
  }
  if (add) out += "GPT4 Correct Assistant:";
}

void vicuna(const Msgs& msgs, bool add, bool orca, std::string& out) {
  for (const auto& m : msgs) {
    if (m.role == "system") {
      out += orca ? "SYSTEM: " + m.content + "\n" : m.content + "\n\n";
    } else if (m.role == "user") {
      out += "USER: " + m.content + "\n";
    } else if (m.role == "assistant") {
      out += "ASSISTANT: " + m.content + "</s>\n";
    }
  }
  if (add) out += "ASSISTANT:";
}

// Formats with one fixed frame per known role; other roles are dropped.
struct RoleFrame {
  const char* role;
  const char* before;
  const char* after;
  bool trimmed;
};
Renderer per_role(std::vector<RoleFrame> frames, std::string gen) {
  return [=](const Msgs& msgs, bool add, std::string& out) {
    for (const auto& m : msgs) {
      for (const RoleFrame& f : frames) {
        if (m.role != f.role) continue;
        out += f.before + (f.trimmed ? trim(m.content) : m.content) + f.after;
        break;
      }
    }
    if (add) out += gen;
  };
}

void minicpm(const Msgs& msgs, std::string& out) {
  for (const auto& m : msgs) {
    if (m.role == "user") {
      out += "<\xE7\x94\xA8\xE6\x88\xB7>" + trim(m.content) + "<AI>";  // <用户>
    } else {
      out += trim(m.content);
    }
  }
}

void rwkv_world(const Msgs& msgs, std::string& out) {
  for (size_t i = 0; i < msgs.size(); ++i) {
    const auto& m = msgs[i];
    if (m.role == "system") {
      out += "System: " + trim(m.content) + "\n\n";
    } else if (m.role == "user") {
      out += "User: " + trim(m.content) + "\n\n";
      // the reply prefix follows the last user message whatever add_assistant says
      if (i + 1 == msgs.size()) out += "Assistant:";
    } else if (m.role == "assistant") {
      out += "Assistant: " + trim(m.content) + "\n\n";
    }
  }
}

// granite: the pseudo-role assistant_tool_call keeps its name and gets a
// <|tool_call|> marker; granite-4.x print it as "assistant".
void granite(const Msgs& msgs, bool add, bool v4, std::string& out) {
  for (const auto& m : msgs) {
    const bool tool_call = m.role == "assistant_tool_call";
    out += "<|start_of_role|>" + (tool_call && v4 ? std::string("assistant") : m.role) + "<|end_of_role|>";
    if (tool_call) out += "<|tool_call|>";
    out += m.content + "<|end_of_text|>\n";
  }
  if (add) out += "<|start_of_role|>assistant<|end_of_role|>";
}

void gigachat(const Msgs& msgs, bool add, std::string& out) {
  const bool has_system = !msgs.empty() && msgs[0].role == "system";
  out += "<s>";
  if (has_system) out += msgs[0].content + "<|message_sep|>";
  for (size_t i = has_system ? 1 : 0; i < msgs.size(); ++i) {
    const auto& m = msgs[i];
    if (m.role == "user") {
      out += "user<|role_sep|>" + m.content + "<|message_sep|>available functions<|role_sep|>[]<|message_sep|>";
    } else if (m.role == "assistant") {
      out += "assistant<|role_sep|>" + m.content + "<|message_sep|>";
    }
  }
  if (add) out += "assistant<|role_sep|>";
}

void yandex(const Msgs& msgs, bool add, std::string& out) {
  const std::string user =
      " \xD0\x9F\xD0\xBE\xD0\xBB\xD1\x8C\xD0\xB7\xD0\xBE\xD0\xB2\xD0\xB0\xD1\x82\xD0\xB5\xD0\xBB\xD1\x8C: ";
  const std::string assistant = " \xD0\x90\xD1\x81\xD1\x81\xD0\xB8\xD1\x81\xD1\x82\xD0\xB5\xD0\xBD\xD1\x82:";
  for (const auto& m : msgs) {
    if (m.role == "user") {
      out += user + m.content + "\n\n";
    } else if (m.role == "assistant") {
      out += assistant + " " + m.content + "\n\n";
    }
  }
  if (add) out += assistant + "[SEP]";
}

std::string bailing_role(const std::string& role) { return role == "user" ? "HUMAN" : ascii_upper(role); }

void bailing(const Msgs& msgs, bool add, bool think, std::string& out) {
  for (const auto& m : msgs) out += "<role>" + bailing_role(m.role) + "</role>" + m.content;
  if (add) out += think ? "<role>ASSISTANT</role><think>" : "<role>ASSISTANT</role>";
}

void bailing2(const Msgs& msgs, bool add, std::string& out) {
  if (msgs.empty() || msgs[0].role != "system") out += "<role>SYSTEM</role>detailed thinking off<|role_end|>";
  for (const auto& m : msgs) out += "<role>" + bailing_role(m.role) + "</role>" + m.content + "<|role_end|>";
  if (add) out += "<role>ASSISTANT</role>";
}

void smolvlm(const Msgs& msgs, bool add, std::string& out) {
  out += "<|im_start|>";  // SmolVLM's BOS, not a chatml turn
  for (const auto& m : msgs) {
    if (m.role == "system") {
      out += m.content + "\n\n";
    } else if (m.role == "user") {
      out += "User: " + m.content + "<end_of_utterance>\n";
    } else {
      out += "Assistant: " + m.content + "<end_of_utterance>\n";
    }
  }
  if (add) out += "Assistant:";
}

void hunyuan_moe(const Msgs& msgs, std::string& out) {
  for (const auto& m : msgs) {
    if (m.role == "system") {
      out += "<|startoftext|>" + m.content + "<|extra_4|>";
    } else if (m.role == "assistant") {
      out += m.content + "<|eos|>";
    } else {
      out += "<|startoftext|>" + m.content + "<|extra_0|>";
    }
  }
}

void gpt_oss(const Msgs& msgs, bool add, std::string& out) {
  for (const auto& m : msgs) {
    out += "<|start|>" + m.role + "<|message|>" + m.content + (m.role == "assistant" ? "<|return|>" : "<|end|>");
  }
  if (add) out += "<|start|>assistant";
}

// Hunyuan's full-width markers: <｜hy_...｜> with U+FF5C and U+2581.
const std::string kHyBar = "\xEF\xBD\x9C";
const std::string kHySp = "\xE2\x96\x81";
const std::string kHyUser = "<" + kHyBar + "hy_User" + kHyBar + ">";
const std::string kHyAssistant = "<" + kHyBar + "hy_Assistant" + kHyBar + ">";
std::string hy_marker(const std::string& words) {
  std::string out;
  for (char c : words) out += c == ' ' ? kHySp : std::string(1, c);
  return "<" + kHyBar + out + kHyBar + ">";
}

void hunyuan_dense(const Msgs& msgs, std::string& out) {
  for (size_t i = 0; i < msgs.size(); ++i) {
    const auto& m = msgs[i];
    if (i == 0 && m.role == "system") out += m.content + hy_marker("hy_place holder no 3");
    if (m.role == "assistant") {
      out += kHyAssistant + m.content + hy_marker("hy_place holder no 2");
    } else if (m.role == "user") {
      out += kHyUser + m.content + kHyAssistant;
    }
  }
}

// Each message is followed by its role's marker; only a leading system
// message is kept. The generation prompt is never added.
void hunyuan_vl(const Msgs& msgs, std::string& out) {
  out += hy_marker("hy_begin of sentence");
  for (size_t i = 0; i < msgs.size(); ++i) {
    const auto& m = msgs[i];
    if (m.role == "system") {
      if (i == 0) out += m.content + hy_marker("hy_place holder no 3");
    } else if (m.role == "user") {
      out += m.content + kHyUser;
    } else if (m.role == "assistant") {
      out += m.content + kHyAssistant;
    }
  }
}

void kimi_k2(const Msgs& msgs, bool add, std::string& out) {
  for (const auto& m : msgs) {
    if (m.role == "system") {
      out += "<|im_system|>system<|im_middle|>";
    } else if (m.role == "user") {
      out += "<|im_user|>user<|im_middle|>";
    } else if (m.role == "assistant") {
      out += "<|im_assistant|>assistant<|im_middle|>";
    } else if (m.role == "tool") {
      out += "<|im_system|>tool<|im_middle|>";
    }
    out += m.content + "<|im_end|>";  // also for a role without a header
  }
  if (add) out += "<|im_assistant|>assistant<|im_middle|>";
}

void seed_oss(const Msgs& msgs, bool add, std::string& out) {
  for (const auto& m : msgs) {
    out += "<seed:bos>" + m.role + "\n" + (m.role == "assistant" ? trim(m.content) : m.content) + "<seed:eos>";
  }
  if (add) out += "<seed:bos>assistant\n";
}

void pangu_embedded(const Msgs& msgs, bool add, std::string& out) {
  // [unused9]<role name>：content[unused10], role names in Chinese.
  const std::string colon = "\xEF\xBC\x9A";  // U+FF1A
  const std::string system = "\xE7\xB3\xBB\xE7\xBB\x9F", user = "\xE7\x94\xA8\xE6\x88\xB7",
                    assistant = "\xE5\x8A\xA9\xE6\x89\x8B", tool = "\xE5\xB7\xA5\xE5\x85\xB7",
                    function = "\xE6\x96\xB9\xE6\xB3\x95";
  auto turn = [&](const std::string& name, const std::string& content) {
    out += "[unused9]" + name + colon + content + "[unused10]";
  };
  for (size_t i = 0; i < msgs.size(); ++i) {
    const auto& m = msgs[i];
    if (i == 0 && m.role != "system") turn(system, "");
    if (m.role == "system") {
      turn(system, m.content);
    } else if (m.role == "user") {
      turn(user, m.content);
    } else if (m.role == "assistant") {
      turn(assistant, m.content);
    } else if (m.role == "tool") {
      turn(tool, m.content);
    } else if (m.role == "function") {
      turn(function, m.content);
    }
  }
  if (add) out += "[unused9]" + assistant + colon;
}

void deepseek_ocr(const Msgs& msgs, std::string& out) {
  for (const auto& m : msgs) out += m.content;  // plain concatenation, no markers
}

const std::string kDsUser = "<" + kHyBar + "User" + kHyBar + ">";
const std::string kDsAssistant = "<" + kHyBar + "Assistant" + kHyBar + ">";
const std::string kDsEnd = "<" + kHyBar + "end" + kHySp + "of" + kHySp + "sentence" + kHyBar + ">";

// dots.llm1: not a name libllama lists, only reached by detection.
void dots1(const Msgs& msgs, bool add, std::string& out) {
  for (const auto& m : msgs) {
    if (m.role == "system") {
      out += "<|system|>" + m.content + "<|endofsystem|>";
    } else if (m.role == "user") {
      out += "<|userprompt|>" + m.content + "<|endofuserprompt|>";
    } else {
      out += "<|response|>" + m.content + "<|endofresponse|>";
    }
  }
  if (add) out += "<|response|>";
}

constexpr const char* kDots1 = "dots1";

struct Entry {
  const char* name;
  Renderer render;
};

const std::vector<Entry>& table() {
  static const std::vector<Entry> t = [] {
    std::vector<Entry> e;
    auto add = [&e](const char* name, Renderer r) { e.push_back({name, std::move(r)}); };
    add("bailing", [](const Msgs& m, bool a, std::string& o) { bailing(m, a, false, o); });
    add("bailing-think", [](const Msgs& m, bool a, std::string& o) { bailing(m, a, true, o); });
    add("bailing2", bailing2);
    add("chatglm3", [](const Msgs& m, bool a, std::string& o) {
      o += "[gMASK]sop";
      role_framed("<|", "|>\n ", "", "<|assistant|>")(m, a, o);
    });
    add("chatglm4", [](const Msgs& m, bool a, std::string& o) {
      o += "[gMASK]<sop>";
      role_framed("<|", "|>\n", "", "<|assistant|>\n")(m, a, o);
    });
    add("chatml", role_framed("<|im_start|>", "\n", "<|im_end|>\n", "<|im_start|>assistant\n"));
    add("command-r",
        per_role({{"system", "<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>", "<|END_OF_TURN_TOKEN|>", true},
                  {"user", "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>", "<|END_OF_TURN_TOKEN|>", true},
                  {"assistant", "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>", "<|END_OF_TURN_TOKEN|>", true}},
                 "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>"));
    add("deepseek", per_role({{"system", "", "", false},
                              {"user", "### Instruction:\n", "\n", false},
                              {"assistant", "### Response:\n", "\n<|EOT|>\n", false}},
                             "### Response:\n"));
    add("deepseek-ocr", [](const Msgs& m, bool, std::string& o) { deepseek_ocr(m, o); });
    add("deepseek2", [](const Msgs& m, bool a, std::string& o) {
      for (const auto& x : m) {
        if (x.role == "system") {
          o += x.content + "\n\n";
        } else if (x.role == "user") {
          o += "User: " + x.content + "\n\n";
        } else if (x.role == "assistant") {
          o += "Assistant: " + x.content + kDsEnd;
        }
      }
      if (a) o += "Assistant:";
    });
    add("deepseek3", [](const Msgs& m, bool a, std::string& o) {
      for (const auto& x : m) {
        if (x.role == "system") {
          o += x.content + "\n\n";
        } else if (x.role == "user") {
          o += kDsUser + x.content;
        } else if (x.role == "assistant") {
          o += kDsAssistant + x.content + kDsEnd;
        }
      }
      if (a) o += kDsAssistant;
    });
    add("exaone-moe", per_role({{"system", "<|system|>\n", "<|endofturn|>\n", true},
                                {"user", "<|user|>\n", "<|endofturn|>\n", true},
                                {"assistant", "<|assistant|>\n", "<|endofturn|>\n", true},
                                {"tool", "<|tool|>\n", "<|endofturn|>\n", true}},
                               "<|assistant|>\n"));
    add("exaone3", per_role({{"system", "[|system|]", "[|endofturn|]\n", true},
                             {"user", "[|user|]", "\n", true},
                             {"assistant", "[|assistant|]", "[|endofturn|]\n", true}},
                            "[|assistant|]"));
    add("exaone4", per_role({{"system", "[|system|]", "[|endofturn|]\n", true},
                             {"user", "[|user|]", "\n", true},
                             {"assistant", "[|assistant|]", "[|endofturn|]\n", true},
                             {"tool", "[|tool|]", "[|endofturn|]\n", true}},
                            "[|assistant|]"));
    add("falcon3", role_framed("<|", "|>\n", "\n", "<|assistant|>\n"));
    add("gemma", gemma);
    add("gigachat", gigachat);
    add("glmedge", role_framed("<|", "|>\n", "", "<|assistant|>"));
    add("gpt-oss", gpt_oss);
    add("granite", [](const Msgs& m, bool a, std::string& o) { granite(m, a, false, o); });
    add("granite-4.0", [](const Msgs& m, bool a, std::string& o) { granite(m, a, true, o); });
    add("granite-4.1", [](const Msgs& m, bool a, std::string& o) { granite(m, a, true, o); });
    add("grok-2", per_role({{"system", "System: ", "<|separator|>\n\n", true},
                            {"user", "Human: ", "<|separator|>\n\n", true},
                            {"assistant", "Assistant: ", "<|separator|>\n\n", false}},
                           "Assistant:"));
    add("hunyuan-dense", [](const Msgs& m, bool, std::string& o) { hunyuan_dense(m, o); });
    add("hunyuan-moe", [](const Msgs& m, bool, std::string& o) { hunyuan_moe(m, o); });
    add("hunyuan-vl", [](const Msgs& m, bool, std::string& o) { hunyuan_vl(m, o); });
    add("kimi-k2", kimi_k2);
    add("llama2", [](const Msgs& m, bool, std::string& o) { llama2(m, Llama2::kPlain, o); });
    add("llama2-sys", [](const Msgs& m, bool, std::string& o) { llama2(m, Llama2::kSys, o); });
    add("llama2-sys-bos", [](const Msgs& m, bool, std::string& o) { llama2(m, Llama2::kSysBos, o); });
    add("llama2-sys-strip", [](const Msgs& m, bool, std::string& o) { llama2(m, Llama2::kSysStrip, o); });
    add("llama3", [](const Msgs& m, bool a, std::string& o) {
      for (const auto& x : m)
        o += "<|start_header_id|>" + x.role + "<|end_header_id|>\n\n" + trim(x.content) + "<|eot_id|>";
      if (a) o += "<|start_header_id|>assistant<|end_header_id|>\n\n";
    });
    add("llama4", [](const Msgs& m, bool a, std::string& o) {
      for (const auto& x : m) o += "<|header_start|>" + x.role + "<|header_end|>\n\n" + trim(x.content) + "<|eot|>";
      if (a) o += "<|header_start|>assistant<|header_end|>\n\n";
    });
    add("megrez", role_framed("<|role_start|>", "<|role_end|>", "<|turn_end|>", "<|role_start|>assistant<|role_end|>"));
    add("minicpm", [](const Msgs& m, bool, std::string& o) { minicpm(m, o); });
    add("mistral-v1", [](const Msgs& m, bool, std::string& o) { mistral_old(m, MistralOld::kV1, o); });
    add("mistral-v3", [](const Msgs& m, bool, std::string& o) { mistral_old(m, MistralOld::kV3, o); });
    add("mistral-v3-tekken", [](const Msgs& m, bool, std::string& o) { mistral_old(m, MistralOld::kV3Tekken, o); });
    add("mistral-v7", [](const Msgs& m, bool, std::string& o) { mistral_v7(m, false, o); });
    add("mistral-v7-tekken", [](const Msgs& m, bool, std::string& o) { mistral_v7(m, true, o); });
    add("monarch", monarch);
    add("openchat", openchat);
    add("orion", [](const Msgs& m, bool, std::string& o) { orion(m, o); });
    add("pangu-embedded", pangu_embedded);
    add("phi3", role_framed("<|", "|>\n", "<|end|>\n", "<|assistant|>\n"));
    add("phi4", role_framed("<|im_start|>", "<|im_sep|>", "<|im_end|>", "<|im_start|>assistant<|im_sep|>"));
    add("rwkv-world", [](const Msgs& m, bool, std::string& o) { rwkv_world(m, o); });
    add("seed_oss", seed_oss);
    add("smolvlm", smolvlm);
    add("solar-open", role_framed("<|begin|>", "<|content|>", "<|end|>", "<|begin|>assistant"));
    add("vicuna", [](const Msgs& m, bool a, std::string& o) { vicuna(m, a, false, o); });
    add("vicuna-orca", [](const Msgs& m, bool a, std::string& o) { vicuna(m, a, true, o); });
    add("yandex", yandex);
    add("zephyr", role_framed("<|", "|>\n", "<|endoftext|>\n", "<|assistant|>\n"));
    add(kDots1, dots1);  // last: not listed (builtin_template_names skips it)
    return e;
  }();
  return t;
}

const Entry* find(std::string_view name) {
  for (const Entry& e : table()) {
    if (name == e.name) return &e;
  }
  return nullptr;
}

}  // namespace

const std::vector<std::string>& builtin_template_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const Entry& e : table()) {
      if (std::string_view(e.name) != kDots1) n.emplace_back(e.name);
    }
    std::sort(n.begin(), n.end());
    return n;
  }();
  return names;
}

bool is_builtin_template(std::string_view name) { return name != kDots1 && find(name) != nullptr; }

bool has_builtin_renderer(std::string_view name) { return find(name) != nullptr; }

std::string detect_builtin_template(const std::string& tmpl) {
  if (is_builtin_template(tmpl)) return tmpl;
  auto has = [&tmpl](const char* s) { return tmpl.find(s) != std::string::npos; };
  // The order matters: earlier markers win (a Phi-4 template also has <|im_start|>).
  if (has("<|im_start|>")) {
    if (has("<|im_sep|>")) return "phi4";
    return has("<end_of_utterance>") ? "smolvlm" : "chatml";  // SmolVLM's BOS is <|im_start|>
  }
  if (tmpl.rfind("mistral", 0) == 0 || has("[INST]")) {
    if (has("[SYSTEM_PROMPT]")) return "mistral-v7";
    if (has("' [INST] ' + system_message") || has("[AVAILABLE_TOOLS]")) {
      if (has(" [INST]")) return "mistral-v1";
      if (has("\"[INST]\"")) return "mistral-v3-tekken";
      return "mistral-v3";
    }
    if (has("content.strip()")) return "llama2-sys-strip";
    if (has("bos_token + '[INST]")) return "llama2-sys-bos";
    if (has("<<SYS>>")) return "llama2-sys";
    return "llama2";
  }
  if (has("<|assistant|>") && has("<|end|>")) return "phi3";
  if (has("[gMASK]<sop>")) return "chatglm4";
  if (has("<|assistant|>") && has("<|user|>")) return has("</s>") ? "falcon3" : "glmedge";
  if (has("<|{{ item['role'] }}|>") && has("<|begin_of_image|>")) return "glmedge";
  if (has("<|user|>") && has("<|endoftext|>")) return "zephyr";
  if (has("bos_token + message['role']")) return "monarch";
  if (has("<start_of_turn>")) return "gemma";
  if (has("'\\n\\nAssistant: ' + eos_token")) return "orion";
  if (has("GPT4 Correct ")) return "openchat";
  if (has("USER: ") && has("ASSISTANT: ")) return has("SYSTEM: ") ? "vicuna-orca" : "vicuna";
  if (has("### Instruction:") && has("<|EOT|>")) return "deepseek";
  if (has("<|START_OF_TURN_TOKEN|>") && has("<|USER_TOKEN|>")) return "command-r";
  if (has("<|start_header_id|>") && has("<|end_header_id|>")) return "llama3";
  if (has("[gMASK]sop")) return "chatglm3";
  if (has("<\xE7\x94\xA8\xE6\x88\xB7>")) return "minicpm";  // <用户>
  if (has("'Assistant: ' + message['content'] + eos_token")) return "deepseek2";
  if (has(kDsAssistant.c_str()) && has(kDsUser.c_str()) && has(kDsEnd.c_str())) return "deepseek3";
  if (has("[|system|]") && has("[|assistant|]") && has("[|endofturn|]")) return has("[|tool|]") ? "exaone4" : "exaone3";
  if (has("rwkv-world") || has("{{- 'User: ' + message['content']|trim + '\\n\\n' -}}")) return "rwkv-world";
  if (has("<|start_of_role|>")) return "granite";
  if (has("message['role'] + additional_special_tokens[0] + message['content'] + additional_special_tokens[1]")) {
    return "gigachat";
  }
  if (has("<|role_start|>")) return "megrez";
  if (has(" \xD0\x90\xD1\x81\xD1\x81\xD0\xB8\xD1\x81\xD1\x82\xD0\xB5\xD0\xBD\xD1\x82:"))
    return "yandex";  // " Ассистент:"
  if (has("<role>ASSISTANT</role>")) {
    if (has("'HUMAN'")) return "bailing";
    if (has("\"HUMAN\"") && has("<think>")) return "bailing-think";
    if (has("<role>HUMAN</role>") && has("<|role_end|>")) return "bailing2";
  }
  if (has("<|header_start|>") && has("<|header_end|>")) return "llama4";
  if (has("<|endofuserprompt|>")) return kDots1;
  if (has("<|extra_0|>") && has("<|extra_4|>")) return "hunyuan-moe";
  if (has("<|start|>") && has("<|channel|>")) return "gpt-oss";
  if (has(kHyAssistant.c_str()) && has(hy_marker("hy_place holder no 3").c_str())) return "hunyuan-dense";
  if (has("<|im_assistant|>assistant<|im_middle|>")) return "kimi-k2";
  if (has("<seed:bos>")) return "seed_oss";
  if (has("'Assistant: '  + message['content'] + '<|separator|>")) return "grok-2";
  if (has("[unused9]\xE7\xB3\xBB\xE7\xBB\x9F\xEF\xBC\x9A[unused10]"))
    return "pangu-embedded";  // [unused9]系统：[unused10]
  return "";
}

std::string apply_builtin_template(std::string_view name, const std::vector<BuiltinMessage>& msgs, bool add_assistant) {
  const Entry* e = find(name);
  if (e == nullptr) {
    std::string msg = "'";  // (built up: "'" + std::string trips GCC 12's -Wrestrict)
    msg.append(name);
    msg += "' is not a built-in chat template (strix run -h lists them)";
    throw Error(msg);
  }
  std::string out;
  e->render(msgs, add_assistant, out);
  return out;
}

}  // namespace strix::chat
