// Generation semantics of the engine over the fake backend: what a client sees for each way a request ends.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "engine/core/engine.hpp"
#include "tests/core/fake_backend.hpp"
#include "tests/core/harness.hpp"

using namespace strata;
using namespace strata::test;
using namespace std::chrono_literals;

namespace {

struct Rig {
  std::shared_ptr<FakeWorld> world = std::make_shared<FakeWorld>();
  std::unique_ptr<Engine> engine;
  Engine& start(EngineOptions o = {}) {
    engine = std::make_unique<Engine>(fake_factory(world), fixture_tokenizer(), std::vector<TokenId>{kEos}, o);
    return *engine;
  }
  // What the fake picks, token by token, for `prompt` when nothing is masked.
  std::vector<TokenId> natural(std::vector<TokenId> history, int n) const {
    std::vector<TokenId> out;
    for (int i = 0; i < n; ++i) {
      TokenId t = world->natural_pick(history);
      out.push_back(t);
      history.push_back(t);
    }
    return out;
  }
};

std::vector<TokenId> encode(const std::string& s) { return fixture_tokenizer().encode(s); }

}  // namespace

TEST_CASE("a request generates max_tokens tokens and finishes with length", "[engine]") {
  Rig rig;
  Engine& e = rig.start();
  std::vector<TokenId> prompt = {10, 11, 12};
  Outcome o = run_one(e, make_request("a", prompt, 5));
  REQUIRE(o.finished);
  CHECK_FALSE(o.extra_events);
  CHECK(o.finish.reason == FinishReason::Length);
  CHECK(o.finish.http_status == 200);
  CHECK(o.ids() == rig.natural(prompt, 5));
  CHECK(o.finish.prompt_tokens == 3);
  CHECK(o.finish.completion_tokens == 5);
  CHECK(o.text() == fixture_tokenizer().decode(o.ids(), true));
  CHECK(rig.world->bad_windows == 0);
  CHECK(eventually([&] { return rig.world->open_slots == 0 && e.stats().slots_busy == 0; }));
}

TEST_CASE("EOS ends a request with stop, counts as generated and is never emitted", "[engine]") {
  Rig rig;
  std::vector<TokenId> prompt = {40, 41};
  rig.world->scripts = {{prompt, {20, 21, kEos, 22, 23, 24}}};
  Engine& e = rig.start();
  Outcome o = run_one(e, make_request("eos", prompt, 10));
  REQUIRE(o.finished);
  CHECK(o.finish.reason == FinishReason::Stop);
  CHECK(o.finish.stop_matched.empty());
  CHECK(o.ids() == std::vector<TokenId>{20, 21});
  CHECK(o.finish.completion_tokens == 3);

  auto r = make_request("ignore", prompt, 5);
  r->ignore_eos = true;
  Outcome ig = run_one(e, r);
  CHECK(ig.finish.reason == FinishReason::Length);
  CHECK(ig.ids() == std::vector<TokenId>{20, 21, kEos, 22, 23});
}

TEST_CASE("min_tokens keeps EOS masked until that many tokens exist", "[engine]") {
  Rig rig;
  std::vector<TokenId> prompt = {50};
  rig.world->scripts = {{prompt, {kEos, kEos, kEos, kEos}}};
  Engine& e = rig.start();
  auto r = make_request("min", prompt, 10);
  r->min_tokens = 2;
  Outcome o = run_one(e, r);
  REQUIRE(o.finished);
  // The fake picks the next id when its pick is masked: EOS + 1 twice, then EOS is allowed and ends it.
  CHECK(o.ids() == std::vector<TokenId>{kEos + 1, kEos + 1});
  CHECK(o.finish.reason == FinishReason::Stop);
  CHECK(o.finish.completion_tokens == 3);
  std::lock_guard<std::mutex> lock(rig.world->mu);
  REQUIRE(rig.world->sampling_log.size() == 2);
  const auto& first = rig.world->sampling_log[0].suppressed;
  CHECK(std::find(first.begin(), first.end(), kEos) != first.end());
  CHECK(rig.world->sampling_log[1].suppressed.empty());
}

