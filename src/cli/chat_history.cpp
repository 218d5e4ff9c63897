#include "cli/chat_history.h"

#include <nlohmann/json.hpp>
#include <string_view>

#include "chat/builtin_templates.h"
#include "chat/chat_template.h"
#include "chat/jinja_value.h"
#include "core/error.h"

namespace strix::cli {

ChatHistory::ChatHistory(std::string tmpl, std::string bos, std::string eos, const std::string& kwargs_json,
                         bool enable_thinking)
    : tmpl_(std::move(tmpl)),
      bos_(std::move(bos)),
      eos_(std::move(eos)),
      kwargs_json_(kwargs_json),
      builtin_(chat::has_builtin_renderer(tmpl_)),
      enable_thinking_(enable_thinking) {
  if (!kwargs_json_.empty()) {
    const auto j = nlohmann::json::parse(kwargs_json_, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      throw Error("--chat-template-kwargs must be a JSON object, got: " + kwargs_json_);
    }
    // the user's explicit enable_thinking wins, as in llama.cpp's format handlers
    if (j.contains("enable_thinking") && j["enable_thinking"].is_boolean()) enable_thinking_ = j["enable_thinking"];
  }
}

std::string ChatHistory::render_msgs(const std::vector<std::pair<std::string, std::string>>& msgs, bool add_gen) const {
  if (builtin_) {
    std::vector<chat::BuiltinMessage> m;
    for (const auto& [role, content] : msgs) m.push_back({role, content});
    return chat::apply_builtin_template(tmpl_, m, add_gen);
  }
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [role, content] : msgs) list.push_back({{"role", role}, {"content", content}});
  chat::ChatInputs in;
  in.messages = jinja::parse_json(list.dump());
  in.add_generation_prompt = add_gen;
  in.bos_token = bos_;
  in.eos_token = eos_;
  bool user_thinking = false;
  if (!kwargs_json_.empty()) {
    const jinja::Value kw = jinja::parse_json(kwargs_json_);
    for (const auto& kv : kw.dict->items) {
      in.kwargs.push_back(kv);
      user_thinking = user_thinking || kv.first == "enable_thinking";
    }
  }
  if (!user_thinking) in.kwargs.emplace_back("enable_thinking", jinja::parse_json(enable_thinking_ ? "true" : "false"));
  std::string out = chat::apply_chat_template(tmpl_, in);
  // Thinking off but the generation prompt opened a think block: close it.
  constexpr std::string_view kOpen = "<think>\n";
  if (!enable_thinking_ && out.size() >= kOpen.size() &&
      out.compare(out.size() - kOpen.size(), kOpen.size(), kOpen) == 0) {
    out += "</think>";
  }
  return out;
}

std::string ChatHistory::render(bool add_generation_prompt) const { return render_msgs(msgs_, add_generation_prompt); }

std::string ChatHistory::add_and_format(const std::string& role, const std::string& content) {
  const bool add_ass = role == "user";
  const std::string past = msgs_.empty() ? std::string() : render_msgs(msgs_, false);
  msgs_.emplace_back(role, content);
  const std::string now = render_msgs(msgs_, add_ass);
  std::string out;
  if (add_ass && !past.empty() && past.back() == '\n') out += "\n";
  // A template may render the history differently once a message follows
  // (e.g. dropping reasoning); llama.cpp then feeds from the old length anyway.
  out += past.size() <= now.size() ? now.substr(past.size()) : std::string();
  return out;
}

std::string builtin_chat_template(const std::string& name) {
  if (name == "chatml") {
    return "{%- for message in messages -%}"
           "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' -}}"
           "{%- endfor -%}"
           "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}";
  }
  return "";
}

}  // namespace strix::cli
