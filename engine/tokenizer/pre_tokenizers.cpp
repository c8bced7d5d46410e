#include "engine/tokenizer/pre_tokenizers.hpp"

#include <nlohmann/json.hpp>

#include "engine/core/types.hpp"
#include "engine/tokenizer/byte_level.hpp"
#include "engine/tokenizer/json_fields.hpp"
#include "engine/tokenizer/pattern.hpp"
#include "engine/tokenizer/split_behavior.hpp"

namespace strata {

namespace {

using nlohmann::json;
using Spans = std::vector<std::pair<size_t, size_t>>;

// The GPT-2 pattern ByteLevel applies when use_regex is true.
const char* const kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

Spans collect(const Pattern& p, std::string_view text) {
  Spans spans;
  p.for_each_match(text, [&](size_t s, size_t e) { spans.emplace_back(s, e); });
  return spans;
}

// Applies a per-piece split to every piece in place.
template <class F>
void split_each(std::vector<std::string>& pieces, F&& split_one) {
  std::vector<std::string> out;
  out.reserve(pieces.size() * 2);
  for (size_t i = 0; i < pieces.size(); ++i) split_one(pieces[i], i, out);
  pieces.swap(out);
}

class ByteLevel final : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, bool use_regex) : add_prefix_space_(add_prefix_space) {
    if (use_regex) regex_ = std::make_unique<Pattern>(Pattern::from_json(json{{"Regex", kGpt2Pattern}}, "ByteLevel"));
  }
  void pre_tokenize(std::vector<std::string>& pieces, bool) const override {
    split_each(pieces, [&](std::string& piece, size_t, std::vector<std::string>& out) {
      // The prefix space makes the first word look like every other word ("Ġword").
      if (add_prefix_space_ && (piece.empty() || piece[0] != ' ')) piece.insert(0, " ");
      auto encode = [&](std::string_view part) {
        std::string mapped;
        mapped.reserve(part.size() * 2);
        byte_level::encode_append(mapped, part);
        out.push_back(std::move(mapped));
      };
      if (!regex_) {
        if (!piece.empty()) encode(piece);
        return;
      }
      // Isolated split: text the pattern leaves between matches is a piece too (the GPT-2 pattern
      // happens to cover every code point, a custom one need not).
      size_t last = 0;
      regex_->for_each_match(piece, [&](size_t s, size_t e) {
        if (s > last) encode(std::string_view(piece).substr(last, s - last));
        encode(std::string_view(piece).substr(s, e - s));
        last = e;
      });
      if (last < piece.size()) encode(std::string_view(piece).substr(last));
    });
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<Pattern> regex_;
};

class Split final : public PreTokenizer {
 public:
  Split(Pattern p, SplitBehavior b, bool invert) : pattern_(std::move(p)), behavior_(b), invert_(invert) {}
  void pre_tokenize(std::vector<std::string>& pieces, bool) const override {
    split_each(pieces, [&](std::string& piece, size_t, std::vector<std::string>& out) {
      split_by_matches(piece, collect(pattern_, piece), behavior_, invert_, out);
    });
  }

 private:
  Pattern pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

class Metaspace final : public PreTokenizer {
 public:
  enum class Prepend { Always, First, Never };
  Metaspace(std::string replacement, Prepend scheme, bool split)
      : replacement_(std::move(replacement)), scheme_(scheme), split_(split), marker_(Pattern::literal(replacement_)) {}
  void pre_tokenize(std::vector<std::string>& pieces, bool at_start) const override {
    split_each(pieces, [&](std::string& piece, size_t index, std::vector<std::string>& out) {
      std::string text = Pattern::literal(" ").replace_all(piece, replacement_);
      const bool prepend = scheme_ == Prepend::Always || (scheme_ == Prepend::First && at_start && index == 0);
      if (prepend && text.compare(0, replacement_.size(), replacement_) != 0) text.insert(0, replacement_);
      if (!split_) {
        if (!text.empty()) out.push_back(std::move(text));
        return;
      }
      // Each word keeps its leading marker: "▁Hello▁world" -> "▁Hello", "▁world".
      split_by_matches(text, collect(marker_, text), SplitBehavior::MergedWithNext, false, out);
    });
  }

 private:
  std::string replacement_;
  Prepend scheme_;
  bool split_;
  Pattern marker_;
};

class Sequence final : public PreTokenizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> parts) : parts_(std::move(parts)) {}
  void pre_tokenize(std::vector<std::string>& pieces, bool at_start) const override {
    for (const auto& p : parts_) p->pre_tokenize(pieces, at_start);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

std::unique_ptr<PreTokenizer> regex_split(const char* re, SplitBehavior b, bool invert, const std::string& what) {
  return std::make_unique<Split>(Pattern::from_json(json{{"Regex", re}}, what), b, invert);
}

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const json& j) {
  if (j.is_null()) return nullptr;
  const std::string type = component_type(j, "pre_tokenizer");
  const std::string what = "pre_tokenizer " + type;
  if (type == "ByteLevel")
    return std::make_unique<ByteLevel>(bool_field(j, "add_prefix_space", what, true),
                                       bool_field(j, "use_regex", what, true));
  if (type == "Split") {
    return std::make_unique<Split>(Pattern::from_json(field(j, "pattern", what), what),
                                   parse_split_behavior(string_field(j, "behavior", what), what),
                                   bool_field(j, "invert", what, false));
  }
  if (type == "Digits") {
    // Rust's char::is_numeric is the N category; digits of one run stay together unless individual.
    const bool individual = bool_field(j, "individual_digits", what, false);
    return regex_split(individual ? R"(\p{N})" : R"(\p{N}+)", SplitBehavior::Isolated, false, what);
  }
  if (type == "WhitespaceSplit") return regex_split(R"(\s+)", SplitBehavior::Removed, false, what);
  if (type == "Whitespace") return regex_split(R"(\w+|[^\w\s]+)", SplitBehavior::Removed, true, what);
  if (type == "Metaspace") {
    const std::string replacement = string_field(j, "replacement", what, "\u2581");
    Metaspace::Prepend scheme = Metaspace::Prepend::Always;
    if (j.contains("prepend_scheme") && !j["prepend_scheme"].is_null()) {
      const std::string s = string_field(j, "prepend_scheme", what);
      if (s == "always") scheme = Metaspace::Prepend::Always;
      else if (s == "first") scheme = Metaspace::Prepend::First;
      else if (s == "never") scheme = Metaspace::Prepend::Never;
      else throw Error(what + ": unknown prepend_scheme \"" + s + "\"");
    } else if (!bool_field(j, "add_prefix_space", what, true)) {
      scheme = Metaspace::Prepend::Never;  // the field older files carry instead of prepend_scheme
    }
    return std::make_unique<Metaspace>(replacement, scheme, bool_field(j, "split", what, true));
  }
  if (type == "Sequence") {
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    const json& list = field(j, "pretokenizers", what);
    if (!list.is_array()) throw Error(what + ": \"pretokenizers\" must be an array");
    for (const auto& item : list)
      if (auto p = make_pre_tokenizer(item)) parts.push_back(std::move(p));
    return std::make_unique<Sequence>(std::move(parts));
  }
  throw Error("tokenizer.json: unsupported pre_tokenizer type \"" + type + "\"");
}

}  // namespace strata
