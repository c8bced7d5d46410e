#include "engine/tokenizer/normalizers.hpp"

#include <nlohmann/json.hpp>
#include <vector>

#include "engine/core/types.hpp"
#include "engine/tokenizer/json_fields.hpp"
#include "engine/tokenizer/pattern.hpp"
#include "engine/tokenizer/unicode_normalization.hpp"
#include "engine/tokenizer/unicode_whitespace.hpp"
#include "engine/tokenizer/utf8.hpp"

namespace strata {

namespace {

using nlohmann::json;

class UnicodeForm final : public Normalizer {
 public:
  explicit UnicodeForm(unicode::Form f) : form_(f) {}
  void normalize(std::string& text) const override { text = unicode::normalize(text, form_); }

 private:
  unicode::Form form_;
};

class Prepend final : public Normalizer {
 public:
  explicit Prepend(std::string p) : prefix_(std::move(p)) {}
  // An empty section stays empty: there is nothing to mark the start of.
  void normalize(std::string& text) const override {
    if (!text.empty()) text.insert(0, prefix_);
  }

 private:
  std::string prefix_;
};

class Replace final : public Normalizer {
 public:
  Replace(Pattern p, std::string content) : pattern_(std::move(p)), content_(std::move(content)) {}
  void normalize(std::string& text) const override { text = pattern_.replace_all(text, content_); }

 private:
  Pattern pattern_;
  std::string content_;
};

class Strip final : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  void normalize(std::string& text) const override {
    size_t begin = 0, end = text.size();
    bool seen_content = false;
    // One pass finds the first and last non-whitespace code points.
    size_t first = text.size(), last_end = 0;
    utf8::for_each_code_point(text, [&](char32_t cp, size_t off, size_t len) {
      if (is_unicode_whitespace(cp)) return;
      if (!seen_content) first = off;
      seen_content = true;
      last_end = off + len;
    });
    if (!seen_content) {
      if (left_ || right_) text.clear();
      return;
    }
    if (left_) begin = first;
    if (right_) end = last_end;
    text = text.substr(begin, end - begin);
  }

 private:
  bool left_, right_;
};

class Sequence final : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> parts) : parts_(std::move(parts)) {}
  void normalize(std::string& text) const override {
    for (const auto& p : parts_) p->normalize(text);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const json& j) {
  if (j.is_null()) return nullptr;
  const std::string type = component_type(j, "normalizer");
  const std::string what = "normalizer " + type;
  if (type == "NFC") return std::make_unique<UnicodeForm>(unicode::Form::NFC);
  if (type == "NFD") return std::make_unique<UnicodeForm>(unicode::Form::NFD);
  if (type == "NFKC") return std::make_unique<UnicodeForm>(unicode::Form::NFKC);
  if (type == "NFKD") return std::make_unique<UnicodeForm>(unicode::Form::NFKD);
  if (type == "Prepend") return std::make_unique<Prepend>(string_field(j, "prepend", what));
  if (type == "Replace")
    return std::make_unique<Replace>(Pattern::from_json(field(j, "pattern", what), what),
                                     string_field(j, "content", what));
  if (type == "Strip")
    return std::make_unique<Strip>(bool_field(j, "strip_left", what, true), bool_field(j, "strip_right", what, true));
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Normalizer>> parts;
    const json& list = field(j, "normalizers", what);
    if (!list.is_array()) throw Error(what + ": \"normalizers\" must be an array");
    for (const auto& item : list)
      if (auto n = make_normalizer(item)) parts.push_back(std::move(n));
    return std::make_unique<Sequence>(std::move(parts));
  }
  throw Error("tokenizer.json: unsupported normalizer type \"" + type + "\"");
}

}  // namespace strata
