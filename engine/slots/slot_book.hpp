// The slot table every backend keeps on the host: which slots are open, each slot's committed length and
// token history (the sampler's penalty window), its sampling settings, and which rows of the last window
// commit() may trim. Backends keep only their device state (KV cells, graphs) beside it, so the window rules
// and their messages are one piece of code and the engine treats every backend alike.
//
// Invariant it keeps for its backend: accept() validates a whole window before it changes anything, so a
// rejected window leaves every slot as it was. Cells past a slot's committed length are never read before
// the backend's next window writes them (each row writes its own cell before any row attends to it), which
// is why commit() and reset() only move the committed length and never touch device memory.
#pragma once
#include <vector>

#include "engine/core/backend.hpp"
#include "engine/core/types.hpp"
#include "engine/sampling/sampler.hpp"

namespace strata {

// What a window is checked against.
struct SlotLimits {
  int slots = 0;            // size of the table
  int max_context = 0;      // positions per slot
  int vocab_size = 0;       // tokens and sampling settings are checked against it
  int max_window_rows = 0;  // the largest window accept() takes
};

class SlotBook {
 public:
  SlotBook() = default;  // no slots: a backend that learns its capacity late assigns a real book then
  explicit SlotBook(SlotLimits limits);

  const SlotLimits& limits() const { return limits_; }

  // The lowest free slot, or kNoSlot. It stays free until open(): a backend allocates the slot's device
  // memory in between, so a failed allocation leaves it closed.
  SlotId find_free() const;
  void open(SlotId slot);  // fresh history and default sampling settings
  void reset(SlotId slot); // forget all positions, keep the slot and its sampling settings
  void close(SlotId slot);
  // Validates params against the vocabulary; the slot's picks use them from the next window on.
  void set_sampling(SlotId slot, const SamplingParams& params);

  // Checks the window against the Backend contract (row count, open slots, tokens in the vocabulary,
  // positions inside max_context, each slot's rows continuing its history without gaps) and throws
  // strata::Error naming the row before any state changes. A valid non-empty window then becomes the
  // history of the slots it touches; an empty one changes nothing, not even which window commit() trims.
  void accept(const Window& window);
  // Keeps the first n_keep of this slot's rows in the last accepted window.
  void commit(SlotId slot, int n_keep);
  // Watchdog path: no window's rows can be trimmed any more.
  void forget_last_window();

  // For rows of the last accepted window (the backend has already checked their slots).
  const SamplingParams& params(SlotId slot) const { return slots_[size_t(slot)].params; }
  // The slot's tokens at positions 0 .. pos, what the sampler needs for a pick at pos.
  TokenHistory history(SlotId slot, int pos) const {
    return TokenHistory{slots_[size_t(slot)].tokens.data(), size_t(pos) + 1};
  }
  int committed(SlotId slot) const { return slots_[size_t(slot)].committed; }
  bool is_open(SlotId slot) const;

 private:
  struct Slot {
    bool open = false;
    int committed = 0;            // positions [0, committed) are the slot's history
    std::vector<TokenId> tokens;  // token at each position < committed
    SamplingParams params;
    long last_window = -1;        // the window whose rows commit() may trim
    int last_first = 0, last_count = 0;
  };

  Slot& open_ref(SlotId slot, const char* what);
  void check(const Window& window) const;

  SlotLimits limits_;
  std::vector<Slot> slots_;
  long window_seq_ = 0;
};

}  // namespace strata
