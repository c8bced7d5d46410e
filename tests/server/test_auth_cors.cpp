#include <catch2/catch.hpp>

#include "server/api_key.hpp"
#include "server/cors.hpp"

using namespace strata;

TEST_CASE("constant-time comparison is plain equality in its result", "[auth]") {
  CHECK(constant_time_equal("secret", "secret"));
  CHECK_FALSE(constant_time_equal("secret", "secreT"));
  CHECK_FALSE(constant_time_equal("secret", "secret2"));  // a prefix is not a match
  CHECK_FALSE(constant_time_equal("", "x"));
  CHECK(constant_time_equal("", ""));
  CHECK_FALSE(constant_time_equal(std::string("a\0b", 3), std::string("a\0c", 3)));
}

TEST_CASE("the key is read from a Bearer header, or x-api-key", "[auth]") {
  CHECK(presented_key("Bearer abc", "") == "abc");
  CHECK(presented_key("bearer   abc  ", "") == "abc");
  CHECK(presented_key("Basic abc", "xyz") == "xyz");
  CHECK(presented_key("", "xyz") == "xyz");
  CHECK(presented_key("", "") == "");
}

TEST_CASE("auth is off without keys and otherwise accepts any configured key", "[auth]") {
  CHECK(key_accepted({}, ""));
  CHECK(key_accepted({"k1", "k2"}, "k2"));
  CHECK_FALSE(key_accepted({"k1", "k2"}, "k3"));
  CHECK_FALSE(key_accepted({"k1"}, ""));
}

TEST_CASE("CORS headers appear only for allowed origins", "[cors]") {
  CHECK(cors_headers({}, "http://a.example", false, "").empty());
  CHECK(cors_headers({"http://a.example"}, "http://b.example", false, "").empty());
  auto h = cors_headers({"http://a.example"}, "http://a.example", false, "");
  REQUIRE(h.size() == 2);
  CHECK(h[0].first == "Access-Control-Allow-Origin");
  CHECK(h[0].second == "http://a.example");
  auto any = cors_headers({"*"}, "http://z.example", true, "authorization, x-custom");
  bool saw_methods = false, saw_headers = false;
  for (auto& [k, v] : any) {
    saw_methods = saw_methods || (k == "Access-Control-Allow-Methods" && v.find("POST") != std::string::npos);
    saw_headers = saw_headers || (k == "Access-Control-Allow-Headers" && v == "authorization, x-custom");
  }
  CHECK(saw_methods);
  CHECK(saw_headers);
  CHECK(cors_headers({"*"}, "", false, "").empty());  // no Origin: not a CORS request
}
