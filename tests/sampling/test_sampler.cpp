// The sampler on synthetic logits: exact masks for top_k / top_p / min_p, the greedy rule, processors in
// their documented order, and draws that follow the kept distribution.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <map>

#include "engine/sampling/chunked_sum.hpp"
#include "engine/sampling/philox.hpp"
#include "engine/sampling/sampler.hpp"

using namespace strata;
using Catch::Matchers::Contains;

namespace {

const float kInf = std::numeric_limits<float>::infinity();

SamplingParams sampled(float temperature = 1.0f) {
  SamplingParams p;
  p.temperature = temperature;
  return p;
}

std::vector<TokenId> ids_of(const std::vector<Candidate>& c) {
  std::vector<TokenId> out;
  for (const auto& x : c) out.push_back(x.token);
  return out;
}

// softmax(z / T) in double, the distribution the sampler should draw from when nothing is masked.
std::vector<double> softmax(const std::vector<float>& z, double t) {
  double m = -1e300, s = 0;
  for (float v : z) m = std::max(m, double(v));
  std::vector<double> p;
  for (float v : z) p.push_back(std::exp((v - m) / t)), s += p.back();
  for (double& x : p) x /= s;
  return p;
}

}  // namespace

TEST_CASE("greedy picks the largest logit and the lowest id among equals") {
  std::vector<float> z{0.5f, 2.0f, -1.0f, 2.0f, 1.9f};
  CHECK(argmax_token(z.data(), 5) == 1);
  SamplingParams g;
  g.temperature = 0.0f;
  CHECK(pick_token(z.data(), 5, g, {}, 0) == 1);
  std::vector<float> nan{std::nanf(""), 1.0f, std::nanf("")};
  CHECK(argmax_token(nan.data(), 3) == 1);
  std::vector<float> masked{-kInf, -kInf};
  CHECK(argmax_token(masked.data(), 2) == 0);
}

TEST_CASE("candidates are ordered by probability, lower id first on ties, and normalized") {
  std::vector<float> z{1.0f, 3.0f, 1.0f, 2.0f};
  auto c = sampling_candidates(z.data(), 4, sampled());
  CHECK(ids_of(c) == std::vector<TokenId>{1, 3, 0, 2});
  const auto p = softmax(z, 1.0);
  for (const auto& x : c) CHECK(x.prob == Approx(p[size_t(x.token)]).epsilon(1e-12));
}

TEST_CASE("top_k keeps exactly the k largest logits, ties broken toward lower ids") {
  std::vector<float> z{0.1f, 0.9f, 0.5f, 0.9f, 0.7f, 0.2f};
  SamplingParams p = sampled();
  p.top_k = 3;
  CHECK(ids_of(sampling_candidates(z.data(), 6, p)) == std::vector<TokenId>{1, 3, 4});
  p.top_k = 1;
  CHECK(ids_of(sampling_candidates(z.data(), 6, p)) == std::vector<TokenId>{1});
  p.top_k = 100;
  CHECK(sampling_candidates(z.data(), 6, p).size() == 6);
}

TEST_CASE("top_p keeps the smallest prefix whose mass reaches top_p") {
  // probabilities 0.5, 0.25, 0.125, 0.125 exactly (log-space logits)
  std::vector<float> z{std::log(0.125f), std::log(0.5f), std::log(0.25f), std::log(0.125f)};
  SamplingParams p = sampled();
  p.top_p = 0.5f;
  CHECK(ids_of(sampling_candidates(z.data(), 4, p)) == std::vector<TokenId>{1});
  p.top_p = 0.6f;
  CHECK(ids_of(sampling_candidates(z.data(), 4, p)) == std::vector<TokenId>{1, 2});
  p.top_p = 0.8f;
  auto c = sampling_candidates(z.data(), 4, p);
  CHECK(ids_of(c) == std::vector<TokenId>{1, 2, 0});
  CHECK(c[0].prob == Approx(0.5 / 0.875));
  p.top_p = 0.01f;
  CHECK(ids_of(sampling_candidates(z.data(), 4, p)) == std::vector<TokenId>{1});
}

