// Normalizers, pre-tokenizers and decoders, each built from its tokenizer.json object and run on
// explicit inputs.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "engine/core/types.hpp"
#include "engine/tokenizer/decoders.hpp"
#include "engine/tokenizer/normalizers.hpp"
#include "engine/tokenizer/pre_tokenizers.hpp"

using namespace strata;
using nlohmann::json;
using Pieces = std::vector<std::string>;

namespace {

std::string normalize(const json& j, std::string text) {
  make_normalizer(j)->normalize(text);
  return text;
}

Pieces pre_tokenize(const json& j, const std::string& text, bool at_start = true) {
  Pieces p{text};
  make_pre_tokenizer(j)->pre_tokenize(p, at_start);
  return p;
}

std::string decode(const json& j, const Pieces& tokens) {
  std::vector<DecodePiece> pieces;
  for (const auto& t : tokens) pieces.push_back({t, false});
  make_decoder(j)->decode_chain(pieces);
  std::string out;
  for (const auto& p : pieces) out += p.text;
  return out;
}

json split(const std::string& regex, const std::string& behavior, bool invert = false) {
  return {{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", behavior}, {"invert", invert}};
}

}  // namespace

TEST_CASE("normalizers: Prepend marks non-empty text only") {
  const json j{{"type", "Prepend"}, {"prepend", "\u2581"}};
  CHECK(normalize(j, "hi") == "\u2581hi");
  CHECK(normalize(j, "") == "");
}

TEST_CASE("normalizers: Replace with a literal and with a regex") {
  CHECK(normalize({{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}}, "a b  c") ==
        "a\u2581b\u2581\u2581c");
  CHECK(normalize({{"type", "Replace"}, {"pattern", {{"Regex", " {2,}"}}}, {"content", " "}}, "a   b c") == "a b c");
}

TEST_CASE("normalizers: Strip removes Unicode whitespace on the chosen sides") {
  CHECK(normalize({{"type", "Strip"}, {"strip_left", true}, {"strip_right", false}}, "\u3000 x \n") == "x \n");
  CHECK(normalize({{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}}, "\t x y\u00a0") == "x y");
  CHECK(normalize({{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}}, " \n ") == "");
}

TEST_CASE("normalizers: Sequence applies its parts in order; NFC and NFKC") {
  const json seq{{"type", "Sequence"},
                 {"normalizers", json::array({{{"type", "NFKC"}},
                                              {{"type", "Replace"}, {"pattern", {{"String", "fi"}}}, {"content", "F"}}})}};
  CHECK(normalize(seq, "\ufb01ne") == "Fne");  // NFKC first turns the ligature into "fi"
  CHECK(normalize({{"type", "NFC"}}, "e\u0301") == "\u00e9");
  CHECK(normalize({{"type", "Sequence"}, {"normalizers", json::array()}}, "same") == "same");
}

TEST_CASE("normalizers: an unknown type is a load error that names it") {
  REQUIRE_THROWS_WITH(make_normalizer({{"type", "Lowercase2"}}), Catch::Contains("Lowercase2"));
  REQUIRE_THROWS_AS(make_normalizer({{"type", "Prepend"}}), Error);  // missing "prepend"
}

TEST_CASE("pre-tokenizers: ByteLevel maps bytes to the printable alphabet and splits with the GPT-2 regex") {
  const json j{{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  CHECK(pre_tokenize(j, "Hello world's 42!") ==
        Pieces{"Hello", "\u0120world", "'s", "\u0120" "42", "!"});
  // "\\s+(?!\\S)" leaves the last newline to the next alternative.
  CHECK(pre_tokenize(j, "a\n\nb") == Pieces{"a", "\u010a", "\u010a", "b"});
  CHECK(pre_tokenize(j, "\u00e9") == Pieces{"\u00c3\u00a9"});  // two UTF-8 bytes, two alphabet characters
}

TEST_CASE("pre-tokenizers: ByteLevel without regex keeps the piece whole; add_prefix_space prepends one") {
  CHECK(pre_tokenize({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}, "a b") ==
        Pieces{"a\u0120b"});
  CHECK(pre_tokenize({{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", false}}, "a") ==
        Pieces{"\u0120a"});
  CHECK(pre_tokenize({{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", false}}, " a") ==
        Pieces{"\u0120a"});
}

TEST_CASE("pre-tokenizers: Split behaviours place the delimiter as the reference does") {
  const std::string text = "a,b,,c";
  CHECK(pre_tokenize(split(",", "Removed"), text) == Pieces{"a", "b", "c"});
  CHECK(pre_tokenize(split(",", "Isolated"), text) == Pieces{"a", ",", "b", ",", ",", "c"});
  CHECK(pre_tokenize(split(",", "MergedWithPrevious"), text) == Pieces{"a,", "b,", ",", "c"});
  CHECK(pre_tokenize(split(",", "MergedWithNext"), text) == Pieces{"a", ",b", ",", ",c"});
  CHECK(pre_tokenize(split(",", "Contiguous"), text) == Pieces{"a", ",", "b", ",,", "c"});
  // Inverted: the matches are the content and what lies between them the delimiters.
  CHECK(pre_tokenize(split("[a-z]", "Removed", true), text) == Pieces{"a", "b", "c"});
  CHECK_THROWS_WITH(pre_tokenize(split(",", "Sideways"), text), Catch::Contains("Sideways"));
}

TEST_CASE("pre-tokenizers: Digits groups digit runs or isolates each digit") {
  CHECK(pre_tokenize({{"type", "Digits"}, {"individual_digits", false}}, "ab123c4") == Pieces{"ab", "123", "c", "4"});
  CHECK(pre_tokenize({{"type", "Digits"}, {"individual_digits", true}}, "x12") == Pieces{"x", "1", "2"});
}

TEST_CASE("pre-tokenizers: Metaspace replaces spaces, prepends per scheme, splits before each marker") {
  const std::string m = "\u2581";
  const json always{{"type", "Metaspace"}, {"replacement", m}, {"prepend_scheme", "always"}, {"split", true}};
  CHECK(pre_tokenize(always, "Hey friend") == Pieces{m + "Hey", m + "friend"});
  const json first{{"type", "Metaspace"}, {"replacement", m}, {"prepend_scheme", "first"}, {"split", false}};
  CHECK(pre_tokenize(first, "a b", true) == Pieces{m + "a" + m + "b"});
  CHECK(pre_tokenize(first, "a b", false) == Pieces{"a" + m + "b"});  // not the start of the input
  const json never{{"type", "Metaspace"}, {"replacement", m}, {"prepend_scheme", "never"}, {"split", true}};
  CHECK(pre_tokenize(never, "a b") == Pieces{"a", m + "b"});
}

TEST_CASE("pre-tokenizers: Sequence feeds each stage the pieces of the previous one") {
  const json j{{"type", "Sequence"},
               {"pretokenizers", json::array({split(R"(\p{N}{1,3})", "Isolated"),
                                              {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}})}};
  CHECK(pre_tokenize(j, "ab 12345") == Pieces{"ab\u0120", "123", "45"});
  CHECK_THROWS_WITH(make_pre_tokenizer({{"type", "Sequence"}, {"pretokenizers", json::array({{{"type", "Nope"}}})}}),
                    Catch::Contains("Nope"));
}

TEST_CASE("decoders: ByteLevel turns alphabet characters back into UTF-8 bytes") {
  CHECK(decode({{"type", "ByteLevel"}}, {"Hello", "\u0120w\u00c3\u00a9"}) == "Hello w\u00e9");
  // A lone lead byte cannot form a character: U+FFFD.
  CHECK(decode({{"type", "ByteLevel"}}, {"a", "\u00c3"}) == "a\xEF\xBF\xBD");
}

TEST_CASE("decoders: ByteFallback joins byte tokens into characters, U+FFFD per ill-formed subpart") {
  const json j{{"type", "ByteFallback"}};
  CHECK(decode(j, {"<0xE2>", "<0x82>", "<0xAC>", "x"}) == "\u20acx");
  CHECK(decode(j, {"<0xE2>", "<0x82>", "y"}) == "\xEF\xBF\xBDy");  // one truncated character
  CHECK(decode(j, {"<0x28>", "<0xFF>", "<0x29>"}) == "(\xEF\xBF\xBD)");  // valid bytes of the run survive
  CHECK(decode(j, {"<0x41>", "<0xZZ>"}) == "A<0xZZ>");  // not hex: an ordinary token
}

TEST_CASE("decoders: Metaspace, Replace, Fuse and Strip") {
  const std::string m = "\u2581";
  CHECK(decode({{"type", "Metaspace"}, {"replacement", m}, {"prepend_scheme", "always"}}, {m + "Hi", m + "there"}) ==
        "Hi there");
  CHECK(decode({{"type", "Metaspace"}, {"replacement", m}, {"prepend_scheme", "never"}}, {m + "Hi"}) == " Hi");
  CHECK(decode({{"type", "Replace"}, {"pattern", {{"String", m}}}, {"content", " "}}, {m + "a", m + "b"}) == " a b");
  CHECK(decode({{"type", "Sequence"},
                {"decoders", json::array({{{"type", "Fuse"}}, {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 1}}})}},
               {" a", " b "}) == "a b");
  // Without Fuse, Strip applies to each token.
  CHECK(decode({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}, {" a", " b"}) == "ab");
}

TEST_CASE("decoders: an unknown type is a load error that names it") {
  CHECK_THROWS_WITH(make_decoder({{"type", "CTC2"}}), Catch::Contains("CTC2"));
}
