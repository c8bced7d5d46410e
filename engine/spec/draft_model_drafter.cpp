#include "engine/spec/draft_model_drafter.hpp"

#include <algorithm>

namespace strata {

DraftModelDrafter::DraftModelDrafter(std::shared_ptr<Backend> draft, int feature_dim, Ahead ahead, int critical,
                                     std::unique_ptr<Drafter> lookup)
    : draft_(std::move(draft)), feature_dim_(feature_dim), shift_(feature_dim > 0 ? 1 : 0) {
  if (!draft_) throw Error("draft-model drafter: no draft backend");
  if (feature_dim < 0) throw Error("draft-model drafter: feature_dim must not be negative");
  if (critical < 0) throw Error("draft-model drafter: critical steps must not be negative");
  ahead_on_ = ahead == Ahead::On || (ahead == Ahead::Auto && draft_->overlaps_ahead());
  critical_ = ahead_on_ ? critical : 0;
  // A lookup proposal is fed to the draft as tokens (drafting ahead) or stands in for the draft's tokens in its
  // history (its rival): a feature draft would need the target's features of them.
  if (feature_dim == 0) lookup_ = std::move(lookup);
}

void DraftModelDrafter::score_rivals(const std::vector<TokenId>& h) {
  const Rivals r = std::move(rival_);
  rival_ = Rivals{};
  if (r.lookup.empty() || h.size() <= r.base) return;
  // The verified proposal's score is exactly its kept drafts (the target's pick after them is in the history);
  // the other's at most one more than that where it agrees with everything known.
  const size_t known = h.size() - r.base;
  auto kept = [&](const std::vector<TokenId>& c) {
    size_t i = 0;
    while (i < c.size() && i < known && c[i] == h[r.base + i]) ++i;
    return static_cast<double>(i);
  };
  constexpr double w = 0.3;  // the newest round's weight
  const double l = kept(r.lookup);
  lookup_score_ = lookup_scored_ ? (1 - w) * lookup_score_ + w * l : l;
  lookup_scored_ = true;
  if (r.draft.empty()) return;
  const double d = kept(r.draft);
  draft_score_ = compared_ ? (1 - w) * draft_score_ + w * d : d;
  compared_ = true;
}

bool DraftModelDrafter::take_ahead(const std::vector<TokenId>& h, int max_k, std::vector<TokenId>* drafts) {
  launch_pending();    // late (no window verified its proposal), but before anything reads the slot
  cancel_extension();  // planned for the last verify window, and not run then
  if (!ahead_) return false;
  if (slot_ == kNoSlot || dirty_) {
    drop_ahead();
    return false;
  }
  if (!ahead_appended_) {
    AheadGroup& g = *ahead_;
    if (!g.taken) {
      g.picks = draft_->take_ahead(g.ticket);
      g.taken = true;
    }
    // Picks replaced by a later chain are unknown: the slot still holds their rows (held_ counts them), and a
    // history that agrees with them is fed again.
    if (g.picks.size() != g.steps) {
      drop_ahead();
      return false;
    }
    for (const std::vector<TokenId>& step : g.picks) {
      if (ahead_index_ >= step.size()) {
        drop_ahead();
        return false;
      }
      stream_.push_back(step[ahead_index_]);
    }
    ahead_appended_ = true;
    // The slot holds the entries of the stream's base and of every stream token but the last: a token draft
    // keeps them for the next history to agree with (a feature draft only those the target's features fed).
    if (shift_ == 0 && !stream_.empty()) {
      cached_ = ahead_base_;
      cached_.insert(cached_.end(), stream_.begin(), stream_.end() - 1);
    }
  }
  // The history the stream guessed: its base, then the target's pick, the stream's first token, and possibly
  // more of the stream's tokens (a copy after the proposal that agreed with them was kept too).
  const size_t past = h.size() > ahead_base_.size() ? h.size() - ahead_base_.size() : 0;
  const bool guessed = max_k > 0 && past >= 1 && stream_.size() >= past + 1 &&
                       std::equal(ahead_base_.begin(), ahead_base_.end(), h.begin()) &&
                       std::equal(stream_.begin(), stream_.begin() + static_cast<long>(past),
                                  h.begin() + static_cast<long>(ahead_base_.size()));
  if (!guessed) {
    drop_ahead();
    return false;
  }
  const size_t m = std::min(stream_.size() - past, size_t(max_k));
  drafts->assign(stream_.begin() + static_cast<long>(past), stream_.begin() + static_cast<long>(past + m));
  // What the stream guesses next: the target keeps these drafts, then picks its next token.
  ahead_base_ = h;
  ahead_base_.insert(ahead_base_.end(), drafts->begin(), drafts->end());
  stream_.erase(stream_.begin(), stream_.begin() + static_cast<long>(past + m));
  ++ahead_hits_;
  return true;
}

void DraftModelDrafter::plan_extension(const std::vector<DraftJob*>& hits) {
  // A stream goes on from its chain's last picks, so every job of that chain must go on with it: each
  // chain whose holders all hit goes on by the steps the longest next proposal may need (the guess, then one
  // draft more than asked now, as a chain drafts).
  for (DraftJob* j : hits) {
    const std::shared_ptr<AheadGroup> g = static_cast<DraftModelDrafter*>(j->drafter)->ahead_;
    if (!g || !g->waiting.empty()) continue;
    std::vector<DraftModelDrafter*> mine;
    int more = 0;
    for (DraftJob* k : hits) {
      auto* d = static_cast<DraftModelDrafter*>(k->drafter);
      if (d->ahead_ != g) continue;
      mine.push_back(d);
      more = std::max(more, k->max_k + 2 - static_cast<int>(d->stream_.size()));
    }
    if (int(mine.size()) != g->holders || more < 1) continue;
    g->more = more;
    g->waiting = std::move(mine);
  }
}

void DraftModelDrafter::launch_pending() {
  if (!ahead_ || !ahead_->pending) return;
  const std::shared_ptr<AheadGroup> g = ahead_;
  const std::unique_ptr<PendingChain> p = std::move(g->pending);
  try {
    uint64_t ticket = 0;
    if (!draft_->run_chain_ahead(p->first, 0, int(g->steps), &ticket).empty())
      throw Error("draft backend returned picks of a chain that was to return none");
    g->ticket = ticket;
  } catch (...) {
    // The slots were booked as holding the chain's rows: what they hold is unknown now.
    for (DraftModelDrafter* d : p->members)
      if (d->ahead_ == g) {
        d->dirty_ = true;
        d->drop_ahead();
      }
    throw;
  }
}

void DraftModelDrafter::while_verifying() {
  launch_pending();
  if (!ahead_ || ahead_->more < 1) return;
  const std::shared_ptr<AheadGroup> g = ahead_;
  const int more = g->more;
  const std::vector<DraftModelDrafter*> mine = std::move(g->waiting);
  g->more = 0;
  g->waiting.clear();
  uint64_t ticket = 0;
  if (!draft_->extend_ahead(g->ticket, more, &ticket)) return;
  auto next = std::make_shared<AheadGroup>();
  next->ticket = ticket;
  next->steps = size_t(more);
  next->holders = g->holders;
  for (DraftModelDrafter* d : mine) {
    d->ahead_ = next;
    d->ahead_appended_ = false;
    d->held_ += size_t(more);  // the stream's last token and the next `more` - 1 picks
  }
  ++ahead_extends_;
}

void DraftModelDrafter::cancel_extension() {
  if (!ahead_ || ahead_->more < 1) return;
  ahead_->more = 0;
  ahead_->waiting.clear();
}

DraftModelDrafter::~DraftModelDrafter() {
  cancel_extension();  // it would feed this slot too
  if (slot_ == kNoSlot) return;
  try {
    // The other slots of a pending chain were booked as fed by it; one of this slot alone is dropped.
    if (ahead_ && ahead_->pending) {
      const std::vector<DraftModelDrafter*>& m = ahead_->pending->members;
      if (std::all_of(m.begin(), m.end(), [this](const DraftModelDrafter* d) { return d == this; }))
        ahead_->pending.reset();
    }
    launch_pending();
  } catch (...) {
    // They are left to be reset (launch_pending marked them).
  }
  try {
    draft_->close_slot(slot_);
  } catch (...) {
    // A draft backend that faults on close has nothing of this request left worth keeping.
  }
}

std::vector<TokenId> DraftModelDrafter::propose(const std::vector<TokenId>& history, int max_k,
                                                const DraftRoom& room) {
  std::vector<DraftJob> one{DraftJob{this, &history, max_k, room, {}}};
  propose_together(one);
  return std::move(one[0].drafts);
}

void DraftModelDrafter::take_feature(int32_t pos, std::vector<float>&& feature) {
  const size_t d = static_cast<size_t>(feature_dim_);
  if (d == 0 || pos < 0 || feature.size() != d) return;  // a feature it cannot use reads as zeros
  const size_t p = static_cast<size_t>(pos);
  if (p < feat_from_) return;  // its entry is fed (a recompute after a restart delivers it again)
  const size_t have = feats_.size() / d;
  if (p > feat_from_ + have) {  // a gap (rows the prefix cache supplied): those read as zeros
    feats_.clear();
    feat_from_ = p;
  } else {
    feats_.resize((p - feat_from_) * d);  // a position delivered again replaces it and what followed
  }
  feats_.insert(feats_.end(), feature.begin(), feature.end());
  if (feats_.size() > kMaxHeldFeatureValues) drop_features_before(feat_from_ + (feats_.size() - kMaxHeldFeatureValues + d - 1) / d);
}

void DraftModelDrafter::drop_features_before(size_t pos) {
  if (feature_dim_ == 0 || pos <= feat_from_) return;
  const size_t d = static_cast<size_t>(feature_dim_);
  const size_t n = std::min(feats_.size() / d, pos - feat_from_);
  feats_.erase(feats_.begin(), feats_.begin() + static_cast<long>(n * d));
  feat_from_ = pos;
  if (feats_.empty()) feats_.shrink_to_fit();  // a long prompt's features do not stay allocated
}

void DraftModelDrafter::add_entries(Window& w, const std::vector<TokenId>& h, size_t from, size_t to) const {
  for (size_t i = from; i < to; ++i) w.rows.push_back(Row{slot_, h[i + shift_], static_cast<int32_t>(i)});
  if (feature_dim_ == 0) return;
  const size_t d = static_cast<size_t>(feature_dim_), have = feats_.size() / d;
  for (size_t i = from; i < to; ++i) {
    if (i >= feat_from_ && i < feat_from_ + have) {
      const auto f = feats_.begin() + static_cast<long>((i - feat_from_) * d);
      w.features.insert(w.features.end(), f, f + static_cast<long>(d));
    } else {
      w.features.insert(w.features.end(), d, 0.0f);
    }
  }
}

bool DraftModelDrafter::prepare(const std::vector<TokenId>& history) {
  if (slot_ == kNoSlot) {
    slot_ = draft_->open_slot();
    if (slot_ == kNoSlot) return false;
    SamplingParams greedy;
    greedy.temperature = 0.0f;
    draft_->set_sampling(slot_, greedy);
    cached_.clear();
    held_ = 0;
    dirty_ = false;
  }
  if (dirty_) {  // a proposal that threw part-way left the slot's contents unknown
    draft_->reset_slot(slot_);
    cached_.clear();
    held_ = 0;
  }
  // Keep the entries that agree with the history, all but its last (which this proposal feeds): the drafts
  // the target accepted stay, the rest is cut off.
  const size_t limit = entries(history) - 1;
  size_t common = 0;
  while (common < cached_.size() && common < limit && cached_[common] == history[common + shift_]) ++common;
  if (common < held_) {
    cached_.resize(std::min(common, static_cast<size_t>(std::max(0, draft_->truncate(slot_, int(common))))));
    held_ = cached_.size();
  }
  dirty_ = true;  // until the proposal completes
  return true;
}

// Every job advances in lockstep: step 0 feeds each slot the entries past what it holds (drafting d1), step
// j feeds dj alone (drafting dj+1), every row kept. All jobs' rows of a step share windows, so a batch of S
// slots costs k draft windows of about S rows, not S x k windows, and a device backend runs the k steps
// without a host round trip between them.
void DraftModelDrafter::propose_together(std::vector<DraftJob>& jobs) {
  struct Live {
    DraftModelDrafter* d;
    DraftJob* job;
    size_t from;                 // the first entry to feed
    std::vector<TokenId> found;  // the lookup's proposal, fed after the history's entries (or none)
  };
  std::vector<Live> live;
  std::vector<DraftJob*> hits;
  for (DraftJob& j : jobs) {
    j.drafts.clear();
    auto* d = static_cast<DraftModelDrafter*>(j.drafter);  // same batch key: a drafter on this backend
    const std::vector<TokenId>& h = *j.history;
    d->last_ahead_ = false;
    if (j.max_k <= 0 || h.size() <= d->shift_) continue;
    const int most = std::max(j.room.most, j.max_k);
    if ((d->last_ahead_ = d->take_ahead(h, j.max_k, &j.drafts))) {
      d->copy_on(j);  // the stream goes on from its own guess
      hits.push_back(&j);
      continue;
    }
    d->score_rivals(h);
    std::vector<TokenId> found;
    if (d->lookup_) found = d->lookup_->propose(h, j.max_k, j.room);
    if (found.size() > size_t(most)) found.resize(size_t(most));
    if (!d->ahead_on_ && !found.empty()) {
      d->rival_ = Rivals{h.size(), found, {}};
      if (d->lookup_leads()) {
        ++d->lookup_proposals_;
        j.drafts = std::move(found);
        continue;
      }
      found.clear();  // the draft proposes; lookup's proposal is scored beside its
    }
    if (!d->prepare(h)) continue;
    if (!found.empty()) ++d->lookup_proposals_;
    live.push_back(Live{d, &j, d->cached_.size(), std::move(found)});
  }
  // The streams go on while the target verifies (while_verifying); a chain run after them (jobs that missed)
  // would wait for their steps first, so they go on only when no job needs one.
  if (live.empty()) {
    if (!hits.empty()) plan_extension(hits);
    return;
  }
  const size_t max_rows = static_cast<size_t>(std::max(1, draft_->info().max_window_rows));
  // A long catch-up (a new prompt) runs ahead in windows of its own, keeping all of its rows, until what is
  // left fits a fair share of a window.
  const size_t share = std::max<size_t>(1, max_rows / live.size());
  for (Live& l : live) {
    const std::vector<TokenId>& h = *l.job->history;
    const size_t end = l.d->entries(h);
    while (end - l.from > share) {
      const size_t n = std::min(max_rows, end - l.from - share);
      Window w;
      l.d->add_entries(w, h, l.from, l.from + n);
      w.rows.back().want_pick = true;
      const size_t got = draft_->run_window(w).size();
      if (got != w.rows.size())
        throw Error("draft backend returned " + std::to_string(got) + " results for " + std::to_string(n) + " rows");
      l.from += n;
      l.d->cached_.assign(h.begin() + static_cast<long>(l.d->shift_), h.begin() + static_cast<long>(l.d->shift_ + l.from));
      l.d->held_ = l.from;
      l.d->drop_features_before(l.from);
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
      const std::vector<TokenId>& found = live[g].found;
      const size_t end = live[g].d->entries(h);
      const size_t n = end - live[g].from + found.size();
      if (!w0.rows.empty() && w0.rows.size() + n > max_rows) break;
      live[g].d->add_entries(w0, h, live[g].from, end);
      // A lookup proposal's tokens follow as known entries (token drafts only: entry i is token i).
      for (size_t t = 0; t < found.size(); ++t)
        w0.rows.push_back(Row{live[g].d->slot_, found[t], static_cast<int32_t>(end + t)});
      w0.rows.back().want_pick = true;
      steps = std::max(steps, live[g].job->max_k);
    }
    // A round that waits for its drafts drafts at most critical_ of them; the stream after them still
    // covers the engine's k.
    const int asked = steps;
    if (critical_ > 0) steps = std::min(steps, critical_);
    // Lookup proposals are whole without the draft: where every job of the chain has one, the round waits
    // for none of its steps (all of them drafting ahead, while the target verifies).
    bool all_found = ahead_on_;
    for (size_t i = begin; i < g && all_found; ++i) all_found = !live[i].found.empty();
    if (all_found) steps = 0;
    // Drafting ahead: the guess of the target's next pick, then one draft more than asked after it (a
    // proposal kept whole makes the engine's adaptive k ask for one more next time), so a proposal kept whole
    // has the next one ready. A chain fed only lookup proposals drafts the guess and one draft (kLookupAhead):
    // the next round is as likely to be lookup's again, and the draft's steps beside the target's window slow
    // it (runs 137-139).
    const int ahead = ahead_on_ ? (all_found ? std::min(asked + 2, kLookupAhead) : asked + 2) : 0;
    uint64_t ticket = 0;
    std::shared_ptr<AheadGroup> group;
    if (ahead > 0) {
      group = std::make_shared<AheadGroup>();
      group->steps = size_t(ahead);
      ++ahead_runs_;
    }
    // A chain nothing waits for is launched once the target's window is (while_verifying), off the round's
    // path; the slots are booked as if it had run.
    std::vector<std::vector<TokenId>> picks;
    if (all_found)
      group->pending = std::make_unique<PendingChain>(PendingChain{std::move(w0), {}});
    else if (ahead > 0)
      picks = draft_->run_chain_ahead(w0, steps, ahead, &ticket);
    else
      picks = draft_->run_chain(w0, steps);
    if (group) group->ticket = ticket;
    const size_t S = g - begin;
    if (picks.size() != size_t(steps))
      throw Error("draft backend returned " + std::to_string(picks.size()) + " steps of " + std::to_string(steps));
    for (const std::vector<TokenId>& p : picks)
      if (p.size() != S)
        throw Error("draft backend returned " + std::to_string(p.size()) + " picks for " + std::to_string(S) + " slots");
    for (size_t i = 0; i < S; ++i) {
      Live& l = live[begin + i];
      DraftModelDrafter& d = *l.d;
      const std::vector<TokenId>& h = *l.job->history;
      // With a lookup proposal (token drafts only), it is the proposal: its tokens were fed before the chain's
      // steps, whose picks then start the stream (the guess first). Otherwise the picks are the proposal.
      const std::vector<TokenId>& found = l.found;
      d.cached_.assign(h.begin() + static_cast<long>(d.shift_), h.end());
      d.cached_.insert(d.cached_.end(), found.begin(), found.end());
      if (!found.empty()) l.job->drafts = found;
      for (int j = 0; j < steps; ++j) {
        if (found.empty() && j < l.job->max_k) l.job->drafts.push_back(picks[size_t(j)][i]);
        // Fed to step j + 1; a feature draft's chained entries read its own features, not the target's.
        if (j + 1 < steps && d.shift_ == 0) d.cached_.push_back(picks[size_t(j)][i]);
      }
      if (!d.rival_.lookup.empty()) d.rival_.draft = l.job->drafts;
      d.held_ = d.entries(h) + found.size() + static_cast<size_t>(steps + ahead) - 1;
      d.drop_features_before(d.entries(h));
      d.drop_ahead();
      // A job with fewer drafts than the chain's steps would need other ahead steps than these.
      if (group && (!found.empty() || l.job->max_k >= steps)) {
        d.ahead_ = group;
        ++group->holders;
        if (group->pending) group->pending->members.push_back(&d);
        d.ahead_index_ = i;
        d.ahead_base_ = h;
        d.ahead_base_.insert(d.ahead_base_.end(), l.job->drafts.begin(), l.job->drafts.end());
        if (!found.empty())
          for (int j = 0; j < steps; ++j) d.stream_.push_back(picks[size_t(j)][i]);
      }
    }
  }
  // The draft's own proposals are followed by what lookup copies after them, as a stream's are.
  for (Live& l : live) {
    l.d->dirty_ = false;
    if (l.found.empty()) l.d->copy_on(*l.job);
  }
}

void DraftModelDrafter::copy_on(DraftJob& j) {
  if (!lookup_ || j.drafts.empty() || int(j.drafts.size()) >= std::max(j.room.most, j.max_k)) return;
  const std::vector<TokenId> more = lookup_->extend(*j.history, j.drafts, j.max_k, j.room);
  j.drafts.insert(j.drafts.end(), more.begin(), more.end());
}

}  // namespace strata
