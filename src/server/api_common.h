// Pieces every API of `strix serve` shares: JSON and SSE replies, ids, the
// sampling fields (OpenAI's and llama-server's) mapped onto sampling::Params,
// grammars from response_format / json_schema / grammar, building a
// GenRequest, and token log-probabilities in the shapes the APIs use.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "sampling/sampler.h"
#include "server/engine.h"
#include "server/http_server.h"
#include "tokenizer/tokenizer.h"

namespace strix::server {

using json = nlohmann::json;

HttpReply json_reply(const json& j, int status = 200);
std::string sse_data(const json& j);                     // "data: {...}\n\n"
std::string sse_event(const char* name, const json& j);  // "event: NAME\ndata: {...}\n\n"
std::string random_id(const char* prefix);               // prefix + 24 alphanumerics
std::string dump(const json& j);                         // compact, invalid UTF-8 replaced

// The fields sampling_params() reads, for check_fields (OpenAI's temperature,
// top_p, seed, penalties, logit_bias and llama-server's extras).
extern const std::initializer_list<std::string_view> kSamplingFields;
sampling::Params sampling_params(const json& b);

// A GBNF grammar from llama-server's `grammar` / `json_schema` fields or
// OpenAI's response_format; "" when none. At most one of them may be set.
std::string request_grammar(const json& b);
// The grammar of a JSON schema (a 400 naming `field` when it cannot be enforced).
std::string schema_grammar(const json& schema, const std::string& field);
// OpenAI's response_format object ({type: text | json_object | json_schema}).
std::string response_format_grammar(const json& rf, const std::string& field);

struct PromptLimits {
  int64_t n_ctx = 0;
  int64_t n_predict = -1;  // -1: none
};

// Tokenizes `prompt` (no second BOS when the text starts with it) and builds
// the request: sampler (bad parameters are a 400 before anything is queued),
// stop strings, n_probs, cache_prompt / id_slot. `params` may carry a grammar.
GenRequest make_request(const tok::Tokenizer& tk, const std::string& prompt, const json& b, const PromptLimits& lim,
                        const sampling::Params& params, const std::vector<std::string>& stop);
// Same for an already tokenized prompt.
GenRequest make_request_ids(const tok::Tokenizer& tk, std::vector<int32_t> ids, const json& b, const PromptLimits& lim,
                            const sampling::Params& params, const std::vector<std::string>& stop);
// A copy with a fresh Sampler (OpenAI's n / best_of: several generations of one prompt).
GenRequest clone_request(const GenRequest& g, const tok::Tokenizer& tk, const sampling::Params& params, int64_t n_ctx);

// OpenAI finish_reason: "length", "stop" or "tool_calls".
const char* oai_finish(Finish f, bool tool_calls);
const char* stop_type(Finish f);  // llama-server's stop_type
json oai_usage(int64_t n_prompt, int64_t n_gen, int64_t n_cached);
// The end of an OpenAI stream: the usage chunk (include_usage, unless a generation failed;
// generated tokens summed over the choices in `last`, their final events) and [DONE].
std::string oai_stream_end(const json& head, const std::vector<GenEvent>& last, bool failed, bool usage,
                           int64_t n_prompt);
json error_event_body(const GenEvent& e);  // an OpenAI error object for a generation that failed

// The UTF-8 bytes of a token piece as OpenAI's "bytes" array.
json piece_bytes(const std::string& piece);
// Chat logprobs: {"content": [{token, logprob, bytes, top_logprobs: [...]}]}, top_n alternatives each.
json chat_logprobs(const std::vector<TokenLogprobs>& probs, int top_n);
// Completions logprobs: {tokens, token_logprobs, top_logprobs, text_offset}; offsets start at `offset`.
json completion_logprobs(const std::vector<TokenLogprobs>& probs, int top_n, size_t offset);
// llama-server's completion_probabilities.
json native_probs(const std::vector<TokenLogprobs>& probs, int top_n);
double sum_logprob(const std::vector<TokenLogprobs>& probs);

}  // namespace strix::server
