// The BPE model: a word (one pre-tokenized piece) becomes ids by starting from its characters and
// applying the ranked merges, lowest rank first and leftmost first among equal ranks, until none applies.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "engine/core/types.hpp"

namespace strata {

class BpeModel {
 public:
  // Reads tokenizer.json's "model" object. Throws strata::Error on a malformed vocab or a merge that
  // names tokens outside the vocab.
  static BpeModel from_json(const nlohmann::json& model);

  // Appends the ids of one word. Characters outside the vocab become their <0xXX> byte tokens when
  // byte_fallback is on (and all bytes exist), otherwise the unk token (fused when fuse_unk), otherwise
  // they are dropped, as in the reference.
  void encode_word(std::string_view word, std::vector<TokenId>& out) const;

  std::optional<TokenId> token_to_id(std::string_view token) const;
  const std::vector<std::string>& id_to_token() const { return id_to_token_; }
  bool byte_fallback() const { return byte_fallback_; }

 private:
  struct Merge {
    int32_t rank;
    TokenId result;
  };
  static uint64_t pair_key(TokenId a, TokenId b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }
  void merge_symbols(std::vector<TokenId>& ids) const;

  std::unordered_map<std::string, TokenId> vocab_;
  std::vector<std::string> id_to_token_;
  std::unordered_map<uint64_t, Merge> merges_;
  std::array<TokenId, 256> byte_ids_{};
  std::optional<TokenId> unk_;
  bool byte_fallback_ = false;
  bool fuse_unk_ = false;
  bool ignore_merges_ = false;
  std::string continuing_subword_prefix_;
  std::string end_of_word_suffix_;
};

}  // namespace strata
