#include <catch2/catch.hpp>

#include <vector>

#include "engine/core/types.hpp"
#include "engine/tokenizer/regex.hpp"

using namespace strata;

namespace {
std::vector<std::string> matches(const std::string& pattern, const std::string& text) {
  Regex re(pattern, "test");
  std::vector<std::string> out;
  re.for_each_match(text, [&](size_t s, size_t e) { out.push_back(text.substr(s, e - s)); });
  return out;
}
}  // namespace

TEST_CASE("\\s is Unicode White_Space: NEL counts, the BOM does not") {
  CHECK(matches(R"(\s)", "a\u0085b\ufeffc\u3000") == std::vector<std::string>{"\u0085", "\u3000"});
  CHECK(matches(R"([^\s]+)", "x\u00a0y") == std::vector<std::string>{"x", "y"});
}

TEST_CASE("(?i:...) folds ASCII letters only") {
  CHECK(matches(R"((?i:'s|'ll))", "it's IT'S we'LL it'\u017f") == std::vector<std::string>{"'s", "'S", "'LL"});
  CHECK(matches(R"((?i:[a-c]x))", "AX bx Cx dx") == std::vector<std::string>{"AX", "bx", "Cx"});
}

TEST_CASE("Unicode properties and look-ahead work on UTF-8") {
  CHECK(matches(R"(\p{L}+|\p{N}{1,3})", "héllo 12345") ==
        std::vector<std::string>{"h\u00e9llo", "123", "45"});
  CHECK(matches(R"(\s+(?!\S)|\s+)", "a   b") == std::vector<std::string>{"  ", " "});
}

TEST_CASE("empty matches produce no pieces and the scan still ends") {
  CHECK(matches("x*", "abxxc").size() == 1);
}

TEST_CASE("an invalid pattern is an error naming its owner") {
  REQUIRE_THROWS_AS(Regex("(unclosed", "pre_tokenizer Split"), Error);
  REQUIRE_THROWS_WITH(Regex("(unclosed", "pre_tokenizer Split"), Catch::Contains("pre_tokenizer Split"));
}
