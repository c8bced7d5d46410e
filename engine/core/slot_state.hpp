// What the scheduler knows about one admitted request. Only the thread that owns the scheduler (the engine
// thread, or the watchdog during a recovery) reads or writes it.
#pragma once
#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "engine/core/request.hpp"
#include "engine/core/stop_matcher.hpp"
#include "engine/spec/drafter.hpp"
#include "engine/tokenizer/tokenizer.hpp"

namespace strata {

struct SlotState {
  using Clock = std::chrono::steady_clock;

  SlotState(std::shared_ptr<GenerationRequest> r, std::shared_ptr<RequestChannel> ch, const Tokenizer& tok,
            int effective_max_tokens)
      : req(std::move(r)), channel(std::move(ch)), seq(req->prompt), n_prompt(static_cast<int>(seq.size())),
        max_tokens(effective_max_tokens), detok(tok, req->skip_special_tokens), stops(req->stop) {}

  std::shared_ptr<GenerationRequest> req;
  std::shared_ptr<RequestChannel> channel;

  // Prompt then generated tokens. The slot's KV holds seq[0 .. n_cached); the next window feeds
  // seq[n_cached ..]. A restart sets n_cached to 0: the history is recomputed on the new backend, which
  // reproduces the same state because a row's result depends only on its slot's own rows.
  std::vector<TokenId> seq;
  int n_prompt = 0;
  int n_cached = 0;
  int prefix_hit = 0;  // prompt positions the prefix cache supplied at the first admission (usage's cached_tokens)
  int n_generated = 0;
  int max_tokens = 0;
  SlotId slot = kNoSlot;
  bool suppressing = false;  // the backend currently has EOS/stop ids masked (min_tokens not reached)

  DecodeStream detok;
  StopMatcher stops;

  std::vector<TokenEvent> prompt_logprobs;  // filled once; a recompute after a restart does not redo it
  int prompt_logprobs_done = 0;             // prompt positions whose logprob is known (position 0 has none)

  // Speculation. The drafter survives a restart: it sees the same seq afterwards, and a drafter with state
  // of its own (the draft model's slot) resynchronizes from the history it is handed.
  std::unique_ptr<Drafter> drafter;  // null: speculation off, or dropped after it threw
  std::optional<AdaptiveK> draft_k;
  std::vector<TokenId> drafts;       // proposed for the next window, after seq.back()
  bool drafts_ahead = false;         // ... made ahead (Drafter::drafted_ahead)
  int spec_windows = 0, spec_proposed = 0, spec_accepted = 0, spec_ahead = 0;

  // first_token: the window that picked it returned; first_event: its text went to the channel (flush_text,
  // once the next window has started).
  Clock::time_point admitted{}, first_token{}, first_event{}, last_token{};
  bool admitted_once = false;
  bool done = false;  // its FinishEvent has been pushed; nothing may be sent after it
  bool ending = false;  // its FinishEvent is made and about to be pushed (the engine's flush_text)

  // Rows the next window should feed for this request (0 once nothing is left to compute).
  int pending_rows() const { return static_cast<int>(seq.size()) - n_cached; }
  bool wants_pick() const { return n_generated < max_tokens; }
  bool decoding() const { return n_cached >= n_prompt; }
};

}  // namespace strata
