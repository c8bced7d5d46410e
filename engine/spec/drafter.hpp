// Drafters propose up to k tokens after a slot's last token (DESIGN.md "drafter"). The Verifier decides: a
// draft is kept exactly when it equals the target's own pick at its row, so a drafter can only cost speed,
// never change output. That is why propose() may return anything, including nothing.
#pragma once
#include <algorithm>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/core/types.hpp"

namespace strata {

class Drafter;

// How far a proposal may run past max_k with drafts that cost no draft work to make (prompt lookup's copies):
// on a device backend a verify window of up to its exact rows costs little more than one of k + 1 rows.
struct DraftRoom {
  int cheap = 0;  // drafts the window holds at about no cost (BackendInfo::cheap_rows): filled whenever copied
  int most = 0;   // the most drafts the window takes for this slot (--spec-lookup-k, max_tokens, exact rows)
};

// One slot's request for drafts in a batched proposal (Drafter::propose_together).
struct DraftJob {
  Drafter* drafter = nullptr;
  const std::vector<TokenId>* history = nullptr;
  int max_k = 0;
  DraftRoom room;               // see Drafter::propose
  std::vector<TokenId> drafts;  // the answer
};

class Drafter {
 public:
  virtual ~Drafter() = default;
  virtual const char* name() const = 0;
  // `history` is the slot's whole token sequence (prompt + accepted output), its last token not yet run.
  // max_k (the engine's adaptive k) bounds what the drafter makes with work of its own (a draft model's
  // steps); drafts that cost nothing to make may go on into `room`.
  virtual std::vector<TokenId> propose(const std::vector<TokenId>& history, int max_k, const DraftRoom& room) = 0;
  // The same with no room beyond max_k.
  std::vector<TokenId> propose(const std::vector<TokenId>& history, int max_k) {
    return propose(history, max_k, DraftRoom{max_k, max_k});
  }
  // What this drafter proposes after `drafts`, another drafter's proposal for `history`, within the room
  // (drafts included; max_k and room as in propose). For drafters that cost nothing to ask (prompt lookup);
  // the default proposes nothing.
  virtual std::vector<TokenId> extend(const std::vector<TokenId>& history, const std::vector<TokenId>& drafts,
                                      int max_k, const DraftRoom& room) {
    (void)history;
    (void)drafts;
    (void)max_k;
    (void)room;
    return {};
  }
  // Drafters whose proposals can share work return the same non-null key (the draft model: its backend, so
  // all slots' draft steps run as one window); propose_together() is then called on one of them with jobs
  // whose drafters all have that key. The default key is null and the default runs propose() per job.
  virtual const void* batch_key() const { return nullptr; }
  virtual void propose_together(std::vector<DraftJob>& jobs) {
    for (DraftJob& j : jobs) j.drafts = j.drafter->propose(*j.history, j.max_k, j.room);
  }
  // Called once the target's window that verifies this drafter's proposal has started, before its results
  // are waited for: work toward the next proposal that can overlap the verification (the draft model's
  // stream). It may throw like propose(); the default does nothing.
  virtual void while_verifying() {}
  // Whether the last proposal was made before it was asked for (drafting ahead): no draft work was on its
  // round's path (metrics).
  virtual bool drafted_ahead() const { return false; }
  // A drafter that reads the target's features (the final-normed hidden state its LM head reads) says how wide
  // they are; the engine then asks the target for the feature of every row it runs for this request and hands
  // over each kept row's through take_feature(), in position order, before the next propose(). 0 (the
  // default): it reads none.
  virtual int feature_dim() const { return 0; }
  // The target's feature at position `pos` of the history.
  virtual void take_feature(int32_t pos, std::vector<float>&& feature) {
    (void)pos;
    (void)feature;
  }
};

// Prompt lookup: find the longest suffix of the history (max_n down to min_n tokens) that occurred earlier,
// take its most recent earlier occurrence, and propose what followed it, max_k tokens (continue_copy: where
// the occurrence is fewer than max_k tokens back, the copy runs on into the proposal, repeating that period).
// No weights; it pays off where the output copies spans of the context (code edits, summaries, RAG) or
// repeats itself.
//
// One per request: it indexes the history as it grows (each n-gram's latest end), so a proposal costs the
// new tokens and a lookup per n, not a scan of the whole history (a 4k-token history took ~0.08 ms a
// proposal that way, a 32k one ~0.6 ms, on the development VM). A history that is not an extension of the
// last one is indexed afresh. The index holds up to (max_n - min_n + 1) entries a token: ~5 MB of host memory
// for a 32k-token request with the default 1..4.
//
// Reach: a copy costs no draft work, so a proposal fills the window's cheap rows (DraftRoom::cheap) and may
// run on up to the most it takes, but past the cheap rows only while copying pays: each proposal kept whole
// doubles the next one's length, and one the target cut short brings it back (after extend, a cut in the
// other drafter's drafts too: the copy after them was rows for nothing). Text that copies a long span is
// verified in few windows; a wrong guess costs no more than the rows a window holds at no cost.
//
// propose_min_n: the shortest match a proposal of its own needs (default min_n); extend still copies after
// any min_n match. Beside a draft model that predicts the target well a short match is the weaker guess
// (--spec-draft-lookup-min; docs/PERFORMANCE.md, run 140).
class NgramDrafter : public Drafter {
 public:
  NgramDrafter(int min_n = 1, int max_n = 4, int propose_min_n = 0);
  const char* name() const override { return "ngram"; }
  using Drafter::propose;
  std::vector<TokenId> propose(const std::vector<TokenId>& history, int max_k, const DraftRoom& room) override;
  // The continuation of history + drafts, within the room and the reach. The drafts are not indexed (they
  // may be rejected); a match may still end inside them.
  std::vector<TokenId> extend(const std::vector<TokenId>& history, const std::vector<TokenId>& drafts, int max_k,
                              const DraftRoom& room) override;
  // max_k tokens copied from history[from..] on, the copy reading its own output past the history's end.
  static std::vector<TokenId> continue_copy(const std::vector<TokenId>& history, int from, int max_k);
  // The length the next proposal may reach past the cheap rows (0: none); tests.
  int reach() const { return reach_; }

