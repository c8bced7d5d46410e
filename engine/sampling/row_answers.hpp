// The host's part of a window's output rows, shared by the backends: a row's pick (unless the device made
// it), its logprobs and its logits, from the row's logits. Rows are independent and each is computed whole
// by one thread, so a pool may split them any way without changing a bit; with 128 rows of a 128k
// vocabulary, sampled (about 2-4 ms a row on one core) or with logprobs, one thread would keep the
// accelerator waiting for the better part of a second.
#pragma once
#include <functional>
#include <vector>

#include "engine/core/backend.hpp"
#include "engine/sampling/sampler.hpp"

namespace strata {

struct RowAnswer {
  const float* logits = nullptr;  // vocab floats (may be null when only a device pick is taken)
  const SamplingParams* params = nullptr;
  TokenHistory history;
  int32_t pos = 0;
  bool want_pick = false;
  int n_logprobs = -1;
  bool want_logits = false;
  TokenId device_pick = -1;  // >= 0: the device's pick, taken as is
  RowResult* out = nullptr;
};

// parallel_for(n, fn) runs fn(begin, end) over parts of [0, n) and returns when all are done (a thread pool's
// parallel_for); null runs everything on the calling thread.
using ParallelFor = std::function<void(int, const std::function<void(int, int)>&)>;

// Fills every row's out: pick (device_pick, or pick_token on the logits), logprobs of that pick, logits.
void answer_rows(std::vector<RowAnswer>& rows, int vocab, const ParallelFor& parallel_for);

}  // namespace strata
