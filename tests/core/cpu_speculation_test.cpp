// Speculative decoding over the real CPU backend (DESIGN.md invariant 1): for many prompts and seeds, greedy
// and seeded with top-k/top-p and penalties, alone and eight to a window, output with the n-gram drafter,
// a garbage drafter, a throwing drafter and a draft model is token for token the output without speculation.
#include <catch2/catch.hpp>

#include <array>
#include <atomic>
#include <map>

#include <prometheus/registry.h>

#include "engine/core/engine.hpp"
#include "engine/core/metrics.hpp"
#include "engine/cpu/cpu_backend.hpp"
#include "engine/model/weights.hpp"
#include "engine/spec/draft_model_drafter.hpp"
#include "tests/core/harness.hpp"
#include "tests/core/spec_drafters.hpp"
#include "tests/core/verify_replay.hpp"

using namespace strata;
using namespace strata::test;
using namespace std::chrono_literals;

namespace {

constexpr int kMaxTokens = 20;

const Model& fixture(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Model>> models;
  auto& m = models[name];
  if (!m) m = load_model(STRATA_SOURCE_DIR "/tests/data/models/" + name);
  return *m;
}

CpuBackendOptions backend_opts() { return CpuBackendOptions{8, 256, 2}; }

enum class Sampling { Greedy, Seeded, Penalized };

const std::vector<std::string> kPrompts = {
    "def add(a, b):\n    return a + b\n\ndef add(a, b):\n",
    "the cat sat on the mat. the cat sat on the",
    "import os\nimport sys\nimport os\n",
    "for i in range(10):\n    print(i)\nfor i in range(10):",
    "hello hello hello hello",
    "class Tree:\n    def __init__(self):",
    "SELECT name FROM users WHERE id = 1; SELECT name FROM",
    "1, 2, 3, 4, 5, 6, 7, 1, 2, 3,",
};

std::shared_ptr<GenerationRequest> request(size_t i, Sampling s, uint64_t seed) {
  auto r = make_request("r" + std::to_string(i), fixture_tokenizer().encode(kPrompts[i]), kMaxTokens);
  r->ignore_eos = true;  // full-length outputs make the comparison cover every position
  if (s != Sampling::Greedy) {
    r->sampling.temperature = 0.8f;
    r->sampling.top_k = 40;
    r->sampling.top_p = 0.9f;
    r->sampling.seed = seed + i;
  }
  if (s == Sampling::Penalized) {
    r->sampling.presence_penalty = 0.4f;
    r->sampling.frequency_penalty = 0.3f;
    r->sampling.repetition_penalty = 1.2f;
    r->sampling.penalty_window = 16;
  }
  return r;
}

// The CPU backend saying that a window holds `cheap` rows at about one row's cost, as CUDA's skinny kernel
// does, so speculation fills them with prompt lookup's copies (DraftRoom) where it has some.
struct CheapRowsCpu : CpuBackend {
  CheapRowsCpu(const Model& m, int cheap) : CpuBackend(m, backend_opts()), cheap_(cheap) {}
  BackendInfo info() const override {
    BackendInfo i = CpuBackend::info();
    i.cheap_rows = cheap_;
    return i;
  }
  int cheap_;
};

struct Rig {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  std::unique_ptr<Engine> engine;
  Rig(const std::string& target, EngineOptions o, int cheap_rows = 1) {
    o.metrics = std::make_shared<Metrics>(registry, "0", "none", "cpu");
    const Model& m = fixture(target);
    engine = std::make_unique<Engine>(
        [&m, cheap_rows]() -> std::unique_ptr<Backend> { return std::make_unique<CheapRowsCpu>(m, cheap_rows); },
        fixture_tokenizer(), m.generation.eos_token_ids, o);
  }
  // A counter's value, summed over its series, or over those with the label `only` (name, value) when given.
  double counter(const std::string& name, std::pair<std::string, std::string> only = {}) const {
    double sum = 0;
    for (const auto& f : registry->Collect())
      if (f.name == name)
        for (const auto& m : f.metric) {
          bool match = only.first.empty();
          for (const auto& l : m.label) match = match || (l.name == only.first && l.value == only.second);
          if (match) sum += m.counter.value;
        }
    return sum;
  }
};

// Every prompt alone, one after another.
std::vector<std::vector<TokenId>> run_alone(Rig& rig, Sampling s, uint64_t seed) {
  std::vector<std::vector<TokenId>> out;
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    Outcome o = run_one(*rig.engine, request(i, s, seed), 120s);
    REQUIRE(o.finished);
    REQUIRE(o.finish.completion_tokens == kMaxTokens);
    out.push_back(o.ids());
  }
  return out;
}

