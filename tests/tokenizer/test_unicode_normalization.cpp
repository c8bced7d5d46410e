#include <catch2/catch.hpp>

#include "engine/tokenizer/unicode_normalization.hpp"

using namespace strata;
using unicode::Form;

TEST_CASE("NFC composes a base letter with its combining mark") {
  CHECK(unicode::normalize("cafe\u0301", Form::NFC) == "caf\u00e9");
  CHECK(unicode::normalize("A\u030a", Form::NFC) == "\u00c5");
}

TEST_CASE("NFC puts marks in canonical order before composing") {
  // dot above (230) then dot below (220): reordered, then s + dot below + dot above = U+1E69.
  CHECK(unicode::normalize("s\u0307\u0323", Form::NFC) == "\u1e69");
  CHECK(unicode::normalize("a\u0307\u0323", Form::NFC) == "\u1ea1\u0307");
}

TEST_CASE("NFC maps singletons and keeps composition exclusions decomposed") {
  CHECK(unicode::normalize("\u2126", Form::NFC) == "\u03a9");  // OHM SIGN -> GREEK OMEGA
  CHECK(unicode::normalize("\u0958", Form::NFC) == "\u0915\u093c");  // excluded from composition
}

TEST_CASE("Hangul syllables decompose and compose algorithmically") {
  CHECK(unicode::normalize("\u1100\u1161\u11a8", Form::NFC) == "\uac01");
  CHECK(unicode::normalize("\uac00\u11a8", Form::NFC) == "\uac01");  // LV syllable + trailing consonant
  CHECK(unicode::normalize("\uac01", Form::NFD) == "\u1100\u1161\u11a8");
}

TEST_CASE("NFKC folds compatibility characters, NFC leaves them") {
  CHECK(unicode::normalize("\ufb01 \u2460 \uff21", Form::NFKC) == "fi 1 A");
  CHECK(unicode::normalize("\ufb01 \u2460 \uff21", Form::NFC) == "\ufb01 \u2460 \uff21");
  CHECK(unicode::normalize("\u00bd", Form::NFKD) == "1\u20442");
}

TEST_CASE("NFD fully decomposes precomposed letters") {
  CHECK(unicode::normalize("\u1e69", Form::NFD) == "s\u0323\u0307");
  CHECK(unicode::normalize("plain", Form::NFD) == "plain");
}

TEST_CASE("text that is already composed comes back unchanged, whatever its script") {
  const std::string text = "\u041f\u0440\u0438\u0432\u0435\u0442 \u4f60\u597d \ud55c\uad6d \u00e9t\u00e9 \U0001F600";
  CHECK(unicode::normalize(text, Form::NFC) == text);
  CHECK(unicode::normalize(text, Form::NFKC) == text);
  // One combining mark anywhere still composes with its base.
  CHECK(unicode::normalize(text + " e\u0301", Form::NFC) == text + " \u00e9");
}
