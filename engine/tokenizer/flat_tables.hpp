// Open-addressing hash tables for the two lookups on the encode hot path (token string -> id, and
// merge pair -> result). std::unordered_map costs a node allocation per entry and a std::string key
// per probe; these keep flat arrays and probe with string_views. They also decide load time for the
// big vocabularies (Gemma 3: 262k tokens, 515k merges), so the string index stores no keys of its own:
// it indexes the id -> token table the model keeps anyway.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

// Token string -> id over a table `tokens` (id -> string) owned by the caller and passed to each call.
class StringIndex {
 public:
  void reserve(size_t n);
  // Returns false (and changes nothing) when tokens[id] is already indexed under another id: the
  // first id of a repeated string wins.
  bool insert(const std::vector<std::string>& tokens, int32_t id);
  // -1 when absent.
  int32_t find(const std::vector<std::string>& tokens, std::string_view key) const {
    if (slots_.empty()) return -1;
    const uint64_t h = hash(key);
    const uint32_t tag = uint32_t(h >> 32);
    const size_t mask = slots_.size() - 1;
    for (size_t j = h & mask;; j = (j + 1) & mask) {
      const uint64_t s = slots_[j];
      if (s == 0) return -1;
      if (uint32_t(s >> 32) == tag) {
        const int32_t id = int32_t(uint32_t(s) - 1);
        if (tokens[size_t(id)] == key) return id;
      }
    }
  }

 private:
  static uint64_t hash(std::string_view s) {
    // FNV-1a with a final mix: tokens are short, so a byte loop beats anything with setup cost.
    uint64_t h = 0xcbf29ce484222325ULL;
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ULL;
    return h ^ (h >> 32);
  }
  void rehash(const std::vector<std::string>& tokens, size_t cap);
  std::vector<uint64_t> slots_;  // (hash tag << 32) | (id + 1); 0 = empty
  size_t count_ = 0;
};

// Maps a pair of int32 ids to (rank, result).
class PairIndex {
 public:
  struct Value {
    int32_t rank;
    int32_t result;
  };
  void reserve(size_t n);
  bool insert(uint64_t key, Value v);
  const Value* find(uint64_t key) const {
    if (slots_.empty()) return nullptr;
    const size_t mask = slots_.size() - 1;
    for (size_t i = mix(key) & mask;; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (s.key == kEmpty) return nullptr;
      if (s.key == key) return &s.value;
    }
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t(0);  // ids are non-negative int32: never a real key
  static uint64_t mix(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
  }
  struct Slot {
    uint64_t key = kEmpty;
    Value value{};
  };
  std::vector<Slot> slots_;
  size_t count_ = 0;
};

}  // namespace strata
