#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <string>

#include "server/openai/json_guard.hpp"

using strata::check_json;
using strata::JsonLimits;

TEST_CASE("well-formed JSON documents pass the guard and parse", "[json_guard]") {
  const char* good[] = {
      R"({})", R"([])", R"({"a":[1,2.5,-3e2,true,false,null,"x"]})", R"(  {"k" : { "n" : [ [ ] , { } ] } }  )",
      R"({"s":"\u00e9\ud83d\ude00\n\t\"\\\/"})", "{\"utf8\":\"h\xc3\xa9llo \xf0\x9f\x98\x80\"}", R"(0)", R"("str")",
      R"({"big":1.7976931348623157e308,"tiny":1e-400})"};
  for (const char* doc : good) {
    INFO(doc);
    auto r = check_json(doc);
    CHECK(r.ok);
    CHECK_NOTHROW(nlohmann::json::parse(doc));
  }
}

TEST_CASE("nesting deeper than the limit is refused without recursion", "[json_guard]") {
  std::string deep(100000, '[');
  auto r = check_json(deep);
  REQUIRE_FALSE(r.ok);
  CHECK(r.message.find("deeper than the limit of 64") != std::string::npos);

  JsonLimits lim;
  lim.max_depth = 3;
  CHECK(check_json("[[[1]]]", lim).ok);
  CHECK_FALSE(check_json("[[[[1]]]]", lim).ok);
}

TEST_CASE("errors name the path of the offending value", "[json_guard]") {
  auto r = check_json("{\"messages\":[{\"role\":\"user\",\"content\":\"bad \xff byte\"}]}");
  REQUIRE_FALSE(r.ok);
  CHECK(r.path == "messages[0].content");
  CHECK(r.message.find("invalid UTF-8") != std::string::npos);
  CHECK(r.message.find("'messages[0].content'") != std::string::npos);
}

TEST_CASE("invalid UTF-8 forms are refused", "[json_guard]") {
  const char* bad[] = {
      "{\"s\":\"\xc0\xaf\"}",          // overlong '/'
      "{\"s\":\"\xed\xa0\x80\"}",      // UTF-8-encoded surrogate
      "{\"s\":\"\xf4\x90\x80\x80\"}",  // above U+10FFFF
      "{\"s\":\"\xe2\x82\"}",          // truncated sequence
      "{\"s\":\"\x80\"}",              // lone continuation byte
  };
  for (const char* doc : bad) {
    INFO(doc);
    auto r = check_json(doc);
    CHECK_FALSE(r.ok);
    CHECK(r.path == "s");
  }
}

TEST_CASE("lone and mismatched surrogate escapes are refused", "[json_guard]") {
  CHECK(check_json(R"({"s":"\ud800"})").message.find("lone high surrogate") != std::string::npos);
  CHECK(check_json(R"({"s":"\udc00"})").message.find("lone low surrogate") != std::string::npos);
  CHECK(check_json(R"({"s":"\ud800\u0041"})").message.find("not followed by a low surrogate") != std::string::npos);
  CHECK(check_json(R"({"s":"\ud800\udc00"})").ok);
}

TEST_CASE("NaN, Infinity and overflowing numbers are refused", "[json_guard]") {
  CHECK_FALSE(check_json(R"({"temperature":NaN})").ok);
  CHECK_FALSE(check_json(R"({"temperature":Infinity})").ok);
  CHECK_FALSE(check_json(R"({"temperature":-Infinity})").ok);
  auto r = check_json(R"({"temperature":1e400})");
  REQUIRE_FALSE(r.ok);
  CHECK(r.path == "temperature");
  CHECK(r.message.find("out of range") != std::string::npos);
}

TEST_CASE("truncated and malformed documents are refused with a reason", "[json_guard]") {
  const char* bad[] = {"",        "{",          R"({"a":)",     R"({"a":1)",   R"({"a" 1})", R"({"a":1,})",
                       R"([1,])", R"({"a":01})", R"({"a":1.})", R"({"a":-})", R"({"a":"x)", R"({a:1})",
                       R"({"a":tru})", "{\"a\":\"tab\there\"}", R"({"a":"\x"})", R"({} {})", R"({"a":1}x)"};
  for (const char* doc : bad) {
    INFO(doc);
    auto r = check_json(doc);
    CHECK_FALSE(r.ok);
    CHECK_FALSE(r.message.empty());
    // nlohmann agrees these are not JSON, so the guard is not stricter than the standard here.
    CHECK_THROWS(nlohmann::json::parse(doc));
  }
}

TEST_CASE("string and value-count limits bound what parsing may cost", "[json_guard]") {
  JsonLimits lim;
  lim.max_string_bytes = 10;
  CHECK(check_json(R"({"s":"0123456789"})", lim).ok);
  CHECK(check_json(R"({"s":"0123456789abc"})", lim).message.find("longer than the limit of 10") != std::string::npos);
  lim = JsonLimits();
  lim.max_values = 5;
  CHECK(check_json("[1,2,3,4]", lim).ok);
  CHECK_FALSE(check_json("[1,2,3,4,5]", lim).ok);
}
