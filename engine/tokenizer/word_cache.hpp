// Memo of word -> ids for the BPE model. Text repeats its words, so most pieces skip the merge loop.
// Sharded so that server threads encoding at once rarely wait on each other; a full shard is simply
// cleared, which bounds memory without any eviction bookkeeping. A cached answer is exactly what the
// merge loop would compute, so the cache never changes results.
#pragma once
#include <array>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/core/types.hpp"

namespace strata {

class WordCache {
 public:
  static constexpr size_t kMaxWordBytes = 256;
  static constexpr size_t kShardEntries = 8192;

  // Appends the cached ids of word to out and returns true, or returns false.
  bool lookup(std::string_view word, std::vector<TokenId>& out) const {
    Shard& s = shard(word);
    std::lock_guard<std::mutex> lock(s.mu);
    thread_local std::string key;  // reused so a lookup does not allocate
    key.assign(word.data(), word.size());
    auto it = s.map.find(key);
    if (it == s.map.end()) return false;
    out.insert(out.end(), it->second.begin(), it->second.end());
    return true;
  }
  void store(std::string_view word, const TokenId* ids, size_t n) const {
    if (word.size() > kMaxWordBytes) return;
    Shard& s = shard(word);
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.map.size() >= kShardEntries) s.map.clear();
    s.map.emplace(std::string(word), std::vector<TokenId>(ids, ids + n));
  }

 private:
  struct Shard {
    std::mutex mu;
    std::unordered_map<std::string, std::vector<TokenId>> map;
  };
  Shard& shard(std::string_view word) const { return shards_[std::hash<std::string_view>()(word) % shards_.size()]; }
  mutable std::array<Shard, 16> shards_;
};

}  // namespace strata
