#include "engine/slots/kv_blocks.hpp"

#include <cstring>
#include <string>

namespace strata {

namespace {

// FNV-1a over 64-bit words, then a splitmix64 finalizer so nearby inputs spread over all bits.
uint64_t fnv_mix(uint64_t h, uint64_t word) {
  for (int i = 0; i < 8; ++i) {
    h ^= (word >> (8 * i)) & 0xffu;
    h *= 0x100000001b3ull;
  }
  return h;
}

uint64_t finalize(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

KvBlockPool::KvBlockPool(KvPoolLimits limits) : limits_(limits) {
  if (limits_.block_size < 1)
    throw Error("kv pool: block_size must be >= 1, found " + std::to_string(limits_.block_size));
  if (limits_.num_blocks < 1)
    throw Error("kv pool: num_blocks must be >= 1, found " + std::to_string(limits_.num_blocks));
  blocks_.resize(size_t(limits_.num_blocks));
  free_.reserve(size_t(limits_.num_blocks));
  // Block 0 on top of the stack, so a fresh pool hands out 0, 1, 2, ...
  for (int32_t b = limits_.num_blocks - 1; b >= 0; --b) free_.push_back(b);
}

KvPoolStats KvBlockPool::stats() const {
  KvPoolStats s;
  s.lookups = lookups_;
  s.hits = hits_;
  s.evictions = evictions_;
  s.total = limits_.num_blocks;
  s.free = available();
  s.cached = int(index_.size());
  return s;
}

uint64_t KvBlockPool::key(uint64_t parent_key, const TokenId* tokens) const {
  uint64_t h = 0xcbf29ce484222325ull;
  h = fnv_mix(h, parent_key);
  h = fnv_mix(h, uint64_t(limits_.block_size));
  for (int i = 0; i < limits_.block_size; ++i) h = fnv_mix(h, uint64_t(uint32_t(tokens[i])));
  return finalize(h) & limits_.hash_mask;
}

int32_t KvBlockPool::allocate() {
  int32_t b;
  if (!free_.empty()) {
    b = free_.back();
    free_.pop_back();
  } else if (!lru_.empty()) {
    b = lru_.front();
    lru_.pop_front();
    uncache(b);
    ++evictions_;
  } else {
    throw KvExhausted("kv pool: all " + std::to_string(limits_.num_blocks) + " blocks are in use");
  }
  blocks_[size_t(b)].ref = 1;
  return b;
}

void KvBlockPool::incref(int32_t block) {
  Block& b = blocks_[size_t(block)];
  if (b.ref == 0) {
    if (!b.cached) throw Error("kv pool: incref of free block " + std::to_string(block));
    lru_.erase(b.lru);
  }
  ++b.ref;
}

void KvBlockPool::release(int32_t block) {
  Block& b = blocks_[size_t(block)];
  if (b.ref <= 0) throw Error("kv pool: release of unreferenced block " + std::to_string(block));
  if (--b.ref > 0) return;
  if (b.cached) {
    b.lru = lru_.insert(lru_.end(), block);
  } else {
    ++b.generation;
    free_.push_back(block);
  }
}

void KvBlockPool::uncache(int32_t block) {
  Block& b = blocks_[size_t(block)];
  auto it = index_.find(b.key);
  if (it != index_.end() && it->second == block) index_.erase(it);
  b.cached = false;
  b.tokens.clear();
  ++b.generation;
}

bool KvBlockPool::same_contents(const Block& b, const KvBlockRef& parent, const TokenId* tokens) const {
  return b.cached && b.parent == parent.block && b.parent_generation == parent.generation &&
         std::memcmp(b.tokens.data(), tokens, sizeof(TokenId) * size_t(limits_.block_size)) == 0;
}

KvBlockRef KvBlockPool::match(const KvBlockRef& parent, const TokenId* tokens) {
  if (!limits_.prefix_caching) return KvBlockRef{};
  const uint64_t k = key(parent.key, tokens);
  auto it = index_.find(k);
  if (it == index_.end()) return KvBlockRef{};
  const Block& b = blocks_[size_t(it->second)];
  if (!same_contents(b, parent, tokens)) return KvBlockRef{};  // a collision: never someone else's KV
  incref(it->second);
  return KvBlockRef{it->second, b.generation, k};
}

KvBlockRef KvBlockPool::publish(int32_t block, const KvBlockRef& parent, const TokenId* tokens) {
  if (!limits_.prefix_caching) return KvBlockRef{};
  Block& b = blocks_[size_t(block)];
  if (b.cached) throw Error("kv pool: block " + std::to_string(block) + " is already cached");
  const uint64_t k = key(parent.key, tokens);
  if (index_.count(k)) return KvBlockRef{};  // a collision, or these tokens cached by another sequence
  b.cached = true;
  b.key = k;
  b.parent = parent.block;
  b.parent_generation = parent.generation;
  b.tokens.assign(tokens, tokens + limits_.block_size);
  index_.emplace(k, block);
  return KvBlockRef{block, b.generation, k};
}

}  // namespace strata
