// Log lines: valid JSON with ts, level, msg, request_id; text lines tagged with the request id.
#include <catch2/catch.hpp>

#include <sstream>

#include <nlohmann/json.hpp>
#include <spdlog/sinks/ostream_sink.h>

#include "engine/logging/logging.hpp"

using namespace strata;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

// Routes the default logger into a string for the duration of a test.
struct CapturedLog {
  std::ostringstream out;
  explicit CapturedLog(LogFormat format) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
    auto logger = std::make_shared<spdlog::logger>("test", sink);
    logger->set_formatter(make_log_formatter(format));
    logger->set_level(spdlog::level::trace);
    spdlog::set_default_logger(logger);
  }
  std::vector<std::string> lines() const {
    std::vector<std::string> v;
    std::istringstream in(out.str());
    for (std::string l; std::getline(in, l);) v.push_back(l);
    return v;
  }
};

}  // namespace

TEST_CASE("a JSON line is one object with ts, level, msg and request_id") {
  CapturedLog log(LogFormat::Json);
  log_request(spdlog::level::warn, "req-7", "prompt has {} tokens", 12);
  spdlog::info("listening on http://127.0.0.1:{}", 8080);
  const auto lines = log.lines();
  REQUIRE(lines.size() == 2);
  const auto a = nlohmann::json::parse(lines[0]);
  CHECK(a.at("level") == "warning");
  CHECK(a.at("msg") == "prompt has 12 tokens");
  CHECK(a.at("request_id") == "req-7");
  CHECK_THAT(a.at("ts").get<std::string>(), StartsWith("20") && Contains("T") && Contains("Z"));
  const auto b = nlohmann::json::parse(lines[1]);
  CHECK(b.at("request_id").is_null());
  CHECK(b.at("msg") == "listening on http://127.0.0.1:8080");
}

TEST_CASE("JSON lines stay valid for quotes, newlines, control bytes and invalid UTF-8 in the message") {
  CapturedLog log(LogFormat::Json);
  const std::string nasty = std::string("say \"hi\"\n\tback\\slash \x01 bad:\xff\xfe end");
  log_request(spdlog::level::info, "id\"with\"quotes", "{}", nasty);
  const auto lines = log.lines();
  REQUIRE(lines.size() == 1);  // the newline in the message is escaped, not a second line
  const auto j = nlohmann::json::parse(lines[0]);
  CHECK_THAT(j.at("msg").get<std::string>(), Contains("say \"hi\"\n\tback\\slash") && Contains(" end"));
  CHECK(j.at("request_id") == "id\"with\"quotes");
}

TEST_CASE("a RequestLogScope tags plain spdlog calls on its thread and restores the outer id") {
  CapturedLog log(LogFormat::Json);
  {
    RequestLogScope outer("outer");
    spdlog::info("a");
    {
      RequestLogScope inner("inner");
      spdlog::info("b");
      CHECK(current_request_id() == "inner");
    }
    spdlog::info("c");
  }
  spdlog::info("d");
  const auto lines = log.lines();
  REQUIRE(lines.size() == 4);
  CHECK(nlohmann::json::parse(lines[0]).at("request_id") == "outer");
  CHECK(nlohmann::json::parse(lines[1]).at("request_id") == "inner");
  CHECK(nlohmann::json::parse(lines[2]).at("request_id") == "outer");
  CHECK(nlohmann::json::parse(lines[3]).at("request_id").is_null());
  CHECK(current_request_id().empty());
}

TEST_CASE("log_event adds fields to a JSON line but cannot overwrite the fixed ones") {
  CapturedLog log(LogFormat::Json);
  log_event(spdlog::level::info, "req-9", "request finished",
            {{"prompt_tokens", 5}, {"finish_reason", "stop"}, {"msg", "spoofed"}, {"request_id", "x"}});
  const auto j = nlohmann::json::parse(log.lines().at(0));
  CHECK(j.at("prompt_tokens") == 5);
  CHECK(j.at("finish_reason") == "stop");
  CHECK(j.at("msg") == "request finished");
  CHECK(j.at("request_id") == "req-9");
}

TEST_CASE("text lines carry the level, the request id in brackets and event fields as key=value") {
  CapturedLog log(LogFormat::Text);
  log_request(spdlog::level::info, "req-1", "admitted to slot {}", 3);
  log_event(spdlog::level::info, "req-1", "request finished", {{"completion_tokens", 16}, {"status", "ok"}});
  spdlog::error("engine restarted");
  const auto lines = log.lines();
  REQUIRE(lines.size() == 3);
  CHECK_THAT(lines[0], Contains(" info [req-1] admitted to slot 3"));
  CHECK_THAT(lines[1], Contains("[req-1] request finished") && Contains("completion_tokens=16") &&
                           Contains("status=ok"));
  CHECK_THAT(lines[2], Contains(" error engine restarted"));
  CHECK_THAT(lines[2], !Contains("["));
}
