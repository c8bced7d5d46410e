// UTF-8 primitives shared by every tokenizer component. All text inside the tokenizer is UTF-8 in
// std::string; these helpers are the only place that knows the byte layout.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace strata::utf8 {

constexpr char32_t kReplacement = 0xFFFD;

// Length of the well-formed sequence starting at s[pos] (1..4), or 0 when the bytes there are not a
// complete well-formed sequence (truncated, overlong, surrogate, > U+10FFFF, stray continuation).
size_t sequence_length(std::string_view s, size_t pos);

// Decodes the well-formed sequence at s[pos]; callers have checked it with sequence_length.
char32_t decode_at(std::string_view s, size_t pos, size_t len);

// Offset of the first byte that does not start a well-formed sequence, or nullopt when s is valid.
std::optional<size_t> first_invalid(std::string_view s);

void append(std::string& out, char32_t cp);

// Replaces every maximal ill-formed subpart with one U+FFFD (the WHATWG / Unicode "best practice"
// that TextDecoder and Rust's from_utf8_lossy follow), so decoders never return invalid UTF-8.
std::string lossy(std::string_view bytes);

// Calls f(code point, byte offset, byte length) for each code point of valid UTF-8 text.
template <class F>
void for_each_code_point(std::string_view s, F&& f) {
  size_t i = 0;
  while (i < s.size()) {
    size_t n = sequence_length(s, i);
    if (n == 0) n = 1;  // callers pass validated text; a stray byte still advances
    f(decode_at(s, i, n), i, n);
    i += n;
  }
}

}  // namespace strata::utf8
