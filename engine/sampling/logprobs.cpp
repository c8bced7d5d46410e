#include "engine/sampling/logprobs.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/sampling/chunked_sum.hpp"

namespace strata {

void compute_logprobs(const float* z, int vocab, TokenId pick, int n_top, float* pick_logprob,
                      std::vector<TopLogprob>* top) {
  double m = -std::numeric_limits<double>::infinity();
  for (int i = 0; i < vocab; ++i) m = std::max(m, double(z[i]));
  ChunkedSum s;  // the device's order too (cuda/kernels/logprobs.cu)
  for (int i = 0; i < vocab; ++i) s.add(std::exp(double(z[i]) - m));
  const double lse = m + std::log(s.value());
  if (pick_logprob && pick >= 0 && pick < vocab) *pick_logprob = float(double(z[pick]) - lse);
  if (!top) return;
  top->clear();
  const int n = std::min(std::max(n_top, 0), vocab);
  if (n == 0) return;
  std::vector<TokenId> ids(static_cast<size_t>(vocab));
  for (int i = 0; i < vocab; ++i) ids[size_t(i)] = i;
  std::partial_sort(ids.begin(), ids.begin() + n, ids.end(),
                    [&](TokenId a, TokenId b) { return z[a] > z[b] || (z[a] == z[b] && a < b); });
  for (int i = 0; i < n; ++i) top->push_back({ids[size_t(i)], float(double(z[ids[size_t(i)]]) - lse)});
}

}  // namespace strata
