// Speculative decoding in the engine over the fake backend: verify windows carry [last, d1..dk], output is
// plain decoding's token for token (stops, max_tokens and min_tokens included), and a drafter that proposes
// garbage or throws only costs speed.
#include <catch2/catch.hpp>

#include <map>

#include <prometheus/registry.h>

#include "engine/core/engine.hpp"
#include "engine/core/metrics.hpp"
#include "tests/core/fake_backend.hpp"
#include "tests/core/harness.hpp"
#include "tests/core/spec_drafters.hpp"

using namespace strata;
using namespace strata::test;
using namespace std::chrono_literals;

namespace {

// A prompt that states a span twice; the scripted model goes on repeating it, so prompt lookup drafts right.
const std::vector<TokenId> kSpan = {40, 41, 42, 43, 44, 45, 46, 47};

std::vector<TokenId> repeat(const std::vector<TokenId>& v, int times) {
  std::vector<TokenId> out;
  for (int i = 0; i < times; ++i) out.insert(out.end(), v.begin(), v.end());
  return out;
}

std::shared_ptr<FakeWorld> repeating_world() {
  auto w = std::make_shared<FakeWorld>();
  w->scripts.push_back({repeat(kSpan, 2), repeat(kSpan, 6)});
  return w;
}

EngineOptions spec_opts(SpeculationMode mode, int k = 4) {
  EngineOptions o;
  o.speculation.mode = mode;
  o.speculation.max_k = k;
  return o;
}

struct Run {
  Outcome outcome;
  std::vector<WindowRecord> windows;
  std::vector<prometheus::MetricFamily> metrics;
};

Run run_with(std::shared_ptr<FakeWorld> world, EngineOptions opts, std::shared_ptr<GenerationRequest> req) {
  auto registry = std::make_shared<prometheus::Registry>();
  opts.metrics = std::make_shared<Metrics>(registry, "0", "none", "fake");
  Run r;
  {
    Engine e(fake_factory(world), fixture_tokenizer(), {kEos}, opts);
    r.outcome = run_one(e, req);
  }
  r.windows = world->windows_seen();
  r.metrics = registry->Collect();
  return r;
}

double counter(const std::vector<prometheus::MetricFamily>& fams, const std::string& name) {
  double sum = 0;
  for (const auto& f : fams)
    if (f.name == name)
      for (const auto& m : f.metric) sum += m.counter.value;
  return sum;
}

// kSpan shifted by 10 * i: request i's own repeated span.
std::vector<TokenId> span_of(int i) {
  std::vector<TokenId> span = kSpan;
  for (TokenId& t : span) t += 10 * i;
  return span;
}

// A world whose model, after span i stated twice, repeats it on (i < n).
std::shared_ptr<FakeWorld> spans_world(int n) {
  auto w = std::make_shared<FakeWorld>();
  w->max_slots = n;
  for (int i = 0; i < n; ++i) w->scripts.push_back({repeat(span_of(i), 2), repeat(span_of(i), 5)});
  return w;
}

// Submits every prompt at once and collects each request's outcome.
std::vector<Outcome> run_together(Engine& e, const std::vector<std::vector<TokenId>>& prompts, int max_tokens) {
  std::vector<std::shared_ptr<RequestChannel>> chans;
  for (size_t i = 0; i < prompts.size(); ++i) {
    chans.push_back(std::make_shared<RequestChannel>());
    REQUIRE(e.submit(make_request("b" + std::to_string(i), prompts[i], max_tokens), chans.back()) ==
            SubmitResult::Accepted);
  }
  std::vector<Outcome> out;
  for (auto& ch : chans) out.push_back(collect(*ch));
  return out;
}

// How many slots a window verifies drafts for (more than one pick).
int slots_with_drafts(const WindowRecord& rec) {
  std::map<SlotId, int> picks;
  for (const Row& r : rec.rows)
    if (r.want_pick) ++picks[r.slot];
  int n = 0;
  for (auto& [slot, k] : picks) n += k > 1 ? 1 : 0;
  return n;
}

// Rows of the largest window that asks for more than one pick for one slot.
size_t widest_verify(const std::vector<WindowRecord>& windows) {
  size_t best = 0;
  for (const auto& w : windows) {
    size_t picks = 0;
    for (const Row& r : w.rows) picks += r.want_pick ? 1 : 0;
    best = std::max(best, picks);
  }
  return best;
}

// Picks of each window that asks for more than one for a slot, in order.
std::vector<size_t> verify_widths(const std::vector<WindowRecord>& windows) {
  std::vector<size_t> out;
  for (const auto& w : windows) {
    size_t picks = 0;
    for (const Row& r : w.rows) picks += r.want_pick ? 1 : 0;
    if (picks > 1) out.push_back(picks);
  }
  return out;
}

}  // namespace

