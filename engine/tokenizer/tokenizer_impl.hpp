// What a loaded tokenizer.json is made of. The pipeline of encode (the order the reference uses):
//   raw text -> split on non-normalized added tokens -> normalize each plain section -> split on
//   normalized added tokens -> pre-tokenize -> BPE per piece -> post-process.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/tokenizer/added_vocabulary.hpp"
#include "engine/tokenizer/bpe_model.hpp"
#include "engine/tokenizer/decoders.hpp"
#include "engine/tokenizer/normalizers.hpp"
#include "engine/tokenizer/post_processors.hpp"
#include "engine/tokenizer/pre_tokenizers.hpp"
#include "engine/tokenizer/tokenizer.hpp"

namespace strata {

struct Tokenizer::Impl {
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> pre_tokenizer;
  BpeModel model;
  std::unique_ptr<PostProcessor> post_processor;
  std::unique_ptr<Decoder> decoder;

  std::vector<AddedToken> added;                 // in file order
  std::unordered_map<std::string, TokenId> added_ids;
  std::unordered_map<TokenId, size_t> added_by_id;  // id -> index in `added`
  std::unique_ptr<AddedTokenMatcher> raw_matcher;         // normalized=false tokens, on raw text
  std::unique_ptr<AddedTokenMatcher> normalized_matcher;  // normalized=true tokens, on normalized text
  int vocab_size = 0;

  static std::unique_ptr<Impl> from_json_text(const std::string& text);

  // Encodes one plain section of the raw text (no added token in it); `at_start` when it begins the input.
  void encode_section(std::string section, bool at_start, std::vector<TokenId>& out) const;
  // The token strings of ids in order (skipping specials when asked), then the decoder chain.
  std::string decode(const TokenId* ids, size_t n, bool skip_special) const;
};

}  // namespace strata
