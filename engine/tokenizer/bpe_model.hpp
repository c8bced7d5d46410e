// The BPE model: a word (one pre-tokenized piece) becomes ids by starting from its characters and
// applying the ranked merges, lowest rank first and leftmost first among equal ranks, until none applies.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "engine/core/types.hpp"
#include "engine/tokenizer/flat_tables.hpp"
#include "engine/tokenizer/word_cache.hpp"

namespace strata {

class BpeModel {
 public:
  using VocabEntries = std::vector<std::pair<std::string, TokenId>>;
  using MergeVisitor = std::function<void(std::string_view left, std::string_view right)>;
  // Calls its argument once per merge, in rank order.
  using MergeSource = std::function<void(const MergeVisitor&)>;

  // Reads tokenizer.json's "model" object. Throws strata::Error on a malformed vocab or a merge that
  // names tokens outside the vocab.
  static BpeModel from_json(const nlohmann::json& model);
  // The same, with vocab and merges already read (the fast loading path); `model`'s own "vocab" and
  // "merges" are ignored.
  static BpeModel build(const nlohmann::json& model, VocabEntries vocab, const MergeSource& merges);

  // Appends the ids of one word. Characters outside the vocab become their <0xXX> byte tokens when
  // byte_fallback is on (and all bytes exist), otherwise the unk token (fused when fuse_unk), otherwise
  // they are dropped, as in the reference.
  void encode_word(std::string_view word, std::vector<TokenId>& out) const;

  std::optional<TokenId> token_to_id(std::string_view token) const;
  const std::vector<std::string>& id_to_token() const { return id_to_token_; }

 private:
  static uint64_t pair_key(TokenId a, TokenId b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }
  // A character with neither a token nor an unk: kept as a separator that no merge names, removed after merging.
  static constexpr TokenId kDropped = -1;
  static constexpr size_t kSmallWord = 64;  // up to this many symbols, merge_small beats the heap
  void merge_symbols(std::vector<TokenId>& ids) const;
  void merge_small(std::vector<TokenId>& ids) const;
  void encode_uncached(std::string_view word, std::vector<TokenId>& out) const;

  StringIndex vocab_;
  std::vector<std::string> id_to_token_;
  PairIndex merges_;
  std::array<TokenId, 256> byte_ids_{};
  std::optional<TokenId> unk_;
  bool byte_fallback_ = false;
  bool fuse_unk_ = false;
  bool ignore_merges_ = false;
  std::string continuing_subword_prefix_;
  std::string end_of_word_suffix_;
  std::shared_ptr<WordCache> cache_ = std::make_shared<WordCache>();
};

}  // namespace strata
