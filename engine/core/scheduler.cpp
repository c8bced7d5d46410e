#include "engine/core/scheduler.hpp"

#include <algorithm>

namespace strata {
namespace {

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
    plan.window.rows.push_back(row);
    plan.row_owner.push_back(s);
  }
  plan.members.push_back(s);
}

}  // namespace

PlannedWindow plan_window(const std::vector<SlotState*>& running, const WindowBudget& budget) {
  PlannedWindow plan;
  int left = std::max(budget.max_rows, 1);
  for (SlotState* s : running) {
    if (left == 0) break;
    if (s->slot == kNoSlot || s->pending_rows() != 1 || !s->decoding()) continue;
    add_rows(plan, s, 1);
    ++plan.decode_rows;
    --left;
  }
  int prefill_left = std::min(left, std::max(budget.prefill_rows, 1));
  for (SlotState* s : running) {
    if (prefill_left == 0) break;
    if (s->slot == kNoSlot || s->pending_rows() == 0) continue;
    if (s->pending_rows() == 1 && s->decoding()) continue;
    int n = std::min(s->pending_rows(), prefill_left);
    add_rows(plan, s, n);
    plan.prefill_rows += n;
    prefill_left -= n;
  }
  return plan;
}

}  // namespace strata
