#include <catch2/catch.hpp>

#include <thread>

#include "engine/core/request.hpp"

using namespace strata;

TEST_CASE("finish reasons have their OpenAI names", "[request]") {
  CHECK(std::string(finish_reason_name(FinishReason::Stop)) == "stop");
  CHECK(std::string(finish_reason_name(FinishReason::Length)) == "length");
  CHECK(std::string(finish_reason_name(FinishReason::Cancelled)) == "cancelled");
  CHECK(std::string(finish_reason_name(FinishReason::Error)) == "error");
}

TEST_CASE("a request channel delivers events in order and times out when empty", "[request]") {
  RequestChannel ch;
  CHECK_FALSE(ch.pop(std::chrono::milliseconds(1)).has_value());
  std::thread producer([&] {
    for (int i = 0; i < 100; ++i) {
      TokenEvent t;
      t.token = i;
      ch.push(Event{t, std::nullopt});
    }
    ch.push(Event{std::nullopt, FinishEvent{}});
  });
  for (int i = 0; i < 100; ++i) {
    auto e = ch.pop(std::chrono::seconds(5));
    REQUIRE(e);
    REQUIRE(e->token);
    CHECK(e->token->token == i);
  }
  auto last = ch.pop(std::chrono::seconds(5));
  REQUIRE(last);
  CHECK(last->finish.has_value());
  producer.join();
  CHECK_FALSE(ch.cancelled());
  ch.cancel();
  CHECK(ch.cancelled());
}
