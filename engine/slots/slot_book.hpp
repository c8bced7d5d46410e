// The slot table every backend keeps on the host: which slots are open, each slot's committed length and
// token history (the sampler's penalty window), its sampling settings, and which rows of the last window
// commit() may trim. Backends keep only their device state (KV cells, graphs) beside it, so the window rules
// and their messages are one piece of code and the engine treats every backend alike.
//
// Paged KV (the constructor with KvPoolLimits): the book also owns the pool of KV blocks (kv_blocks.hpp) and
// a block table per slot; position p of a slot lives in cell physical_cell(slot, p) =
// block_table[p / block_size] * block_size + p % block_size. A slot's table always covers exactly
// [0, committed) rounded up to whole blocks. accept() reserves the blocks the window's rows write (or throws
// KvExhausted, changing nothing); commit(), reset() and close() hand back blocks past the kept length. With
// prefix caching on, every full block of a slot's final history (positions before the last window, or all
// of it at reset/close) is published in the prefix cache, and attach_prefix() lets a fresh slot start from
// the longest cached run of a prompt's full blocks. A slot's block table changes only by blocks added past
// its end and trimmed from it: the blocks it attached at the start and the blocks it wrote itself are what
// every one of its rows reads, whatever its windows were (a block whose tokens another sequence already
// cached stays the slot's own, uncached: kv_blocks.hpp). A shared block is never written: a slot only writes
// at positions >= its committed length, which always starts a block it alone holds or continues one that is
// not yet full (and so not cached).
//
// Not paged (the SlotLimits-only constructor): no pool and no block tables; everything below behaves as
// before paging existed and the paged queries answer 0 / empty.
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
#include "engine/slots/kv_blocks.hpp"

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
  explicit SlotBook(SlotLimits limits);  // not paged
  // Paged: pool.num_blocks 0 means slots * ceil(max_context / block_size) blocks (every slot can fill its
  // whole context at once). Throws strata::Error on bad limits.
  SlotBook(SlotLimits limits, KvPoolLimits pool);

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
  // The token at `pos` of the last accepted window's rows, learned after accept() (a row the device fed from
  // an earlier row's pick). Throws strata::Error for a position outside that window's rows of the slot.
  void set_token(SlotId slot, int pos, TokenId token);
  // Keeps the first n_keep of this slot's rows in the last accepted window.
  void commit(SlotId slot, int n_keep);
  // Backend::truncate: keeps positions [0, n_keep); a cut inside a published (shared) block resets the slot
  // instead (returns 0). Throws for n_keep outside [0, committed].
  int truncate(SlotId slot, int n_keep);
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

  // ---- paged KV (all answer 0 / empty when the book is not paged) ----
  bool paged() const { return paged_; }
  int block_size() const { return paged_ ? pool_.block_size() : 0; }
  int total_blocks() const { return paged_ ? pool_.num_blocks() : 0; }
  int free_blocks() const { return paged_ ? pool_.available() : 0; }  // allocatable now (free or evictable)
  KvPoolStats pool_stats() const { return paged_ ? pool_.stats() : KvPoolStats{}; }
  // The pool's part of a backend's info(): block size, total and free blocks, prefix-cache counters.
  void describe_pool(BackendInfo* info) const;
  const KvBlockPool& pool() const { return pool_; }
  // Physical block ids of positions [0, committed) rounded up to whole blocks, in position order.
  const std::vector<int32_t>& block_table(SlotId slot) const { return slots_[size_t(slot)].table; }
  // The cell index of (slot, pos) in a [cell][...] array of num_blocks * block_size cells; pos must be
  // covered by the slot's table (any position of a row of the last accepted window is).
  int64_t physical_cell(SlotId slot, int pos) const {
    const int bs = pool_.block_size();
    return int64_t(slots_[size_t(slot)].table[size_t(pos / bs)]) * bs + pos % bs;
  }
  // A freshly opened (or reset) slot with no positions starts from the longest run of `prompt`'s full blocks
  // found in the prefix cache, capped so at least one token of `prompt` is left to run (its row makes the
  // next pick). Sets the slot's committed length and history to that run and returns its length; 0 when
  // nothing matched, when prefix caching is off, or when the book is not paged. Throws strata::Error if the
  // slot is not open or already has positions.
  int attach_prefix(SlotId slot, const std::vector<TokenId>& prompt);
  // Blocks a window would have to take from the pool (after check()); 0 when not paged.
  int blocks_needed(const Window& window) const;

 private:
  struct Slot {
    bool open = false;
    int committed = 0;            // positions [0, committed) are the slot's history
    std::vector<TokenId> tokens;  // token at each position < committed
    SamplingParams params;
    long last_window = -1;        // the window whose rows commit() may trim
    int last_first = 0, last_count = 0;
    std::vector<int32_t> table;   // paged: physical block of each block_size positions
    int published = 0;            // leading blocks of `table` that are in the prefix cache
    bool chain_ok = true;         // false once a key was taken: later blocks cannot be published
    KvBlockRef tail = KvBlockPool::root();  // the last published block (the next one's parent)
  };

  Slot& open_ref(SlotId slot, const char* what);
  void check(const Window& window) const;
  void publish_full_blocks(Slot& sl);
  void trim_blocks(Slot& sl);   // hands back blocks past ceil(committed / block_size)
  void drop_blocks(Slot& sl);   // publishes what is final, then hands back every block

  SlotLimits limits_;
  bool paged_ = false;
  KvBlockPool pool_;
  std::vector<Slot> slots_;
  long window_seq_ = 0;
};

}  // namespace strata
