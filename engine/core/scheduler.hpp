// Window planning: which rows of which running requests go into the next backend call. A pure function of
// the running set, so its rules are tested without a backend.
//
// Rules: every decoding request contributes its one row first (FCFS), so decode latency never waits for a
// prompt; prompt chunks fill what is left, FCFS, capped by prefill_chunk rows per window in total (the
// prefill share) and by the window's token budget. A request's rows are consecutive positions from its
// first uncached one; only the row at its last known token asks for a pick.
//
// Drafts: a decoding request with drafts (SlotState::drafts) brings a verify window part instead of one row:
// [last, d1..dk] at consecutive positions, every row asking for a pick, so row i's pick is what plain
// decoding would pick after d1..di. Drafts share the budget after every decoding request has its one row
// (FCFS), so speculation never delays another request's decode row; they go before prompt chunks. Where
// the backend's row-count-invariant windows are smaller than the budget (exact_rows), a window with drafts
// stays within exact_rows, prompt rows included, and the prompt chunks keep the rows they would have without
// drafts: drafts only use what is left of exact_rows.
#pragma once
#include <limits>
#include <vector>

#include "engine/core/backend.hpp"
#include "engine/core/slot_state.hpp"

namespace strata {

struct WindowBudget {
  int max_rows = 0;       // min(max_window_tokens, backend max_window_rows)
  int prefill_rows = 0;   // prefill_chunk
  int exact_rows = std::numeric_limits<int>::max();  // BackendInfo::exact_rows
};

struct PlannedWindow {
  Window window;
  std::vector<SlotState*> row_owner;  // per row
  std::vector<SlotState*> members;    // requests with at least one row, in row order
  std::vector<int> member_drafts;     // per member: draft rows it carries after its decode row
  int decode_rows = 0, prefill_rows = 0;  // decode_rows counts draft rows too
  const char* kind() const {
    return prefill_rows == 0 ? "decode" : decode_rows == 0 ? "prefill" : "mixed";
  }
};

PlannedWindow plan_window(const std::vector<SlotState*>& running, const WindowBudget& budget);

// How many draft rows, over all requests, plan_window would place in the next window (the drafters need not
// propose more).
int draft_allowance(const std::vector<SlotState*>& running, const WindowBudget& budget);

}  // namespace strata
