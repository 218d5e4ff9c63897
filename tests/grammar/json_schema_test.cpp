// JSON Schema -> GBNF: random walks through each generated grammar until it
// is complete must give texts that Python's json module parses and the
// python3-jsonschema package validates against the schema.
#include "grammar/json_schema.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "grammar_test_util.h"

namespace strix::grammar::test {
namespace {

struct SchemaCase {
  const char* name;
  const char* schema;
};

const std::vector<SchemaCase>& schemas() {
  static const std::vector<SchemaCase> s = {
      {"person",
       R"({"type": "object", "properties": {
            "name": {"type": "string", "maxLength": 8},
            "age": {"type": "integer", "minimum": 0, "maximum": 150},
            "tags": {"type": "array", "items": {"enum": ["a", "bc", 3, null]}, "maxItems": 3},
            "ok": {"type": "boolean"}},
          "required": ["name", "age"], "additionalProperties": false})"},
      {"nested_optional",
       R"({"type": "object", "properties": {
            "a": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "null"}}},
            "b": {"type": "string", "minLength": 2, "maxLength": 4},
            "c": {"const": {"k": [1, "two"]}}}})"},
      {"unions",
       R"({"type": "array", "minItems": 1, "maxItems": 4,
           "items": {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "integer", "exclusiveMinimum": 10,
                                "exclusiveMaximum": 2000}, {"type": ["boolean", "null"]}]}})"},
      {"recursive_ref",
       R"({"$ref": "#/$defs/node", "$defs": {"node": {"type": "object",
           "properties": {"v": {"type": "integer", "minimum": -5, "maximum": 5},
                          "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}},
           "required": ["v"]}}})"},
      {"definitions",
       R"({"type": "object", "definitions": {"color": {"enum": ["red", "green"]}},
           "properties": {"fg": {"$ref": "#/definitions/color"}, "bg": {"$ref": "#/definitions/color"}},
           "required": ["fg", "bg"]})"},
      {"formats",
       R"({"type": "object", "properties": {"d": {"type": "string", "format": "date"},
           "t": {"type": "string", "format": "time"}, "dt": {"type": "string", "format": "date-time"},
           "u": {"type": "string", "format": "uuid"}}, "required": ["d", "t", "dt", "u"]})"},
      {"pattern",
       R"({"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]{2}-\\d{3}(x|yz)?\\.?$"}},
           "required": ["code"]})"},
      {"tuple",
       R"({"type": "array", "prefixItems": [{"type": "string", "maxLength": 2}, {"type": "integer", "minimum": 7},
           {"type": "boolean"}]})"},
      {"all_of",
       R"({"allOf": [{"type": "object", "properties": {"a": {"type": "integer", "maximum": 3}}},
                     {"properties": {"b": {"enum": [1, 2]}}}]})"},
      {"additional",
       R"({"type": "object", "properties": {"id": {"type": "integer", "minimum": 100, "maximum": 999}},
           "required": ["id"], "additionalProperties": {"type": "integer", "maximum": 9}})"},
      {"json_object", R"({})"},
  };
  return s;
}

std::string piece(VocabPair& v, int32_t id) { return v.ours->vocab().pieces[id]; }

// A random walk through the grammar until it is complete (or max_tokens).
// Picks avoid byte tokens above 0x7F (an encoded surrogate code point is
// grammar-valid but not valid UTF-8 for Python) and lean towards one-byte
// pieces and closers so that walks end.
std::optional<std::string> generate(VocabPair& v, Matcher& m, std::mt19937& rng, int max_tokens) {
  const int32_t n = v.ours->vocab().n_tokens();
  std::vector<TokenData> cand(static_cast<size_t>(n));
  std::string text;
  for (int step = 0; step < max_tokens; ++step) {
    for (int32_t i = 0; i < n; ++i) cand[i] = TokenData{i, 0.0f, 0.0f};
    m.apply(cand.data(), cand.size());
    std::vector<int32_t> allowed, one_byte, closers;
    bool eog = false;
    for (const TokenData& c : cand) {
      if (!std::isfinite(c.logit)) continue;
      if (v.ours->vocab().is_eog(c.id)) {
        eog = true;
        continue;
      }
      const std::string p = piece(v, c.id);
      if (p.size() == 1 && static_cast<uint8_t>(p[0]) >= 0x80) continue;
      allowed.push_back(c.id);
      if (p.size() == 1) one_byte.push_back(c.id);
      if (p == "\"" || p == "}" || p == "]") closers.push_back(c.id);
    }
    if (eog && (allowed.empty() || rng() % 3 == 0 || step > max_tokens / 2)) return text;
    if (allowed.empty()) return std::nullopt;
    const auto pick_from = [&](const std::vector<int32_t>& ids) { return ids[rng() % ids.size()]; };
    int32_t pick;
    const uint32_t r = rng() % 10;
    if (!closers.empty() && (r < 2 || (step > max_tokens / 3 && r < 6))) {
      pick = pick_from(closers);
    } else if (!one_byte.empty() && r < 7) {
      pick = pick_from(one_byte);
    } else {
      pick = pick_from(allowed);
    }
    m.accept(pick);
    text += piece(v, pick);
  }
  return std::nullopt;
}