TEST_CASE("stop_token_ids end a request like EOS", "[engine]") {
  Rig rig;
  std::vector<TokenId> prompt = {60, 61};
  rig.world->scripts = {{prompt, {20, 99, 21}}};
  Engine& e = rig.start();
  auto r = make_request("stopid", prompt, 10);
  r->stop_token_ids = {99};
  Outcome o = run_one(e, r);
  CHECK(o.ids() == std::vector<TokenId>{20});
  CHECK(o.finish.reason == FinishReason::Stop);
  CHECK(o.finish.completion_tokens == 2);
}

TEST_CASE("a stop string spanning several tokens ends the request and is never emitted", "[engine][stop]") {
  Rig rig;
  std::vector<TokenId> prompt = {70};
  std::vector<TokenId> script = encode("The answer is 42. STOP and then more words");
  rig.world->scripts = {{prompt, script}};
  Engine& e = rig.start();
  auto r = make_request("stop", prompt, 40);
  r->stop = {"2. STO"};
  Outcome o = run_one(e, r);
  REQUIRE(o.finished);
  CHECK(o.finish.reason == FinishReason::Stop);
  CHECK(o.finish.stop_matched == "2. STO");
  CHECK(o.text() == "The answer is 4");
  // The stop spans tokens: the request ran up to the token that completed it, and no piece of it leaked.
  std::string streamed;
  for (const auto& t : o.tokens) {
    streamed += t.text;
    CHECK(std::string("The answer is 4").compare(0, streamed.size(), streamed) == 0);
  }
  std::vector<TokenId> upto = encode("The answer is 42. STO");
  CHECK(o.finish.completion_tokens <= static_cast<int>(upto.size()) + 1);
  CHECK(o.finish.completion_tokens >= 4);
}

TEST_CASE("text held back as a possible stop prefix is released when the request ends", "[engine][stop]") {
  Rig rig;
  std::vector<TokenId> prompt = {71};
  std::vector<TokenId> script = encode("we go ST");
  rig.world->scripts = {{prompt, script}};
  Engine& e = rig.start();
  auto r = make_request("held", prompt, static_cast<int>(script.size()));
  r->stop = {"STOP"};
  Outcome o = run_one(e, r);
  REQUIRE(o.finished);
  CHECK(o.finish.reason == FinishReason::Length);
  CHECK(o.text() == "we go ST");
  CHECK(o.finish.text == "ST");  // never streamed with a token: it could have become STOP
  std::string streamed;
  for (const auto& t : o.tokens) streamed += t.text;
  CHECK(streamed == "we go ");
}

TEST_CASE("a prompt and max_tokens beyond the context are refused with 400 naming both", "[engine]") {
  Rig rig;
  rig.world->max_context = 256;
  Engine& e = rig.start();
  CHECK(e.max_context() == 256);
  std::vector<TokenId> prompt(200, 30);
  Outcome o = run_one(e, make_request("long", prompt, 100));
  REQUIRE(o.finished);
  CHECK(o.finish.reason == FinishReason::Error);
  CHECK(o.finish.http_status == 400);
  CHECK(o.finish.error_code == "context_length_exceeded");
  CHECK_THAT(o.finish.error_message, Catch::Contains("256") && Catch::Contains("200") && Catch::Contains("100"));
  CHECK(rig.world->windows == 0);

  // max_tokens < 0 asks for whatever the context leaves.
  Outcome rest = run_one(e, make_request("rest", prompt, -1));
  CHECK(rest.finish.reason == FinishReason::Length);
  CHECK(rest.finish.completion_tokens == 56);
  CHECK(rig.world->bad_windows == 0);
}

TEST_CASE("an empty prompt or an id outside the vocabulary is refused with 400", "[engine]") {
  Rig rig;
  Engine& e = rig.start();
  Outcome empty = run_one(e, make_request("empty", {}, 4));
  CHECK(empty.finish.http_status == 400);
  CHECK(empty.finish.error_code == "invalid_prompt");
  Outcome oov = run_one(e, make_request("oov", {5, 512}, 4));
  CHECK(oov.finish.http_status == 400);
  CHECK_THAT(oov.finish.error_message, Catch::Contains("token 1") && Catch::Contains("512"));
  auto r = make_request("min", {5}, 4);
  r->min_tokens = 9;
  CHECK(run_one(e, r).finish.error_code == "invalid_min_tokens");
}

