// The engine's reports for /metrics, /slots and /props: snapshots copied under
// the engine's mutex after every step (publish), read from any thread.
#include <cstdio>
#include <string>

#include "kv/kv_cache.h"
#include "server/engine.h"
#include "server/engine_slot.h"

namespace strix::server {

namespace {

void metric(std::string& out, const char* name, const char* type, const char* help, double value) {
  char num[64];
  std::snprintf(num, sizeof(num), "%.17g", value);
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name + " " + num + "\n";
}

}  // namespace

void Engine::publish() {
  const KvCache& kv = ctx_.kv();
  int swapped = 0;
  int64_t tokens = 0;
  for (const auto& s : slots_) {
    swapped += s->active && s->swapped;
    tokens += ctx_.seq_len(s->seq);
  }
  std::lock_guard<std::mutex> lock(mu_);
  metrics_.processing = processing_;
  metrics_.deferred = static_cast<int>(queue_.size()) + swapped;
  metrics_.kv_blocks_total = kv.n_blocks();
  metrics_.kv_blocks_used = kv.n_used_blocks();
  metrics_.kv_blocks_cached = kv.n_cached_blocks();
  metrics_.kv_blocks_empty = kv.n_empty_blocks();
  metrics_.kv_tokens = tokens;
  metrics_.block_size = kv.block_size();
  for (size_t i = 0; i < slots_.size() && i < views_.size(); ++i)
    views_[i].swapped = slots_[i]->active && slots_[i]->swapped;
}

Engine::Metrics Engine::metrics() {
  std::lock_guard<std::mutex> lock(mu_);
  return metrics_;
}

std::string Engine::metrics_text() {
  const Metrics m = metrics();
  std::string out;
  metric(out, "llamacpp:prompt_tokens_total", "counter", "Number of prompt tokens processed.",
         static_cast<double>(m.prompt_tokens));
  metric(out, "llamacpp:prompt_seconds_total", "counter", "Prompt process time", m.prompt_seconds);
  metric(out, "llamacpp:tokens_predicted_total", "counter", "Number of generation tokens processed.",
         static_cast<double>(m.predicted_tokens));
  metric(out, "llamacpp:tokens_predicted_seconds_total", "counter", "Predict process time", m.predicted_seconds);
  metric(out, "llamacpp:prompt_tokens_seconds", "gauge", "Average prompt throughput in tokens/s.",
         m.prompt_seconds > 0 ? static_cast<double>(m.prompt_tokens) / m.prompt_seconds : 0.0);
  metric(out, "llamacpp:predicted_tokens_seconds", "gauge", "Average generation throughput in tokens/s.",
         m.predicted_seconds > 0 ? static_cast<double>(m.predicted_tokens) / m.predicted_seconds : 0.0);
  metric(out, "llamacpp:kv_cache_usage_ratio", "gauge", "KV-cache usage. 1 means 100 percent usage.",
         m.kv_blocks_total > 0 ? static_cast<double>(m.kv_blocks_used) / static_cast<double>(m.kv_blocks_total) : 0.0);
  metric(out, "llamacpp:kv_cache_tokens", "gauge", "KV-cache tokens.", static_cast<double>(m.kv_tokens));
  metric(out, "llamacpp:requests_processing", "gauge", "Number of requests processing.", m.processing);
  metric(out, "llamacpp:requests_deferred", "gauge", "Number of requests deferred.", m.deferred);
  metric(out, "strix:kv_blocks_total", "gauge", "KV cache blocks in all.", static_cast<double>(m.kv_blocks_total));
  metric(out, "strix:kv_blocks_used", "gauge", "KV cache blocks held by running requests.",
         static_cast<double>(m.kv_blocks_used));
  metric(out, "strix:kv_blocks_cached", "gauge",
         "KV cache blocks no request holds that still serve the prefix cache (evictable).",
         static_cast<double>(m.kv_blocks_cached));
  metric(out, "strix:kv_blocks_free", "gauge", "Empty KV cache blocks.", static_cast<double>(m.kv_blocks_empty));
  metric(out, "strix:kv_block_size", "gauge", "Tokens per KV cache block.", m.block_size);
  metric(out, "strix:prefix_cache_hits_tokens_total", "counter", "Prompt tokens served from the prefix cache.",
         static_cast<double>(m.prefix_hit_tokens));
  metric(out, "strix:requests_finished_total", "counter", "Requests ended (any reason).",
         static_cast<double>(m.requests_done));
  metric(out, "strix:requests_cancelled_total", "counter", "Requests cancelled by their client.",
         static_cast<double>(m.cancelled));
  metric(out, "strix:requests_timed_out_total", "counter", "Requests ended by their deadline.",
         static_cast<double>(m.timeouts));
  metric(out, "strix:preemptions_total", "counter", "Running requests preempted for KV memory (resumed later).",
         static_cast<double>(m.preemptions));
  return out;
}

nlohmann::json Engine::slots_json() {
  const int64_t n_ctx = ctx_.n_ctx();
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < views_.size(); ++i) {
    const SlotView& v = views_[i];
    const int32_t remain = v.n_predict < 0 ? -1 : v.n_predict - v.n_decoded;
    out.push_back(
        {{"id", static_cast<int>(i)},
         {"n_ctx", n_ctx},
         {"speculative", false},
         {"is_processing", v.processing},
         {"preempted", v.swapped},
         {"params",
          {{"n_predict", v.n_predict}, {"n_probs", v.n_probs}, {"cache_prompt", v.cache_prompt}, {"stop", v.stop}}},
         {"prompt", v.prompt},
         {"n_prompt_tokens", v.n_prompt},
         {"n_prompt_tokens_cache", v.n_cached},
         {"next_token",
          {{"has_next_token", v.processing},
           {"has_new_line", false},
           {"n_remain", remain},
           {"n_decoded", v.n_decoded},
           {"stopping_word", ""}}}});
  }
  return out;
}

nlohmann::json Engine::props_json() {
  const int64_t n_ctx = ctx_.n_ctx();
  return {{"n_ctx", n_ctx},
          {"total_slots", opts_.n_parallel},
          {"n_batch", opts_.n_batch},
          {"kv_block_size", ctx_.kv().block_size()},
          {"default_generation_settings",
           {{"id", 0},
            {"n_ctx", n_ctx},
            {"speculative", false},
            {"is_processing", false},
            {"params",
             {{"n_predict", -1},
              {"n_probs", 0},
              {"cache_prompt", true},
              {"timeout_s", opts_.timeout_s},
              {"n_keep", opts_.n_keep},
              {"n_discard", 0},
              {"context_shift", opts_.ctx_shift}}}}}};
}

}  // namespace strix::server
