#include "engine/sampling/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "engine/sampling/chunked_sum.hpp"
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

namespace {

struct Item {
  TokenId id;
  float z;
  double w;  // exp((z - z_max) / T): 1 for the top token
};

inline bool ranks_before(const Item& a, const Item& b) { return a.z > b.z || (a.z == b.z && a.id < b.id); }


// The kept candidates of one pick, sorted lazily: a draw usually stops within the first few dozen tokens,
// so only that prefix of a 150k vocabulary is ever put in order. Whole-set sums run in token-id order and
// cumulative sums in rank order over a prefix, so the result is the same however much got sorted.
class Candidates {
 public:
  // Buffers are per thread and reused: a pick over a 150k vocabulary otherwise spends more time faulting in
  // fresh megabytes than computing.
  Candidates(const float* z, int vocab, const SamplingParams& p)
      : by_id_(scratch(0)), ranked_(scratch(1)) {
    by_id_.clear();
    for (int i = 0; i < vocab; ++i)
      if (std::isfinite(z[i])) by_id_.push_back({i, z[i], 0.0});
    if (by_id_.empty()) return;
    if (p.top_k > 0 && size_t(p.top_k) < by_id_.size()) {
      std::vector<Item>& tmp = scratch(2);
      tmp = by_id_;
      std::nth_element(tmp.begin(), tmp.begin() + (p.top_k - 1), tmp.end(), ranks_before);
      const Item kth = tmp[size_t(p.top_k - 1)];
      by_id_.erase(std::remove_if(by_id_.begin(), by_id_.end(), [&](const Item& x) { return ranks_before(kth, x); }),
                   by_id_.end());
    }
    float z_max = by_id_.front().z;
    for (const Item& x : by_id_) z_max = std::max(z_max, x.z);
    const double inv_t = 1.0 / double(p.temperature);
    ChunkedSum total_sum;
    for (Item& x : by_id_) {
      x.w = std::exp((double(x.z) - double(z_max)) * inv_t);
      total_sum.add(x.w);
    }
    const double total = total_sum.value();
    ranked_.assign(by_id_.begin(), by_id_.end());

    size_t keep = by_id_.size();
    if (p.min_p > 0.0f) {
      // Weights fall along the ranking, so the tokens at or above min_p are a prefix of it.
      size_t n = 0;
      for (const Item& x : by_id_) n += x.w >= double(p.min_p);
      keep = std::max<size_t>(n, 1);
    }
    if (p.top_p < 1.0f) {
      const double target = double(p.top_p) * total;
      double cum = 0.0;
      for (size_t i = 0; i < keep; ++i) {
        cum += rank(i).w;
        if (cum >= target) {
          keep = i + 1;
          break;
        }
      }
    }
    keep_ = keep;
    if (keep_ == by_id_.size()) {
      kept_total_ = total;
    } else {
      const Item last = rank(keep_ - 1);
      ChunkedSum kept;
      for (const Item& x : by_id_) kept.add(ranks_before(last, x) ? 0.0 : x.w);
      kept_total_ = kept.value();
    }
  }

  size_t size() const { return keep_; }
  // The i-th kept candidate in rank order (i < size()).
  const Item& rank(size_t i) {
    if (i >= sorted_) {
      size_t m = std::min(ranked_.size(), std::max<size_t>(2 * i + 1, 32));
      std::nth_element(ranked_.begin() + long(sorted_), ranked_.begin() + long(m) - 1, ranked_.end(), ranks_before);
      std::sort(ranked_.begin() + long(sorted_), ranked_.begin() + long(m), ranks_before);
      sorted_ = m;
    }
    return ranked_[i];
  }
  double prob(size_t i) { return rank(i).w / kept_total_; }

