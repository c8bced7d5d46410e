// Draft-model drafter: a second, smaller checkpoint with the target's tokenizer proposes the next tokens by
// greedy decoding on its own backend slot (--draft-model). The target verifies them, so a poor draft model
// only costs speed.
#pragma once
#include <memory>
#include <vector>

#include "engine/core/backend.hpp"
#include "engine/spec/drafter.hpp"

namespace strata {

// One per request; all of a server's drafters share one draft backend and each holds one of its slots.
// Only the engine thread calls it (the Backend contract).
//
// The draft slot holds entries, one row each: entry i of a token draft is history token i at position i. A
// feature draft (feature_dim > 0, ModelConfig::feature_input) reads the target's feature beside each token:
// its entry i is history token i + 1 with the target's feature at position i (what predicted that token), at
// draft position i, as tools/train/eagle_draft.py trains it. Its chained steps read the draft's own feature.
//
// Keeping in step with the target: after a propose() of k drafts the draft slot holds the history's entries
// and k - 1 chained ones, one row per draft step. The next propose() truncates the slot to the entries that
// still agree with the new history (Backend::truncate) and feeds the rest: a token draft keeps the accepted
// drafts' entries, a feature draft only those fed with the target's features (a chained entry read the
// draft's own). A history that shares nothing with what the slot holds (after an engine restart) is
// recomputed from the start; a target feature the drafter never got (a prompt prefix the target's prefix
// cache supplied) reads as zeros, which costs acceptance, not correctness.
//
// Drafting ahead (Backend::run_chain_ahead, on by default where the draft backend overlaps_ahead()): each chain
// of k steps runs k + 2 more on the guess that the target keeps all k drafts and then picks what the draft
// picks next (up to k + 1 drafts after that), while the target verifies. Those picks are the start of a
// stream, the draft's greedy continuation past the proposal. When the next history is the proposal, then the
// stream's first token (and possibly more of the stream's tokens, kept as part of a copy), the next proposal is
// the stream's next tokens, with no draft work on that round's path, and the stream goes on
// (Backend::extend_ahead, from while_verifying()) while the target verifies it. Any other history drops the
// stream and its rows are cut like any chained rows.
//
// critical > 0 (drafting ahead only) caps the steps a round drafts when it must wait for them: such a round
// proposes at most that many drafts, the cheaper round on the path, and its stream still drafts as many as
// the engine asks for.
//
// `lookup` (drafting ahead, token drafts only; optional) is asked first in such a round: a drafter that costs no
// device work (prompt lookup; the server's needs a match of --spec-draft-lookup-min tokens for a proposal of its
// own). When it proposes something, that is the round's proposal, up to k tokens where the draft would have waited
// for `critical`: the draft model feeds it as known tokens in the chain's first window, and the chain's picks
// after it are the stream (the guess of the target's next pick and one draft: kLookupAhead steps, not k + 2, since
// the next round is as likely to be lookup's again and the draft's steps beside the target's window slow it). Such
// a chain returns nothing now (run_chain_ahead with steps 0), so a round whose jobs all have lookup proposals
// waits for no draft work: its chain is launched in while_verifying(), after the target's window, or by the
// drafter's next call where no window verified the proposal. Lookup's proposals may fill the job's room (its
// reach, NgramDrafter), and the draft's own proposals (a stream's, or a waiting round's) are followed by what
// lookup copies after them (NgramDrafter::extend), within the room: the window verifies the copy at the cost of a
// few rows.
//
// Without drafting ahead (the CPU backend), `lookup` and the draft model are rivals: each round that both
// propose for is scored afterwards (the drafts each proposal would have kept, as far as the history that
// followed says), and lookup's proposal serves a round while its weighted average is the higher; the draft
// then runs nothing that round (its slot catches up when it next drafts). Text that loops over a span longer
// than the draft can copy goes to lookup, text the draft predicts better stays with the draft. (Drafting
// ahead, the same rule lost tokens: on the CPU backend with STRATA_DRAFT_AHEAD=1, 2.27 against 2.40 kept
// drafts a round on the bench's novel prompts; a stream dropped for lookup leaves the next round waiting.)
class DraftModelDrafter : public Drafter {
 public:
  enum class Ahead { Auto, On, Off };
  explicit DraftModelDrafter(std::shared_ptr<Backend> draft, int feature_dim = 0, Ahead ahead = Ahead::Auto,
                             int critical = 0, std::unique_ptr<Drafter> lookup = nullptr);
  ~DraftModelDrafter() override;
  DraftModelDrafter(const DraftModelDrafter&) = delete;
  DraftModelDrafter& operator=(const DraftModelDrafter&) = delete;

  const char* name() const override { return feature_dim_ > 0 ? "feature-draft" : "draft-model"; }
  // Throws strata::Error when the draft backend does (bad window, device fault); proposes nothing while
  // the draft backend has no free slot.
  using Drafter::propose;
  std::vector<TokenId> propose(const std::vector<TokenId>& history, int max_k, const DraftRoom& room) override;
  // All jobs' drafters share this backend: every draft step of every job runs in one window (or as few as
  // the backend's window size allows). propose() is this with one job.
  const void* batch_key() const override { return draft_.get(); }
  void propose_together(std::vector<DraftJob>& jobs) override;
  // Goes on with the stream a proposal came from (Backend::extend_ahead), while the target verifies it.
  void while_verifying() override;
  bool drafted_ahead() const override { return last_ahead_; }
  int feature_dim() const override { return feature_dim_; }
  void take_feature(int32_t pos, std::vector<float>&& feature) override;