TEST_CASE("n-gram drafts of a repeated span are accepted and the output is plain decoding's", "[engine][spec]") {
  auto req = [] { return make_request("r", repeat(kSpan, 2), 30); };
  Run plain = run_with(repeating_world(), EngineOptions{}, req());
  auto world = repeating_world();
  Run spec = run_with(world, spec_opts(SpeculationMode::Ngram), req());
  REQUIRE(plain.outcome.finished);
  REQUIRE(spec.outcome.finished);
  const std::vector<TokenId> script = repeat(kSpan, 6);
  CHECK(plain.outcome.ids() == std::vector<TokenId>(script.begin(), script.begin() + 30));
  CHECK(spec.outcome.ids() == plain.outcome.ids());
  CHECK(spec.outcome.text() == plain.outcome.text());
  CHECK(spec.outcome.finish.reason == FinishReason::Length);
  CHECK(world->bad_windows.load() == 0);
  // Every draft is right here: 30 tokens need far fewer windows than 30.
  CHECK(spec.windows.size() < plain.windows.size() / 2);
  // Copies kept whole double the next one's length (lookup's reach), from k = 4 up to --spec-lookup-k (15): a
  // window verifies the last token and 4, then 8 drafts, then the 14 that max_tokens leaves (1 + 5 + 9 + 15).
  CHECK(verify_widths(spec.windows) == std::vector<size_t>{5, 9, 15});
  // With no reach past k, every verify window holds k drafts at most.
  EngineOptions at_k = spec_opts(SpeculationMode::Ngram);
  at_k.speculation.lookup_k = 4;
  Run short_copies = run_with(repeating_world(), at_k, req());
  CHECK(short_copies.outcome.ids() == plain.outcome.ids());
  CHECK(widest_verify(short_copies.windows) == 5);
  CHECK(short_copies.windows.size() > spec.windows.size());
  double drafted = counter(spec.metrics, "strata_spec_draft_tokens_total");
  double accepted = counter(spec.metrics, "strata_spec_accepted_tokens_total");
  CHECK(accepted > 0);
  CHECK(accepted == drafted);
  CHECK(counter(spec.metrics, "strata_spec_drafts_total") > 0);
  CHECK(counter(spec.metrics, "strata_spec_accepted_per_position_total") == accepted);
  CHECK(counter(plain.metrics, "strata_spec_drafts_total") == 0);
}

TEST_CASE("n-gram drafts fill the rows a window holds at no cost, then reach on while copies are kept whole",
          "[engine][spec]") {
  auto req = [] { return make_request("r", repeat(kSpan, 2), 40); };
  Run plain = run_with(repeating_world(), EngineOptions{}, req());
  // A backend whose windows of up to 8 rows cost about one row's (CUDA's skinny kernel): with k = 2 the
  // first copy fills the 7 draft rows, then each copy kept whole doubles, up to --spec-lookup-k (12).
  auto world = repeating_world();
  world->cheap_rows = 8;
  EngineOptions o = spec_opts(SpeculationMode::Ngram, 2);
  o.speculation.lookup_k = 12;
  Run spec = run_with(world, o, req());
  REQUIRE(spec.outcome.finished);
  CHECK(spec.outcome.ids() == plain.outcome.ids());
  CHECK(world->bad_windows.load() == 0);
  // 1 + 8 + 13 + 13 = 35 tokens; the last window verifies the 4 that max_tokens leaves.
  CHECK(verify_widths(spec.windows) == std::vector<size_t>{8, 13, 13, 5});
  // Two requests in one window share the cheap rows: 2 decode rows and 2 x k leave 2, for the first.
  auto two = repeating_world();
  two->cheap_rows = 8;
  two->scripts.push_back({repeat(kSpan, 2), repeat(kSpan, 6)});
  Engine e(fake_factory(two), fixture_tokenizer(), {kEos}, o);
  const std::vector<Outcome> got = run_together(e, {repeat(kSpan, 2), repeat(kSpan, 2)}, 40);
  for (const Outcome& g : got) CHECK(g.ids() == plain.outcome.ids());
  const std::vector<WindowRecord> seen = two->windows_seen();
  const auto first = std::find_if(seen.begin(), seen.end(), [](const WindowRecord& r) { return slots_with_drafts(r) == 2; });
  REQUIRE(first != seen.end());
  CHECK(first->rows.size() == 2u + 4u + 2u);
}

