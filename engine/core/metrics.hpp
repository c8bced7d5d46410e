// The Prometheus metrics of a Strata process. One instance, made by main and shared by the HTTP server
// (request counts) and the engine (everything else); every method is thread-safe because prometheus-cpp's
// metric objects are.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

namespace strata {

class Metrics {
 public:
  Metrics(std::shared_ptr<prometheus::Registry> registry, const std::string& version, const std::string& cuda,
          const std::string& device);

  const std::shared_ptr<prometheus::Registry>& registry() const { return registry_; }

  // HTTP server: one call per answered request.
  void request_done(const std::string& endpoint, int http_status);

  // Engine: state gauges.
  void set_running(int n) { running_.Set(n); }
  void set_waiting(int n) { waiting_.Set(n); }
  void set_slots(int busy, int capacity) {
    slots_busy_.Set(busy);
    slots_capacity_.Set(capacity);
  }
  void set_kv_usage(double ratio) { kv_usage_.Set(ratio); }
  // Paged KV: blocks allocatable now (free or cached and unreferenced) and blocks in the pool.
  void set_kv_blocks(int free, int total) {
    kv_blocks_free_.Set(free);
    kv_blocks_total_.Set(total);
  }

  // Engine: events.
  void prompt_tokens(int n) { prompt_tokens_.Increment(n); }
  void generation_tokens(int n) { generation_tokens_.Increment(n); }
  void prefix_cache(int queries, int hits) {
    prefix_queries_.Increment(queries);
    prefix_hits_.Increment(hits);
  }
  void prefix_evictions(int n) { prefix_evictions_.Increment(n); }
  void preemption() { preemptions_.Increment(); }
  void spec_draft(int drafted, int accepted);
  void spec_accepted_at(int position);
  void spec_drafted_ahead() { drafts_ahead_.Increment(); }
  // The engine thread's time in drafters before a window; `ahead`: every proposal it verifies was made while
  // the window before ran (a draft model's stream), else some had to be drafted now.
  void spec_draft_time(double s, bool ahead) { (ahead ? draft_seconds_ahead_ : draft_seconds_waiting_).Increment(s); }
  void watchdog_stall() { stalls_.Increment(); }
  void engine_restart() { restarts_.Increment(); }

  void time_to_first_token(double s) { ttft_.Observe(s); }
  void inter_token_latency(double s) { itl_.Observe(s); }
  void e2e_latency(double s) { e2e_.Observe(s); }
  void queue_time(double s) { queue_.Observe(s); }
  void prefill_time(double s) { prefill_.Observe(s); }
  void window_duration(const std::string& kind, double s);  // kind: prefill, decode or mixed
  void request_lengths(int prompt, int generated) {
    prompt_len_.Observe(prompt);
    gen_len_.Observe(generated);
  }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Gauge& running_;
  prometheus::Gauge& waiting_;
  prometheus::Gauge& slots_busy_;
  prometheus::Gauge& slots_capacity_;
  prometheus::Gauge& kv_usage_;
  prometheus::Counter& prefix_queries_;
  prometheus::Counter& prefix_hits_;
  prometheus::Counter& prefix_evictions_;
  prometheus::Gauge& kv_blocks_free_;
  prometheus::Gauge& kv_blocks_total_;
  prometheus::Counter& preemptions_;
  prometheus::Counter& prompt_tokens_;
  prometheus::Counter& generation_tokens_;
  prometheus::Counter& drafts_;
  prometheus::Counter& draft_tokens_;
  prometheus::Counter& accepted_tokens_;
  prometheus::Family<prometheus::Counter>& accepted_at_;
  prometheus::Family<prometheus::Counter>& draft_seconds_;
  prometheus::Counter& draft_seconds_ahead_;
  prometheus::Counter& draft_seconds_waiting_;
  prometheus::Counter& drafts_ahead_;
  prometheus::Counter& stalls_;
  prometheus::Counter& restarts_;
  prometheus::Histogram& ttft_;
  prometheus::Histogram& itl_;
  prometheus::Histogram& e2e_;
  prometheus::Histogram& queue_;
  prometheus::Histogram& prefill_;
  prometheus::Family<prometheus::Histogram>& window_;
  prometheus::Histogram& prompt_len_;
  prometheus::Histogram& gen_len_;
};

}  // namespace strata
