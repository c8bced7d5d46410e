// Text -> typed value conversions shared by every configuration source (flag, env, YAML), so a value is
// accepted or refused the same way wherever it is written. Errors are ValueError, whose message says what
// was expected; the caller adds the option name and the source.
#pragma once
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace strata {

struct ValueError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

long long parse_integer(const std::string& text, long long lo, long long hi);
// `lo_open` excludes lo itself (e.g. a timeout must be > 0).
double parse_real(const std::string& text, double lo, double hi, bool lo_open);
bool parse_boolean(const std::string& text);  // true/false, 1/0, yes/no, on/off (any case)
// Bytes with an optional binary suffix: 4096, 64k, 8M, 1G (K = 1024).
long long parse_byte_size(const std::string& text, long long lo, long long hi);
// Comma-separated items, trimmed; empty items are dropped ("a, b," -> {a, b}).
std::vector<std::string> split_list(const std::string& text);

// Maps a word to an enum value; the error lists the accepted words.
template <class E>
E parse_choice(const std::string& text, const std::vector<std::pair<std::string, E>>& choices) {
  for (const auto& [word, value] : choices)
    if (word == text) return value;
  std::string list;
  for (const auto& [word, value] : choices) list += (list.empty() ? "" : ", ") + word;
  throw ValueError("'" + text + "' is not one of: " + list);
}

}  // namespace strata
