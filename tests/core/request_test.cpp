#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

#include "engine/core/request.hpp"
#include "engine/core/waker.hpp"

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

namespace {

// Starts a reader blocked in pop with a long timeout; returns how long it waited for its event.
struct BlockedReader {
  RequestChannel& ch;
  std::chrono::steady_clock::duration waited{};
  bool got = false;
  std::atomic<bool> done{false};
  std::thread t;
  explicit BlockedReader(RequestChannel& c) : ch(c), t([this] {
    const auto t0 = std::chrono::steady_clock::now();
    got = ch.pop(std::chrono::seconds(20)).has_value();
    waited = std::chrono::steady_clock::now() - t0;
    done = true;
  }) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let it block
  }
  void join() { t.join(); }
};

Event token_event(TokenId id) {
  TokenEvent t;
  t.token = id;
  return Event{t, std::nullopt};
}

// A reader blocked on a channel whose event was pushed without waking it and posted to the waker.
struct QuietlyPosted {
  Waker waker;
  std::shared_ptr<RequestChannel> ch = std::make_shared<RequestChannel>();
  BlockedReader reader{*ch};
  explicit QuietlyPosted(TokenId id) {
    ch->push(token_event(id), false);
    waker.post(ch);
  }
};

}  // namespace

TEST_CASE("a quiet push wakes its reader only when the waker is flushed", "[request]") {
  QuietlyPosted q(5);
  auto& [waker, ch, reader] = q;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // Posted but not flushed: the reader still sleeps (its timeout is 20 s).
  CHECK_FALSE(reader.done);
  const auto before_flush = std::chrono::steady_clock::now();
  waker.flush();
  reader.join();
  CHECK(reader.got);
  CHECK(reader.waited >= std::chrono::milliseconds(300));
  CHECK(std::chrono::steady_clock::now() - before_flush < std::chrono::seconds(5));
  waker.flush();  // nothing posted: a no-op
}

TEST_CASE("wake_now wakes what is posted from the calling thread and leaves nothing for a flush", "[request]") {
  QuietlyPosted q(3);
  auto& [waker, ch, reader] = q;
  CHECK(ch->first_wake() == std::chrono::steady_clock::time_point{});
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK_FALSE(reader.done);
  const auto before = std::chrono::steady_clock::now();
  waker.wake_now();
  // Woken by this thread, before wake_now returned: the stamp says so.
  CHECK(ch->first_wake() >= before);
  CHECK(ch->first_wake() <= std::chrono::steady_clock::now());
  reader.join();
  CHECK(reader.got);
  CHECK(ch->first_pop() >= ch->first_wake());
  waker.flush();  // the posted list was taken: a no-op
}

TEST_CASE("a waker that is destroyed wakes what was posted and not yet flushed", "[request]") {
  auto ch = std::make_shared<RequestChannel>();
  BlockedReader reader(*ch);
  {
    Waker waker;
    ch->push(token_event(7), false);
    waker.post(ch);
  }
  reader.join();
  CHECK(reader.got);
  CHECK(reader.waited < std::chrono::seconds(10));
}