TEST_CASE("a verify window carries the last token then the drafts at consecutive positions, each asking a pick",
          "[engine][spec]") {
  auto world = repeating_world();
  EngineOptions o = spec_opts(SpeculationMode::Ngram, 3);
  o.speculation.lookup_k = 0;  // below k: k
  Run spec = run_with(world, o, make_request("r", repeat(kSpan, 2), 12));
  REQUIRE(spec.outcome.finished);
  bool saw = false;
  for (const auto& w : spec.windows) {
    if (w.rows.size() < 2 || !w.rows[0].want_pick) continue;
    saw = true;
    for (size_t i = 1; i < w.rows.size(); ++i) {
      CHECK(w.rows[i].slot == w.rows[0].slot);
      CHECK(w.rows[i].pos == w.rows[0].pos + static_cast<int32_t>(i));
      CHECK(w.rows[i].want_pick);
    }
    CHECK(w.rows.size() <= 4);
  }
  CHECK(saw);
}

TEST_CASE("a stop token inside accepted drafts ends the request at that token", "[engine][spec]") {
  std::vector<TokenId> span = kSpan;
  span[5] = kEos;  // the repeated span holds EOS: the first repeat after the prompt ends there
  auto world_with = [&] {
    auto w = std::make_shared<FakeWorld>();
    w->scripts.push_back({repeat(span, 2), repeat(span, 4)});
    return w;
  };
  for (int min_tokens : {0, 3, 6, 7, 9}) {
    DYNAMIC_SECTION("min_tokens " << min_tokens) {
      auto req = [&] {
        auto r = make_request("r", repeat(span, 2), 20);
        r->min_tokens = min_tokens;
        return r;
      };
      Run plain = run_with(world_with(), EngineOptions{}, req());
      auto world = world_with();
      // k 6: the first verify window drafts 41 42 43 44 EOS 46, so EOS is an accepted draft, not the bonus.
      Run spec = run_with(world, spec_opts(SpeculationMode::Ngram, 6), req());
      REQUIRE(plain.outcome.finished);
      REQUIRE(spec.outcome.finished);
      CHECK(spec.outcome.ids() == plain.outcome.ids());
      CHECK(spec.outcome.finish.reason == plain.outcome.finish.reason);
      CHECK(spec.outcome.finish.completion_tokens == plain.outcome.finish.completion_tokens);
      CHECK(world->bad_windows.load() == 0);
      if (min_tokens == 0) {
        CHECK(plain.outcome.finish.reason == FinishReason::Stop);
        CHECK(plain.outcome.finish.completion_tokens == 6);
      }
    }
  }
}

TEST_CASE("a stop string inside accepted drafts ends the request there and is not emitted", "[engine][spec]") {
  auto req = [] {
    auto r = make_request("r", repeat(kSpan, 2), 30);
    // Byte tokens: ids 40.. decode to text; stop on the text of the 3rd and 4th span tokens.
    r->stop = {fixture_tokenizer().decode({42, 43}, false)};
    return r;
  };
  Run plain = run_with(repeating_world(), EngineOptions{}, req());
  Run spec = run_with(repeating_world(), spec_opts(SpeculationMode::Ngram), req());
  REQUIRE(plain.outcome.finished);
  REQUIRE(spec.outcome.finished);
  CHECK(plain.outcome.finish.reason == FinishReason::Stop);
  CHECK(spec.outcome.ids() == plain.outcome.ids());
  CHECK(spec.outcome.text() == plain.outcome.text());
  CHECK(spec.outcome.finish.stop_matched == plain.outcome.finish.stop_matched);
}

