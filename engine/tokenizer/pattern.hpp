// The `pattern` field of Split, Replace (normalizer and decoder): {"String": literal} or {"Regex": re}.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "engine/tokenizer/regex.hpp"

namespace strata {

class Pattern {
 public:
  // Throws strata::Error naming `what` when the field is neither form.
  static Pattern from_json(const nlohmann::json& j, const std::string& what);
  static Pattern literal(std::string s);

  // Non-empty, non-overlapping matches as byte spans, left to right.
  void for_each_match(std::string_view text, const std::function<void(size_t, size_t)>& on_match) const;
  // Every match replaced by `content`.
  std::string replace_all(std::string_view text, const std::string& content) const;

 private:
  std::string literal_;
  std::shared_ptr<const Regex> regex_;  // shared: components are copied into sequences
};

}  // namespace strata
