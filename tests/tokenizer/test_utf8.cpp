#include <catch2/catch.hpp>

#include "engine/tokenizer/utf8.hpp"

using namespace strata;

namespace {
const std::string R = "\xEF\xBF\xBD";  // U+FFFD
}

TEST_CASE("well-formed sequences are recognized and ill-formed ones rejected") {
  CHECK(utf8::sequence_length("a", 0) == 1);
  CHECK(utf8::sequence_length("\xC3\xA9", 0) == 2);
  CHECK(utf8::sequence_length("\xE2\x82\xAC", 0) == 3);
  CHECK(utf8::sequence_length("\xF0\x9F\x98\x80", 0) == 4);
  CHECK(utf8::sequence_length("\xC0\x80", 0) == 0);      // overlong NUL
  CHECK(utf8::sequence_length("\xED\xA0\x80", 0) == 0);  // surrogate U+D800
  CHECK(utf8::sequence_length("\xF4\x90\x80\x80", 0) == 0);  // above U+10FFFF
  CHECK(utf8::sequence_length("\xE2\x82", 0) == 0);      // truncated
  CHECK(utf8::sequence_length("\x80", 0) == 0);          // stray continuation
}

TEST_CASE("first_invalid points at the first byte that starts no character") {
  CHECK_FALSE(utf8::first_invalid("plain ascii and caf\xC3\xA9").has_value());
  CHECK(utf8::first_invalid("ab\xFF") == std::optional<size_t>(2));
  CHECK(utf8::first_invalid("\xC3\xA9\xE2\x82") == std::optional<size_t>(2));
}

TEST_CASE("lossy decoding replaces each maximal ill-formed subpart with one U+FFFD") {
  CHECK(utf8::lossy("a\xE2\x82") == "a" + R);              // truncated 3-byte sequence: one U+FFFD
  CHECK(utf8::lossy("\xF0\x9F\x98z") == R + "z");          // truncated 4-byte sequence
  CHECK(utf8::lossy("\xC0\x80") == R + R);                 // C0 can start nothing; 80 is stray
  CHECK(utf8::lossy("\xED\xA0\x80") == R + R + R);         // surrogate: ED then two strays
  CHECK(utf8::lossy("\xE2\x82\xAC ok") == "\xE2\x82\xAC ok");  // valid text is unchanged
}

TEST_CASE("append encodes every code point range") {
  std::string s;
  for (char32_t cp : {char32_t(0x41), char32_t(0xE9), char32_t(0x20AC), char32_t(0x1F600)}) utf8::append(s, cp);
  CHECK(s == "A\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
}