TEST_CASE("a full queue answers QueueFull and every accepted request still ends", "[engine]") {
  Rig rig;
  rig.world->max_slots = 1;
  rig.world->max_context = 1 << 20;
  rig.world->window_delay_ms = 5;
  EngineOptions o;
  o.max_queued = 2;
  Engine& e = rig.start(o);
  std::vector<std::shared_ptr<RequestChannel>> chans;
  for (int i = 0; i < 3; ++i) chans.push_back(std::make_shared<RequestChannel>());
  REQUIRE(e.submit(make_request("run", {10}, 1000), chans[0]) == SubmitResult::Accepted);
  REQUIRE(eventually([&] { return e.stats().running == 1; }));
  CHECK(e.submit(make_request("q1", {11}, 3), chans[1]) == SubmitResult::Accepted);
  CHECK(e.submit(make_request("q2", {12}, 3), chans[2]) == SubmitResult::Accepted);
  CHECK(e.submit(make_request("q3", {13}, 3), std::make_shared<RequestChannel>()) == SubmitResult::QueueFull);
  CHECK(e.stats().waiting == 2);
  chans[0]->cancel();
  CHECK(collect(*chans[0]).finish.reason == FinishReason::Cancelled);
  CHECK(collect(*chans[1]).finish.reason == FinishReason::Length);
  CHECK(collect(*chans[2]).finish.reason == FinishReason::Length);
}

TEST_CASE("cancelling a request frees its slot within one window", "[engine]") {
  Rig rig;
  rig.world->max_context = 1 << 20;
  rig.world->window_delay_ms = 10;
  Engine& e = rig.start();
  auto ch = std::make_shared<RequestChannel>();
  REQUIRE(e.submit(make_request("c", {10, 11}, 10000), ch) == SubmitResult::Accepted);
  int got = 0;
  while (got < 3) {
    auto ev = ch->pop(2s);
    REQUIRE(ev);
    if (ev->token) ++got;
  }
  int windows_at_cancel = rig.world->windows;
  ch->cancel();
  Outcome o = collect(*ch, 2s);
  REQUIRE(o.finished);
  CHECK(o.finish.reason == FinishReason::Cancelled);
  CHECK(o.finish.completion_tokens >= 3);
  // The window in flight when cancel() ran may finish; no further window may include the request.
  CHECK(rig.world->windows - windows_at_cancel <= 1);
  CHECK(e.stats().slots_busy == 0);
  CHECK(rig.world->open_slots == 0);

  // A request cancelled while queued ends without ever reaching the backend.
  auto busy = std::make_shared<RequestChannel>();
  auto queued = std::make_shared<RequestChannel>();
  for (int i = 0; i < 4; ++i) e.submit(make_request("busy" + std::to_string(i), {12}, 10000), busy);
  REQUIRE(eventually([&] { return e.stats().running == 4; }));
  REQUIRE(e.submit(make_request("queued", {13}, 5), queued) == SubmitResult::Accepted);
  queued->cancel();
  Outcome q = collect(*queued, 2s);
  CHECK(q.finish.reason == FinishReason::Cancelled);
  CHECK(q.finish.completion_tokens == 0);
  busy->cancel();
  int finishes = 0;
  while (finishes < 4) {
    auto ev = busy->pop(2s);
    REQUIRE(ev);
    if (ev->finish) ++finishes;
  }
  CHECK(eventually([&] { return e.idle() && rig.world->open_slots == 0; }));
}

TEST_CASE("windows mix every running slot's decode row with prompt chunks under the budgets", "[engine]") {
  Rig rig;
  rig.world->window_delay_ms = 1;
  EngineOptions o;
  o.max_window_tokens = 24;
  o.prefill_chunk = 16;
  Engine& e = rig.start(o);
  std::vector<std::vector<TokenId>> prompts = {{10, 11}, {12}, {13, 14, 15}};
  std::vector<TokenId> long_prompt;
  for (int i = 0; i < 100; ++i) long_prompt.push_back(20 + i % 50);
  std::vector<std::shared_ptr<RequestChannel>> chans;
  for (size_t i = 0; i < prompts.size(); ++i) {
    chans.push_back(std::make_shared<RequestChannel>());
    e.submit(make_request("d" + std::to_string(i), prompts[i], 30), chans.back());
  }
  REQUIRE(eventually([&] { return e.stats().running == 3 && rig.world->windows >= 3; }));
  auto long_ch = std::make_shared<RequestChannel>();
  e.submit(make_request("long", long_prompt, 5), long_ch);
  std::vector<Outcome> outs;
  for (auto& c : chans) outs.push_back(collect(*c));
  Outcome lo = collect(*long_ch);
  CHECK(lo.ids() == rig.natural(long_prompt, 5));
  for (size_t i = 0; i < prompts.size(); ++i) CHECK(outs[i].ids() == rig.natural(prompts[i], 30));

  // The fake hands out the lowest free slot: the three short requests hold 0..2, the long one 3.
  bool saw_mixed = false;
  for (const auto& w : rig.world->windows_seen()) {
    CHECK(w.rows.size() <= 24);
    std::set<SlotId> slots;
    int long_rows = 0;
    for (const Row& r : w.rows) {
      slots.insert(r.slot);
      long_rows += r.slot == 3;
    }
    CHECK(long_rows <= 16);
    if (slots.size() == 4 && long_rows > 1) saw_mixed = true;  // three decode rows and a prompt chunk
  }
  CHECK(saw_mixed);
  CHECK(rig.world->bad_windows == 0);
}