 private:
  // Brings the index up to `h`: every n-gram that ends before h's last token.
  void index(const std::vector<TokenId>& h);
  struct Joined;
  // The latest earlier end of the longest suffix of `seq` (min_n to max_n_ tokens, min_n >= min_n_) in its
  // history (the index) or past it, among the drafts it is followed by (a scan); -1: none.
  int match(const Joined& seq, int min_n) const;
  // continue_copy over `seq`.
  static std::vector<TokenId> copy(const Joined& seq, int from, int max_k);
  // Scores the last proposal against `h` (which follows it) and sets the reach.
  void settle(const std::vector<TokenId>& h);
  int want(int max_k, const DraftRoom& room) const {
    return std::min(std::max(room.most, max_k), std::max({max_k, room.cheap, reach_}));
  }
  int min_n_, max_n_, propose_min_n_;
  int reach_ = 0;
  // The last proposal (empty: none to score; after extend, the other drafter's drafts and the copy) and the
  // history length it followed.
  std::vector<TokenId> proposed_;
  size_t proposed_at_ = 0;
  std::vector<TokenId> seen_;  // the history indexed
  // [n - min_n_]: an n-gram's hash -> the latest end p (h[p - n, p) is the n-gram, p < seen_.size()).
  std::vector<std::unordered_map<uint64_t, int32_t>> last_;
};

// Adaptive draft length per slot: draft fewer tokens while recent acceptance is low, so a drafter that
// cannot help costs about one extra row per window instead of k. --spec-k is the ceiling.
class AdaptiveK {
 public:
  explicit AdaptiveK(int max_k) : max_k_(max_k), k_(max_k) {}
  int next() const { return k_; }
  // After a verify window that proposed `proposed` drafts of which `accepted` were kept.
  void update(int proposed, int accepted);
  double acceptance() const { return ewma_; }

 private:
  int max_k_;
  int k_;
  double ewma_ = 1.0;  // exponentially weighted fraction of drafts kept
};

}  // namespace strata
