// The text conversions every source shares.
#include <catch2/catch.hpp>

#include "config/value_parse.hpp"

using namespace strata;

TEST_CASE("integers must be whole, in range, and may carry surrounding spaces") {
  CHECK(parse_integer(" 42 ", 0, 100) == 42);
  CHECK(parse_integer("-3", -5, 5) == -3);
  CHECK_THROWS_AS(parse_integer("4.0", 0, 10), ValueError);
  CHECK_THROWS_AS(parse_integer("", 0, 10), ValueError);
  CHECK_THROWS_AS(parse_integer("99999999999999999999", 0, 10), ValueError);
  CHECK_THROWS_AS(parse_integer("11", 0, 10), ValueError);
}

TEST_CASE("reals must be finite and respect an open lower bound") {
  CHECK(parse_real("0.5", 0, 1, true) == 0.5);
  CHECK(parse_real("0", 0, 1, false) == 0.0);
  CHECK_THROWS_AS(parse_real("0", 0, 1, true), ValueError);
  CHECK_THROWS_AS(parse_real("inf", 0, 1e9, false), ValueError);
  CHECK_THROWS_AS(parse_real("1,5", 0, 10, false), ValueError);
}

TEST_CASE("booleans accept the usual spellings in any case") {
  for (const char* t : {"true", "TRUE", "1", "yes", "On"}) CHECK(parse_boolean(t));
  for (const char* f : {"false", "0", "no", "OFF"}) CHECK_FALSE(parse_boolean(f));
  CHECK_THROWS_AS(parse_boolean("maybe"), ValueError);
}

TEST_CASE("byte sizes take binary suffixes with or without B / iB") {
  CHECK(parse_byte_size("4096", 1, 1LL << 40) == 4096);
  CHECK(parse_byte_size("64k", 1, 1LL << 40) == 64 * 1024);
  CHECK(parse_byte_size("8M", 1, 1LL << 40) == 8LL << 20);
  CHECK(parse_byte_size("8MiB", 1, 1LL << 40) == 8LL << 20);
  CHECK(parse_byte_size("1GB", 1, 1LL << 40) == 1LL << 30);
  CHECK_THROWS_AS(parse_byte_size("M", 1, 1LL << 40), ValueError);
  CHECK_THROWS_AS(parse_byte_size("2T", 1, 1LL << 40), ValueError);
  CHECK_THROWS_AS(parse_byte_size("2G", 1, 1LL << 30), ValueError);
}

TEST_CASE("lists split on commas, trim items and drop empty ones") {
  CHECK(split_list("a, b ,,c,") == std::vector<std::string>{"a", "b", "c"});
  CHECK(split_list("").empty());
}
