// Tool-call arguments streamed in fragments (chat::StreamParser), for every
// format: the fragments of a call, joined, must equal the arguments the
// one-shot parse gives, which must equal nlohmann's dump() of the model's
// JSON (llama.cpp's arguments.dump(): the independent reference); a long
// argument object must really arrive in many pieces, the first delta of a
// call carrying its id and name before its arguments are complete. Negative
// controls: a joiner that drops or cuts a fragment no longer matches.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "chat/tool_calls.h"
#include "chat/tool_scan.h"

namespace strix::chat {
namespace {

using ojson = nlohmann::ordered_json;

std::vector<size_t> char_starts(const std::string& s) {
  std::vector<size_t> out;
  for (size_t i = 1; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) out.push_back(i);
  }
  return out;
}

// Every delta of a stream, in order.
struct Streamed {
  std::vector<StreamDelta> deltas;
  ParsedMessage message;
  bool diverged = false;
  // Deltas received before the text reached `mark` (its first occurrence).
  size_t before_mark = 0;
};

Streamed stream_chars(const std::string& text, const ParseOptions& opts, const std::string& mark = "") {
  StreamParser p(opts);
  Streamed s;
  const size_t mark_at = mark.empty() ? std::string::npos : text.find(mark);
  size_t from = 0;
  std::vector<size_t> cuts = char_starts(text);
  cuts.push_back(text.size());
  for (size_t c : cuts) {
    for (StreamDelta& d : p.feed(std::string_view(text).substr(from, c - from))) s.deltas.push_back(std::move(d));
    from = c;
    if (c <= mark_at) s.before_mark = s.deltas.size();
  }
  for (StreamDelta& d : p.finish()) s.deltas.push_back(std::move(d));
  s.message = p.message();
  s.diverged = p.diverged();
  return s;
}

// Joins the argument fragments per call; `drop_last` / `cut_one` are the
// broken joiners of the negative controls.
std::vector<std::string> join_arguments(const std::vector<StreamDelta>& ds, bool drop_last = false,
                                        bool cut_one = false) {
  std::vector<std::vector<std::string>> parts;
  for (const StreamDelta& d : ds) {
    if (d.tool_index < 0) continue;
    if (static_cast<size_t>(d.tool_index) >= parts.size()) parts.resize(d.tool_index + 1);
    if (!d.arguments.empty()) parts[d.tool_index].push_back(d.arguments);
  }
  std::vector<std::string> out;
  for (auto& p : parts) {
    if (drop_last && !p.empty()) p.pop_back();
    if (cut_one && p.size() > 2) p[p.size() / 2].pop_back();
    std::string joined;
    for (const std::string& f : p) joined += f;
    out.push_back(joined);
  }
  return out;
}

// A long argument object with what canonical text must handle: escapes,
// UTF-8, a surrogate pair, numbers nlohmann rewrites (1.50, 1e2), nesting,
// whitespace between tokens.
const char* kArgs =
    "{\"city\": \"Z\xC3\xBCrich \\\"old town\\\"\\n\", \"days\": 14, \"ratio\": 1.50, \"big\": 1e2,\n"
    "  \"tags\": [\"a\", \"\xC3\xA9\", \"\\u00e9\\ud83d\\ude00\"], \"nested\": {\"deep\": [true, false, null, -0.5]},"
    " \"note\": \"tab\\there / slash \\/ done\", \"empty\": {}, \"list\": [ ]}";

struct Case {
  const char* name;
  ToolFormat format;
  std::string text;
  std::vector<std::string> names;
  std::vector<std::string> raw_args;  // the model's JSON text of each call's arguments
  std::string close;                  // markup after the first call's arguments
};

std::vector<Case> cases() {
  const std::string a = kArgs;
  const std::string b = "{\"tz\": \"UTC\"}";
  return {
      {"hermes",
       ToolFormat::kHermes,
       "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": " + a + "}\n</tool_call>\n<tool_call>\n" +
           "{\"name\": \"get_time\", \"arguments\": " + b + "}\n</tool_call>",
       {"get_weather", "get_time"},
       {a, b},
       "</tool_call>"},
      {"hermes-function",
       ToolFormat::kHermes,
       "<function=get_weather>" + a + "</function>",
       {"get_weather"},
       {a},
       "</function>"},
      {"llama3-json",
       ToolFormat::kLlama3Json,
       "{\"name\": \"get_weather\", \"parameters\": " + a + "}",
       {"get_weather"},
       {a},
       "<never>"},
      {"mistral-array",
       ToolFormat::kMistral,
       "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": " + a + ", \"id\": \"abc123XYZ\"}, " +
           "{\"name\": \"get_time\", \"arguments\": " + b + ", \"id\": \"def456UVW\"}]",
       {"get_weather", "get_time"},
       {a, b},
       ", \"id\""},
      {"mistral-args",
       ToolFormat::kMistral,
       "[TOOL_CALLS]get_weather[ARGS]" + a + "[TOOL_CALLS]get_time[ARGS]" + b,
       {"get_weather", "get_time"},
       {a, b},
       "[TOOL_CALLS]get_time"},
      {"deepseek-r1",
       ToolFormat::kDeepSeekV3,
       "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n" + a +
           "\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n" + b +
           "\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
       {"get_weather", "get_time"},
       {a, b},
       "\n```<｜tool▁call▁end｜>"},
      {"deepseek-v3.1",
       ToolFormat::kDeepSeekV3,
       "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>" + a +
           "<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
       {"get_weather"},
       {a},
       "<｜tool▁call▁end｜>"},
      {"harmony",
       ToolFormat::kHarmony,
       "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary "
       "to=functions.get_weather <|constrain|>json<|message|>" +
           a + "<|call|>",
       {"get_weather"},
       {a},
       "<|call|>"},
      {"harmony-recipient-first",
       ToolFormat::kHarmony,
       "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>" + a + "<|call|>",
       {"get_weather"},
       {a},
       "<|call|>"},
      {"generic-one",
       ToolFormat::kGeneric,
       "{\"tool_call\": {\"name\": \"get_weather\", \"arguments\": " + a + "}}",
       {"get_weather"},
       {a},
       "}}"},
      {"generic-many",
       ToolFormat::kGeneric,
       "{\"tool_calls\": [{\"name\": \"get_weather\", \"arguments\": " + a + ", \"id\": \"call_1\"}, " +
           "{\"name\": \"get_time\", \"arguments\": " + b + "}]}",
       {"get_weather", "get_time"},
       {a, b},
       ", \"id\""},
  };
}