TEST_CASE("max_tokens is met exactly: drafts are capped to the tokens still to generate", "[engine][spec]") {
  for (int max_tokens : {1, 2, 3, 5, 7}) {
    DYNAMIC_SECTION("max_tokens " << max_tokens) {
      auto world = repeating_world();
      Run spec = run_with(world, spec_opts(SpeculationMode::Ngram, 4), make_request("r", repeat(kSpan, 2), max_tokens));
      REQUIRE(spec.outcome.finished);
      CHECK(spec.outcome.finish.completion_tokens == max_tokens);
      CHECK(spec.outcome.ids() == std::vector<TokenId>(kSpan.begin(), kSpan.begin() + max_tokens));
      CHECK(world->bad_windows.load() == 0);
    }
  }
}

TEST_CASE("garbage drafts (random ids, some outside the vocabulary) leave the output unchanged", "[engine][spec]") {
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    DYNAMIC_SECTION("seed " << seed) {
      std::vector<TokenId> prompt = {5, static_cast<TokenId>(10 + seed), 7, 9, static_cast<TokenId>(100 + seed)};
      EngineOptions o = spec_opts(SpeculationMode::Draft, 1 + static_cast<int>(seed % 5));
      o.speculation.drafter_factory = [seed] { return std::make_unique<RandomDrafter>(seed, 600); };
      Run plain = run_with(std::make_shared<FakeWorld>(), EngineOptions{}, make_request("r", prompt, 25));
      auto world = std::make_shared<FakeWorld>();
      Run spec = run_with(world, o, make_request("r", prompt, 25));
      REQUIRE(spec.outcome.finished);
      CHECK(spec.outcome.ids() == plain.outcome.ids());
      CHECK(spec.outcome.finish.reason == plain.outcome.finish.reason);
      CHECK(world->bad_windows.load() == 0);
      CHECK(counter(spec.metrics, "strata_spec_drafts_total") > 0);
    }
  }
}

TEST_CASE("a drafter that throws, proposing or while its drafts are verified, is dropped for its request and "
          "generation goes on unchanged",
          "[engine][spec]") {
  for (bool verifying : {false, true}) {
    DYNAMIC_SECTION((verifying ? "while verifying" : "proposing")) {
      auto calls = std::make_shared<std::atomic<int>>(0);
      EngineOptions o = spec_opts(SpeculationMode::Draft);
      o.speculation.drafter_factory = [calls, verifying]() -> std::unique_ptr<Drafter> {
        if (verifying) return std::make_unique<VerifyThrowingDrafter>(3, calls);
        return std::make_unique<ThrowingDrafter>(3, calls);
      };
      Run plain = run_with(repeating_world(), EngineOptions{}, make_request("r", repeat(kSpan, 2), 30));
      auto world = repeating_world();
      Run spec = run_with(world, o, make_request("r", repeat(kSpan, 2), 30));
      REQUIRE(spec.outcome.finished);
      CHECK(spec.outcome.finish.reason == FinishReason::Length);
      CHECK(spec.outcome.ids() == plain.outcome.ids());
      // Proposing: two good proposals, the throw, then never asked again. While verifying: the third
      // proposal's window still verifies its drafts, then the drafter is gone.
      CHECK(calls->load() == (verifying ? 3 : 2));
      CHECK(world->bad_windows.load() == 0);
    }
  }
}

TEST_CASE("a drafter factory that throws means no speculation for that request, not an error", "[engine][spec]") {
  EngineOptions o = spec_opts(SpeculationMode::Draft);
  o.speculation.drafter_factory = []() -> std::unique_ptr<Drafter> { throw std::runtime_error("no draft model"); };
  Run plain = run_with(repeating_world(), EngineOptions{}, make_request("r", repeat(kSpan, 2), 16));
  Run spec = run_with(repeating_world(), o, make_request("r", repeat(kSpan, 2), 16));
  REQUIRE(spec.outcome.finished);
  CHECK(spec.outcome.ids() == plain.outcome.ids());
  CHECK(counter(spec.metrics, "strata_spec_drafts_total") == 0);
}

