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
// Keeping in step with the target: after a propose() of k drafts the draft slot holds the history and the
// first k - 1 drafts, each draft step having fed one row. The next propose() truncates the slot to where it
// agrees with the new history (Backend::truncate: the accepted drafts stay) and feeds the rest (the bonus
// pick, or the first rejected position on). A history that shares nothing with what the slot holds (after
// an engine restart) is recomputed from the start.
class DraftModelDrafter : public Drafter {
 public:
  explicit DraftModelDrafter(std::shared_ptr<Backend> draft);
  ~DraftModelDrafter() override;
  DraftModelDrafter(const DraftModelDrafter&) = delete;
  DraftModelDrafter& operator=(const DraftModelDrafter&) = delete;

  const char* name() const override { return "draft-model"; }
  // Throws strata::Error when the draft backend does (bad window, device fault); proposes nothing while
  // the draft backend has no free slot.
  std::vector<TokenId> propose(const std::vector<TokenId>& history, int max_k) override;
  // All jobs' drafters share this backend: every draft step of every job runs in one window (or as few as
  // the backend's window size allows). propose() is this with one job.
  const void* batch_key() const override { return draft_.get(); }
  void propose_together(std::vector<DraftJob>& jobs) override;

 private:
  // Opens the slot on first use and cuts it back to where it agrees with the history; false when the draft
  // backend has no free slot.
  bool prepare(const std::vector<TokenId>& history);

  std::shared_ptr<Backend> draft_;
  SlotId slot_ = kNoSlot;
  std::vector<TokenId> cached_;  // the tokens the draft slot holds, position by position
  bool dirty_ = false;           // a proposal did not complete: the slot's contents are unknown
};

}  // namespace strata
