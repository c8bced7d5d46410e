// A strict, iterative JSON validator that runs before the body is handed to nlohmann::json. It bounds what
// parsing could cost us (nesting depth, string sizes, value count) and rejects what JSON forbids (invalid
// UTF-8, lone surrogates, NaN/Infinity, numbers that overflow a double) with a message that names the byte
// offset and the path of the value ("messages[0].content"), which nlohmann's own errors cannot do.
// It never recurses, so a 100k-deep body costs one pass and a small stack.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace strata {

struct JsonLimits {
  int max_depth = 64;
  size_t max_string_bytes = 4u << 20;  // one string (decoded size is never larger than the raw one)
  size_t max_values = 1u << 20;        // scalars + containers in the whole document
};

struct JsonGuardResult {
  bool ok = true;
  std::string message;  // "invalid JSON at byte 12 in 'messages[0]': ..."
  std::string path;     // the value being read when the problem was found ("" = the document)
};

JsonGuardResult check_json(std::string_view text, const JsonLimits& limits = {});

}  // namespace strata
