// Turning picks into what the client sees: stop conditions, detokenized text with stop strings held back,
// logprobs. Runs on the thread that owns the scheduler, one call per picked token.
//
// Stop rules (vLLM's): the first min_tokens tokens can never end a request. EOS (unless ignore_eos) and
// stop_token_ids end it with "stop"; such a token counts as generated but carries no text and no TokenEvent.
// A stop string ends it with "stop" and is never emitted. max_tokens ends it with "length".
#pragma once
#include <optional>
#include <vector>

#include "engine/core/slot_state.hpp"
#include "engine/core/waker.hpp"

namespace strata {

class OutputProcessor {
 public:
  // With a waker, token events are pushed without waking the reader and their channel is posted to the
  // waker (the caller flushes it once per window); without one, each push wakes its reader.
  OutputProcessor(const Tokenizer& tokenizer, std::vector<TokenId> eos_ids, Waker* waker = nullptr)
      : tok_(tokenizer), eos_(std::move(eos_ids)), waker_(waker) {}

  // Applies the pick of the request's last row. Pushes the TokenEvent (if any) to the channel and returns
  // the finish event when the request is done; the caller frees the slot and pushes it.
  std::optional<FinishEvent> accept(SlotState& s, const RowResult& r) const;

  // The finish of a request that ran out of tokens to generate without a pick (max_tokens reached).
  FinishEvent finish_length(SlotState& s) const;

  // Prompt logprobs: logits at position pos score prompt token pos + 1.
  void record_prompt_logprob(SlotState& s, int pos, const std::vector<float>& logits) const;

  // Tokens the backend must mask while min_tokens is not reached.
  std::vector<TokenId> min_tokens_mask(const GenerationRequest& req) const;
  bool ends_request(const GenerationRequest& req, TokenId t) const;

 private:
  FinishEvent finish(SlotState& s, FinishReason reason, std::string text, std::string stop) const;
  // Text left in the detokenizer at the end may still complete a stop string.
  void drain_tail(SlotState& s, FinishEvent& f) const;
  void ensure_first_prompt_logprob(SlotState& s) const;

  const Tokenizer& tok_;
  std::vector<TokenId> eos_;
  Waker* waker_;
};

}  // namespace strata
