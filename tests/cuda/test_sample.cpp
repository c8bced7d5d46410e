// The device's whole-vocabulary seeded draw (launch_sample, mode 2) against engine/sampling's pick_token on
// 128k-token rows: every pick the device makes is the host's, draws past the kDeviceSampleRanks candidates it
// orders included (the rest walked in id order), and it hands a row back (-1) only where a top_p cut lies
// past those candidates.
#include <catch2/catch.hpp>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "cuda/cuda_backend.hpp"
#include "cuda/kernels/kernels.hpp"
#include "cuda/window_meta.hpp"
#include "engine/sampling/logprobs.hpp"
#include "engine/sampling/philox.hpp"
#include "engine/sampling/sampler.hpp"
#include "tests/cuda/cuda_test_buffers.hpp"

using namespace strata;
using namespace strata::cuda;
using cuda_test::Dev;

namespace {

// The rank of token t among the candidates (sampling_candidates order).
size_t host_draw_rank(const std::vector<Candidate>& c, TokenId t) {
  size_t i = 0;
  while (i < c.size() && c[i].token != t) ++i;
  return i;
}

}  // namespace

TEST_CASE("the whole-vocabulary device draw is the host's pick, or hands back only top_p cuts past its ranks") {
  REQUIRE(CudaBackend::device_count() > 0);
  const int V = 128256;
  std::mt19937 rng(31);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  struct Setting {
    float temperature, top_p, min_p;
    int top_k;
  };
  const std::vector<Setting> settings = {{1.0f, 1.0f, 0.0f, 0},    {0.7f, 0.9f, 0.0f, 0},
                                         {1.3f, 0.95f, 0.05f, 0},  {1.0f, 1.0f, 0.1f, 0},
                                         {0.8f, 0.5f, 0.0f, V},    {1.0f, 1.0f, 0.0f, V + 5}};
  // Rows: peaked (a trained model's shape: a few strong tokens over a wide low tail), a heavy tail (about 5 %
  // of the mass past the 1024 best at temperature 1), and flat (almost every draw goes past them).
  const int kRows = 24;
  std::vector<float> z(size_t(kRows) * V);
  for (int r = 0; r < kRows; ++r) {
    const float spread = r % 3 == 0 ? 3.0f : r % 3 == 1 ? 4.0f : 0.5f;
    for (int i = 0; i < V; ++i) z[size_t(r) * V + i] = spread * nd(rng);
    if (r % 3 == 0)
      for (int j = 0; j < 8; ++j) z[size_t(r) * V + size_t(rng() % V)] += 25.0f - j;
  }
  Dev<float> dz(z.size());
  dz.put(z);
  Dev<int32_t> dspec(size_t(kRows) * kPickWords);
  Dev<int> dpick(kRows);
  cudaStream_t st = nullptr;
  REQUIRE(cudaStreamCreate(&st) == cudaSuccess);
  int on_device = 0, handed_back = 0, past_ranks = 0;
  for (const Setting& s : settings) {
    std::vector<int32_t> spec(size_t(kRows) * kPickWords);
    std::vector<SamplingParams> params(kRows);
    for (int r = 0; r < kRows; ++r) {
      SamplingParams& p = params[size_t(r)];
      p.temperature = s.temperature;
      p.top_p = s.top_p;
      p.min_p = s.min_p;
      p.top_k = s.top_k;
      p.seed = 0x9e3779b97f4a7c15ull * uint64_t(r + 1);
      write_pick_spec(&spec[size_t(r) * kPickWords], 2, p, 100 + r);
    }
    dspec.put(spec);
    dpick.put(std::vector<int>(kRows, -7));
    launch_sample(dz.p, kRows, V, dspec.p, dpick.p, st);
    REQUIRE(cudaStreamSynchronize(st) == cudaSuccess);
    const std::vector<int> got = dpick.get();
    for (int r = 0; r < kRows; ++r) {
      const float* row = &z[size_t(r) * V];
      const SamplingParams& p = params[size_t(r)];
      INFO("row " << r << " temperature " << s.temperature << " top_p " << s.top_p << " min_p " << s.min_p
                  << " top_k " << s.top_k);
      const TokenId host = pick_token(row, V, p, TokenHistory{}, 100 + r);
      const std::vector<Candidate> c = sampling_candidates(row, V, p);
      const size_t at = host_draw_rank(c, host);
      // Only a top_p cut that needs ranks past the ordered ones comes back (c is then longer than them).
      CHECK((got[size_t(r)] < 0) == (s.top_p < 1.0f && c.size() > size_t(kDeviceSampleRanks)));
      if (got[size_t(r)] >= 0) {
        ++on_device;
        past_ranks += at >= size_t(kDeviceSampleRanks);
        CHECK(got[size_t(r)] == host);
      } else {
        ++handed_back;
        CHECK(got[size_t(r)] == -1);
      }
    }
  }
  INFO("device " << on_device << " (" << past_ranks << " past the ordered ranks) handed back " << handed_back);
  CHECK(on_device >= int(settings.size()) * kRows / 2);  // every row without a top_p cut stays on the device
  CHECK(past_ranks >= kRows / 3);                        // the flat rows' draws walk the rest
  cudaStreamDestroy(st);
}

