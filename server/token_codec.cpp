#include "server/token_codec.hpp"

#include "engine/tokenizer/tokenizer.hpp"

namespace strata {

std::vector<TokenId> TokenizerCodec::encode(std::string_view text, bool add_special_tokens) const {
  return tok_.encode(text, add_special_tokens);
}

std::string TokenizerCodec::decode(const std::vector<TokenId>& ids, bool skip_special_tokens) const {
  return tok_.decode(ids, skip_special_tokens);
}

int TokenizerCodec::vocab_size() const { return tok_.vocab_size(); }

}  // namespace strata
