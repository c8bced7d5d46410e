// Unicode normalization forms (UAX #15) over valid UTF-8, from the generated tables.
#pragma once
#include <string>
#include <string_view>

namespace strata::unicode {

enum class Form { NFC, NFD, NFKC, NFKD };

std::string normalize(std::string_view text, Form form);

}  // namespace strata::unicode