TEST_CASE("min_p keeps tokens whose probability is at least min_p times the top one") {
  std::vector<float> z{std::log(0.4f), std::log(0.3f), std::log(0.2f), std::log(0.1f)};
  SamplingParams p = sampled();
  p.min_p = 0.45f;  // threshold 0.18
  CHECK(ids_of(sampling_candidates(z.data(), 4, p)) == std::vector<TokenId>{0, 1, 2});
  p.min_p = 0.55f;  // threshold 0.22
  CHECK(ids_of(sampling_candidates(z.data(), 4, p)) == std::vector<TokenId>{0, 1});
  p.min_p = 0.76f;  // threshold 0.304
  CHECK(ids_of(sampling_candidates(z.data(), 4, p)) == std::vector<TokenId>{0});
}

TEST_CASE("temperature sharpens or flattens the kept distribution") {
  std::vector<float> z{0.0f, 1.0f, 2.0f};
  for (float t : {0.5f, 1.0f, 2.0f}) {
    auto c = sampling_candidates(z.data(), 3, sampled(t));
    const auto p = softmax(z, t);
    for (const auto& x : c) CHECK(x.prob == Approx(p[size_t(x.token)]).epsilon(1e-9));
  }
}

TEST_CASE("seeded draws follow the kept distribution (chi-square over positions)") {
  std::vector<float> z{0.0f, 0.5f, 1.0f, 1.5f, -0.5f, 2.0f};
  SamplingParams p = sampled(0.8f);
  p.top_k = 4;
  p.seed = 99;
  auto c = sampling_candidates(z.data(), 6, p);
  REQUIRE(c.size() == 4);
  const int n = 40000;
  std::map<TokenId, int> count;
  for (int pos = 0; pos < n; ++pos) ++count[pick_token(z.data(), 6, p, {}, pos)];
  CHECK(count.size() == 4);  // nothing outside top_k is ever drawn
  double chi2 = 0;
  for (const auto& x : c) {
    const double e = x.prob * n;
    chi2 += (count[x.token] - e) * (count[x.token] - e) / e;
  }
  CHECK(chi2 < 16.3);  // p = 0.001 for 3 degrees of freedom
}

TEST_CASE("a seeded pick depends only on (seed, position), through philox_uniform") {
  std::vector<float> z{0.3f, 0.1f, 0.9f, 0.4f, 0.2f};
  SamplingParams p = sampled();
  p.seed = 7;
  auto c = sampling_candidates(z.data(), 5, p);
  for (int pos = 0; pos < 50; ++pos) {
    CHECK(pick_token(z.data(), 5, p, {}, pos) == draw_candidate(c, philox_uniform(7, uint64_t(pos))));
    CHECK(pick_token(z.data(), 5, p, {}, pos) == pick_token(z.data(), 5, p, {}, pos));
  }
  SamplingParams q = p;
  q.seed = 8;
  int differ = 0;
  for (int pos = 0; pos < 50; ++pos) differ += pick_token(z.data(), 5, p, {}, pos) != pick_token(z.data(), 5, q, {}, pos);
  CHECK(differ > 10);
}

TEST_CASE("draw_candidate walks cumulative probability") {
  std::vector<Candidate> c{{4, 0.5}, {2, 0.25}, {9, 0.25}};
  CHECK(draw_candidate(c, 0.0) == 4);
  CHECK(draw_candidate(c, 0.4999) == 4);
  CHECK(draw_candidate(c, 0.5) == 2);
  CHECK(draw_candidate(c, 0.76) == 9);
  CHECK(draw_candidate(c, 0.9999999999) == 9);
}

TEST_CASE("repetition penalty divides positive and multiplies negative logits of seen tokens") {
  std::vector<float> z{2.0f, -1.0f, 3.0f, 0.5f};
  SamplingParams p;
  p.repetition_penalty = 2.0f;
  std::vector<TokenId> h{0, 1, 0};
  apply_logit_processors(z.data(), 4, p, {h.data(), h.size()});
  CHECK(z == std::vector<float>{1.0f, -2.0f, 3.0f, 0.5f});
}

