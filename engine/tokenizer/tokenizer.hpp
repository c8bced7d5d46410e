// Hugging Face tokenizer.json, loaded and run with exact parity (issue: tokenizers). Public face only; the
// components (normalizers, pre-tokenizers, BPE, decoders) live in their own files behind Impl.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/types.hpp"

namespace strata {

class Tokenizer {
 public:
  // PATH is a directory holding tokenizer.json or the file itself. Throws strata::Error on a missing file,
  // bad JSON, or an unknown component type (named in the message).
  static std::unique_ptr<Tokenizer> load(const std::string& path);
  ~Tokenizer();

  // What encode(text, add_special_tokens=...) does in transformers: special tokens written in the text
  // are recognized; add_special_tokens applies the post-processor (BOS/EOS). Throws strata::Error on
  // invalid UTF-8 input.
  std::vector<TokenId> encode(std::string_view text, bool add_special_tokens = false) const;
  // Invalid byte sequences in the output become U+FFFD, never an error.
  std::string decode(const std::vector<TokenId>& ids, bool skip_special_tokens = false) const;

  int vocab_size() const;  // highest id + 1 over the model vocab and added tokens
  std::optional<TokenId> token_to_id(std::string_view token) const;  // vocab or added token
  std::string id_to_token(TokenId id) const;  // raw vocabulary string; "" when out of range
  bool is_special(TokenId id) const;           // an added token marked special

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Incremental detokenization for streaming: push ids one by one, get the text that became stable. Never
// emits a partial UTF-8 sequence; the concatenation of all step() results and flush() equals
// tokenizer.decode(all ids, skip_special_tokens).
class DecodeStream {
 public:
  DecodeStream(const Tokenizer& tokenizer, bool skip_special_tokens);
  std::string step(TokenId id);
  std::string flush();  // end of stream: whatever is held back (bad bytes become U+FFFD)

 private:
  const Tokenizer& tok_;
  bool skip_special_;
  std::vector<TokenId> ids_;
  size_t prefix_ = 0;   // ids_[prefix_..] are decoded again each step (context for Metaspace/bytes)
  size_t emitted_ = 0;  // bytes of decode(ids_[prefix_..]) already returned
  size_t read_ = 0;     // ids_[prefix_..read_] are context only: their text went out before the window moved
  std::string emitted_text_;  // the first emitted_ bytes of decode(ids_[prefix_..]): new text must extend it
};

}  // namespace strata