ParseOptions opts_for(ToolFormat f) {
  ParseOptions o;
  o.format = f;
  return o;
}

TEST(ToolArgsStream, FragmentsJoinToTheWholeArguments) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const ParsedMessage whole = parse_reply(c.text, opts_for(c.format));
    ASSERT_EQ(whole.tool_calls.size(), c.names.size()) << whole.content;
    const Streamed s = stream_chars(c.text, opts_for(c.format), c.close);
    EXPECT_FALSE(s.diverged);
    const std::vector<std::string> joined = join_arguments(s.deltas);
    ASSERT_EQ(joined.size(), c.names.size());
    for (size_t i = 0; i < c.names.size(); ++i) {
      // The reference: nlohmann's compact dump() of the model's JSON, as llama.cpp writes arguments.
      const std::string ref = ojson::parse(c.raw_args[i]).dump();
      EXPECT_EQ(whole.tool_calls[i].name, c.names[i]);
      EXPECT_EQ(whole.tool_calls[i].arguments, ref);
      EXPECT_EQ(joined[i], ref);
      EXPECT_EQ(s.message.tool_calls[i].arguments, ref);
      EXPECT_EQ(s.message.tool_calls[i].name, c.names[i]);
      // Negative controls: a joiner that loses the last fragment or a byte of one no longer matches.
      EXPECT_NE(join_arguments(s.deltas, /*drop_last=*/true)[i], ref);
      if (i == 0) {
        EXPECT_NE(join_arguments(s.deltas, false, /*cut_one=*/true)[i], ref);
      }
    }
    EXPECT_EQ(s.message.content, whole.content);
    EXPECT_EQ(s.message.reasoning_content, whole.reasoning_content);
    // The shape of the deltas: the first of each call has id and name, the
    // others only an argument fragment; content never carries markup.
    std::vector<int> seen;
    size_t fragments0 = 0, first_open = s.deltas.size();
    for (size_t k = 0; k < s.deltas.size(); ++k) {
      const StreamDelta& d = s.deltas[k];
      if (d.tool_index < 0) continue;
      const bool first = std::find(seen.begin(), seen.end(), d.tool_index) == seen.end();
      if (first) {
        seen.push_back(d.tool_index);
        EXPECT_EQ(d.tool_index, static_cast<int>(seen.size()) - 1) << "calls open in order";
        EXPECT_FALSE(d.tool_id.empty());
        EXPECT_EQ(d.tool_name, c.names[d.tool_index]);
        if (d.tool_index == 0) first_open = k;
      } else {
        EXPECT_TRUE(d.tool_id.empty() && d.tool_name.empty());
      }
      if (d.tool_index == 0 && !d.arguments.empty()) ++fragments0;
    }
    // Really incremental: the long object came in many pieces, and the call
    // opened before its markup closed.
    EXPECT_GE(fragments0, 20u);
    EXPECT_LT(first_open, s.before_mark) << "the call opened only after its arguments were complete";
  }
}