TEST_CASE("presence and frequency penalties subtract once per token and once per occurrence") {
  std::vector<float> z{1.0f, 1.0f, 1.0f};
  SamplingParams p;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  std::vector<TokenId> h{2, 2, 2, 0};
  apply_logit_processors(z.data(), 3, p, {h.data(), h.size()});
  CHECK(z[0] == 1.0f - 0.5f - 0.25f);
  CHECK(z[1] == 1.0f);
  CHECK(z[2] == 1.0f - 0.5f - 0.75f);
}

TEST_CASE("penalty_window limits penalties to the last N tokens of the history") {
  std::vector<float> z{1.0f, 1.0f, 1.0f};
  SamplingParams p;
  p.presence_penalty = 1.0f;
  p.penalty_window = 2;
  std::vector<TokenId> h{0, 1, 2};
  apply_logit_processors(z.data(), 3, p, {h.data(), h.size()});
  CHECK(z == std::vector<float>{1.0f, 0.0f, 0.0f});
}

TEST_CASE("logit_bias adds after penalties and suppressed tokens can never be picked") {
  std::vector<float> z{1.0f, 2.0f, 3.0f};
  SamplingParams p;
  p.temperature = 0.0f;
  p.logit_bias = {{0, 5.0f}};
  p.suppressed = {2};
  CHECK(pick_token(z.data(), 3, p, {}, 0) == 0);
  SamplingParams s = sampled();
  s.suppressed = {1, 2};
  for (int pos = 0; pos < 100; ++pos) CHECK(pick_token(z.data(), 3, s, {}, pos) == 0);
  SamplingParams all = sampled();
  all.suppressed = {0, 1, 2};
  CHECK(pick_token(z.data(), 3, all, {}, 0) == 0);  // defined answer, no crash, when nothing is left
}

TEST_CASE("greedy picks see penalties and bias too") {
  std::vector<float> z{1.0f, 1.2f};
  SamplingParams p;
  p.temperature = 0.0f;
  p.repetition_penalty = 1.5f;
  std::vector<TokenId> h{1};
  CHECK(pick_token(z.data(), 2, p, {h.data(), 1}, 0) == 0);
  CHECK(z[1] == 1.2f);  // the caller's logits are not modified
}

TEST_CASE("invalid sampling settings are rejected naming the field") {
  auto bad = [](auto edit) {
    SamplingParams p;
    edit(p);
    return p;
  };
  CHECK_THROWS_WITH(validate_sampling_params(bad([](SamplingParams& p) { p.top_p = 0.0f; }), 10), Contains("top_p"));
  CHECK_THROWS_WITH(validate_sampling_params(bad([](SamplingParams& p) { p.top_k = -1; }), 10), Contains("top_k"));
  CHECK_THROWS_WITH(validate_sampling_params(bad([](SamplingParams& p) { p.min_p = 1.5f; }), 10), Contains("min_p"));
  CHECK_THROWS_WITH(validate_sampling_params(bad([](SamplingParams& p) { p.temperature = std::nanf(""); }), 10),
                    Contains("temperature"));
  CHECK_THROWS_WITH(validate_sampling_params(bad([](SamplingParams& p) { p.repetition_penalty = 0.0f; }), 10),
                    Contains("repetition_penalty"));
  CHECK_THROWS_WITH(validate_sampling_params(bad([](SamplingParams& p) { p.logit_bias = {{10, 1.0f}}; }), 10),
                    Contains("logit_bias") && Contains("token 10"));
  CHECK_THROWS_WITH(validate_sampling_params(bad([](SamplingParams& p) { p.suppressed = {-1}; }), 10),
                    Contains("suppressed"));
  CHECK_NOTHROW(validate_sampling_params(SamplingParams{}, 10));
}