  // The draw past the first kSamplerRankedWalk ranks (size() > kSamplerRankedWalk), cum the walk's sum so
  // far: the rest of the kept set in id order, chunk by chunk (sampler.hpp).
  TokenId draw_rest(double cum, double u) {
    const Item last_ranked = rank(kSamplerRankedWalk - 1);
    const bool all = keep_ == by_id_.size();
    const Item last_kept = all ? last_ranked : rank(keep_ - 1);
    auto in_rest = [&](const Item& x) { return ranks_before(last_ranked, x) && (all || !ranks_before(last_kept, x)); };
    TokenId last = -1;
    for (size_t i = 0; i < by_id_.size();) {
      const int chunk = by_id_[i].id / kSamplerSumChunk;
      size_t j = i;
      LaneSum chunk_sum;
      for (; j < by_id_.size() && by_id_[j].id / kSamplerSumChunk == chunk; ++j)
        if (in_rest(by_id_[j])) {
          chunk_sum.add(by_id_[j].id, by_id_[j].w / kept_total_);
          last = by_id_[j].id;
        }
      const double sum = chunk_sum.value();
      if (u < cum + sum) {
        for (size_t k = i; k < j; ++k)
          if (in_rest(by_id_[k])) {
            cum += by_id_[k].w / kept_total_;
            last = by_id_[k].id;
            if (u < cum) return last;
          }
        return last;
      }
      cum += sum;
      i = j;
    }
    return last;
  }

 private:
  static std::vector<Item>& scratch(int i) {
    thread_local std::vector<Item> buffers[3];
    return buffers[i];
  }

  std::vector<Item>& by_id_;   // the top_k survivors, in id order
  std::vector<Item>& ranked_;  // the same, ranks [0, sorted_) in final order
  size_t sorted_ = 0;
  size_t keep_ = 0;
  double kept_total_ = 0.0;
};

}  // namespace

std::vector<Candidate> sampling_candidates(const float* z, int vocab, const SamplingParams& p) {
  Candidates c(z, vocab, p);
  std::vector<Candidate> out;
  for (size_t i = 0; i < c.size(); ++i) out.push_back({c.rank(i).id, c.prob(i)});
  return out;
}

TokenId draw_candidate(const std::vector<Candidate>& c, double u) {
  double cum = 0.0;
  const size_t ranked = std::min(c.size(), size_t(kSamplerRankedWalk));
  for (size_t i = 0; i < ranked; ++i) {
    cum += c[i].prob;
    if (u < cum) return c[i].token;
  }
  if (c.size() == ranked) return c.back().token;  // u within rounding of 1
  std::vector<Candidate> rest(c.begin() + long(ranked), c.end());
  std::sort(rest.begin(), rest.end(), [](const Candidate& a, const Candidate& b) { return a.token < b.token; });
  for (size_t i = 0; i < rest.size();) {
    const int chunk = rest[i].token / kSamplerSumChunk;
    size_t j = i;
    LaneSum chunk_sum;
    for (; j < rest.size() && rest[j].token / kSamplerSumChunk == chunk; ++j) chunk_sum.add(rest[j].token, rest[j].prob);
    const double sum = chunk_sum.value();
    if (u < cum + sum) {
      for (size_t k = i; k < j; ++k) {
        cum += rest[k].prob;
        if (u < cum) return rest[k].token;
      }
      return rest[j - 1].token;
    }
    cum += sum;
    i = j;
  }
  return rest.back().token;
}

TokenId pick_token(const float* logits, int vocab, const SamplingParams& p, TokenHistory h, int32_t pos) {
  thread_local std::vector<float> z;
  z.assign(logits, logits + vocab);
  apply_logit_processors(z.data(), vocab, p, h);
  if (p.greedy()) return argmax_token(z.data(), vocab);
  Candidates c(z.data(), vocab, p);
  if (c.size() == 0) return argmax_token(z.data(), vocab);
  // The same walk as draw_candidate over sampling_candidates, stopping as soon as the draw is decided.
  const double u = philox_uniform(p.seed, uint64_t(uint32_t(pos)));
  double cum = 0.0;
  const size_t ranked = std::min(c.size(), size_t(kSamplerRankedWalk));
  for (size_t i = 0; i < ranked; ++i) {
    cum += c.prob(i);
    if (u < cum) return c.rank(i).id;
  }
  if (c.size() == ranked) return c.rank(c.size() - 1).id;  // u within rounding of 1
  return c.draw_rest(cum, u);
}

}  // namespace strata
