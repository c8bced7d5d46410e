// The sampler: a pure function from (logits, SamplingParams, the slot's token history, the row's position) to
// the next token. Every backend calls it, so a pick never depends on batching, timing or which device ran
// the row — only on these inputs (DESIGN.md invariants 1 and 2).
#pragma once
#include <cstddef>
#include <vector>

#include "engine/core/types.hpp"

namespace strata {

// Throws strata::Error naming the field when params cannot be applied to a vocabulary of `vocab` tokens.
void validate_sampling_params(const SamplingParams& params, int vocab);

// The slot's own tokens: history[i] is the token at position i, for every position up to and including the
// row's (so history_len is normally pos + 1).
struct TokenHistory {
  const TokenId* tokens = nullptr;
  size_t len = 0;
};

// Rewrites logits in place, in this order: repetition, presence and frequency penalties over the last
// penalty_window tokens of the history (all of it when 0), then logit_bias, then suppressed tokens -> -inf.
void apply_logit_processors(float* logits, int vocab, const SamplingParams& params, TokenHistory history);

// Greedy pick over processed logits: the largest value, the lowest id among equals. NaN never wins; when
// every value is -inf the pick is token 0, so a request that masked everything still gets a defined answer.
TokenId argmax_token(const float* logits, int vocab);

struct Candidate {
  TokenId token;
  double prob;  // normalized over the kept candidates
};

// Whole-set sums of a pick run over the candidates in token-id order in chunks of this many, each chunk in
// a GPU warp's order (chunked_sum.hpp), then the chunk sums' running sum.
constexpr int kSamplerSumChunk = 1024;

// The tokens a non-greedy pick can draw, in rank order (probability descending, lower id first on ties),
// after temperature, top_k, min_p (kept when prob >= min_p * the top prob) and top_p (the smallest prefix
// reaching top_p of the top_k mass; at least one token). Whole-set sums run in token-id order
// (kSamplerSumChunk at a time), prefix sums in rank order. Empty when no logit is finite.
std::vector<Candidate> sampling_candidates(const float* processed_logits, int vocab, const SamplingParams& params);

// The draw walks the kept candidates' cumulative probability to u: in rank order through the first
// kSamplerRankedWalk of them, then (rarely: a flat distribution) the rest of them in token-id order, a chunk
// of kSamplerSumChunk ids at a time: u is compared against the running total plus each chunk's own sum
// (chunked_sum.hpp's LaneSum, lanes by id), and walked through the chunk it falls in (its last candidate when rounding leaves the walk short; the
// highest id of the rest when u is within rounding of 1). Any fixed order draws from the same distribution;
// this one lets a device place a draw deep in a 128k vocabulary in parallel (cuda/kernels/sample.cu).
constexpr int kSamplerRankedWalk = 1024;

// Walks the candidates (sampling_candidates order) to uniform u in [0, 1) as described above.
TokenId draw_candidate(const std::vector<Candidate>& candidates, double u);

// The whole pick: processors, then greedy argmax or a draw with philox_uniform(seed, pos).
TokenId pick_token(const float* logits, int vocab, const SamplingParams& params, TokenHistory history,
                   int32_t pos);

}  // namespace strata