  // Steps a chain fed only lookup proposals drafts ahead: the guess of the target's next pick and one draft.
  static constexpr int kLookupAhead = 2;

  // The target features held for entries not yet fed, at most this many values (older ones are dropped and
  // read as zeros): a request that does not draft for a long stretch (a full batch) holds no more.
  static constexpr size_t kMaxHeldFeatureValues = size_t(1) << 24;

  // Proposals answered from the stream, ahead chains run, and streams extended (tests, logs).
  int ahead_hits() const { return ahead_hits_; }
  // Proposals `lookup` made: drafting ahead in rounds that waited; otherwise where it led its rival.
  int lookup_proposals() const { return lookup_proposals_; }
  int ahead_runs() const { return ahead_runs_; }
  int ahead_extends() const { return ahead_extends_; }

 private:
  // Opens the slot on first use and cuts it back to where it agrees with the history; false when the draft
  // backend has no free slot.
  bool prepare(const std::vector<TokenId>& history);
  // Entries of a history: one per token, or for a feature draft one per token after the first.
  size_t entries(const std::vector<TokenId>& history) const { return history.size() - shift_; }
  // Appends entries [from, to) of `history` to w (rows, and for a feature draft their target features).
  void add_entries(Window& w, const std::vector<TokenId>& history, size_t from, size_t to) const;
  // Forgets held features of entries before `pos`.
  void drop_features_before(size_t pos);

  // A chain of lookup proposals not launched yet: its first window, and the drafters whose slots it feeds.
  struct PendingChain {
    Window first;
    std::vector<DraftModelDrafter*> members;
  };
  // One run_chain_ahead's (or extend_ahead's) steps, shared by the drafters of its jobs: the first to need
  // them takes them.
  struct AheadGroup {
    uint64_t ticket = 0;
    size_t steps = 0;  // the picks it should give
    int holders = 0;   // drafters it continues the stream of (extend_ahead feeds all of them)
    bool taken = false;
    int more = 0;                              // steps to go on by in while_verifying(), when all hit
    std::vector<DraftModelDrafter*> waiting;  // its holders, then
    std::vector<std::vector<TokenId>> picks;  // [ahead step][job]
    std::unique_ptr<PendingChain> pending;    // until launched (launch_pending), with no ticket yet
  };
  // The proposal for `history` from the stream, when history is what it guessed. False: no such proposal,
  // and the stream is dropped.
  bool take_ahead(const std::vector<TokenId>& history, int max_k, std::vector<TokenId>* drafts);
  void drop_ahead() {
    ahead_.reset();
    stream_.clear();
    ahead_appended_ = false;
  }
  // Plans the streams of the jobs that took their proposals from them to go on (in while_verifying()).
  void plan_extension(const std::vector<DraftJob*>& hits);
  // Launches the chain of this drafter's stream when it is pending: every step ahead (run_chain_ahead with
  // steps 0). Throws what the backend throws, leaving the chain's slots to be reset.
  void launch_pending();
  void cancel_extension();
  // The draft's proposal in j.drafts (a stream's or a chain's) followed by what lookup copies after it, within
  // the job's room.
  void copy_on(DraftJob& j);
  // Scores the last round's rival proposals (rival_) against `history`, which follows them, and forgets them.
  void score_rivals(const std::vector<TokenId>& history);
  bool lookup_leads() const { return compared_ && lookup_score_ > draft_score_; }

  std::shared_ptr<Backend> draft_;
  int feature_dim_ = 0;
  bool ahead_on_ = false;
  int critical_ = 0;
  std::unique_ptr<Drafter> lookup_;  // prompt lookup; null unless given one, and for a feature draft
  int lookup_proposals_ = 0;
  // One round's rival proposals, lookup's and the draft model's (empty where it ran none), for a history of
  // `base` tokens; the rivals' kept drafts a round, exponentially weighted (the draft's over the rounds both
  // proposed for).
  struct Rivals {
    size_t base = 0;
    std::vector<TokenId> lookup, draft;
  };
  Rivals rival_;
  double lookup_score_ = 0.0, draft_score_ = 0.0;
  bool lookup_scored_ = false, compared_ = false;
  std::shared_ptr<AheadGroup> ahead_;  // the steps whose picks follow stream_, if any
  bool ahead_appended_ = false;        // their picks are in stream_ already
  size_t ahead_index_ = 0;             // this job's index among their picks
  std::vector<TokenId> ahead_base_;    // the history the stream follows
  std::vector<TokenId> stream_;        // its known tokens: the guess of the target's next pick first
  int ahead_hits_ = 0, ahead_runs_ = 0, ahead_extends_ = 0;
  bool last_ahead_ = false;  // the last proposal came from the stream
  size_t shift_ = 0;             // 1 for a feature draft: entry i holds history token i + 1
  SlotId slot_ = kNoSlot;
  std::vector<TokenId> cached_;  // the tokens of the entries the slot holds that a later history may keep
  size_t held_ = 0;              // the entries the slot holds (cached_ and, for a feature draft, chained ones)
  bool dirty_ = false;           // a proposal did not complete: the slot's contents are unknown
  size_t feat_from_ = 0;         // feats_ holds the target's features of positions feat_from_ on
  std::vector<float> feats_;
};

}  // namespace strata
