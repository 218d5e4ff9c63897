#include "chat/tool_polyfill.h"

#include <exception>
#include <utility>

#include "chat/chat_template.h"
#include "chat/jinja_value.h"

namespace strix::chat {

using ojson = nlohmann::ordered_json;

const char* const kGenericSystem =
    "Respond in JSON format, either with `tool_call` (a request to call tools) or with `response` reply to the "
    "user's request";

ojson add_system(const ojson& messages, const std::string& text) {
  ojson out = messages.is_array() ? messages : ojson::array();
  if (!out.empty() && out[0].is_object() && out[0].value("role", "") == "system" && out[0].contains("content") &&
      out[0]["content"].is_string()) {
    out[0] = ojson{{"role", "system"}, {"content", out[0]["content"].get<std::string>() + "\n\n" + text}};
  } else {
    out.insert(out.begin(), ojson{{"role", "system"}, {"content", text}});
  }
  return out;
}

namespace {

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

ojson tool_call(const std::string& name, const ojson& arguments) {
  return ojson{{"id", "call_1___"}, {"type", "function"}, {"function", {{"arguments", arguments}, {"name", name}}}};
}

ojson tool_calls_message(const ojson& calls) {
  return ojson{{"role", "assistant"}, {"content", nullptr}, {"tool_calls", calls}};
}

// Python's json.dumps spacing (", " and ": "), as minja writes a string argument.
std::string spaced_dump(const ojson& v) {
  jinja::JsonOptions o;
  return jinja::to_json(jinja::parse_json(v.dump()), o);
}

}  // namespace

std::string TemplatePolyfill::render(const ojson& messages, const ojson& tools, bool add_generation_prompt) const {
  ChatInputs in;
  in.messages = jinja::parse_json(messages.dump());
  if (tools.is_array() && !tools.empty()) in.tools = jinja::parse_json(tools.dump());
  in.add_generation_prompt = add_generation_prompt;
  in.bos_token = bos_;
  in.eos_token = eos_;
  return apply_chat_template(tmpl_, in);
}

std::string TemplatePolyfill::try_render(const ojson& messages, const ojson& tools) const {
  try {
    return render(messages, tools, /*add_generation_prompt=*/false);
  } catch (const std::exception&) {
    return "";  // a template that raises on a probe lacks what the probe asks for
  }
}

TemplatePolyfill::TemplatePolyfill(std::string tmpl, std::string bos, std::string eos)
    : tmpl_(std::move(tmpl)), bos_(std::move(bos)), eos_(std::move(eos)) {
  const std::string user_needle = "<User Needle>", sys_needle = "<System Needle>";
  const ojson user = {{"role", "user"}, {"content", user_needle}};
  const ojson none = ojson::array();
  caps_.supports_system_role =
      contains(try_render(ojson::array({{{"role", "system"}, {"content", sys_needle}}, user}), none), sys_needle);
  const ojson probe_tools =
      ojson::array({{{"name", "some_tool"},
                     {"type", "function"},
                     {"function",
                      {{"name", "some_tool"},
                       {"description", "Some tool."},
                       {"parameters",
                        {{"type", "object"},
                         {"properties", {{"arg", {{"type", "string"}, {"description", "Some argument."}}}}},
                         {"required", ojson::array({"arg"})}}}}}}});
  caps_.supports_tools = contains(try_render(ojson::array({user}), probe_tools), "some_tool");

  const ojson args = {{"argument_needle", "print('Hello, World!')"}};
  const auto renders_args = [&](const ojson& a) {
    const std::string out =
        try_render(ojson::array({user, tool_calls_message(ojson::array({tool_call("ipython", a)}))}), none);
    return contains(out, "\"argument_needle\":") || contains(out, "'argument_needle':");
  };
  const bool str_args = renders_args(args.dump());
  const bool obj_args = renders_args(args);
  caps_.supports_tool_calls = str_args || obj_args;
  const bool object_arguments = !str_args && obj_args;
  if (caps_.supports_tool_calls) {
    const ojson a = object_arguments ? args : ojson(args.dump());
    const std::string out = try_render(
        ojson::array(
            {user,
             tool_calls_message(ojson::array({tool_call("test_tool1", a)})),
             {{"role", "tool"}, {"name", "test_tool1"}, {"content", "Some response!"}, {"tool_call_id", "call_911_"}}}),
        none);
    caps_.supports_tool_responses = contains(out, "Some response!");
  }

  if (caps_.supports_tools) return;
  // The example call: what the template renders after the generation prompt
  // for a (polyfilled) assistant call, without the end-of-turn eos.
  try {
    const ojson hey = {{"role", "user"}, {"content", "Hey"}};
    const ojson example_args = {{"arg1", "some_value"}};
    const ojson call_msg = tool_calls_message(
        ojson::array({tool_call("tool_name", object_arguments ? example_args : ojson(spaced_dump(example_args)))}));
    const std::string prefix = render(apply(ojson::array({hey}), none), none, true);
    std::string full = render(apply(ojson::array({hey, call_msg}), none), none, false);
    const size_t eos_last = eos_.empty() ? std::string::npos : full.rfind(eos_);
    if (eos_last != std::string::npos &&
        ((prefix.size() >= eos_.size() && eos_last == prefix.size() - eos_.size()) ||
         (!full.empty() && full.back() == '\n' && eos_last + eos_.size() + 1 == full.size()))) {
      full = full.substr(0, eos_last);
    }
    // The common prefix, not counting a '<' both share (DeepSeek R1's
    // generation prompt and its call markup both start with one).
    size_t common = 0;
    for (size_t i = 0; i < prefix.size() && i < full.size(); ++i) {
      if (prefix[i] != full[i]) break;
      if (prefix[i] == '<') continue;
      common = i + 1;
    }
    const std::string example = full.substr(common);
    if (contains(example, "tool_name") || contains(example, "some_value")) example_ = example;
  } catch (const std::exception&) {
    // No example: the tools are still listed.
  }
}

ojson TemplatePolyfill::apply(const ojson& messages, const ojson& tools) const {
  bool has_calls = false, has_results = false;
  for (const ojson& m : messages) {
    if (!m.is_object()) continue;
    if (m.contains("tool_calls") && !m["tool_calls"].is_null()) has_calls = true;
    if (m.value("role", "") == "tool") has_results = true;
  }
  const bool has_tools = tools.is_array() && !tools.empty();
  const bool fill_system = !caps_.supports_system_role;
  const bool fill_tools = has_tools && !caps_.supports_tools;
  const bool fill_calls = has_calls && !caps_.supports_tool_calls;
  const bool fill_results = has_results && !caps_.supports_tool_responses;
  if (!fill_system && !fill_tools && !fill_calls && !fill_results) return messages;

  const ojson adjusted =
      fill_tools
          ? add_system(messages,
                       "You can call any of the following tools to satisfy the user's requests: " + tools.dump(2) +
                           (example_.empty() ? "" : "\n\nExample tool call syntax:\n\n" + example_ + "\n\n"))
          : messages;
  ojson out = ojson::array();
  std::string pending_system;
  const auto flush_system = [&]() {
    if (pending_system.empty()) return;
    out.push_back({{"role", "user"}, {"content", pending_system}});
    pending_system.clear();
  };
  for (ojson m : adjusted) {
    if (!m.is_object()) {
      out.push_back(std::move(m));
      continue;
    }
    const std::string role = m.value("role", "");
    if (fill_calls && m.contains("tool_calls") && m["tool_calls"].is_array()) {
      ojson calls = ojson::array();
      for (const ojson& tc : m["tool_calls"]) {
        if (!tc.is_object() || tc.value("type", "") != "function" || !tc.contains("function")) continue;
        const ojson& fn = tc["function"];
        ojson arguments = fn.value("arguments", ojson());
        if (arguments.is_string()) {
          ojson parsed = ojson::parse(arguments.get<std::string>(), nullptr, /*allow_exceptions=*/false);
          if (!parsed.is_discarded()) arguments = std::move(parsed);
        }
        ojson c = {{"name", fn.value("name", ojson())}, {"arguments", arguments}};
        if (tc.contains("id")) c["id"] = tc["id"];
        calls.push_back(std::move(c));
      }
      ojson obj = {{"tool_calls", calls}};
      if (m.contains("content") && !m["content"].is_null() && !m["content"].empty()) obj["content"] = m["content"];
      m["content"] = obj.dump(2);
      m.erase("tool_calls");
    }
    if (fill_results && role == "tool") {
      m["role"] = "user";
      ojson obj = {{"tool_response", ojson::object()}};
      if (m.contains("name")) obj["tool_response"]["tool"] = m["name"];
      obj["tool_response"]["content"] = m.value("content", ojson());
      if (m.contains("tool_call_id")) obj["tool_response"]["tool_call_id"] = m["tool_call_id"];
      m["content"] = obj.dump(2);
      m.erase("name");
    }
    if (fill_system && m.contains("content") && m["content"].is_string()) {
      const std::string content = m["content"].get<std::string>();
      if (role == "system") {
        if (!pending_system.empty()) pending_system += "\n";
        pending_system += content;
        continue;
      }
      if (role == "user") {
        if (!pending_system.empty()) {
          m["content"] = pending_system + (content.empty() ? "" : "\n" + content);
          pending_system.clear();
        }
      } else {
        flush_system();
      }
    }
    out.push_back(std::move(m));
  }
  flush_system();
  return out;
}

}  // namespace strix::chat
