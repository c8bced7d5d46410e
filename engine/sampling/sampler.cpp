#include "engine/sampling/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "engine/sampling/philox.hpp"

namespace strata {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

std::string field_error(const char* field, const std::string& problem) {
  return std::string("sampling: ") + field + " " + problem;
}

}  // namespace

void validate_sampling_params(const SamplingParams& p, int vocab) {
  if (std::isnan(p.temperature) || std::isinf(p.temperature))
    throw Error(field_error("temperature", "must be a finite number"));
  if (p.top_k < 0) throw Error(field_error("top_k", "must be >= 0, found " + std::to_string(p.top_k)));
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f))
    throw Error(field_error("top_p", "must be in (0, 1], found " + std::to_string(p.top_p)));
  if (!(p.min_p >= 0.0f && p.min_p <= 1.0f))
    throw Error(field_error("min_p", "must be in [0, 1], found " + std::to_string(p.min_p)));
  if (!(p.repetition_penalty > 0.0f) || std::isinf(p.repetition_penalty))
    throw Error(field_error("repetition_penalty", "must be a finite number > 0"));
  if (!std::isfinite(p.presence_penalty)) throw Error(field_error("presence_penalty", "must be finite"));
  if (!std::isfinite(p.frequency_penalty)) throw Error(field_error("frequency_penalty", "must be finite"));
  if (p.penalty_window < 0) throw Error(field_error("penalty_window", "must be >= 0"));
  for (const auto& b : p.logit_bias) {
    if (b.first < 0 || b.first >= vocab)
      throw Error(field_error("logit_bias", "token " + std::to_string(b.first) + " is outside the vocabulary (size " +
                                                std::to_string(vocab) + ")"));
    if (std::isnan(b.second)) throw Error(field_error("logit_bias", "value for token " + std::to_string(b.first) +
                                                                          " is not a number"));
  }
  for (TokenId t : p.suppressed)
    if (t < 0 || t >= vocab)
      throw Error(field_error("suppressed", "token " + std::to_string(t) + " is outside the vocabulary (size " +
                                                std::to_string(vocab) + ")"));
}

void apply_logit_processors(float* z, int vocab, const SamplingParams& p, TokenHistory h) {
  const bool penalize = p.repetition_penalty != 1.0f || p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f;
  if (penalize && h.len > 0) {
    size_t first = 0;
    if (p.penalty_window > 0 && h.len > size_t(p.penalty_window)) first = h.len - size_t(p.penalty_window);
    std::vector<TokenId> seen(h.tokens + first, h.tokens + h.len);
    std::sort(seen.begin(), seen.end());
    for (size_t i = 0; i < seen.size();) {
      size_t j = i;
      while (j < seen.size() && seen[j] == seen[i]) ++j;
      const TokenId t = seen[i];
      const float count = float(j - i);
      i = j;
      if (t < 0 || t >= vocab) continue;
      float v = z[t];
      // Repetition penalty as in CTRL / transformers: it always moves a seen token's logit toward less likely.
      if (p.repetition_penalty != 1.0f) v = v > 0.0f ? v / p.repetition_penalty : v * p.repetition_penalty;
      v -= p.presence_penalty + p.frequency_penalty * count;
      z[t] = v;
    }
  }
  for (const auto& b : p.logit_bias)
    if (b.first >= 0 && b.first < vocab) z[b.first] += b.second;
  for (TokenId t : p.suppressed)
    if (t >= 0 && t < vocab) z[t] = kNegInf;
}

TokenId argmax_token(const float* z, int vocab) {
  TokenId best = 0;
  float best_v = kNegInf;
  for (int i = 0; i < vocab; ++i)
    if (z[i] > best_v) {
      best_v = z[i];
      best = i;
    }
  return best;
}

std::vector<Candidate> sampling_candidates(const float* z, int vocab, const SamplingParams& p) {
  struct Item {
    TokenId id;
    float z;
  };
  std::vector<Item> items;
  items.reserve(size_t(vocab));
  for (int i = 0; i < vocab; ++i)
    if (std::isfinite(z[i])) items.push_back({i, z[i]});
  if (items.empty()) return {};
  auto before = [](const Item& a, const Item& b) { return a.z > b.z || (a.z == b.z && a.id < b.id); };
  if (p.top_k > 0 && size_t(p.top_k) < items.size()) {
    std::nth_element(items.begin(), items.begin() + (p.top_k - 1), items.end(), before);
    items.resize(size_t(p.top_k));
  }
  std::sort(items.begin(), items.end(), before);

  // Weights relative to the top logit: exp((z - z_max) / T) is 1 for the top token, so min_p compares directly.
  const double inv_t = 1.0 / double(p.temperature);
  const double z_max = items.front().z;
  std::vector<double> w(items.size());
  double total = 0.0;
  for (size_t i = 0; i < items.size(); ++i) {
    w[i] = std::exp((double(items[i].z) - z_max) * inv_t);
    total += w[i];
  }
  size_t keep = items.size();
  if (p.top_p < 1.0f) {
    const double target = double(p.top_p) * total;
    double cum = 0.0;
    for (size_t i = 0; i < items.size(); ++i) {
      cum += w[i];
      if (cum >= target) {
        keep = i + 1;
        break;
      }
    }
  }
  if (p.min_p > 0.0f) {
    size_t n = 0;
    while (n < keep && w[n] >= double(p.min_p)) ++n;
    keep = std::max<size_t>(n, 1);
  }
  double kept = 0.0;
  for (size_t i = 0; i < keep; ++i) kept += w[i];
  std::vector<Candidate> out(keep);
  for (size_t i = 0; i < keep; ++i) out[i] = {items[i].id, w[i] / kept};
  return out;
}

TokenId draw_candidate(const std::vector<Candidate>& c, double u) {
  double cum = 0.0;
  for (const Candidate& x : c) {
    cum += x.prob;
    if (u < cum) return x.token;
  }
  return c.back().token;  // u within rounding of 1
}

TokenId pick_token(const float* logits, int vocab, const SamplingParams& p, TokenHistory h, int32_t pos) {
  std::vector<float> z(logits, logits + vocab);
  apply_logit_processors(z.data(), vocab, p, h);
  if (p.greedy()) return argmax_token(z.data(), vocab);
  std::vector<Candidate> c = sampling_candidates(z.data(), vocab, p);
  if (c.empty()) return argmax_token(z.data(), vocab);
  return draw_candidate(c, philox_uniform(p.seed, uint64_t(uint32_t(pos))));
}

}  // namespace strata
