#include "server/api_common.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <utility>

#include "core/error.h"
#include "grammar/json_schema.h"
#include "server/api_error.h"
#include "server/request_fields.h"

namespace strix::server {

HttpReply json_reply(const json& j, int status) {
  HttpReply r;
  r.status = status;
  r.body = dump(j);
  return r;
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string sse_data(const json& j) { return "data: " + dump(j) + "\n\n"; }

std::string sse_event(const char* name, const json& j) {
  return std::string("event: ") + name + "\ndata: " + dump(j) + "\n\n";
}

std::string random_id(const char* prefix) {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  static const char kChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::string id = prefix;
  for (int i = 0; i < 24; ++i) id += kChars[rng() % (sizeof(kChars) - 1)];
  return id;
}

const std::initializer_list<std::string_view> kSamplingFields = {"temperature",
                                                                 "top_p",
                                                                 "top_k",
                                                                 "min_p",
                                                                 "typical_p",
                                                                 "top_n_sigma",
                                                                 "repeat_penalty",
                                                                 "repeat_last_n",
                                                                 "presence_penalty",
                                                                 "frequency_penalty",
                                                                 "dry_multiplier",
                                                                 "dry_base",
                                                                 "dry_allowed_length",
                                                                 "dry_penalty_last_n",
                                                                 "dry_sequence_breakers",
                                                                 "xtc_probability",
                                                                 "xtc_threshold",
                                                                 "mirostat",
                                                                 "mirostat_tau",
                                                                 "mirostat_eta",
                                                                 "dynatemp_range",
                                                                 "dynatemp_exponent",
                                                                 "min_keep",
                                                                 "ignore_eos",
                                                                 "seed",
                                                                 "samplers",
                                                                 "logit_bias",
                                                                 "n_probs",
                                                                 "cache_prompt",
                                                                 "id_slot",
                                                                 "n_keep",
                                                                 "n_discard",
                                                                 "grammar",
                                                                 "json_schema"};

namespace {

float num(const json& b, const char* key, float def) { return static_cast<float>(get_number(b, key, def)); }
int32_t int32(const json& b, const char* key, int32_t def, int32_t lo = INT32_MIN) {
  const int64_t v = get_int(b, key, def);
  if (v < lo || v > INT32_MAX) throw ApiError(400, std::string("'") + key + "' is out of range", key);
  return static_cast<int32_t>(v);
}

// OpenAI's {"token id": bias} or llama-server's [[id, bias | false], ...].
std::vector<std::pair<int32_t, float>> logit_bias(const json& b) {
  std::vector<std::pair<int32_t, float>> out;
  if (!has_field(b, "logit_bias")) return out;
  const json& lb = b.at("logit_bias");
  const auto add = [&](int64_t id, const json& v) {
    if (id < 0 || id > INT32_MAX) throw ApiError(400, "'logit_bias' holds a token id out of range", "logit_bias");
    if (v.is_boolean() && !v.get<bool>()) {
      out.emplace_back(static_cast<int32_t>(id), -std::numeric_limits<float>::infinity());
    } else if (v.is_number()) {
      out.emplace_back(static_cast<int32_t>(id), v.get<float>());
    } else {
      throw ApiError(400, "'logit_bias' values must be numbers (or false)", "logit_bias");
    }
  };
  if (lb.is_object()) {
    for (const auto& [k, v] : lb.items()) {
      char* end = nullptr;
      const long long id = std::strtoll(k.c_str(), &end, 10);
      if (k.empty() || *end != '\0') {
        throw ApiError(400, "'logit_bias' keys must be token ids (got '" + k + "')", "logit_bias");
      }
      add(id, v);
    }
  } else if (lb.is_array()) {
    for (const json& pair : lb) {
      if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number_integer()) {
        throw ApiError(400, "'logit_bias' as an array holds [token id, bias] pairs", "logit_bias");
      }
      add(pair[0].get<int64_t>(), pair[1]);
    }
  } else {
    throw ApiError(400, "'logit_bias' must be an object or an array of pairs", "logit_bias");
  }
  return out;
}

}  // namespace

sampling::Params sampling_params(const json& b) {
  sampling::Params p;
  p.temp = num(b, "temperature", p.temp);
  p.top_p = num(b, "top_p", p.top_p);
  p.top_k = int32(b, "top_k", p.top_k);
  p.min_p = num(b, "min_p", p.min_p);
  p.typ_p = num(b, "typical_p", p.typ_p);
  p.top_n_sigma = num(b, "top_n_sigma", p.top_n_sigma);
  p.penalty_repeat = num(b, "repeat_penalty", p.penalty_repeat);
  p.penalty_last_n = int32(b, "repeat_last_n", p.penalty_last_n, -1);
  p.penalty_present = num(b, "presence_penalty", p.penalty_present);
  p.penalty_freq = num(b, "frequency_penalty", p.penalty_freq);
  p.dry_multiplier = num(b, "dry_multiplier", p.dry_multiplier);
  p.dry_base = num(b, "dry_base", p.dry_base);
  p.dry_allowed_length = int32(b, "dry_allowed_length", p.dry_allowed_length, 0);
  p.dry_penalty_last_n = int32(b, "dry_penalty_last_n", p.dry_penalty_last_n, -1);
  if (has_field(b, "dry_sequence_breakers")) p.dry_sequence_breakers = get_strings(b, "dry_sequence_breakers");
  p.xtc_probability = num(b, "xtc_probability", p.xtc_probability);
  p.xtc_threshold = num(b, "xtc_threshold", p.xtc_threshold);
  p.mirostat = int32(b, "mirostat", p.mirostat, 0);
  if (p.mirostat > 2) throw ApiError(400, "'mirostat' must be 0, 1 or 2", "mirostat");
  p.mirostat_tau = num(b, "mirostat_tau", p.mirostat_tau);
  p.mirostat_eta = num(b, "mirostat_eta", p.mirostat_eta);
  p.dynatemp_range = num(b, "dynatemp_range", p.dynatemp_range);
  p.dynatemp_exponent = num(b, "dynatemp_exponent", p.dynatemp_exponent);
  p.min_keep = int32(b, "min_keep", p.min_keep, 0);
  p.ignore_eos = get_bool(b, "ignore_eos", false);
  const int64_t seed = get_int(b, "seed", -1);
  if (seed != -1) p.seed = static_cast<uint32_t>(seed);
  if (has_field(b, "samplers")) {
    const json& s = b.at("samplers");
    try {
      if (s.is_string()) {
        // llama-server: a string is the one-letter sequence (--sampling-seq)
        p.stages = sampling::parse_stages(s.get<std::string>(), /*letters=*/true);
      } else if (s.is_array()) {
        std::string joined;
        for (const json& name : s) {
          if (!name.is_string()) throw ApiError(400, "'samplers' must hold sampler names", "samplers");
          joined += name.get<std::string>() + ";";
        }
        p.stages = sampling::parse_stages(joined, /*letters=*/false);
      } else {
        throw ApiError(400, "'samplers' must be an array of names or a string of letters", "samplers");
      }
    } catch (const Error& e) {
      throw ApiError(400, std::string("'samplers': ") + e.what(), "samplers");
    }
  }
  p.logit_bias = logit_bias(b);
  p.grammar = request_grammar(b);
  return p;
}

std::string schema_grammar(const json& schema, const std::string& field) {
  if (!schema.is_object() && !schema.is_boolean()) {
    throw ApiError(400, "'" + field + "' must be a JSON schema object", field);
  }
  try {
    return grammar::json_schema_to_grammar(schema.dump());
  } catch (const std::exception& e) {
    throw ApiError(400, "'" + field + "' cannot be enforced: " + e.what(), field);
  }
}

std::string response_format_grammar(const json& rf, const std::string& field) {
  if (!rf.is_object()) throw ApiError(400, "'" + field + "' must be an object", field);
  const std::string type = rf.value("type", "");
  if (type == "text") {
    check_fields(rf, {"type"});
    return "";
  }
  if (type == "json_object") {
    check_fields(rf, {"type", "schema"});
    // llama-server also takes a schema here
    return rf.contains("schema") ? schema_grammar(rf.at("schema"), field + ".schema")
                                 : schema_grammar(json::object(), field);
  }
  if (type == "json_schema") {
    check_fields(rf, {"type", "json_schema"});
    const json js = rf.value("json_schema", json());
    if (!js.is_object() || !js.contains("schema")) {
      throw ApiError(400, "'" + field + ".json_schema.schema' is required", field + ".json_schema");
    }
    for (const auto& [k, v] : js.items()) {
      if (k != "schema" && k != "name" && k != "strict" && k != "description") {
        throw ApiError(400, "Unsupported field '" + field + ".json_schema." + k + "'", field + ".json_schema." + k);
      }
    }
    // strict or not, the grammar enforces the schema (what strict promises)
    return schema_grammar(js.at("schema"), field + ".json_schema.schema");
  }
  throw ApiError(400, "'" + field + ".type' must be text, json_object or json_schema", field + ".type");
}

std::string request_grammar(const json& b) {
  int n = 0;
  std::string g;
  if (has_field(b, "grammar")) {
    ++n;
    g = get_string(b, "grammar", "");
  }
  if (has_field(b, "json_schema")) {
    ++n;
    g = schema_grammar(b.at("json_schema"), "json_schema");
  }
  if (has_field(b, "response_format")) {
    const std::string rg = response_format_grammar(b.at("response_format"), "response_format");
    if (!rg.empty()) {
      ++n;
      g = rg;
    }
  }
  if (n > 1) throw ApiError(400, "give only one of 'grammar', 'json_schema' and 'response_format'", "grammar");
  return g;
}

namespace {

std::unique_ptr<sampling::Sampler> build_sampler(const sampling::Params& params, const tok::Tokenizer& tk,
                                                 int64_t n_ctx) {
  try {
    return std::make_unique<sampling::Sampler>(params, tk, static_cast<int32_t>(n_ctx));
  } catch (const ApiError&) {
    throw;
  } catch (const std::exception& e) {
    const bool grammar = !params.grammar.empty() && std::string(e.what()).find("rammar") != std::string::npos;
    throw ApiError(400, std::string("bad sampling parameters: ") + e.what(), grammar ? "grammar" : "");
  }
}

}  // namespace

GenRequest make_request_ids(const tok::Tokenizer& tk, std::vector<int32_t> ids, const json& b, const PromptLimits& lim,
                            const sampling::Params& params, const std::vector<std::string>& stop) {
  GenRequest g;
  g.prompt = std::move(ids);
  if (g.prompt.empty()) throw ApiError(400, "the prompt is empty", "prompt");
  if (static_cast<int64_t>(g.prompt.size()) >= lim.n_ctx) {
    throw ApiError(400,
                   "the prompt is " + std::to_string(g.prompt.size()) + " tokens, the context holds " +
                       std::to_string(lim.n_ctx) + " (start the server with a larger -c)",
                   "prompt", "invalid_request_error", "context_length_exceeded");
  }
  if (lim.n_predict < -1) throw ApiError(400, "the token limit must be -1 (none) or >= 0");
  g.n_predict = static_cast<int32_t>(std::min<int64_t>(lim.n_predict, INT32_MAX));
  g.stop = stop;
  const int64_t n_probs = get_int(b, "n_probs", 0);
  if (n_probs < 0 || n_probs > 100) throw ApiError(400, "'n_probs' must be in [0, 100]", "n_probs");
  g.n_probs = static_cast<int32_t>(n_probs);
  g.cache_prompt = get_bool(b, "cache_prompt", true);
  // llama-server's id_slot: -1 any slot, else that slot (Engine::submit checks the range)
  const int64_t id_slot = get_int(b, "id_slot", -1);
  if (id_slot < -1 || id_slot > INT32_MAX) throw ApiError(400, "'id_slot' must be -1 (any) or a slot id", "id_slot");
  g.id_slot = static_cast<int32_t>(id_slot);
  // llama-server's context shift fields (used when the server runs with --context-shift)
  if (has_field(b, "n_keep")) g.n_keep = int32(b, "n_keep", 0, -1);
  g.n_discard = int32(b, "n_discard", 0, 0);
  g.sampler = build_sampler(params, tk, lim.n_ctx);
  return g;
}

GenRequest make_request(const tok::Tokenizer& tk, const std::string& prompt, const json& b, const PromptLimits& lim,
                        const sampling::Params& params, const std::vector<std::string>& stop) {
  // The rendered chat prompt may already start with the BOS text; do not add a second one.
  const auto& v = tk.vocab();
  bool add_special = true;
  if (v.bos != tok::kNoToken) {
    const std::string bos = tk.token_to_piece(v.bos, true);
    if (!bos.empty() && prompt.compare(0, bos.size(), bos) == 0) add_special = false;
  }
  return make_request_ids(tk, tk.tokenize(prompt, add_special, /*parse_special=*/true), b, lim, params, stop);
}

GenRequest clone_request(const GenRequest& g, const tok::Tokenizer& tk, const sampling::Params& params, int64_t n_ctx) {
  GenRequest c;
  c.prompt = g.prompt;
  c.n_predict = g.n_predict;
  c.stop = g.stop;
  c.n_probs = g.n_probs;
  c.cache_prompt = g.cache_prompt;
  c.cache_salt = g.cache_salt;
  c.n_keep = g.n_keep;
  c.n_discard = g.n_discard;
  c.sampler = build_sampler(params, tk, n_ctx);
  return c;
}

const char* oai_finish(Finish f, bool tool_calls) {
  if (f == Finish::kLimit) return "length";
  return tool_calls ? "tool_calls" : "stop";
}

const char* stop_type(Finish f) {
  switch (f) {
    case Finish::kEos:
      return "eos";
    case Finish::kLimit:
      return "limit";
    case Finish::kWord:
      return "word";
    default:
      return "none";
  }
}

json oai_usage(int64_t n_prompt, int64_t n_gen, int64_t n_cached) {
  return {{"prompt_tokens", n_prompt},
          {"completion_tokens", n_gen},
          {"total_tokens", n_prompt + n_gen},
          {"prompt_tokens_details", {{"cached_tokens", n_cached}}}};
}

std::string oai_stream_end(const json& head, const std::vector<GenEvent>& last, bool failed, bool usage,
                           int64_t n_prompt) {
  std::string out;
  if (usage && !failed) {
    int64_t gen = 0, cached = 0;
    for (const GenEvent& e : last) {
      gen += e.n_gen;
      cached = std::max<int64_t>(cached, e.n_cached);
    }
    json u = head;
    u["choices"] = json::array();
    u["usage"] = oai_usage(n_prompt, gen, cached);
    out += sse_data(u);
  }
  return out + "data: [DONE]\n\n";
}

json error_event_body(const GenEvent& e) { return ApiError(500, e.error, {}, "server_error").body(); }

json piece_bytes(const std::string& piece) {
  json b = json::array();
  for (unsigned char c : piece) b.push_back(static_cast<int>(c));
  return b;
}

namespace {

// -inf (a token no sampler would draw) is not JSON: OpenAI clients get -9999.
double finite(float lp) { return std::isfinite(lp) ? static_cast<double>(lp) : -9999.0; }

}  // namespace

json chat_logprobs(const std::vector<TokenLogprobs>& probs, int top_n) {
  json content = json::array();
  for (const TokenLogprobs& t : probs) {
    json top = json::array();
    for (size_t i = 0; i < t.top.size() && static_cast<int>(i) < top_n; ++i) {
      top.push_back(
          {{"token", t.top[i].piece}, {"logprob", finite(t.top[i].logprob)}, {"bytes", piece_bytes(t.top[i].piece)}});
    }
    content.push_back({{"token", t.sampled.piece},
                       {"logprob", finite(t.sampled.logprob)},
                       {"bytes", piece_bytes(t.sampled.piece)},
                       {"top_logprobs", top}});
  }
  return {{"content", content}, {"refusal", nullptr}};
}

json completion_logprobs(const std::vector<TokenLogprobs>& probs, int top_n, size_t offset) {
  json tokens = json::array(), lps = json::array(), tops = json::array(), offsets = json::array();
  for (const TokenLogprobs& t : probs) {
    tokens.push_back(t.sampled.piece);
    lps.push_back(finite(t.sampled.logprob));
    json top = json::object();
    for (size_t i = 0; i < t.top.size() && static_cast<int>(i) < top_n; ++i) {
      top[t.top[i].piece] = finite(t.top[i].logprob);
    }
    tops.push_back(top);
    offsets.push_back(offset);
    offset += t.sampled.piece.size();
  }
  return {{"tokens", tokens}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

json native_probs(const std::vector<TokenLogprobs>& probs, int top_n) {
  json out = json::array();
  for (const TokenLogprobs& t : probs) {
    json top = json::array();
    for (size_t i = 0; i < t.top.size() && static_cast<int>(i) < top_n; ++i) {
      top.push_back({{"id", t.top[i].id},
                     {"token", t.top[i].piece},
                     {"logprob", finite(t.top[i].logprob)},
                     {"bytes", piece_bytes(t.top[i].piece)}});
    }
    out.push_back({{"id", t.sampled.id},
                   {"token", t.sampled.piece},
                   {"logprob", finite(t.sampled.logprob)},
                   {"bytes", piece_bytes(t.sampled.piece)},
                   {"top_logprobs", top}});
  }
  return out;
}

double sum_logprob(const std::vector<TokenLogprobs>& probs) {
  double s = 0;
  for (const TokenLogprobs& t : probs) s += t.sampled.logprob;
  return s;
}

}  // namespace strix::server