// Ids: the model's id when it comes before the arguments; otherwise the
// stream opens the call with a generated id (non-streaming keeps the model's).
TEST(ToolArgsStream, Ids) {
  const std::string early =
      "<tool_call>{\"id\": \"call_model\", \"name\": \"f\", \"arguments\": {\"a\": 1}}</tool_call>";
  EXPECT_EQ(stream_chars(early, opts_for(ToolFormat::kHermes)).message.tool_calls.at(0).id, "call_model");
  const std::string late = "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"a\": 1}, \"id\": \"abc123XYZ\"}]";
  EXPECT_EQ(parse_reply(late, opts_for(ToolFormat::kMistral)).tool_calls.at(0).id, "abc123XYZ");
  const std::string sid = stream_chars(late, opts_for(ToolFormat::kMistral)).message.tool_calls.at(0).id;
  EXPECT_EQ(sid.size(), 9u) << "a Mistral-shaped generated id";
  // Fed whole, the id is known when the call opens.
  StreamParser p(opts_for(ToolFormat::kMistral));
  p.feed(late);
  p.finish();
  EXPECT_EQ(p.message().tool_calls.at(0).id, "abc123XYZ");
}

// Held back: a Llama 3 JSON reply is not a call until "parameters" begins
// (it may be a plain JSON answer), stringified arguments come whole, and
// what is not a call after all stays content with nothing sent as a call.
TEST(ToolArgsStream, HoldsWhatMayStillBeText) {
  const std::string answer = "{\"name\": \"Bob\", \"age\": 5}";
  const Streamed s = stream_chars(answer, opts_for(ToolFormat::kLlama3Json));
  EXPECT_FALSE(s.diverged);
  EXPECT_TRUE(s.message.tool_calls.empty());
  EXPECT_EQ(s.message.content, answer);
  for (const StreamDelta& d : s.deltas) EXPECT_LT(d.tool_index, 0);

  const std::string stringified = "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": [1, 2]}\"}</tool_call>";
  const Streamed t = stream_chars(stringified, opts_for(ToolFormat::kHermes));
  EXPECT_FALSE(t.diverged);
  ASSERT_EQ(t.message.tool_calls.size(), 1u);
  EXPECT_EQ(t.message.tool_calls[0].arguments, "{\"a\":[1,2]}");
  EXPECT_EQ(parse_reply(stringified, opts_for(ToolFormat::kHermes)).tool_calls.at(0).arguments, "{\"a\":[1,2]}");
}

// The generic format's plain answer {"response": "..."} (Gemma's replies
// with tools) streams its text as content, as llama.cpp does, and joins to
// the whole parse's content.
TEST(ToolArgsStream, GenericResponseStreamsAsContent) {
  const std::string reply = "{\"response\": \"Hello, w\\u00f6rld! \\ud83d\\ude00 It is \\\"sunny\\\"\\n today.\"}";
  const ParsedMessage whole = parse_reply(reply, opts_for(ToolFormat::kGeneric));
  EXPECT_EQ(whole.content, "Hello, w\xC3\xB6rld! \xF0\x9F\x98\x80 It is \"sunny\"\n today.");
  const Streamed s = stream_chars(reply, opts_for(ToolFormat::kGeneric), "\"}");
  EXPECT_FALSE(s.diverged);
  std::string joined;
  size_t pieces = 0;
  for (const StreamDelta& d : s.deltas) {
    EXPECT_LT(d.tool_index, 0);
    joined += d.content;
    pieces += d.content.empty() ? 0 : 1;
  }
  EXPECT_EQ(joined, whole.content);
  EXPECT_GT(pieces, 10u);
  EXPECT_GT(s.before_mark, 10u) << "the text streamed before the object closed";
}

