#include <catch2/catch.hpp>

#include "engine/tokenizer/utf8.hpp"

using namespace strata;

TEST_CASE("lossy UTF-8 replaces each maximal ill-formed subpart with one U+FFFD") {
  CHECK(utf8::lossy("a\xE2\x82") == "a\xEF\xBF\xBD");
}