// All prompts at once, sharing windows.
std::vector<std::vector<TokenId>> run_batch(Rig& rig, Sampling s, uint64_t seed) {
  std::vector<std::shared_ptr<RequestChannel>> chans;
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    chans.push_back(std::make_shared<RequestChannel>());
    REQUIRE(rig.engine->submit(request(i, s, seed), chans.back()) == SubmitResult::Accepted);
  }
  std::vector<std::vector<TokenId>> out;
  for (auto& c : chans) {
    Outcome o = collect(*c, 120s);
    REQUIRE(o.finished);
    out.push_back(o.ids());
  }
  return out;
}

EngineOptions with(SpeculationMode mode, int k) {
  EngineOptions o;
  o.prefill_chunk = 16;
  o.speculation.mode = mode;
  o.speculation.max_k = k;
  return o;
}

const char* name(Sampling s) { return s == Sampling::Greedy ? "greedy" : s == Sampling::Seeded ? "seeded" : "penalized"; }

// A draft-model drafter that adds the proposals prompt lookup made to a shared count when it goes, and keeps
// the longest proposal made (`longest`, when given).
struct LookupCounting : DraftModelDrafter {
  LookupCounting(std::shared_ptr<Backend> b, int dim, Ahead a, int critical, bool lookup,
                 std::shared_ptr<std::atomic<int>> n, std::shared_ptr<std::atomic<int>> longest = nullptr)
      : DraftModelDrafter(std::move(b), dim, a, critical, lookup ? std::make_unique<NgramDrafter>() : nullptr),
        n_(std::move(n)),
        longest_(std::move(longest)) {}
  ~LookupCounting() override { *n_ += lookup_proposals(); }
  void propose_together(std::vector<DraftJob>& jobs) override {
    DraftModelDrafter::propose_together(jobs);
    for (const DraftJob& j : jobs)
      if (longest_ && int(j.drafts.size()) > *longest_) *longest_ = int(j.drafts.size());
  }
  std::shared_ptr<std::atomic<int>> n_, longest_;
};

}  // namespace

TEST_CASE("CPU: output with the n-gram drafter equals output without speculation, alone and eight at once",
          "[engine][cpu][spec]") {
  for (Sampling s : {Sampling::Greedy, Sampling::Seeded, Sampling::Penalized}) {
    for (uint64_t seed : {7ull, 1001ull}) {
      if (s == Sampling::Greedy && seed != 7) continue;
      DYNAMIC_SECTION(name(s) << " seed " << seed) {
        Rig plain("llama", with(SpeculationMode::Off, 1));
        auto expect = run_alone(plain, s, seed);
        Rig spec("llama", with(SpeculationMode::Ngram, 4));
        CHECK(run_alone(spec, s, seed) == expect);
        CHECK(run_batch(spec, s, seed) == expect);
        CHECK(spec.counter("strata_spec_drafts_total") > 0);
        // Copies that fill a window's cheap rows and reach past k.
        Rig cheap("llama", with(SpeculationMode::Ngram, 2), 8);
        CHECK(run_alone(cheap, s, seed) == expect);
        CHECK(run_batch(cheap, s, seed) == expect);
        CHECK(cheap.counter("strata_spec_draft_tokens_total") > 2 * cheap.counter("strata_spec_drafts_total"));
      }
    }
  }
}

