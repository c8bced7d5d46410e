#include "engine/tokenizer/flat_tables.hpp"

namespace strata {

namespace {
// Capacity for n entries at a load factor of at most 2/3: a power of two, so probing masks.
size_t capacity_for(size_t n) {
  size_t cap = 16;
  while (cap * 2 < n * 3) cap <<= 1;
  return cap;
}
}  // namespace

void StringIndex::reserve(size_t n) {
  if (capacity_for(n) > slots_.size() && count_ == 0) slots_.assign(capacity_for(n), 0);
}

void StringIndex::rehash(const std::vector<std::string>& tokens, size_t cap) {
  std::vector<uint64_t> old;
  old.swap(slots_);
  slots_.assign(cap, 0);
  const size_t mask = cap - 1;
  for (uint64_t s : old) {
    if (!s) continue;
    const int32_t id = int32_t(uint32_t(s) - 1);
    size_t j = hash(tokens[size_t(id)]) & mask;
    while (slots_[j]) j = (j + 1) & mask;
    slots_[j] = s;
  }
}

bool StringIndex::insert(const std::vector<std::string>& tokens, int32_t id) {
  if ((count_ + 1) * 3 > slots_.size() * 2) rehash(tokens, capacity_for(count_ * 2 + 16));
  const std::string& key = tokens[size_t(id)];
  const uint64_t h = hash(key);
  const uint32_t tag = uint32_t(h >> 32);
  const size_t mask = slots_.size() - 1;
  size_t j = h & mask;
  while (slots_[j]) {
    if (uint32_t(slots_[j] >> 32) == tag && tokens[size_t(int32_t(uint32_t(slots_[j]) - 1))] == key) return false;
    j = (j + 1) & mask;
  }
  slots_[j] = (uint64_t(tag) << 32) | (uint32_t(id) + 1);
  ++count_;
  return true;
}

void PairIndex::reserve(size_t n) {
  const size_t cap = capacity_for(n);
  if (cap <= slots_.size()) return;
  std::vector<Slot> old;
  old.swap(slots_);
  slots_.assign(cap, Slot{});
  count_ = 0;
  for (const Slot& s : old)
    if (s.key != kEmpty) insert(s.key, s.value);
}

bool PairIndex::insert(uint64_t key, Value v) {
  if ((count_ + 1) * 3 > slots_.size() * 2) reserve(count_ * 2 + 16);
  const size_t mask = slots_.size() - 1;
  size_t i = mix(key) & mask;
  while (slots_[i].key != kEmpty) {
    if (slots_[i].key == key) return false;
    i = (i + 1) & mask;
  }
  slots_[i].key = key;
  slots_[i].value = v;
  ++count_;
  return true;
}

}  // namespace strata
