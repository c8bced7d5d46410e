#include "engine/core/scheduler.hpp"

#include <algorithm>

namespace strata {
namespace {

void add_draft_rows(PlannedWindow& plan, SlotState* s, int n) {
  const Row last = plan.window.rows.back();
  for (int i = 0; i < n; ++i) {
    Row row = last;
    row.token = s->drafts[static_cast<size_t>(i)];
    row.pos = last.pos + 1 + i;
    row.want_logits = false;
    plan.window.rows.push_back(row);
    plan.row_owner.push_back(s);
  }
}

void add_rows(PlannedWindow& plan, SlotState* s, int n) {
  for (int i = 0; i < n; ++i) {
    int pos = s->n_cached + i;
    Row row;
    row.slot = s->slot;
    row.token = s->seq[static_cast<size_t>(pos)];
    row.pos = pos;
    bool last_known = pos == static_cast<int>(s->seq.size()) - 1;
    row.want_pick = last_known && s->wants_pick();
    if (row.want_pick) row.n_logprobs = s->req->logprobs;
    // Prompt logprobs: the logits at position p score the prompt token at p + 1.
    row.want_logits = s->req->prompt_logprobs && pos + 1 < s->n_prompt && pos + 1 >= s->prompt_logprobs_done;
    // A feature-reading drafter gets the target's feature of every row (a verify window's draft rows copy it).
    row.want_feature = s->drafter && s->drafter->feature_dim() > 0;
    plan.window.rows.push_back(row);
    plan.row_owner.push_back(s);
  }
  plan.members.push_back(s);
  plan.member_drafts.push_back(0);
}

bool is_decode(const SlotState* s) { return s->slot != kNoSlot && s->pending_rows() == 1 && s->decoding(); }

}  // namespace

int draft_allowance(const std::vector<SlotState*>& running, const WindowBudget& budget) {
  const int left = std::max(budget.max_rows, 1);
  int n_decode = 0, pending_prompt = 0;
  for (const SlotState* s : running) {
    if (is_decode(s)) ++n_decode;
    else if (s->slot != kNoSlot) pending_prompt += s->pending_rows();
  }
  const int free = std::max(0, left - n_decode);
  if (budget.exact_rows >= left) return free;  // every window the budget allows is exact
  const int prefill = std::min({free, std::max(budget.prefill_rows, 1), pending_prompt});
  return std::max(0, std::min(free, budget.exact_rows - n_decode - prefill));
}

PlannedWindow plan_window(const std::vector<SlotState*>& running, const WindowBudget& budget) {
  PlannedWindow plan;
  int left = std::max(budget.max_rows, 1);
  int draft_left = draft_allowance(running, budget);
  for (SlotState* s : running) {
    if (left == 0) break;
    if (!is_decode(s)) continue;
    add_rows(plan, s, 1);
    ++plan.decode_rows;
    --left;
    if (!plan.window.rows.back().want_pick) continue;  // nothing to verify against
    int n = std::min({static_cast<int>(s->drafts.size()), draft_left, left});
    if (n <= 0) continue;
    add_draft_rows(plan, s, n);
    plan.member_drafts.back() = n;
    plan.decode_rows += n;
    draft_left -= n;
    left -= n;
  }
  const int cap = std::max(budget.prefill_rows, 1);
  int prefill_left = std::min(left, cap);
  // A prompt whose rest would spill a few rows (an eighth of the cap in all) into the next window takes them
  // now: two 129-token prompts under a 256-row cap both get their first token a window sooner. Not in a
  // window with drafts, which must stay within the exact rows that draft_allowance() counted on.
  const bool has_drafts = plan.decode_rows > static_cast<int>(plan.members.size());
  int slack = has_drafts ? 0 : std::min(left - prefill_left, cap / 8);
  for (SlotState* s : running) {
    if (prefill_left == 0) break;
    if (s->slot == kNoSlot || s->pending_rows() == 0) continue;
    if (s->pending_rows() == 1 && s->decoding()) continue;
    int n = std::min(s->pending_rows(), prefill_left);
    prefill_left -= n;
    if (s->pending_rows() - n <= slack) {
      slack -= s->pending_rows() - n;
      n = s->pending_rows();
    }
    add_rows(plan, s, n);
    plan.prefill_rows += n;
  }
  return plan;
}

}  // namespace strata
