#include "engine/slots/slot_book.hpp"

#include <map>
#include <string>

namespace strata {

SlotBook::SlotBook(SlotLimits limits) : limits_(limits), slots_(size_t(limits.slots > 0 ? limits.slots : 0)) {}

bool SlotBook::is_open(SlotId s) const { return s >= 0 && s < int(slots_.size()) && slots_[size_t(s)].open; }

SlotBook::Slot& SlotBook::open_ref(SlotId s, const char* what) {
  if (!is_open(s)) throw Error(std::string(what) + ": slot " + std::to_string(s) + " is not open");
  return slots_[size_t(s)];
}

SlotId SlotBook::find_free() const {
  for (size_t s = 0; s < slots_.size(); ++s)
    if (!slots_[s].open) return SlotId(s);
  return kNoSlot;
}

void SlotBook::open(SlotId s) {
  if (s < 0 || s >= int(slots_.size()) || slots_[size_t(s)].open)
    throw Error("open_slot: slot " + std::to_string(s) + " is not a free slot");
  Slot& sl = slots_[size_t(s)];
  sl.open = true;
  sl.committed = 0;
  sl.tokens.clear();
  sl.params = SamplingParams{};
  sl.last_window = -1;
}

void SlotBook::reset(SlotId s) {
  Slot& sl = open_ref(s, "reset_slot");
  sl.committed = 0;
  sl.tokens.clear();
  sl.last_window = -1;
}

void SlotBook::close(SlotId s) {
  Slot& sl = open_ref(s, "close_slot");
  sl.open = false;
  sl.committed = 0;
  sl.tokens.clear();
  sl.last_window = -1;
}

void SlotBook::set_sampling(SlotId s, const SamplingParams& p) {
  Slot& sl = open_ref(s, "set_sampling");
  validate_sampling_params(p, limits_.vocab_size);
  sl.params = p;
}

void SlotBook::check(const Window& win) const {
  if (int(win.rows.size()) > limits_.max_window_rows)
    throw Error("window: " + std::to_string(win.rows.size()) + " rows exceed the backend's max_window_rows " +
                std::to_string(limits_.max_window_rows));
  std::map<SlotId, int> next;  // the position each slot's next row must have
  for (size_t i = 0; i < win.rows.size(); ++i) {
    const Row& r = win.rows[i];
    const std::string where = "window row " + std::to_string(i) + ": ";
    if (!is_open(r.slot)) throw Error(where + "slot " + std::to_string(r.slot) + " is not open");
    if (r.token < 0 || r.token >= limits_.vocab_size)
      throw Error(where + "token " + std::to_string(r.token) + " is outside the vocabulary (size " +
                  std::to_string(limits_.vocab_size) + ")");
    if (r.pos < 0 || r.pos >= limits_.max_context)
      throw Error(where + "position " + std::to_string(r.pos) + " is outside [0, max_context) with max_context " +
                  std::to_string(limits_.max_context) + ")");
    auto it = next.find(r.slot);
    if (it == next.end()) {
      const int committed = slots_[size_t(r.slot)].committed;
      if (r.pos != committed)
        throw Error(where + "slot " + std::to_string(r.slot) + " position " + std::to_string(r.pos) +
                    " does not continue its history (committed length " + std::to_string(committed) + ")");
      next[r.slot] = r.pos + 1;
    } else {
      if (r.pos != it->second)
        throw Error(where + "slot " + std::to_string(r.slot) + " position " + std::to_string(r.pos) +
                    " leaves a gap (expected " + std::to_string(it->second) + ")");
      ++it->second;
    }
  }
}

void SlotBook::accept(const Window& win) {
  check(win);
  if (win.rows.empty()) return;
  // Rows of one slot arrive in position order from its committed length (check() holds it), so each row
  // extends its slot's history by one token and the first row of a slot marks where commit() trims from.
  ++window_seq_;
  for (const Row& r : win.rows) {
    Slot& sl = slots_[size_t(r.slot)];
    if (sl.last_window != window_seq_) {
      sl.tokens.resize(size_t(r.pos));
      sl.last_window = window_seq_;
      sl.last_first = r.pos;
      sl.last_count = 0;
    }
    sl.tokens.push_back(r.token);
    sl.committed = r.pos + 1;
    ++sl.last_count;
  }
}

void SlotBook::commit(SlotId s, int n_keep) {
  Slot& sl = open_ref(s, "commit");
  if (sl.last_window != window_seq_)
    throw Error("commit: slot " + std::to_string(s) + " had no rows in the last window");
  if (n_keep < 0 || n_keep > sl.last_count)
    throw Error("commit: n_keep " + std::to_string(n_keep) + " for slot " + std::to_string(s) + " is outside [0, " +
                std::to_string(sl.last_count) + "]");
  sl.committed = sl.last_first + n_keep;
  sl.tokens.resize(size_t(sl.committed));
  sl.last_count = n_keep;
}

void SlotBook::forget_last_window() {
  for (Slot& sl : slots_) sl.last_window = -1;
}

}  // namespace strata