fs::path temp_path(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("strix_grammar_schema_" + std::to_string(getpid()));
  fs::create_directories(dir);
  return dir / name;
}

// Runs python3 over [{"schema": ..., "texts": [...]}, ...]; returns its verdict
// lines: "ok <case> <i>" or "bad <case> <i> <reason>".
std::string python_validate(const nlohmann::json& cases) {
  const fs::path data = temp_path("cases.json");
  const fs::path script = temp_path("validate.py");
  std::ofstream(data) << cases.dump();
  std::ofstream(script) << R"PY(
import json, re, sys
import jsonschema
cases = json.load(open(sys.argv[1], encoding="utf-8"))
checker = jsonschema.FormatChecker(formats=["uuid"])
date = re.compile(r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$")
time = re.compile(r"^([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{3})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$")
for c in cases:
    schema = c["schema"]
    for i, text in enumerate(c["texts"]):
        try:
            value = json.loads(text)
            jsonschema.validate(value, schema, format_checker=checker)
            if c["name"] == "formats":
                assert date.match(value["d"]) and time.match(value["t"]), "date/time shape"
                d, t = value["dt"].split("T")
                assert date.match(d) and time.match(t), "date-time shape"
            print("ok", c["name"], i)
        except Exception as e:
            print("bad", c["name"], i, repr(text), type(e).__name__, str(e).splitlines()[0][:200])
)PY";
  const std::string cmd = "python3 '" + script.string() + "' '" + data.string() + "' 2>&1";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return "popen failed";
  char buf[4096];
  while (fgets(buf, sizeof(buf), p) != nullptr) out += buf;
  pclose(p);
  fs::remove_all(data.parent_path());
  return out;
}

TEST(JsonSchema, random_walks_validate_with_python_jsonschema) {
  if (!have_shared()) GTEST_SKIP() << "../shared is absent";
  VocabPair& v = stories();
  std::mt19937 rng(42);
  nlohmann::json cases = nlohmann::json::array();
  int total = 0;
  for (const SchemaCase& c : schemas()) {
    const std::string gbnf = json_schema_to_grammar(c.schema);
    std::shared_ptr<const Grammar> g = Grammar::parse(gbnf, "root", v.ours.get());
    Matcher m(g, *v.ours, v.table);
    nlohmann::json texts = nlohmann::json::array();
    int attempts = 0;
    while (texts.size() < 8 && attempts < 40) {
      ++attempts;
      m.reset();
      const std::optional<std::string> text = generate(v, m, rng, 400);
      if (text) texts.push_back(*text);
    }
    EXPECT_GE(texts.size(), 4u) << c.name << " walks did not complete\n" << gbnf;
    total += static_cast<int>(texts.size());
    cases.push_back({{"name", c.name}, {"schema", nlohmann::json::parse(c.schema)}, {"texts", texts}});
  }
  // negative control for the validator itself: a text that breaks the first schema
  cases.push_back(
      {{"name", "control"},
       {"schema", nlohmann::json::parse(schemas()[0].schema)},
       {"texts", {R"({"name": "abc", "age": 151})", R"({"name": "abc"})", "{\"name\": \"a\", \"age\": 1,}"}}});
  const std::string verdict = python_validate(cases);
  std::istringstream lines(verdict);
  std::string line;
  int ok = 0, control_bad = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("ok control", 0) == 0) {
      ADD_FAILURE() << "the validator accepted a broken text: " << line;
    } else if (line.rfind("bad control", 0) == 0) {
      ++control_bad;
    } else if (line.rfind("ok ", 0) == 0) {
      ++ok;
    } else {
      ADD_FAILURE() << line;
    }
  }
  EXPECT_EQ(ok, total) << verdict;
  EXPECT_EQ(control_bad, 3) << verdict;
  if (std::getenv("STRIX_GRAMMAR_VERBOSE")) std::printf("%s\n%s\n", cases.dump(1).c_str(), verdict.c_str());
}

// Feeds text byte by byte; false once the matcher refuses a token or when
// the text ends before the grammar is complete.
bool matcher_takes(VocabPair& v, const std::string& gbnf, const std::string& text) {
  std::shared_ptr<const Grammar> g = Grammar::parse(gbnf, "root", v.ours.get());
  Matcher m(g, *v.ours, v.table);
  try {
    // byte tokens: the SPM tokenizer would add a leading space
    for (char c : text) m.accept(v.ours->vocab().byte_token(static_cast<uint8_t>(c)));
  } catch (const Error&) {
    return false;
  }
  return m.is_complete();
}

