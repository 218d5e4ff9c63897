// POST /v1/completions: OpenAI's legacy completions with n, best_of (the n
// generations of highest cumulative log-probability out of best_of), echo,
// logprobs, stop, seed and the llama-server sampling extras.
#include <algorithm>
#include <ctime>
#include <memory>
#include <numeric>
#include <utility>

#include "server/api_common.h"
#include "server/api_error.h"
#include "server/request_fields.h"
#include "server/routes.h"

namespace strix::server {

namespace {

bool include_usage(const json& b) {
  if (!has_field(b, "stream_options")) return false;
  const json& so = b.at("stream_options");
  if (!so.is_object()) throw ApiError(400, "'stream_options' must be an object", "stream_options");
  check_fields(so, {"include_usage"}, {}, "stream_options.");
  return get_bool(so, "include_usage", false);
}

}  // namespace

HttpReply Routes::completion_oai(const std::string& text) {
  const json b = parse_body(text);
  check_fields(b,
               {"model", "prompt", "max_tokens", "stop", "stream", "stream_options", "echo", "n", "best_of", "user",
                "logprobs", "response_format"},
               kSamplingFields);
  const int64_t n = get_int(b, "n", 1);
  if (n < 1 || n > 64) throw ApiError(400, "'n' must be in [1, 64]", "n");
  const int64_t best_of = get_int(b, "best_of", n);
  if (best_of < n || best_of > 64) throw ApiError(400, "'best_of' must be in [n, 64]", "best_of");
  const bool stream = get_bool(b, "stream", false);
  if (stream && best_of > n) {
    throw ApiError(400, "'best_of' greater than 'n' cannot be streamed (the best are known only at the end)",
                   "best_of");
  }
  const bool echo = get_bool(b, "echo", false);
  int top_n = -1;  // -1: no logprobs
  if (has_field(b, "logprobs")) {
    const int64_t lp = get_int(b, "logprobs", 0);
    if (lp < 0 || lp > 20) throw ApiError(400, "'logprobs' must be in [0, 20]", "logprobs");
    top_n = static_cast<int>(lp);
  }
  if (top_n < 0 && get_int(b, "n_probs", 0) > 0)
    top_n = static_cast<int>(std::min<int64_t>(get_int(b, "n_probs", 0), 20));
  if (echo && top_n >= 0) {
    throw ApiError(400, "'echo' together with 'logprobs' is not implemented (it needs the prompt's log-probabilities)",
                   "echo");
  }
  std::string prompt;
  std::vector<int32_t> ids;
  const json pj = b.value("prompt", json());
  if (pj.is_string()) {
    prompt = pj.get<std::string>();
  } else if (pj.is_array() && pj.size() == 1 && pj[0].is_string()) {
    prompt = pj[0].get<std::string>();
  } else if (pj.is_array() && !pj.empty() && pj[0].is_number_integer()) {
    for (const json& id : pj) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= tk_.vocab().n_tokens()) {
        throw ApiError(400, "'prompt' holds " + id.dump() + ", not a token id of this vocabulary", "prompt");
      }
      ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
    }
    prompt = tk_.detokenize(ids, /*remove_special=*/false, /*unparse_special=*/true);
  } else {
    throw ApiError(400, "'prompt' must be a string or an array of token ids (several prompts are not implemented)",
                   "prompt");
  }
  const bool usage = include_usage(b);
  const PromptLimits lim{cfg_.n_ctx, get_int(b, "max_tokens", -1)};
  sampling::Params params = sampling_params(b);
  const std::vector<std::string> stop = get_strings(b, "stop");
  GenRequest first =
      ids.empty() ? make_request(tk_, prompt, b, lim, params, stop) : make_request_ids(tk_, ids, b, lim, params, stop);
  // best_of ranks by the sampled tokens' log-probabilities: the engine must report them.
  if (best_of > n || top_n >= 0) first.n_probs = std::max<int32_t>({first.n_probs, 1, top_n});
  const int32_t n_prompt = static_cast<int32_t>(first.prompt.size());
  HttpReply r;
  std::vector<GenRequest> reqs;
  for (int64_t i = 1; i < best_of; ++i) {
    sampling::Params pi = params;
    if (pi.seed != 0xFFFFFFFFu) pi.seed = params.seed + static_cast<uint32_t>(i);  // n different draws
    reqs.push_back(clone_request(first, tk_, pi, cfg_.n_ctx));
  }
  reqs.insert(reqs.begin(), std::move(first));
  r.streams = engine_.submit_all(std::move(reqs));

  const json head = {{"id", random_id("cmpl-")},
                     {"object", "text_completion"},
                     {"created", static_cast<int64_t>(std::time(nullptr))},
                     {"model", cfg_.alias},
                     {"system_fingerprint", "strix"}};
  const std::string echoed = echo ? prompt : "";
  if (stream) {
    r.sse = true;
    struct State {
      std::vector<bool> started;
      std::vector<size_t> offset;
      std::vector<GenEvent> last;
      bool failed = false;
    };
    auto st = std::make_shared<State>();
    st->started.assign(n, false);
    st->offset.assign(n, 0);
    st->last.resize(n);
    r.on_event = [head, st, echoed, top_n](size_t i, const GenEvent& e) -> std::string {
      if (e.done && e.finish == Finish::kError) {
        st->failed = true;
        return sse_data(error_event_body(e));
      }
      std::string out;
      const auto chunk = [&](const std::string& t, const std::vector<TokenLogprobs>& probs, const json& finish) {
        json c = head;
        json lp = nullptr;
        if (top_n >= 0) lp = completion_logprobs(probs, top_n, st->offset[i]);
        st->offset[i] += t.size();
        c["choices"] = json::array({{{"text", t}, {"index", i}, {"logprobs", lp}, {"finish_reason", finish}}});
        out += sse_data(c);
      };
      std::string t = e.text;
      if (!st->started[i]) {
        st->started[i] = true;
        t = echoed + t;
      }
      if (!t.empty() || !e.probs.empty()) chunk(t, e.probs, nullptr);
      if (e.done) {
        chunk("", {}, oai_finish(e.finish, false));
        st->last[i] = e;
      }
      return out;
    };
    r.on_end = [head, st, usage, n_prompt]() { return oai_stream_end(head, st->last, st->failed, usage, n_prompt); };
  } else {
    r.on_done = [head, echoed, top_n, n, n_prompt](std::vector<GenResult>& res) {
      for (const GenResult& g : res) {
        if (g.last.finish == Finish::kError) return json_reply(error_event_body(g.last), 500);
      }
      std::vector<size_t> order(res.size());
      std::iota(order.begin(), order.end(), 0);
      if (static_cast<int64_t>(res.size()) > n) {
        std::stable_sort(order.begin(), order.end(),
                         [&](size_t a, size_t c) { return sum_logprob(res[a].probs) > sum_logprob(res[c].probs); });
      }
      json choices = json::array();
      int64_t gen = 0, cached = 0;
      for (const GenResult& g : res) {
        gen += g.last.n_gen;  // OpenAI bills every best_of candidate
        cached = std::max<int64_t>(cached, g.last.n_cached);
      }
      for (int64_t k = 0; k < n; ++k) {
        const GenResult& g = res[order[k]];
        json lp = nullptr;
        if (top_n >= 0) lp = completion_logprobs(g.probs, top_n, echoed.size());
        choices.push_back({{"text", echoed + g.text},
                           {"index", k},
                           {"logprobs", lp},
                           {"finish_reason", oai_finish(g.last.finish, false)}});
      }
      json c = head;
      c["choices"] = choices;
      c["usage"] = oai_usage(n_prompt, gen, cached);
      return json_reply(c);
    };
  }
  return r;
}

}  // namespace strix::server
