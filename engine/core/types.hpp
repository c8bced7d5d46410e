// Basic vocabulary types shared by every component (see ../shared DESIGN.md "Vocabulary").
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace strata {

using TokenId = int32_t;
using SlotId = int32_t;
constexpr SlotId kNoSlot = -1;

// Per-request sampling settings. A row's pick is a pure function of (logits, these settings, the slot's token
// history, the row's position): that is what makes speculation and batching exact.
struct SamplingParams {
  float temperature = 1.0f;  // <= 0 means greedy argmax
  int top_k = 0;             // 0 = off
  float top_p = 1.0f;        // 1 = off
  float min_p = 0.0f;        // 0 = off
  uint64_t seed = 0;         // uniform for position p = Philox4x32-10(key = seed, counter = p)
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  float repetition_penalty = 1.0f;
  int penalty_window = 0;    // 0 = whole history; else only the last N tokens count
  std::vector<std::pair<TokenId, float>> logit_bias;
  std::vector<TokenId> suppressed;  // tokens masked to -inf (EOS while min_tokens is not reached)
  bool greedy() const { return temperature <= 0.0f; }
};

// A clear error raised by a component; `what()` names the thing that is wrong.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A window needs more KV blocks than the backend's pool can supply. Raised before anything changes, so the
// engine can preempt a request and run the window again.
struct KvExhausted : Error {
  using Error::Error;
};

}  // namespace strata