TEST_CASE("device logprobs over a 128k vocabulary are compute_logprobs of the row") {
  REQUIRE(CudaBackend::device_count() > 0);
  const int V = 128256, kRows = 6;
  std::mt19937 rng(41);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  std::vector<float> z(size_t(kRows) * V);
  for (float& v : z) v = nd(rng);
  z[size_t(1) * V + 7] = z[size_t(1) * V + 9] = 40.0f;  // a tie at the top: the lower id first
  Dev<float> dz(z.size());
  dz.put(z);
  const int asked[kRows] = {0, 5, 20, 1, 20, 3};
  std::vector<int32_t> spec(size_t(kRows) * kPickWords, 0);
  std::vector<int> picks(kRows);
  for (int r = 0; r < kRows; ++r) {
    spec[size_t(r) * kPickWords + kPickLogprobsWord] = r == 0 ? 0 : asked[r] + 1;  // row 0 asks for nothing
    picks[size_t(r)] = (r * 7919) % V;
  }
  Dev<int32_t> dspec(spec.size());
  dspec.put(spec);
  Dev<int> dpick(kRows);
  dpick.put(picks);
  Dev<float> dout(size_t(kRows) * kLogprobWords);
  dout.put(std::vector<float>(size_t(kRows) * kLogprobWords, -7.0f));
  launch_logprobs(dz.p, kRows, V, dspec.p, dpick.p, dout.p, nullptr);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  const std::vector<float> out = dout.get();
  CHECK(out[0] == -7.0f);  // untouched
  for (int r = 1; r < kRows; ++r) {
    INFO("row " << r);
    float lp = 0;
    std::vector<TopLogprob> top;
    compute_logprobs(&z[size_t(r) * V], V, picks[size_t(r)], asked[r], &lp, &top);
    const float* w = &out[size_t(r) * kLogprobWords];
    CHECK(w[0] == lp);
    for (int k = 0; k < asked[r]; ++k) {
      int32_t id;
      std::memcpy(&id, &w[1 + 2 * k], 4);
      CHECK(id == top[size_t(k)].token);
      CHECK(w[2 + 2 * k] == top[size_t(k)].logprob);
    }
  }
}

TEST_CASE("the device argmax follows argmax_token: largest value, lowest id among equals, NaN never wins") {
  REQUIRE(CudaBackend::device_count() > 0);
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  // Vocabularies with and without the four-wide loads, rows built to pin each rule.
  for (int vocab : {128256, 512, 1001, 7}) {
    const int rows = 6;
    std::vector<float> z(size_t(rows) * vocab);
    for (float& v : z) v = nd(rng);
    auto at = [&](int r, int i) -> float& { return z[size_t(r) * vocab + size_t(i)]; };
    // Row 0: random. Row 1: the maximum tied at three ids, the lowest in the middle of a four-wide group.
    const int a = std::min(vocab - 1, 4 * (vocab / 9) + 2), b = vocab - 1, c = std::min(vocab - 1, a + 1);
    for (int i : {a, b, c}) at(1, i) = 50.0f;
    // Row 2: NaN everywhere a value would win, the real maximum elsewhere.
    for (int i = 0; i < vocab; i += 3) at(2, i) = NAN;
    int m = vocab / 2;
    if (m % 3 == 0) ++m;  // not one of the NaN ids
    at(2, m) = 60.0f;
    // Row 3: every value -inf: token 0. Row 4: -inf and NaN only: token 0. Row 5: +inf once.
    for (int i = 0; i < vocab; ++i) at(3, i) = -INFINITY, at(4, i) = i % 2 ? NAN : -INFINITY;
    at(5, vocab - 2) = INFINITY;
    Dev<float> dz(z.size());
    dz.put(z);
    Dev<int> picks(rows);
    launch_argmax(dz.p, rows, vocab, picks.p, nullptr);
    CU(cudaDeviceSynchronize());
    const std::vector<int> got = picks.get();
    for (int r = 0; r < rows; ++r) {
      INFO("vocab " << vocab << " row " << r);
      CHECK(got[size_t(r)] == argmax_token(z.data() + size_t(r) * vocab, vocab));
    }
    CHECK(got[1] == std::min({a, b, c}));
    CHECK(got[2] == m);
    CHECK(got[3] == 0);
    CHECK(got[4] == 0);
  }
}