TEST_CASE("the window trace has one line per window with its rows by kind", "[engine]") {
  const std::string path = "engine_test_window_trace.jsonl";
  std::remove(path.c_str());
  Rig rig;
  EngineOptions o;
  o.max_window_tokens = 8;
  o.prefill_chunk = 4;
  o.window_trace = path;
  Engine& e = rig.start(o);
  std::vector<std::vector<TokenId>> prompts = {{10, 11, 12, 13, 14, 15}, {16, 17, 18}};
  std::vector<std::shared_ptr<RequestChannel>> chans;
  for (size_t i = 0; i < prompts.size(); ++i) {
    chans.push_back(std::make_shared<RequestChannel>());
    e.submit(make_request("t" + std::to_string(i), prompts[i], 7), chans.back());
  }
  for (auto& c : chans) REQUIRE(collect(*c).finish.completion_tokens == 7);
  rig.engine.reset();  // closes the file
  const std::vector<WindowRecord> seen = rig.world->windows_seen();
  std::ifstream in(path);
  std::string line;
  int prefill = 0, decode = 0;
  size_t n = 0;
  double last_t = -1;
  while (std::getline(in, line)) {
    INFO(line);
    const nlohmann::json j = nlohmann::json::parse(line);
    REQUIRE(n < seen.size());
    CHECK(j.at("rows").get<size_t>() == seen[n].rows.size());
    CHECK(j.at("rows").get<int>() == j.at("decode").get<int>() + j.at("prefill").get<int>());
    const std::string kind = j.at("kind");
    CHECK(kind == (j.at("prefill") == 0 ? "decode" : j.at("decode") == 0 ? "prefill" : "mixed"));
    CHECK(j.at("us").get<double>() >= 0);
    CHECK(j.at("t").get<double>() >= last_t);
    CHECK((n == 0 ? j.at("gap_us") == -1.0 : j.at("gap_us").get<double>() >= 0));
    last_t = j.at("t");
    prefill += j.at("prefill").get<int>();
    decode += j.at("decode").get<int>();
    ++n;
  }
  CHECK(n == seen.size());
  CHECK(prefill == 9);     // every prompt row once
  CHECK(decode == 2 * 6);  // the first token of each comes from its prompt's last row
  std::remove(path.c_str());

  EngineOptions bad;
  bad.window_trace = "no-such-directory/trace.jsonl";
  CHECK_THROWS_WITH(Engine(fake_factory(rig.world), fixture_tokenizer(), {kEos}, bad),
                    Catch::Contains("no-such-directory/trace.jsonl"));
}