// A reply cut inside a call whose arguments had begun streaming: the stream
// keeps the call as sent (nothing contradicting it is sent after), while the
// one-shot parse keeps the text as content.
TEST(ToolArgsStream, CutInsideACallKeepsWhatWasSent) {
  const std::string cut = "Hi.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"city\": \"Par";
  const Streamed s = stream_chars(cut, opts_for(ToolFormat::kHermes));
  EXPECT_TRUE(s.diverged);
  ASSERT_EQ(s.message.tool_calls.size(), 1u);
  EXPECT_EQ(s.message.tool_calls[0].name, "f");
  EXPECT_EQ(s.message.tool_calls[0].arguments, "{\"city\":\"Par");
  EXPECT_EQ(s.message.content, "Hi.");
  std::string content;
  for (const StreamDelta& d : s.deltas) content += d.content;
  EXPECT_EQ(content, "Hi.") << "no markup sent as content after the call opened";
  const ParsedMessage whole = parse_reply(cut, opts_for(ToolFormat::kHermes));
  EXPECT_TRUE(whole.tool_calls.empty());
  EXPECT_EQ(whole.content, cut);
}

// canonical_json against nlohmann on random JSON texts: the whole text gives
// dump() exactly, and every prefix gives a prefix of it (what streaming needs).
TEST(ToolArgsStream, CanonicalJsonPrefixes) {
  std::mt19937 rng(7);
  const std::vector<std::string> strings = {
      "\"\"",          "\"a b\"",       "\"\\u00e9\\ud83d\\ude00\"", "\"\xE6\x97\xA5\"",
      "\"q\\\"\\\\\"", "\"\\n\\t\\/\"", "\"\\u001f\\u0041\""};
  const std::vector<std::string> scalars = {
      "0", "-12", "3.250", "1e3", "-0.0", "true", "false", "null", "12345678901234567890"};
  std::function<std::string(int)> value = [&](int depth) -> std::string {
    const int kind = depth > 3 ? static_cast<int>(rng() % 2) : static_cast<int>(rng() % 4);
    const std::string ws = rng() % 3 == 0 ? " \n " : "";
    if (kind == 0) return strings[rng() % strings.size()];
    if (kind == 1) return scalars[rng() % scalars.size()];
    const int n = static_cast<int>(rng() % 4);
    std::string out = kind == 2 ? "[" : "{";
    for (int i = 0; i < n; ++i) {
      if (i) out += "," + ws;
      if (kind == 3) out += "\"k" + std::to_string(i) + "\"" + ws + ":" + ws;
      out += value(depth + 1);
    }
    return out + ws + (kind == 2 ? "]" : "}");
  };
  int checked = 0, raw_mismatch = 0;
  for (int n = 0; n < 200; ++n) {
    const std::string text = "{\"v\": " + value(0) + "}";
    const std::string ref = ojson::parse(text).dump();
    std::string whole;
    size_t end = 0;
    ASSERT_EQ(detail::canonical_json(text, 0, &whole, &end), detail::JsonScan::kComplete) << text;
    ASSERT_EQ(whole, ref) << text;
    ASSERT_EQ(end, text.size());
    for (size_t cut = 1; cut < text.size(); ++cut) {
      std::string part;
      size_t e = 0;
      ASSERT_EQ(detail::canonical_json(std::string_view(text).substr(0, cut), 0, &part, &e),
                detail::JsonScan::kIncomplete)
          << text.substr(0, cut);
      ASSERT_EQ(ref.compare(0, part.size(), part), 0) << "prefix " << text.substr(0, cut) << " gave " << part;
      // Negative control: the raw prefix is not in general a prefix of the canonical text.
      if (ref.compare(0, cut, text, 0, cut) != 0) ++raw_mismatch;
      ++checked;
    }
  }
  EXPECT_GT(checked, 1000);
  EXPECT_GT(raw_mismatch, 100);
  // Bad input: invalid JSON and invalid UTF-8 are kInvalid, never a throw.
  std::string out;
  size_t e = 0;
  EXPECT_EQ(detail::canonical_json("{\"a\": 1,}", 0, &out, &e), detail::JsonScan::kInvalid);
  out.clear();
  EXPECT_EQ(detail::canonical_json(std::string("{\"a\": \"\xff\"}"), 0, &out, &e), detail::JsonScan::kInvalid);
  out.clear();
  EXPECT_EQ(detail::canonical_json(std::string(600, '['), 0, &out, &e), detail::JsonScan::kInvalid);
}

}  // namespace
}  // namespace strix::chat
