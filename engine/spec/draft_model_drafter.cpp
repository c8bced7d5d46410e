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

std::vector<TokenId> DraftModelDrafter::propose(const std::vector<TokenId>& history, int max_k) {
  std::vector<DraftJob> one{DraftJob{this, &history, max_k, {}}};
  propose_together(one);
  return std::move(one[0].drafts);
}

bool DraftModelDrafter::prepare(const std::vector<TokenId>& history) {
  if (slot_ == kNoSlot) {
    slot_ = draft_->open_slot();
    if (slot_ == kNoSlot) return false;
    SamplingParams greedy;
    greedy.temperature = 0.0f;
    draft_->set_sampling(slot_, greedy);
    cached_.clear();
    dirty_ = false;
  }
  if (dirty_) {  // a proposal that threw part-way left the slot's contents unknown
    draft_->reset_slot(slot_);
    cached_.clear();
  }
  // Keep what the slot holds as far as it agrees with the history minus its last token (which this
  // proposal feeds): the drafts the target accepted stay, the rest is cut off.
  const size_t limit = history.size() - 1;
  size_t common = 0;
  while (common < cached_.size() && common < limit && cached_[common] == history[common]) ++common;
  if (common < cached_.size()) cached_.resize(size_t(draft_->truncate(slot_, int(common))));
  dirty_ = true;  // until the proposal completes
  return true;
}

// Every job advances in lockstep: step 0 feeds each slot the history past what it holds (drafting d1), step
// j feeds dj alone (drafting dj+1), every row kept. All jobs' rows of a step share windows, so a batch of S
// slots costs k draft windows of about S rows, not S x k windows, and a device backend runs the k steps
// without a host round trip between them.
void DraftModelDrafter::propose_together(std::vector<DraftJob>& jobs) {
  struct Live {
    DraftModelDrafter* d;
    DraftJob* job;
    size_t from;
  };
  std::vector<Live> live;
  for (DraftJob& j : jobs) {
    j.drafts.clear();
    auto* d = static_cast<DraftModelDrafter*>(j.drafter);  // same batch key: a drafter on this backend
    const std::vector<TokenId>& h = *j.history;
    if (j.max_k <= 0 || h.empty() || !d->prepare(h)) continue;
    live.push_back(Live{d, &j, d->cached_.size()});
  }
  if (live.empty()) return;
  const size_t max_rows = static_cast<size_t>(std::max(1, draft_->info().max_window_rows));
  // A long catch-up (a new prompt) runs ahead in windows of its own, keeping all of its rows, until what is
  // left fits a fair share of a window.
  const size_t share = std::max<size_t>(1, max_rows / live.size());
  for (Live& l : live) {
    const std::vector<TokenId>& h = *l.job->history;
    while (h.size() - l.from > share) {
      const size_t n = std::min(max_rows, h.size() - l.from - share);
      Window w;
      for (size_t i = l.from; i < l.from + n; ++i) w.rows.push_back(Row{l.d->slot_, h[i], static_cast<int32_t>(i)});
      w.rows.back().want_pick = true;
      const size_t got = draft_->run_window(w).size();
      if (got != w.rows.size())
        throw Error("draft backend returned " + std::to_string(got) + " results for " + std::to_string(n) + " rows");
      l.from += n;
      l.d->cached_.assign(h.begin(), h.begin() + static_cast<long>(l.from));
    }
  }
  // The draft steps as chains (Backend::run_chain) of as many jobs as one first window holds: every job gets
  // the steps of the longest proposal among them, and the slot keeps every row it was fed.
  size_t g = 0;
  while (g < live.size()) {
    Window w0;
    int steps = 0;
    const size_t begin = g;
    for (; g < live.size(); ++g) {
      const std::vector<TokenId>& h = *live[g].job->history;
      const size_t n = h.size() - live[g].from;
      if (!w0.rows.empty() && w0.rows.size() + n > max_rows) break;
      int32_t pos = static_cast<int32_t>(live[g].from);
      for (size_t i = live[g].from; i < h.size(); ++i) w0.rows.push_back(Row{live[g].d->slot_, h[i], pos++});
      w0.rows.back().want_pick = true;
      steps = std::max(steps, live[g].job->max_k);
    }
    const std::vector<std::vector<TokenId>> picks = draft_->run_chain(w0, steps);
    const size_t S = g - begin;
    if (picks.size() != size_t(steps))
      throw Error("draft backend returned " + std::to_string(picks.size()) + " steps of " + std::to_string(steps));
    for (const std::vector<TokenId>& p : picks)
      if (p.size() != S)
        throw Error("draft backend returned " + std::to_string(p.size()) + " picks for " + std::to_string(S) + " slots");
    for (size_t i = 0; i < S; ++i) {
      Live& l = live[begin + i];
      l.d->cached_ = *l.job->history;
      for (int j = 0; j < steps; ++j) {
        if (j < l.job->max_k) l.job->drafts.push_back(picks[size_t(j)][i]);
        if (j + 1 < steps) l.d->cached_.push_back(picks[size_t(j)][i]);  // fed to step j + 1
      }
    }
  }
  for (Live& l : live) l.d->dirty_ = false;
}

}  // namespace strata