TEST_CASE("on a large vocabulary the stop-early draw equals the walk over the full candidate list") {
  const int V = 20000;
  std::vector<float> z(static_cast<size_t>(V));
  for (int i = 0; i < V; ++i) z[size_t(i)] = float(std::sin(i * 12.9898) * 4.0);  // many near-equal logits
  z[77] = z[78] = 4.5f;                                                           // an exact tie on top
  for (float top_p : {1.0f, 0.95f, 0.3f})
    for (float min_p : {0.0f, 0.02f})
      for (int top_k : {0, 5000}) {
        SamplingParams p = sampled(1.3f);
        p.top_p = top_p;
        p.min_p = min_p;
        p.top_k = top_k;
        p.seed = 11;
        const auto c = sampling_candidates(z.data(), V, p);
        INFO("top_p " << top_p << " min_p " << min_p << " top_k " << top_k << " kept " << c.size());
        double sum = 0;
        for (const auto& x : c) sum += x.prob;
        CHECK(sum == Approx(1.0).epsilon(1e-9));
        CHECK(c[0].token == 77);
        for (int pos = 0; pos < 100; ++pos)
          CHECK(pick_token(z.data(), V, p, {}, pos) == draw_candidate(c, philox_uniform(11, uint64_t(pos))));
      }
}

TEST_CASE("draws past the ranked walk (the rest in id order, chunk by chunk) follow the kept distribution") {
  // Three logit levels over 6000 ids (level i % 3): the first kSamplerRankedWalk ranks are all top-level
  // tokens and hold about a quarter of the mass, so most draws walk the rest. Buckets: (level, id half).
  const int V = 6000;
  std::vector<float> z(static_cast<size_t>(V));
  for (int i = 0; i < V; ++i) z[size_t(i)] = 0.5f * float(i % 3);
  for (float min_p : {0.0f, 0.5f}) {  // 0.5 keeps levels 2 and 1 (weights 1 and e^-0.5), drops level 0
    SamplingParams p = sampled();
    p.min_p = min_p;
    p.seed = 5;
    const auto c = sampling_candidates(z.data(), V, p);
    REQUIRE(c.size() == (min_p > 0 ? 4000u : 6000u));
    double level_w[3], total = 0;
    for (int l = 0; l < 3; ++l) level_w[l] = (min_p > 0 && l == 0) ? 0.0 : std::exp(0.5 * l), total += 2000 * level_w[l];
    std::map<int, int> count;
    const int N = 30000;
    int past = 0;
    for (int pos = 0; pos < N; ++pos) {
      const TokenId t = pick_token(z.data(), V, p, {}, pos);
      REQUIRE(t >= 0);
      REQUIRE(t < V);
      CHECK(t == draw_candidate(c, philox_uniform(5, uint64_t(pos))));
      ++count[(t % 3) * 2 + (t >= V / 2)];
      size_t rank = 0;
      while (c[rank].token != t) ++rank;
      past += rank >= size_t(kSamplerRankedWalk);
    }
    INFO("min_p " << min_p << ": " << past << " draws past the ranked walk");
    CHECK(past > N / 2);
    double chi2 = 0;
    int cells = 0;
    for (int b = 0; b < 6; ++b) {
      const double expect = N * 1000 * level_w[b / 2] / total;
      if (expect == 0) {
        CHECK(count[b] == 0);
        continue;
      }
      chi2 += (count[b] - expect) * (count[b] - expect) / expect;
      ++cells;
    }
    INFO("chi2 " << chi2 << " over " << cells << " cells");
    CHECK(chi2 < (cells == 6 ? 20.5 : 16.3));  // p = 0.001 for 5 and 3 degrees of freedom
  }
}

TEST_CASE("chunked sums in the warp's lane order stay within rounding of the exact sum") {
  // 5000 values of very different sizes: five chunks, the last partial.
  std::vector<double> w;
  for (int i = 0; i < 5000; ++i) w.push_back(std::exp(-0.01 * (i % 997)) * (1 + (i % 7)));
  ChunkedSum s;
  long double exact = 0;
  for (double x : w) s.add(x), exact += x;
  CHECK(s.value() == Approx(double(exact)).epsilon(1e-13));
  LaneSum one;
  for (int i = 0; i < 40; ++i) one.add(i, w[size_t(i)]);
  long double part = 0;
  for (int i = 0; i < 40; ++i) part += w[size_t(i)];
  CHECK(one.value() == Approx(double(part)).epsilon(1e-14));
  CHECK(LaneSum().value() == 0.0);
}
