// UTF-8 helpers: Python strings index, slice and count by code point, so templates that do `s[0]`,
// `s[::-1]` or `s|length` on non-ASCII text must see code points, not bytes.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::jinja {

// Decodes UTF-8; an invalid byte becomes the code point of that byte (so text round-trips unchanged).
std::vector<char32_t> utf8_decode(std::string_view s);
void utf8_append(std::string& out, char32_t cp);
std::string utf8_encode(const std::vector<char32_t>& cps, size_t begin, size_t end);
bool is_ascii(std::string_view s);
size_t utf8_length(std::string_view s);

// Python's `\w` for one code point: letters, digits and underscore. Covers the scripts of the common
// languages (Latin, Greek, Cyrillic, Armenian, Hebrew, Arabic, Indic, Thai, CJK, kana, Hangul); symbols,
// punctuation, joiners and emoji are not word characters. Approximation: combining marks count as word
// characters here, while Python splits words at them.
bool is_py_word_char(char32_t c);

// Python's str.isspace() for one code point.
bool is_py_space(char32_t c);

}  // namespace strata::jinja
