#include "engine/spec/draft_model_drafter.hpp"

#include <algorithm>

namespace strata {

DraftModelDrafter::DraftModelDrafter(std::shared_ptr<Backend> draft) : draft_(std::move(draft)) {
  if (!draft_) throw Error("draft-model drafter: no draft backend");
}

DraftModelDrafter::~DraftModelDrafter() {
  if (slot_ == kNoSlot) return;
  try {
    draft_->close_slot(slot_);
  } catch (...) {
    // A draft backend that faults on close has nothing of this request left worth keeping.
  }
}

TokenId DraftModelDrafter::run(const std::vector<TokenId>& tokens, int32_t first_pos) {
  Window w;
  int32_t pos = first_pos;
  for (TokenId t : tokens) w.rows.push_back(Row{slot_, t, pos++});
  w.rows.back().want_pick = true;
  std::vector<RowResult> r = draft_->run_window(w);
  if (r.size() != w.rows.size())
    throw Error("draft backend returned " + std::to_string(r.size()) + " results for " +
                std::to_string(w.rows.size()) + " rows");
  return r.back().pick;
}

std::vector<TokenId> DraftModelDrafter::propose(const std::vector<TokenId>& history, int max_k) {
  if (max_k <= 0 || history.empty()) return {};
  if (slot_ == kNoSlot) {
    slot_ = draft_->open_slot();
    if (slot_ == kNoSlot) return {};
    SamplingParams greedy;
    greedy.temperature = 0.0f;
    draft_->set_sampling(slot_, greedy);
    cached_.clear();
  }
  const size_t keep = history.size() - 1;  // the slot's state after this call
  if (cached_.size() > keep || !std::equal(cached_.begin(), cached_.end(), history.begin())) {
    draft_->reset_slot(slot_);
    cached_.clear();
  }
  size_t from = cached_.size();
  // Catch up in windows the draft backend accepts (a long prompt is more rows than one window may hold);
  // every window but the last keeps all of its rows.
  const size_t max_rows = static_cast<size_t>(std::max(1, draft_->info().max_window_rows));
  while (history.size() - from > max_rows) {
    const auto first = history.begin() + static_cast<long>(from);
    run(std::vector<TokenId>(first, first + static_cast<long>(max_rows)), static_cast<int32_t>(from));
    from += max_rows;
    cached_.assign(history.begin(), history.begin() + static_cast<long>(from));
  }
  // The last of them drafts d1; keep everything but the last token, which every draft step re-runs.
  std::vector<TokenId> drafts{
      run(std::vector<TokenId>(history.begin() + static_cast<long>(from), history.end()), static_cast<int32_t>(from))};
  draft_->commit(slot_, static_cast<int>(keep - from));
  cached_.assign(history.begin(), history.begin() + static_cast<long>(keep));
  while (static_cast<int>(drafts.size()) < max_k) {
    std::vector<TokenId> step{history.back()};
    step.insert(step.end(), drafts.begin(), drafts.end());
    TokenId next = run(step, static_cast<int32_t>(keep));
    draft_->commit(slot_, 0);
    drafts.push_back(next);
  }
  return drafts;
}

}  // namespace strata
