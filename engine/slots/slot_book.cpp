#include "engine/slots/slot_book.hpp"

#include <algorithm>
#include <map>
#include <string>

namespace strata {

SlotBook::SlotBook(SlotLimits limits) : limits_(limits), slots_(size_t(limits.slots > 0 ? limits.slots : 0)) {}

SlotBook::SlotBook(SlotLimits limits, KvPoolLimits pool) : SlotBook(limits) {
  if (pool.block_size < 1 || pool.block_size > (1 << 16))
    throw Error("kv cache: block_size must be within [1, 65536], found " + std::to_string(pool.block_size));
  if (pool.num_blocks < 0)
    throw Error("kv cache: num_blocks must not be negative, found " + std::to_string(pool.num_blocks));
  if (pool.num_blocks == 0) {
    const int64_t per_slot = (int64_t(limits.max_context) + pool.block_size - 1) / pool.block_size;
    const int64_t n = per_slot * std::max(limits.slots, 1);
    if (n > (int64_t(1) << 30))
      throw Error("kv cache: " + std::to_string(n) + " blocks of " + std::to_string(pool.block_size) +
                  " positions are too many; use a larger block_size or fewer slots");
    pool.num_blocks = int(n);
  }
  pool_ = KvBlockPool(pool);
  paged_ = true;
}

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
  sl.table.clear();
  sl.published = 0;
  sl.chain_ok = true;
  sl.tail = KvBlockPool::root();
}

void SlotBook::reset(SlotId s) {
  Slot& sl = open_ref(s, "reset_slot");
  drop_blocks(sl);
  sl.committed = 0;
  sl.tokens.clear();
  sl.last_window = -1;
}

void SlotBook::close(SlotId s) {
  Slot& sl = open_ref(s, "close_slot");
  drop_blocks(sl);
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

int SlotBook::blocks_needed(const Window& win) const {
  if (!paged_) return 0;
  std::map<SlotId, int> end;  // one past each slot's last position in the window
  for (const Row& r : win.rows) {
    int& e = end[r.slot];
    e = std::max(e, r.pos + 1);
  }
  const int bs = pool_.block_size();
  int need = 0;
  for (const auto& [slot, e] : end) {
    const int have = int(slots_[size_t(slot)].table.size());
    need += std::max(0, (e + bs - 1) / bs - have);
  }
  return need;
}

void SlotBook::accept(const Window& win) {
  check(win);
  if (win.rows.empty()) return;
  if (paged_) {
    const int need = blocks_needed(win);
    if (need > pool_.available())
      throw KvExhausted("kv cache: the window needs " + std::to_string(need) + " more blocks of " +
                        std::to_string(pool_.block_size()) + " positions but only " +
                        std::to_string(pool_.available()) + " of " + std::to_string(pool_.num_blocks()) +
                        " are free");
    const int bs = pool_.block_size();
    for (const Row& r : win.rows) {
      Slot& sl = slots_[size_t(r.slot)];
      // The slot's positions before this window are final now (commit() only trims the last window).
      if (r.pos == sl.committed) publish_full_blocks(sl);
      while (int(sl.table.size()) * bs < r.pos + 1) sl.table.push_back(pool_.allocate());
    }
  }
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

void SlotBook::set_token(SlotId s, int pos, TokenId token) {
  Slot& sl = open_ref(s, "set_token");
  if (sl.last_window != window_seq_ || pos < sl.last_first || pos >= sl.last_first + sl.last_count)
    throw Error("set_token: position " + std::to_string(pos) + " of slot " + std::to_string(s) +
                " is not a row of the last window");
  if (token < 0 || token >= limits_.vocab_size)
    throw Error("set_token: token " + std::to_string(token) + " is outside the vocabulary");
  sl.tokens[size_t(pos)] = token;
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
  trim_blocks(sl);
}

int SlotBook::truncate(SlotId s, int n_keep) {
  Slot& sl = open_ref(s, "truncate");
  if (n_keep < 0 || n_keep > sl.committed)
    throw Error("truncate: n_keep " + std::to_string(n_keep) + " for slot " + std::to_string(s) + " is outside [0, " +
                std::to_string(sl.committed) + "]");
  if (paged_ && n_keep < sl.published * pool_.block_size()) {
    // The cut is inside blocks the prefix cache shares: they must stay as they are, so start over.
    reset(s);
    return 0;
  }
  sl.committed = n_keep;
  sl.tokens.resize(size_t(n_keep));
  sl.last_window = -1;
  trim_blocks(sl);
  return n_keep;
}

int SlotBook::attach_prefix(SlotId s, const std::vector<TokenId>& prompt) {
  Slot& sl = open_ref(s, "attach_prefix");
  if (sl.committed != 0 || !sl.table.empty())
    throw Error("attach_prefix: slot " + std::to_string(s) + " already has " + std::to_string(sl.committed) +
                " positions");
  if (!paged_ || !pool_.prefix_caching() || prompt.empty()) return 0;
  const int bs = pool_.block_size();
  const int asked = std::min(int((prompt.size() - 1) / size_t(bs)), (limits_.max_context - 1) / bs);
  KvBlockRef parent = KvBlockPool::root();
  int hit = 0;
  while (hit < asked) {
    KvBlockRef ref = pool_.match(parent, prompt.data() + size_t(hit) * size_t(bs));
    if (ref.block < 0) break;
    sl.table.push_back(ref.block);
    parent = ref;
    ++hit;
  }
  pool_.count_lookups(asked, hit);
  sl.committed = hit * bs;
  sl.tokens.assign(prompt.begin(), prompt.begin() + sl.committed);
  sl.published = hit;
  sl.tail = parent;
  sl.last_window = -1;
  return sl.committed;
}

void SlotBook::publish_full_blocks(Slot& sl) {
  if (!paged_ || !pool_.prefix_caching() || !sl.chain_ok) return;
  const int bs = pool_.block_size();
  const int full = sl.committed / bs;
  while (sl.published < full) {
    const size_t i = size_t(sl.published);
    KvBlockRef ref = pool_.publish(sl.table[i], sl.tail, sl.tokens.data() + i * size_t(bs));
    if (ref.block < 0) {  // the key is taken (kv_blocks.hpp): this chain stays private from here on
      sl.chain_ok = false;
      return;
    }
    sl.tail = ref;
    ++sl.published;
  }
}

void SlotBook::trim_blocks(Slot& sl) {
  if (!paged_) return;
  const int bs = pool_.block_size();
  const size_t keep = size_t((sl.committed + bs - 1) / bs);
  while (sl.table.size() > keep) {
    pool_.release(sl.table.back());
    sl.table.pop_back();
  }
}

void SlotBook::drop_blocks(Slot& sl) {
  if (!paged_) return;
  publish_full_blocks(sl);
  // Tail first: the LRU list then evicts a sequence's last blocks before the prefix others may share.
  for (auto it = sl.table.rbegin(); it != sl.table.rend(); ++it) pool_.release(*it);
  sl.table.clear();
  sl.published = 0;
  sl.chain_ok = true;
  sl.tail = KvBlockPool::root();
}

void SlotBook::forget_last_window() {
  for (Slot& sl : slots_) sl.last_window = -1;
}

void SlotBook::describe_pool(BackendInfo* info) const {
  const KvPoolStats st = pool_stats();
  info->kv_block_size = block_size();
  info->kv_blocks = st.total;
  info->kv_free_blocks = st.free;
  info->kv_prefix_lookups = st.lookups;
  info->kv_prefix_hits = st.hits;
  info->kv_evictions = st.evictions;
}

}  // namespace strata