TEST_CASE("CPU: garbage drafts and a drafter that throws leave the output unchanged", "[engine][cpu][spec]") {
  for (Sampling s : {Sampling::Greedy, Sampling::Penalized}) {
    DYNAMIC_SECTION(name(s)) {
      Rig plain("llama", with(SpeculationMode::Off, 1));
      auto expect = run_alone(plain, s, 99);

      EngineOptions garbage = with(SpeculationMode::Draft, 5);
      auto seeds = std::make_shared<std::atomic<uint32_t>>(1);
      garbage.speculation.drafter_factory = [seeds] { return std::make_unique<RandomDrafter>(seeds->fetch_add(1), 520); };
      Rig g("llama", garbage);
      CHECK(run_batch(g, s, 99) == expect);
      CHECK(g.counter("strata_spec_draft_tokens_total") > 0);

      EngineOptions throwing = with(SpeculationMode::Draft, 3);
      auto calls = std::make_shared<std::atomic<int>>(0);
      throwing.speculation.drafter_factory = [calls] { return std::make_unique<ThrowingDrafter>(2, calls); };
      Rig t("llama", throwing);
      CHECK(run_batch(t, s, 99) == expect);
      CHECK(calls->load() == static_cast<int>(kPrompts.size()));  // one good proposal each, then dropped
    }
  }
}

TEST_CASE("CPU: output with a draft model (another fixture, same tokenizer, or a feature draft) equals output "
          "without speculation",
          "[engine][cpu][spec]") {
  // The feature draft reads the target's features beside each token (its fixture's weights are random).
  static const auto feature_draft =
      load_model(STRATA_SOURCE_DIR "/tests/data/models/qwen3_feature_draft", &fixture("qwen3"));
  using Ahead = DraftModelDrafter::Ahead;
  for (bool features : {false, true}) {
    for (Sampling s : {Sampling::Greedy, Sampling::Seeded})
    // No drafting ahead; drafting ahead; with at most 1 draft on the path; with prompt lookup first there;
    // no drafting ahead with prompt lookup as the draft's rival; and mode 3 on a target whose windows hold 8
    // rows at no cost (lookup's copies fill them, the stream's proposals are copied on).
    for (int mode : {0, 1, 2, 3, 4, 5}) {
      const Ahead ahead = mode == 0 || mode == 4 ? Ahead::Off : Ahead::On;
      const int critical = mode == 2 || mode == 3 || mode == 5 ? 1 : 0;
      const bool lookup = mode >= 3;
      DYNAMIC_SECTION((features ? "feature draft, " : "llama draft, ")
                      << name(s)
                      << (mode == 1   ? ", drafting ahead"
                          : mode == 2 ? ", drafting ahead, critical 1"
                          : mode == 3 ? ", drafting ahead, critical 1, prompt lookup"
                          : mode == 4 ? ", prompt lookup as a rival"
                          : mode == 5 ? ", drafting ahead, critical 1, prompt lookup, 8 cheap rows"
                                      : "")) {
        Rig plain("qwen3", with(SpeculationMode::Off, 1));
        auto expect = run_alone(plain, s, 5);
        const Model& dm = features ? *feature_draft : fixture("llama");
        const int dim = features ? dm.config.hidden_size : 0;
        auto draft = std::shared_ptr<Backend>(std::make_unique<CpuBackend>(dm, backend_opts()));
        auto looked_up = std::make_shared<std::atomic<int>>(0), longest = std::make_shared<std::atomic<int>>(0);
        EngineOptions o = with(SpeculationMode::Draft, 3);
        o.speculation.drafter_factory = [draft, dim, ahead, critical, lookup, looked_up, longest] {
          return std::make_unique<LookupCounting>(draft, dim, ahead, critical, lookup, looked_up, longest);
        };
        {
          Rig spec("qwen3", o, mode == 5 ? 8 : 1);
          CHECK(run_alone(spec, s, 5) == expect);
          CHECK(run_batch(spec, s, 5) == expect);
          CHECK(spec.counter("strata_spec_draft_tokens_total") > 0);
        }
        // Past k (3) only by lookup's copies (not with a feature draft), which fill the cheap rows.
        if (!lookup || features) CHECK(longest->load() <= 3);
        if (mode == 5 && !features) CHECK(longest->load() > 3);
        // A feature draft takes no lookup proposals (it would need the target's features of them).
        if (lookup && !features) CHECK(looked_up->load() > 0);
        else CHECK(looked_up->load() == 0);
      }
    }
  }
}

