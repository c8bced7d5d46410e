// What the routes need from a tokenizer, behind an interface so route tests can run with a byte-level
// stand-in while the real tokenizer is used in production (TokenizerCodec).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/types.hpp"

namespace strata {

class Tokenizer;

class TokenCodec {
 public:
  virtual ~TokenCodec() = default;
  // Throws strata::Error on text the tokenizer refuses (invalid UTF-8).
  virtual std::vector<TokenId> encode(std::string_view text, bool add_special_tokens) const = 0;
  virtual std::string decode(const std::vector<TokenId>& ids, bool skip_special_tokens) const = 0;
  virtual int vocab_size() const = 0;
  // The text of one token as logprobs show it (special tokens included).
  std::string token_text(TokenId id) const { return decode({id}, false); }
};

class TokenizerCodec : public TokenCodec {
 public:
  explicit TokenizerCodec(const Tokenizer& tokenizer) : tok_(tokenizer) {}
  std::vector<TokenId> encode(std::string_view text, bool add_special_tokens) const override;
  std::string decode(const std::vector<TokenId>& ids, bool skip_special_tokens) const override;
  int vocab_size() const override;

 private:
  const Tokenizer& tok_;
};

}  // namespace strata
