#include "engine/tokenizer/pattern.hpp"

#include <nlohmann/json.hpp>

#include "engine/core/types.hpp"

namespace strata {

Pattern Pattern::from_json(const nlohmann::json& j, const std::string& what) {
  Pattern p;
  if (j.is_object() && j.contains("String") && j["String"].is_string()) {
    p.literal_ = j["String"].get<std::string>();
    return p;
  }
  if (j.is_object() && j.contains("Regex") && j["Regex"].is_string()) {
    p.regex_ = std::make_shared<Regex>(j["Regex"].get<std::string>(), what);
    return p;
  }
  throw Error(what + ": pattern must be {\"String\": ...} or {\"Regex\": ...}");
}

Pattern Pattern::literal(std::string s) {
  Pattern p;
  p.literal_ = std::move(s);
  return p;
}

void Pattern::for_each_match(std::string_view text, const std::function<void(size_t, size_t)>& on_match) const {
  if (regex_) {
    regex_->for_each_match(text, on_match);
    return;
  }
  if (literal_.empty()) return;  // an empty literal matches nothing (as in the reference)
  size_t pos = 0;
  while ((pos = text.find(literal_, pos)) != std::string_view::npos) {
    on_match(pos, pos + literal_.size());
    pos += literal_.size();
  }
}

std::string Pattern::replace_all(std::string_view text, const std::string& content) const {
  std::string out;
  out.reserve(text.size());
  size_t last = 0;
  for_each_match(text, [&](size_t s, size_t e) {
    out.append(text.data() + last, s - last);
    out += content;
    last = e;
  });
  out.append(text.data() + last, text.size() - last);
  return out;
}

}  // namespace strata