TEST_CASE("CPU: without drafting ahead, prompt lookup serves a round only where it has kept more drafts than the "
          "draft model",
          "[engine][cpu][spec]") {
  using Ahead = DraftModelDrafter::Ahead;
  Rig plain("qwen3", with(SpeculationMode::Off, 1));
  const auto expect = run_alone(plain, Sampling::Greedy, 0);
  // draft: the fixture the draft runs; lookup: whether prompt lookup is its rival. Returns the proposals
  // lookup made and the drafts kept per verify window.
  auto run = [&](const std::string& draft_name, bool lookup) {
    auto draft = std::shared_ptr<Backend>(std::make_unique<CpuBackend>(fixture(draft_name), backend_opts()));
    auto looked_up = std::make_shared<std::atomic<int>>(0);
    EngineOptions o = with(SpeculationMode::Draft, 4);
    o.speculation.drafter_factory = [draft, lookup, looked_up] {
      return std::make_unique<LookupCounting>(draft, 0, Ahead::Off, 0, lookup, looked_up);
    };
    double per_window = 0;
    {
      Rig spec("qwen3", o);
      CHECK(run_alone(spec, Sampling::Greedy, 0) == expect);
      per_window = spec.counter("strata_spec_accepted_tokens_total") / spec.counter("strata_spec_drafts_total");
    }
    return std::make_pair(looked_up->load(), per_window);
  };
  // The target as its own draft (the CPU backend's bits do not depend on the window): its greedy drafts are
  // all kept, lookup never does better, so it never serves.
  const auto self = run("qwen3", true);
  CHECK(self.first == 0);
  // A draft of another fixture (random weights, the same tokenizer) predicts the target poorly; on prompts that
  // repeat themselves lookup leads, and the rounds keep more drafts than the draft alone keeps.
  const auto alone = run("llama", false);
  const auto rivals = run("llama", true);
  CHECK(alone.first == 0);
  CHECK(rivals.first > 0);
  CHECK(rivals.second > alone.second);
}

TEST_CASE("CPU: a feature-reading drafter gets each kept row's feature once, in order, as the target computes it",
          "[engine][cpu][spec]") {
  // The n-gram drafter's proposals give verify windows with accepted and rejected drafts; only the rows the
  // target kept (prompt rows, the last token and the accepted drafts) may deliver features.
  const Model& m = fixture("qwen3");
  const int H = m.config.hidden_size;
  auto log = std::make_shared<std::vector<FeatureRecorder::Delivery>>();
  EngineOptions o = with(SpeculationMode::Draft, 4);
  o.speculation.drafter_factory = [log, H] { return std::make_unique<FeatureRecorder>(H, log); };
  Rig spec("qwen3", o);
  Outcome out = run_one(*spec.engine, request(4, Sampling::Greedy, 0), 120s);  // "hello hello ...": drafts land
  REQUIRE(out.finished);
  CHECK(spec.counter("strata_spec_accepted_tokens_total") > 0);
  CHECK(spec.counter("strata_spec_draft_tokens_total") > spec.counter("strata_spec_accepted_tokens_total"));
  std::vector<TokenId> seq = fixture_tokenizer().encode(kPrompts[4]);
  const std::vector<TokenId> ids = out.ids();
  seq.insert(seq.end(), ids.begin(), ids.end());
  // Every position but the last (never run) delivered once, in position order.
  REQUIRE(log->size() == seq.size() - 1);
  CpuBackend ref(m, backend_opts());
  const SlotId slot = ref.open_slot();
  Window w;
  for (size_t i = 0; i + 1 < seq.size(); ++i) {
    Row r;
    r.slot = slot;
    r.token = seq[i];
    r.pos = int32_t(i);
    r.want_feature = true;
    w.rows.push_back(r);
  }
  const std::vector<RowResult> want = ref.run_window(w);
  for (size_t i = 0; i < log->size(); ++i) {
    INFO("delivery " << i);
    REQUIRE((*log)[i].pos == int32_t(i));
    CHECK((*log)[i].feature == want[i].feature);  // batch invariance: the same bits in any window
  }
}

