#include <catch2/catch.hpp>
#include <cmath>

#include "engine/sampling/logprobs.hpp"

using namespace strata;

TEST_CASE("logprobs are the log-softmax of the raw logits, top alternatives descending") {
  std::vector<float> z{1.0f, 3.0f, 2.0f, 3.0f};
  double s = 0;
  for (float v : z) s += std::exp(double(v));
  float pick_lp = 0;
  std::vector<TopLogprob> top;
  compute_logprobs(z.data(), 4, 2, 3, &pick_lp, &top);
  CHECK(pick_lp == Approx(2.0 - std::log(s)).epsilon(1e-6));
  REQUIRE(top.size() == 3);
  CHECK(top[0].token == 1);
  CHECK(top[1].token == 3);
  CHECK(top[2].token == 2);
  CHECK(top[0].logprob == Approx(3.0 - std::log(s)).epsilon(1e-6));
  CHECK(top[2].logprob == pick_lp);
}

TEST_CASE("asking for more alternatives than the vocabulary returns all of them; none returns none") {
  std::vector<float> z{0.0f, 0.0f};
  std::vector<TopLogprob> top;
  compute_logprobs(z.data(), 2, -1, 10, nullptr, &top);
  REQUIRE(top.size() == 2);
  CHECK(top[0].logprob == Approx(std::log(0.5)));
  compute_logprobs(z.data(), 2, -1, 0, nullptr, &top);
  CHECK(top.empty());
}
