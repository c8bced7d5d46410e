// The metrics a scrape shows: names, HELP, values that follow the engine's work, and promtool's lint.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>

#include <prometheus/text_serializer.h>

#include "engine/core/engine.hpp"
#include "engine/core/metrics.hpp"
#include "tests/core/fake_backend.hpp"
#include "tests/core/harness.hpp"

using namespace strata;
using namespace strata::test;

namespace {

std::map<std::string, const prometheus::MetricFamily*> by_name(const std::vector<prometheus::MetricFamily>& fams) {
  std::map<std::string, const prometheus::MetricFamily*> m;
  for (const auto& f : fams) m[f.name] = &f;
  return m;
}

double value(const std::vector<prometheus::MetricFamily>& fams, const std::string& name) {
  for (const auto& f : fams) {
    if (f.name != name || f.metric.empty()) continue;
    const auto& m = f.metric[0];
    switch (f.type) {
      case prometheus::MetricType::Counter: return m.counter.value;
      case prometheus::MetricType::Gauge: return m.gauge.value;
      case prometheus::MetricType::Histogram: return static_cast<double>(m.histogram.sample_count);
      default: return -1;
    }
  }
  return -1;
}

}  // namespace

TEST_CASE("every metric of the contract is registered with a HELP text", "[metrics]") {
  auto registry = std::make_shared<prometheus::Registry>();
  Metrics m(registry, "0.1.0", "none", "cpu");
  // Labelled families appear in a scrape once they have a series.
  m.spec_accepted_at(0);
  m.request_done("/v1/completions", 200);
  auto fams = registry->Collect();
  auto names = by_name(fams);
  for (const char* n :
       {"strata_requests_total", "strata_requests_running", "strata_requests_waiting", "strata_slots_busy",
        "strata_slots_capacity", "strata_kv_cache_usage_ratio", "strata_prefix_cache_queries_total",
        "strata_prefix_cache_hits_total", "strata_prompt_tokens_total", "strata_generation_tokens_total",
        "strata_spec_drafts_total", "strata_spec_draft_tokens_total", "strata_spec_accepted_tokens_total",
        "strata_spec_accepted_per_position_total", "strata_spec_draft_seconds_total", "strata_watchdog_stalls_total", "strata_engine_restarts_total",
        "strata_build_info", "strata_time_to_first_token_seconds", "strata_inter_token_latency_seconds",
        "strata_e2e_request_latency_seconds", "strata_request_queue_time_seconds",
        "strata_request_prefill_time_seconds", "strata_window_duration_seconds", "strata_request_prompt_tokens",
        "strata_request_generation_tokens"}) {
    INFO(n);
    REQUIRE(names.count(n) == 1);
    CHECK_FALSE(names[n]->help.empty());
  }
  const auto& info = names["strata_build_info"]->metric.at(0);
  std::map<std::string, std::string> labels;
  for (const auto& l : info.label) labels[l.name] = l.value;
  CHECK(labels["version"] == "0.1.0");
  CHECK(labels["device"] == "cpu");
  CHECK(info.gauge.value == 1);

  m.request_done("/v1/completions", 200);
  m.request_done("/v1/completions", 429);
  auto scraped = registry->Collect();
  auto after = by_name(scraped);
  std::map<std::string, double> per_status;
  for (const auto& metric : after["strata_requests_total"]->metric)
    for (const auto& l : metric.label)
      if (l.name == "status") per_status[l.value] = metric.counter.value;
  CHECK(per_status["200"] == 2);
  CHECK(per_status["429"] == 1);
}

TEST_CASE("engine metrics follow the requests it serves and its recoveries", "[metrics]") {
  auto registry = std::make_shared<prometheus::Registry>();
  auto metrics = std::make_shared<Metrics>(registry, "0.1.0", "none", "fake");
  auto world = std::make_shared<FakeWorld>();
  EngineOptions o;
  o.metrics = metrics;
  o.faults = parse_fault_spec("backend_error@window=30");
  Engine e(fake_factory(world), fixture_tokenizer(), {kEos}, o);
  int prompt_total = 0, completion_total = 0, with_tokens = 0;
  for (int i = 0; i < 8; ++i) {
    std::vector<TokenId> prompt(static_cast<size_t>(1 + i), 10);
    Outcome out = run_one(e, make_request("m" + std::to_string(i), prompt, 3 + i));
    REQUIRE(out.finished);
    prompt_total += out.finish.prompt_tokens;
    completion_total += out.finish.completion_tokens;
    with_tokens += out.finish.completion_tokens > 0;
  }
  REQUIRE(eventually([&] { return e.idle(); }));
  auto fams = registry->Collect();
  CHECK(value(fams, "strata_prompt_tokens_total") == prompt_total);
  CHECK(value(fams, "strata_generation_tokens_total") == completion_total);
  CHECK(value(fams, "strata_time_to_first_token_seconds") == with_tokens);
  CHECK(value(fams, "strata_e2e_request_latency_seconds") == 8);
  CHECK(value(fams, "strata_engine_restarts_total") == 1);
  CHECK(value(fams, "strata_slots_capacity") == 4);
  CHECK(value(fams, "strata_slots_busy") == 0);
  CHECK(value(fams, "strata_requests_running") == 0);
}

TEST_CASE("a scrape of the metrics passes promtool check metrics", "[metrics]") {
  if (std::system("command -v promtool > /dev/null 2>&1") != 0) {
    WARN("promtool is not installed (Debian package prometheus); lint skipped");
    return;
  }
  auto registry = std::make_shared<prometheus::Registry>();
  Metrics m(registry, "0.1.0", "12.4", "NVIDIA H200");
  m.request_done("/v1/chat/completions", 200);
  m.window_duration("decode", 0.01);
  m.spec_accepted_at(0);
  std::string path = std::string(STRATA_BINARY_DIR) + "/core_metrics_scrape.txt";
  {
    std::ofstream out(path);
    out << prometheus::TextSerializer().Serialize(registry->Collect());
  }
  std::string cmd = "promtool check metrics < '" + path + "' > '" + path + ".lint' 2>&1";
  int rc = std::system(cmd.c_str());
  std::ifstream lint(path + ".lint");
  std::string report((std::istreambuf_iterator<char>(lint)), std::istreambuf_iterator<char>());
  INFO(report);
  CHECK(rc == 0);
  std::remove((path + ".lint").c_str());
  std::remove(path.c_str());
}
