// JSON Schema -> GBNF, as llama.cpp's common/json-schema-to-grammar does it
// (same rule names, same whitespace rule, same handling of each keyword), and
// the builtin JSON grammar (llama.cpp's grammars/json.gbnf language).
//
//   std::string gbnf = grammar::json_schema_to_grammar(R"({"type": "object",
//       "properties": {"age": {"type": "integer", "minimum": 0}}, "required": ["age"]})");
//   auto g = grammar::Grammar::parse(gbnf);
//
// Supported: type (one or a list), properties / required / additionalProperties
// (false unless given: extra keys are not generated), enum, const, anyOf /
// oneOf (oneOf is not exclusive, as in llama.cpp), allOf of object schemas and
// of enums, items / prefixItems / minItems / maxItems, string minLength /
// maxLength / format (date, time, date-time, uuid) / pattern (a regex
// "^...$" turned into rules; \d \w \s and their negations are understood),
// integer minimum / maximum / exclusiveMinimum / exclusiveMaximum, $ref to
// "#/definitions/..." and "#/$defs/..." (recursive ones too).
// response_format {"type": "json_object"} is json_schema_to_grammar("{}").
//
// Refused by name (strix::Refusal): keywords whose constraint the grammar
// cannot enforce (not, if/then/else, multipleOf, uniqueItems,
// patternProperties, propertyNames, min/maxProperties, contains,
// dependent*, unevaluated*, minimum/maximum on non-integers, unknown string
// formats), remote $refs, lookaround in patterns. With
// refuse_unenforced = false such keywords are ignored as llama.cpp ignores
// them. Invalid schemas are strix::Error.
#pragma once

#include <string>

namespace strix::grammar {

struct JsonSchemaOptions {
  bool dotall = false;            // `.` in patterns also matches \n and \r
  bool refuse_unenforced = true;  // false: ignore unenforceable keywords (llama.cpp's behaviour)
};

std::string json_schema_to_grammar(const std::string& schema_json, const JsonSchemaOptions& options = {});

// Any JSON object (values of any type inside), with optional whitespace after
// each token: the language of llama.cpp's grammars/json.gbnf.
std::string builtin_json_grammar();

}  // namespace strix::grammar