TEST(JsonSchema, matcher_rejects_schema_violations) {
  if (!have_shared()) GTEST_SKIP() << "../shared is absent";
  VocabPair& v = stories();
  const std::string person = json_schema_to_grammar(schemas()[0].schema);
  EXPECT_TRUE(matcher_takes(v, person, R"({"name": "bob", "age": 42, "tags": ["a", 3]})"));
  EXPECT_FALSE(matcher_takes(v, person, R"({"name": "bob", "age": 151})"));        // above maximum
  EXPECT_FALSE(matcher_takes(v, person, R"({"name": "bob"})"));                    // missing required
  EXPECT_FALSE(matcher_takes(v, person, R"({"name": "bobbobbob", "age": 1})"));    // maxLength
  EXPECT_FALSE(matcher_takes(v, person, R"({"name": "bob", "age": 1, "x": 1})"));  // additionalProperties false
  EXPECT_FALSE(matcher_takes(v, person, R"({"age": 1, "name": "bob"})"));          // llama keeps property order
  const std::string pattern = json_schema_to_grammar(schemas()[6].schema);
  EXPECT_TRUE(matcher_takes(v, pattern, R"({"code": "AB-123yz."})"));
  EXPECT_FALSE(matcher_takes(v, pattern, R"({"code": "AB-12x"})"));
  EXPECT_TRUE(matcher_takes(v, builtin_json_grammar(), R"({"a": [1, -2.5e3, "x\n", true, null, {}]})"));
  EXPECT_FALSE(matcher_takes(v, builtin_json_grammar(), R"([1, 2])"));  // json.gbnf: an object at the top
}

TEST(JsonSchema, generated_grammars_parse_in_libllama_and_walk_the_same) {
  if (!have_shared()) GTEST_SKIP() << "../shared is absent";
  VocabPair& v = stories();
  for (const SchemaCase& c : schemas()) {
    const std::string gbnf = json_schema_to_grammar(c.schema);
    WalkOptions opt;
    opt.steps = 120;
    opt.seed = 17;
    const WalkResult r = parity_walk(v, gbnf, gbnf, opt);
    report(c.name, r);
    EXPECT_EQ(r.mismatches, 0) << c.name;
  }
}

TEST(JsonSchema, refuses_unsupported_keywords_by_name) {
  const auto refusal = [](const std::string& schema, const JsonSchemaOptions& opt = {}) -> std::string {
    try {
      json_schema_to_grammar(schema, opt);
    } catch (const Refusal& e) {
      return e.what();
    } catch (const Error& e) {
      return std::string("error: ") + e.what();
    }
    return "";
  };
  EXPECT_NE(refusal(R"({"type": "integer", "multipleOf": 3})").find("'multipleOf'"), std::string::npos);
  EXPECT_NE(refusal(R"({"type": "array", "uniqueItems": true})").find("'uniqueItems'"), std::string::npos);
  EXPECT_NE(refusal(R"({"not": {"type": "string"}})").find("'not'"), std::string::npos);
  EXPECT_NE(refusal(R"({"type": "object", "patternProperties": {}})").find("'patternProperties'"), std::string::npos);
  EXPECT_NE(refusal(R"({"type": "number", "minimum": 0})").find("'minimum'"), std::string::npos);
  EXPECT_NE(refusal(R"({"type": "string", "format": "email"})").find("'email'"), std::string::npos);
  EXPECT_NE(refusal(R"({"$ref": "https://example.com/s.json"})").find("remote $ref"), std::string::npos);
  EXPECT_NE(refusal(R"({"type": "string", "pattern": "abc"})").find("must start with '^'"), std::string::npos);
  EXPECT_NE(refusal(R"({"type": "string", "pattern": "^(?=a)b$"})").find("lookaround"), std::string::npos);
  EXPECT_NE(refusal(R"({"type": "blob"})").find("unsupported type"), std::string::npos);
  EXPECT_NE(refusal(R"({"type": )").find("error: json schema: not valid JSON"), std::string::npos);
  EXPECT_NE(refusal(R"({"$ref": "#/$defs/missing"})").find("error: json schema: cannot resolve"), std::string::npos);
  EXPECT_NE(refusal(R"({"type": "integer", "minimum": 5, "maximum": 1})").find("minimum above"), std::string::npos);
  EXPECT_NE(refusal(R"({"type": "array", "items": {}, "minItems": 3, "maxItems": 1})").find("minItems above"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"type": "integer", "minimum": 1e300})").find("out of range"), std::string::npos);
  // llama.cpp's lenient behaviour on request: the keyword is ignored
  EXPECT_EQ(refusal(R"({"type": "number", "minimum": 0})", JsonSchemaOptions{.refuse_unenforced = false}), "");
}

}  // namespace
}  // namespace strix::grammar::test