TEST_CASE("CPU: a draft model identical to the greedy target has every draft accepted", "[engine][cpu][spec]") {
  // The draft slot is kept in step with the target, so the same weights propose exactly the target's next
  // tokens; one rejected draft would mean the draft slot's history went out of step.
  Rig plain("qwen3", with(SpeculationMode::Off, 1));
  auto expect = run_alone(plain, Sampling::Greedy, 0);
  auto draft = std::shared_ptr<Backend>(std::make_unique<CpuBackend>(fixture("qwen3"), backend_opts()));
  EngineOptions o = with(SpeculationMode::Draft, 4);
  o.speculation.drafter_factory = [draft] { return std::make_unique<DraftModelDrafter>(draft); };
  Rig spec("qwen3", o);
  CHECK(run_batch(spec, Sampling::Greedy, 0) == expect);
  double drafted = spec.counter("strata_spec_draft_tokens_total");
  CHECK(drafted > 0);
  CHECK(spec.counter("strata_spec_accepted_tokens_total") == drafted);
}

namespace {
// A draft-model drafter that adds its ahead hits, runs and extensions to shared counters when its request ends.
struct CountingDrafter : DraftModelDrafter {
  CountingDrafter(std::shared_ptr<Backend> b, int dim, Ahead a, std::shared_ptr<std::array<std::atomic<int>, 3>> n)
      : DraftModelDrafter(std::move(b), dim, a), n_(std::move(n)) {}
  ~CountingDrafter() override {
    (*n_)[0] += ahead_hits();
    (*n_)[1] += ahead_runs();
    (*n_)[2] += ahead_extends();
  }
  std::shared_ptr<std::array<std::atomic<int>, 3>> n_;
};
}  // namespace

TEST_CASE("CPU: drafting ahead with a draft identical to the target answers proposals from the ahead steps",
          "[engine][cpu][spec]") {
  // Every proposal is kept whole and the draft's next pick is the target's: after a request's first chain
  // every proposal comes from its stream (Backend::extend_ahead carries it on), and every draft is accepted.
  using Ahead = DraftModelDrafter::Ahead;
  using Counts = std::array<std::atomic<int>, 3>;
  Rig plain("qwen3", with(SpeculationMode::Off, 1));
  for (Sampling s : {Sampling::Greedy, Sampling::Seeded}) {
    DYNAMIC_SECTION(name(s)) {
      auto draft = std::shared_ptr<Backend>(std::make_unique<CpuBackend>(fixture("qwen3"), backend_opts()));
      // Each request's drafter counts when it goes, so the counts are read once its engine has stopped.
      auto alone = std::make_shared<Counts>(), batch = std::make_shared<Counts>();
      for (auto& c : *alone) c = 0;
      for (auto& c : *batch) c = 0;
      auto options = [&](std::shared_ptr<Counts> n) {
        EngineOptions o = with(SpeculationMode::Draft, 4);
        o.speculation.drafter_factory = [draft, n] {
          return std::make_unique<CountingDrafter>(draft, 0, Ahead::On, n);
        };
        return o;
      };
      double ahead_windows = 0, drafted = 0, accepted = 0;
      {
        Rig spec("qwen3", options(alone));
        CHECK(run_alone(spec, s, 0) == run_alone(plain, s, 0));
        ahead_windows = spec.counter("strata_spec_drafts_ahead_total");
        // The drafting time is split by round: the first chain of each request waits, the stream's rounds not.
        CHECK(spec.counter("strata_spec_draft_seconds_total", {"round", "ahead"}) > 0.0);
        CHECK(spec.counter("strata_spec_draft_seconds_total", {"round", "waiting"}) > 0.0);
      }
      {
        Rig spec("qwen3", options(batch));
        CHECK(run_batch(spec, s, 0) == run_batch(plain, s, 0));
        drafted = spec.counter("strata_spec_draft_tokens_total");
        accepted = spec.counter("strata_spec_accepted_tokens_total");
      }
      INFO("alone: " << (*alone)[0] << " proposals from the stream, " << (*alone)[1] << " ahead chains, "
                     << (*alone)[2] << " extensions; in a batch: " << (*batch)[0] << ", " << (*batch)[1] << ", "
                     << (*batch)[2]);
      CHECK((*alone)[1] > 0);
      CHECK((*batch)[1] > 0);
      // Every proposal from the stream is a verify window drafted ahead (the metric and the log field).
      CHECK(ahead_windows == (*alone)[0]);
      if (s == Sampling::Greedy) {  // a greedy draft guesses a seeded target's picks only by chance
        CHECK(accepted == drafted);
        // One chain a request, then its stream to the end.
        CHECK((*alone)[1] == static_cast<int>(kPrompts.size()));
        CHECK((*alone)[0] >= 2 * (*alone)[1]);
        // In a batch the jobs share chains, and a stream goes on only when all of its chain's jobs hit.
        CHECK((*batch)[0] > (*batch)[1] / 2);
      }
    }
  }
}

