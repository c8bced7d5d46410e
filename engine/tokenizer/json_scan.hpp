// A minimal JSON scanner for the two huge arrays of a tokenizer.json (model.vocab and model.merges,
// up to 800k entries in Gemma 3): building a DOM for them takes seconds, reading them straight into
// the model's tables takes a fraction of that. Everything else still goes through nlohmann::json.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/core/types.hpp"

namespace strata::json_scan {

struct Span {
  size_t begin = 0, end = 0;  // byte range of a JSON value in the document
  bool found = false;
};

// Locates the values of "vocab" and "merges" inside the top-level "model" object. Returns nullopt when
// the document is not shaped as expected (the caller then falls back to a full parse, which reports
// the error precisely).
struct ModelSpans {
  Span vocab, merges;
};
std::optional<ModelSpans> find_model_spans(std::string_view doc);

// {"token": id, ...} -> entries in document order. Throws strata::Error naming the entry on bad input.
std::vector<std::pair<std::string, TokenId>> parse_vocab(std::string_view value);
// ["a b", ...] or [["a", "b"], ...]: calls visit(left, right) for each merge in order (the views live
// until the call returns). Throws strata::Error naming the entry on bad input.
void for_each_merge(std::string_view value, const std::function<void(std::string_view, std::string_view)>& visit);

}  // namespace strata::json_scan
