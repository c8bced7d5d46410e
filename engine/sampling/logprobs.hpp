// Logprobs as the OpenAI API reports them: log-softmax of the model's raw logits, before penalties, bias or
// temperature, so they describe the model and not the request's sampling settings.
#pragma once
#include <vector>

#include "engine/core/backend.hpp"

namespace strata {

// Fills *pick_logprob (when pick >= 0) and *top with the n_top most likely tokens, descending, lower id first
// on ties. Sums run in double in token order, chunked as a GPU warp adds them (chunked_sum.hpp), so the
// result does not depend on the caller and the device gives the same.
void compute_logprobs(const float* logits, int vocab, TokenId pick, int n_top, float* pick_logprob,
                      std::vector<TopLogprob>* top);

}  // namespace strata
