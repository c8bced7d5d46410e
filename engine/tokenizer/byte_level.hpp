// The GPT-2 byte-to-unicode alphabet: each of the 256 bytes is shown as one printable code point, so a
// byte-level vocabulary holds every byte string as ordinary text. Printable Latin-1 bytes map to
// themselves; the 68 others (controls, space, NBSP, soft hyphen) to U+0100 onwards, in byte order.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace strata::byte_level {

char32_t byte_to_code_point(uint8_t b);
// The byte a code point of the alphabet stands for, or -1 when it is not in the alphabet.
int code_point_to_byte(char32_t cp);
// Each byte of `bytes` replaced by the UTF-8 of its code point.
void encode_append(std::string& out, std::string_view bytes);

}  // namespace strata::byte_level
