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

  // A pick in two steps, so that the engine can start the next window between them (the text is host work
  // the next window does not depend on). accept_pick() is what the next window needs: the token joins the
  // history, and the ids alone say whether the request ends here (EOS or a stop id past min_tokens: StopId;
  // max_tokens reached: Length). emit_pick() then does the text: detokenizes, holds back a possible stop
  // string, pushes the TokenEvent (none for a StopId token), and returns the finish event when the request
  // ends at this token, which a stop string can make happen on a Continue. `n_at` is n_generated right after
  // this token: with speculation later tokens may already be accepted, and a stop string here drops them.
  enum class Verdict { Continue, StopId, Length };
  Verdict accept_pick(SlotState& s, TokenId t) const;
  std::optional<FinishEvent> emit_pick(SlotState& s, RowResult r, Verdict v, int n_at) const;

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
