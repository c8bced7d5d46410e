// A PCRE2 regex that matches the way tokenizer.json patterns were written for: Oniguruma semantics as
// the Hugging Face reference emulates them (\s is Unicode White_Space, (?i:...) folds ASCII only,
// ^/$ are line anchors), UTF-8 with Unicode properties.
#pragma once
#include <functional>
#include <string>
#include <string_view>

namespace strata {

class Regex {
 public:
  // Throws strata::Error naming `what` and the compile error when the pattern is invalid.
  Regex(const std::string& pattern, const std::string& what);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Non-empty, non-overlapping matches left to right, as byte spans [start, end) of text. Thread-safe:
  // the compiled pattern is shared, match state is per call.
  void for_each_match(std::string_view text, const std::function<void(size_t, size_t)>& on_match) const;

  // The pattern PCRE2 actually compiles (after the Oniguruma rewrite), for tests and error messages.
  static std::string translate(const std::string& oniguruma_pattern);

 private:
  void* code_ = nullptr;  // pcre2_code_8*, kept opaque so PCRE2's header stays out of ours
  std::string what_;
};

}  // namespace strata
