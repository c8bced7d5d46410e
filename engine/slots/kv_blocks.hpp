// The paged KV cache's bookkeeping: a pool of fixed-size blocks of KV positions, shared by every slot of a
// backend, with an automatic prefix cache. The pool knows only block ids, reference counts and the tokens a
// cached block holds; the backend owns the memory (block b's cells are b * block_size .. + block_size).
//
// Prefix cache: a FULL block of a sequence is keyed by hash(key of the block before it, its block_size
// token ids). A hit is confirmed by comparing the stored tokens and the identity of the block before it
// (id and generation), so a hash collision can never hand out KV computed for other tokens. A cached block
// whose reference count drops to 0 stays cached (its KV is still valid) until the free list is empty, then
// the least recently released one is evicted.
#pragma once
#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

#include "engine/core/types.hpp"

namespace strata {

struct KvPoolLimits {
  int block_size = 16;        // positions per block
  int num_blocks = 0;         // blocks in the pool (0: SlotBook sizes it as slots * ceil(max_context / block_size))
  bool prefix_caching = true; // off: blocks are still paged, nothing is ever cached
  // Test hook: every key is ANDed with it, so 0 makes every block collide (collision safety tests).
  uint64_t hash_mask = ~uint64_t(0);
};

struct KvPoolStats {
  uint64_t lookups = 0;    // prompt blocks asked of the prefix cache
  uint64_t hits = 0;       // of those, blocks reused
  uint64_t evictions = 0;  // cached blocks dropped to make room
  int total = 0;
  int free = 0;            // allocatable now: never used, released, or cached with no reference
  int cached = 0;          // blocks holding a prefix-cache entry (referenced or not)
};

// Identity of a cached block for the next block's key: block id plus a generation that changes every time
// the block's contents stop being what its cache entry says.
struct KvBlockRef {
  int32_t block = -1;
  uint64_t generation = 0;
  uint64_t key = 0;  // the block's chain key (for the first block's parent: the chain seed)
};

class KvBlockPool {
 public:
  KvBlockPool() = default;
  explicit KvBlockPool(KvPoolLimits limits);
  // Move-only: the blocks hold iterators into the LRU list, which a copy would leave pointing at the original.
  KvBlockPool(KvBlockPool&&) = default;
  KvBlockPool& operator=(KvBlockPool&&) = default;
  KvBlockPool(const KvBlockPool&) = delete;
  KvBlockPool& operator=(const KvBlockPool&) = delete;

  int block_size() const { return limits_.block_size; }
  int num_blocks() const { return limits_.num_blocks; }
  bool prefix_caching() const { return limits_.prefix_caching; }
  int available() const { return int(free_.size() + lru_.size()); }
  KvPoolStats stats() const;

  // A block with reference count 1: from the free list, else by evicting the least recently released
  // cached block. Throws KvExhausted (nothing changed) when neither exists.
  int32_t allocate();
  void incref(int32_t block);
  // Drops one reference; at 0 a cached block joins the LRU list, any other returns to the free list.
  void release(int32_t block);
  int refcount(int32_t block) const { return blocks_[size_t(block)].ref; }
  bool is_cached(int32_t block) const { return blocks_[size_t(block)].cached; }

  // The parent reference for a sequence's first block.
  static KvBlockRef root() { return KvBlockRef{-1, 0, 0x9e3779b97f4a7c15ull}; }
  uint64_t key(uint64_t parent_key, const TokenId* tokens) const;

  // Finds the cached block holding `tokens` (block_size of them) after `parent`; on a hit takes a reference
  // and returns its ref, else returns block -1. Counts nothing (the caller counts lookups).
  KvBlockRef match(const KvBlockRef& parent, const TokenId* tokens);
  // Registers `block` (referenced by the caller, holding `tokens` after `parent`) in the cache and returns its
  // ref. Returns block -1 when the key is taken, by different contents (a collision) or by the same tokens in
  // another sequence's block: `block` stays the caller's, uncached. The caller never switches to that other
  // block mid-sequence: its K/V were computed by other windows (on CUDA a prompt chunk of another size takes
  // another kernel), so a sequence that did would read other bits from then on, at a point its window
  // boundaries decide, and speculation (DESIGN.md invariant 1) and batch invariance would no longer hold.
  KvBlockRef publish(int32_t block, const KvBlockRef& parent, const TokenId* tokens);

  void count_lookups(int asked, int hit) {
    lookups_ += uint64_t(asked);
    hits_ += uint64_t(hit);
  }

 private:
  struct Block {
    int ref = 0;
    bool cached = false;
    uint64_t generation = 0;
    uint64_t key = 0;
    int32_t parent = -1;
    uint64_t parent_generation = 0;
    std::vector<TokenId> tokens;        // when cached
    std::list<int32_t>::iterator lru;   // valid while cached with ref 0
  };
  bool same_contents(const Block& b, const KvBlockRef& parent, const TokenId* tokens) const;
  void uncache(int32_t block);

  KvPoolLimits limits_;
  std::vector<Block> blocks_;
  std::vector<int32_t> free_;        // a stack: the most recently freed block is reused first
  std::list<int32_t> lru_;           // cached, unreferenced; front = least recently released
  std::unordered_map<uint64_t, int32_t> index_;
  uint64_t lookups_ = 0, hits_ = 0, evictions_ = 0;
};

}  // namespace strata
