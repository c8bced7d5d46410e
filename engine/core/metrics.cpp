#include "engine/core/metrics.hpp"

#include <prometheus/counter.h>

namespace strata {
namespace {

using prometheus::Histogram;

// Latency buckets: a decode step is milliseconds, a first token under load is up to seconds, a long
// generation is minutes. Roughly 2x apart so quantiles keep their shape across that range.
const Histogram::BucketBoundaries& latency_buckets() {
  static const Histogram::BucketBoundaries b = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                                1,     2.5,    5,     10,   20,    40,   80,  160, 320};
  return b;
}
// Inter-token latency lives in the millisecond range; finer buckets there.
const Histogram::BucketBoundaries& itl_buckets() {
  static const Histogram::BucketBoundaries b = {0.0005, 0.001, 0.002, 0.004, 0.006, 0.008, 0.01, 0.015, 0.02,
                                                0.03,   0.05,  0.075, 0.1,   0.2,   0.5,   1,    2.5};
  return b;
}
const Histogram::BucketBoundaries& length_buckets() {
  static const Histogram::BucketBoundaries b = {1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384,
                                                32768, 65536, 131072};
  return b;
}

prometheus::Counter& counter(prometheus::Registry& r, const char* name, const char* help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(r).Add({});
}
prometheus::Gauge& gauge(prometheus::Registry& r, const char* name, const char* help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(r).Add({});
}
Histogram& histogram(prometheus::Registry& r, const char* name, const char* help,
                     const Histogram::BucketBoundaries& b) {
  return prometheus::BuildHistogram().Name(name).Help(help).Register(r).Add({}, b);
}

}  // namespace

Metrics::Metrics(std::shared_ptr<prometheus::Registry> registry, const std::string& version,
                 const std::string& cuda, const std::string& device)
    : registry_(std::move(registry)),
      requests_(prometheus::BuildCounter()
                    .Name("strata_requests_total")
                    .Help("HTTP requests answered, by endpoint and status code")
                    .Register(*registry_)),
      running_(gauge(*registry_, "strata_requests_running", "Requests holding a slot")),
      waiting_(gauge(*registry_, "strata_requests_waiting", "Requests queued for a slot")),
      slots_busy_(gauge(*registry_, "strata_slots_busy", "Backend slots in use")),
      slots_capacity_(gauge(*registry_, "strata_slots_capacity", "Backend slots available in all")),
      kv_usage_(gauge(*registry_, "strata_kv_cache_usage_ratio", "Fraction of KV cache positions in use")),
      prefix_queries_(counter(*registry_, "strata_prefix_cache_queries_total", "Prompt blocks looked up in the prefix cache")),
      prefix_hits_(counter(*registry_, "strata_prefix_cache_hits_total", "Prompt blocks found in the prefix cache")),
      prefix_evictions_(counter(*registry_, "strata_prefix_cache_evictions_total",
                                "Cached KV blocks evicted to make room")),
      kv_blocks_free_(gauge(*registry_, "strata_kv_blocks_free",
                            "KV blocks allocatable now (free, or cached and unreferenced); 0 when not paged")),
      kv_blocks_total_(gauge(*registry_, "strata_kv_blocks", "KV blocks in the pool; 0 when the backend is not paged")),
      preemptions_(counter(*registry_, "strata_preemptions_total",
                           "Requests preempted (slot closed, requeued, recomputed later) when KV blocks ran out")),
      prompt_tokens_(counter(*registry_, "strata_prompt_tokens_total", "Prompt tokens of admitted requests")),
      generation_tokens_(counter(*registry_, "strata_generation_tokens_total", "Tokens generated")),
      drafts_(counter(*registry_, "strata_spec_drafts_total", "Speculative drafts verified")),
      draft_tokens_(counter(*registry_, "strata_spec_draft_tokens_total", "Tokens proposed by drafters")),
      accepted_tokens_(counter(*registry_, "strata_spec_accepted_tokens_total", "Draft tokens accepted by the verifier")),
      accepted_at_(prometheus::BuildCounter()
                       .Name("strata_spec_accepted_per_position_total")
                       .Help("Draft tokens accepted, by position in the draft (0 = first)")
                       .Register(*registry_)),
      draft_seconds_(prometheus::BuildCounter()
                         .Name("strata_spec_draft_seconds_total")
                         .Help("Seconds the engine thread spent in drafters' proposals, by round: ahead (every "
                               "proposal made while the window before ran) or waiting (some drafted then)")
                         .Register(*registry_)),
      draft_seconds_ahead_(draft_seconds_.Add({{"round", "ahead"}})),
      draft_seconds_waiting_(draft_seconds_.Add({{"round", "waiting"}})),
      drafts_ahead_(counter(*registry_, "strata_spec_drafts_ahead_total",
                            "Speculative drafts verified that the draft model made ahead, while the window before ran")),
      stalls_(counter(*registry_, "strata_watchdog_stalls_total", "Backend calls the watchdog declared stalled")),
      restarts_(counter(*registry_, "strata_engine_restarts_total", "Engine rebuilds after a stall or a fault")),
      ttft_(histogram(*registry_, "strata_time_to_first_token_seconds", "Arrival to first generated token",
                      latency_buckets())),
      itl_(histogram(*registry_, "strata_inter_token_latency_seconds", "Time between consecutive tokens of a request",
                     itl_buckets())),
      e2e_(histogram(*registry_, "strata_e2e_request_latency_seconds", "Arrival to finish of a request",
                     latency_buckets())),
      queue_(histogram(*registry_, "strata_request_queue_time_seconds", "Arrival to admission into a slot",
                       latency_buckets())),
      prefill_(histogram(*registry_, "strata_request_prefill_time_seconds", "Admission to first generated token",
                         latency_buckets())),
      window_(prometheus::BuildHistogram()
                  .Name("strata_window_duration_seconds")
                  .Help("Duration of one backend window, by kind (prefill, decode, mixed)")
                  .Register(*registry_)),
      prompt_len_(histogram(*registry_, "strata_request_prompt_tokens", "Prompt length of finished requests",
                            length_buckets())),
      gen_len_(histogram(*registry_, "strata_request_generation_tokens", "Generated length of finished requests",
                         length_buckets())) {
  prometheus::BuildGauge()
      .Name("strata_build_info")
      .Help("Build and device of this process (value is always 1)")
      .Register(*registry_)
      .Add({{"version", version}, {"cuda", cuda}, {"device", device}})
      .Set(1);
  // Window kinds exist from the start so a dashboard's rate() has a series before the first window.
  for (const char* kind : {"prefill", "decode", "mixed"}) window_.Add({{"kind", kind}}, latency_buckets());
}

void Metrics::request_done(const std::string& endpoint, int http_status) {
  requests_.Add({{"endpoint", endpoint}, {"status", std::to_string(http_status)}}).Increment();
}

void Metrics::spec_draft(int drafted, int accepted) {
  drafts_.Increment();
  draft_tokens_.Increment(drafted);
  accepted_tokens_.Increment(accepted);
}

void Metrics::spec_accepted_at(int position) {
  accepted_at_.Add({{"position", std::to_string(position)}}).Increment();
}

void Metrics::window_duration(const std::string& kind, double s) {
  window_.Add({{"kind", kind}}, latency_buckets()).Observe(s);
}

}  // namespace strata
