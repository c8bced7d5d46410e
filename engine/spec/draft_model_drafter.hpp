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
// Keeping in step with the target: after every propose() the draft slot holds exactly history minus its last
// token, whatever the verifier then accepts. Each draft step therefore runs [last, d1..dj-1] and commits none
// of it, so the next propose() only has to feed what the target accepted since (accepted drafts, the bonus
// pick and the old last token). A history that no longer extends what the slot holds (after an engine
// restart) is recomputed from the start.
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

 private:
  // Runs `tokens` at positions first_pos.. and returns the last row's pick.
  TokenId run(const std::vector<TokenId>& tokens, int32_t first_pos);

  std::shared_ptr<Backend> draft_;
  SlotId slot_ = kNoSlot;
  std::vector<TokenId> cached_;  // the tokens the draft slot holds, position by position
};

}  // namespace strata