TEST_CASE("CPU: with a batch limit the n-gram drafter drafts only while few requests decode; output unchanged",
          "[engine][cpu][spec]") {
  Rig off("qwen3", with(SpeculationMode::Off, 4));
  const auto ref = run_batch(off, Sampling::Greedy, 0);
  Rig free_spec("qwen3", with(SpeculationMode::Ngram, 4));
  CHECK(run_batch(free_spec, Sampling::Greedy, 0) == ref);
  EngineOptions o = with(SpeculationMode::Ngram, 4);
  o.speculation.max_batch = 2;
  Rig limited("qwen3", o);
  CHECK(run_batch(limited, Sampling::Greedy, 0) == ref);
  const double unlimited_drafts = free_spec.counter("strata_spec_drafts_total");
  const double limited_drafts = limited.counter("strata_spec_drafts_total");
  INFO("verify windows with drafts: unlimited " << unlimited_drafts << ", limited " << limited_drafts);
  CHECK(unlimited_drafts > 0);
  // Eight requests decode together for most of the run: drafting only happens once at most two are left.
  CHECK(limited_drafts < unlimited_drafts / 2);
  // Alone, each request is under the limit and drafts as before.
  CHECK(run_alone(limited, Sampling::Greedy, 0) == run_alone(off, Sampling::Greedy, 0));
  CHECK(limited.counter("strata_spec_drafts_total") > limited_drafts);
}

TEST_CASE("a negative speculation batch limit is refused", "[engine][spec]") {
  EngineOptions o = with(SpeculationMode::Ngram, 4);
  o.speculation.max_batch = -1;
  CHECK_THROWS_WITH(Rig("qwen3", o), Catch::Matchers::Contains("max_batch must not be negative"));
}

// The backend alone (tests/core/verify_replay.hpp; the GPU runs the same on strata-tiny): random verify windows
// committed to random depths give every kept row the logits of single-row decoding, bit for bit.
TEST_CASE("CPU: random verify windows and commits give every kept row the logits of single-row decoding") {
  const std::string name = GENERATE(std::string("llama"), std::string("qwen3"));
  CpuBackend be(fixture(name), backend_opts());
  std::mt19937 rng(7);
  for (size_t i = 0; i < 3; ++i) {
    const ReplayResult r = replay_verify_windows(be, fixture_tokenizer().encode(kPrompts[i]), 40, 8, rng);
    INFO(name << " prompt " << i << ": " << r.windows << " windows, " << r.bad_rows
              << " kept rows with other bits, the first at " << r.first_bad);
    CHECK(r.windows > 5);
    CHECK(r.bad_rows == 0);
  }
}