TEST_CASE("a window's text goes out while the next window runs (a first token's before it), and a stop string drops the row in flight",
          "[engine]") {
  Rig rig;
  const std::vector<TokenId> prompt = {10, 11, 12};
  auto ch = std::make_shared<RequestChannel>();
  std::vector<int> seen_at_start;  // token events out when window n (1-based) started
  std::vector<Event> events;
  std::mutex mu;  // the engine thread (on_start) and this one both pop; each pop and its append go together
  auto pop = [&](std::chrono::milliseconds wait) {
    std::lock_guard<std::mutex> lock(mu);
    auto ev = ch->pop(wait);
    if (ev) events.push_back(std::move(*ev));
    return ev.has_value();
  };
  rig.world->on_start = [&](int) {
    while (pop(std::chrono::milliseconds(0))) {
    }
    std::lock_guard<std::mutex> lock(mu);
    seen_at_start.push_back(static_cast<int>(events.size()));
  };
  Engine& e = rig.start();
  REQUIRE(e.submit(make_request("overlap", prompt, 5), ch) == SubmitResult::Accepted);
  for (int i = 0; i < 500; ++i) {
    pop(std::chrono::milliseconds(10));
    std::lock_guard<std::mutex> lock(mu);
    if (!events.empty() && events.back().finish) break;
  }
  REQUIRE(eventually([&] { return e.stats().running == 0; }));
  rig.world->on_start = nullptr;
  REQUIRE(!events.empty());
  REQUIRE(events.back().finish.has_value());
  // Window 1 is the prompt. Its pick, the request's first token, has its text before window 2 starts (a
  // TTFT does not wait for the next window's launch); every later window n starts before the pick of window
  // n - 1 has its text.
  REQUIRE(seen_at_start.size() == 5);
  CHECK(seen_at_start[0] == 0);
  CHECK(seen_at_start[1] == 1);
  for (size_t n = 2; n < seen_at_start.size(); ++n) CHECK(seen_at_start[n] == static_cast<int>(n) - 1);
  std::vector<TokenId> ids;
  for (const Event& ev : events)
    if (ev.token) ids.push_back(ev.token->token);
  CHECK(ids == rig.natural(prompt, 5));
  CHECK(events.back().finish->reason == FinishReason::Length);
  CHECK(events.back().finish->completion_tokens == 5);

  // A stop string in the text of pick k is found while the window with the request's next row runs: that
  // row's pick is dropped, the count stops at k, and the slot is freed. In the text of the first pick it is
  // found before the next window is planned.
  const std::vector<TokenId> want = rig.natural(prompt, 5);
  for (size_t at : {size_t(2), size_t(0)}) {
    auto r = make_request("stop" + std::to_string(at), prompt, 10);
    const std::string stop = fixture_tokenizer().decode({want[at]}, true);
    REQUIRE_FALSE(stop.empty());
    r->stop = {stop};
    int k = 1;  // the pick whose text completes the stop string first
    while (fixture_tokenizer().decode(std::vector<TokenId>(want.begin(), want.begin() + k), true).find(stop) ==
           std::string::npos)
      ++k;
    Outcome o = run_one(e, r);
    REQUIRE(o.finished);
    CHECK(o.finish.reason == FinishReason::Stop);
    CHECK(o.finish.completion_tokens == k);
    CHECK(o.ids() == std::vector<TokenId>(want.begin(), want.begin() + k));
    CHECK(o.text().find(stop) == std::string::npos);
    CHECK(rig.world->bad_windows == 0);
    CHECK(eventually([&] { return rig.world->open_slots == 0 && e.stats().slots_busy == 0; }));
  }
}

TEST_CASE("logprobs of each pick and its top alternatives are passed through", "[engine]") {
  Rig rig;
  Engine& e = rig.start();
  auto r = make_request("lp", {10, 11}, 4);
  r->logprobs = 2;
  Outcome o = run_one(e, r);
  REQUIRE(o.tokens.size() == 4);
  float expected = std::log(3.0f / 514.0f);
  for (const auto& t : o.tokens) {
    CHECK(t.logprob == Approx(expected));
    REQUIRE(t.top.size() == 2);
    CHECK(t.top[0].token == t.token);
  }
  Outcome none = run_one(e, make_request("nolp", {10, 11}, 2));
  for (const auto& t : none.tokens) CHECK(t.top.empty());
}

TEST_CASE("prompt logprobs score every prompt token after the first", "[engine]") {
  Rig rig;
  Engine& e = rig.start();
  std::vector<TokenId> prompt = {10, 11, 12, 13, 14, 15, 16};
  // Make the fake's pick after {10, 11} equal to the next prompt token (12), so it scores higher.
  rig.world->scripts = {{{10, 11}, {12}}};
  auto r = make_request("plp", prompt, 0);
  r->prompt_logprobs = true;
  r->logprobs = 1;
  Outcome o = run_one(e, r);
  REQUIRE(o.finished);
  CHECK(o.finish.reason == FinishReason::Length);
  CHECK(o.finish.completion_tokens == 0);
  REQUIRE(o.finish.prompt_logprobs.size() == prompt.size());
  CHECK(o.finish.prompt_logprobs[0].token == 10);
  for (size_t i = 1; i < prompt.size(); ++i) {
    const TokenEvent& t = o.finish.prompt_logprobs[i];
    CHECK(t.token == prompt[i]);
    float want = i == 2 ? std::log(3.0f / 514.0f) : std::log(1.0f / 514.0f);
    CHECK(t.logprob == Approx(want).epsilon(1e-4));
    REQUIRE(t.top.size() == 1);
    CHECK(t.top[0].logprob == Approx(std::log(3.0f / 514.0f)).epsilon(1e-4));
  }
}