TEST_CASE("eight requests with n-gram drafts in shared windows each get their plain-decoding tokens",
          "[engine][spec]") {
  auto world_for = [] {
    auto w = spans_world(8);
    w->max_window_rows = 24;  // too few for every slot's full drafts: the budget trims them
    return w;
  };
  std::vector<std::vector<TokenId>> prompts;
  for (int i = 0; i < 8; ++i)  // every third unscripted: hashed picks
    prompts.push_back(i % 3 == 2 ? std::vector<TokenId>{7, static_cast<TokenId>(200 + i), 9} : repeat(span_of(i), 2));
  std::vector<std::vector<TokenId>> solo;
  {
    auto w = world_for();
    Engine e(fake_factory(w), fixture_tokenizer(), {kEos}, EngineOptions{});
    for (int i = 0; i < 8; ++i) solo.push_back(run_one(e, make_request("s", prompts[size_t(i)], 20)).ids());
  }
  auto w = world_for();
  EngineOptions o = spec_opts(SpeculationMode::Ngram, 6);
  Engine e(fake_factory(w), fixture_tokenizer(), {kEos}, o);
  const std::vector<Outcome> got = run_together(e, prompts, 20);
  for (int i = 0; i < 8; ++i) {
    const Outcome& o8 = got[static_cast<size_t>(i)];
    REQUIRE(o8.finished);
    CHECK(o8.ids() == solo[static_cast<size_t>(i)]);
  }
  CHECK(w->bad_windows.load() == 0);
  // Some window verified drafts for more than one slot at once.
  bool shared = false;
  for (const auto& rec : w->windows_seen()) shared = shared || slots_with_drafts(rec) > 1;
  CHECK(shared);
}

TEST_CASE("verify windows stay within the backend's exact rows, so batched drafts keep plain decoding's tokens",
          "[engine][spec]") {
  // A backend whose windows of more than 10 rows take other kernels (CUDA's cuBLAS from 17 rows): two
  // requests' 1 + 4 rows fit in 10, three requests' do not, and then nobody drafts.
  auto world_for = [] {
    auto w = spans_world(4);
    w->exact_rows = 10;
    return w;
  };
  std::vector<std::vector<TokenId>> prompts;
  for (int i = 0; i < 3; ++i) prompts.push_back(repeat(span_of(i), 2));
  std::vector<std::vector<TokenId>> solo;
  {
    auto w = world_for();
    Engine e(fake_factory(w), fixture_tokenizer(), {kEos}, EngineOptions{});
    for (int i = 0; i < 3; ++i) solo.push_back(run_one(e, make_request("s", prompts[size_t(i)], 24)).ids());
  }
  auto batch = [&](int n) {
    auto w = world_for();
    Engine e(fake_factory(w), fixture_tokenizer(), {kEos}, spec_opts(SpeculationMode::Ngram, 4));
    const std::vector<Outcome> got =
        run_together(e, std::vector<std::vector<TokenId>>(prompts.begin(), prompts.begin() + n), 24);
    for (int i = 0; i < n; ++i) {
      const Outcome& o = got[static_cast<size_t>(i)];
      REQUIRE(o.finished);
      CHECK(o.ids() == solo[static_cast<size_t>(i)]);
    }
    CHECK(w->bad_windows.load() == 0);
    int verify_windows = 0;
    for (const auto& rec : w->windows_seen()) {
      if (slots_with_drafts(rec) == 0) continue;
      ++verify_windows;
      CHECK(rec.rows.size() <= 10);
    }
    return verify_windows;
  };
  const int two = batch(2), three = batch(3);
  CHECK(two > 0);  // speculation ran, within the limit
  // Three requests' 3 x (1 + 4) rows do not fit: they decode plainly, drafting only at the very end, where
  // max_tokens leaves each fewer drafts to ask for.
  CHECK(three < two);
}

TEST_CASE("speculation options are checked when the engine is built", "[engine][spec]") {
  auto w = std::make_shared<FakeWorld>();
  EngineOptions o = spec_opts(SpeculationMode::Ngram, 0);
  CHECK_THROWS_WITH(Engine(fake_factory(w), fixture_tokenizer(), {kEos}, o), Catch::Contains("max_k"));
  o = spec_opts(SpeculationMode::Ngram);
  o.speculation.ngram_min = 3;
  o.speculation.ngram_max = 2;
  CHECK_THROWS_WITH(Engine(fake_factory(w), fixture_tokenizer(), {kEos}, o), Catch::Contains("ngram_min"));
  o = spec_opts(SpeculationMode::Draft);
  CHECK_THROWS_WITH(Engine(fake_factory(w), fixture_tokenizer(), {kEos}, o), Catch::Contains("drafter_factory"));
}
