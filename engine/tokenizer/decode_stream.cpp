#include "engine/tokenizer/tokenizer_impl.hpp"

namespace strata {

// The stream decodes a short window of recent ids and returns what the newest id added to the
// window's text. Decoding the window together with its older ids (not the new id alone) keeps what
// depends on context right: the bytes of a character split over byte tokens, and decoders that treat
// the first token specially (Metaspace and Strip drop a leading space). Text is returned only when it
// does not end in U+FFFD, since that may be a character whose remaining bytes are yet to come.

namespace {

bool ends_with_replacement(const std::string& s) {
  return s.size() >= 3 && s.compare(s.size() - 3, 3, "\xEF\xBF\xBD") == 0;
}

}  // namespace

DecodeStream::DecodeStream(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tok_(tokenizer), skip_special_(skip_special_tokens) {}

std::string DecodeStream::step(TokenId id) {
  ids_.push_back(id);
  std::string text = tok_.impl().decode(ids_.data() + prefix_, ids_.size() - prefix_, skip_special_);
  if (text.compare(0, emitted_, emitted_text_) != 0) return {};
  if (ends_with_replacement(text)) {
    // Everything before the last U+FFFD is final (later bytes can only complete or replace that last
    // sequence), so it goes out now; the window stays, as it has no clean id boundary yet.
    const size_t stable = text.size() - 3;
    if (stable <= emitted_) return {};
    std::string out = text.substr(emitted_, stable - emitted_);
    emitted_text_ = text.substr(0, stable);
    emitted_ = stable;
    return out;
  }
  if (text.size() <= emitted_) return {};
  std::string out = text.substr(emitted_);
  // The window restarts at the ids that produced the text just returned: they are the context the
  // next id is decoded with, and everything before them is final.
  prefix_ = read_;
  read_ = ids_.size();
  ids_.erase(ids_.begin(), ids_.begin() + std::ptrdiff_t(prefix_));
  read_ -= prefix_;
  prefix_ = 0;
  emitted_text_ = tok_.impl().decode(ids_.data(), read_, skip_special_);
  emitted_ = emitted_text_.size();
  return out;
}

std::string DecodeStream::flush() {
  std::string text = tok_.impl().decode(ids_.data() + prefix_, ids_.size() - prefix_, skip_special_);
  std::string out;
  if (text.size() > emitted_ && text.compare(0, emitted_, emitted_text_) == 0) out = text.substr(emitted_);
  ids_.clear();
  prefix_ = read_ = emitted_ = 0;
  emitted_text_.clear();
  return out;
}

}  // namespace strata