TEST_CASE("usage and timings describe the request", "[engine]") {
  Rig rig;
  rig.world->window_delay_ms = 2;
  Engine& e = rig.start();
  Outcome o = run_one(e, make_request("t", {10, 11, 12, 13}, 6));
  CHECK(o.finish.prompt_tokens == 4);
  CHECK(o.finish.completion_tokens == 6);
  CHECK(o.finish.ttft_seconds > 0);
  CHECK(o.finish.queue_seconds <= o.finish.ttft_seconds);
  CHECK(o.finish.ttft_seconds <= o.finish.total_seconds);
  // The first token's text goes to the channel once the window after it has started.
  CHECK(o.finish.first_event_seconds >= o.finish.ttft_seconds);
  CHECK(o.finish.first_event_seconds <= o.finish.total_seconds);
  CHECK(o.finish.total_seconds >= 0.002 * 6);
}

TEST_CASE("draining refuses new requests and lets running ones finish", "[engine]") {
  Rig rig;
  rig.world->window_delay_ms = 2;
  Engine& e = rig.start();
  CHECK(e.ready());
  auto ch = std::make_shared<RequestChannel>();
  REQUIRE(e.submit(make_request("run", {10}, 20), ch) == SubmitResult::Accepted);
  e.start_draining();
  CHECK_FALSE(e.ready());
  CHECK(e.healthy());
  CHECK(e.submit(make_request("late", {10}, 2), std::make_shared<RequestChannel>()) == SubmitResult::Draining);
  Outcome o = collect(*ch);
  CHECK(o.finish.reason == FinishReason::Length);
  CHECK(o.finish.completion_tokens == 20);
  CHECK(eventually([&] { return e.idle(); }));
}

TEST_CASE("destroying the engine ends unfinished requests with an error", "[engine]") {
  Rig rig;
  rig.world->max_slots = 1;
  rig.world->max_context = 1 << 20;
  rig.world->window_delay_ms = 2;
  Engine& e = rig.start();
  auto running = std::make_shared<RequestChannel>();
  auto queued = std::make_shared<RequestChannel>();
  e.submit(make_request("run", {10}, 100000), running);
  e.submit(make_request("queued", {10}, 5), queued);
  REQUIRE(eventually([&] { return e.stats().running == 1; }));
  rig.engine.reset();
  Outcome a = collect(*running, 1s), b = collect(*queued, 1s);
  REQUIRE(a.finished);
  REQUIRE(b.finished);
  CHECK(a.finish.http_status == 503);
  CHECK(a.finish.error_code == "engine_shutdown");
  CHECK(b.finish.error_code == "engine_shutdown");
  CHECK(rig.world->open_slots == 0);
}

TEST_CASE("a backend that cannot be built, or bad options, make the constructor throw a named error", "[engine]") {
  auto broken = []() -> std::unique_ptr<Backend> { throw Error("model.safetensors: truncated header"); };
  CHECK_THROWS_WITH(Engine(broken, fixture_tokenizer(), {kEos}, EngineOptions{}),
                    Catch::Contains("truncated header"));
  auto world = std::make_shared<FakeWorld>();
  world->max_slots = 0;
  CHECK_THROWS_WITH(Engine(fake_factory(world), fixture_tokenizer(), {kEos}, EngineOptions{}),
                    Catch::Contains("max_slots"));
  auto ok = std::make_shared<FakeWorld>();
  EngineOptions bad;
  bad.max_window_tokens = 0;
  CHECK_THROWS_WITH(Engine(fake_factory(ok), fixture_tokenizer(), {kEos}, bad), Catch::Contains("max_window_tokens"));
  bad = EngineOptions{};
  bad.watchdog_timeout_s = 0;
  CHECK_THROWS_WITH(Engine(fake_factory(ok), fixture_tokenizer(), {kEos}, bad), Catch::Contains("watchdog_timeout_s"));
}
