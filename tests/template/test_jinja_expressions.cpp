// Expressions evaluate with Python's semantics and print as Python prints them.
#include <catch2/catch.hpp>

#include "tests/template/render_helpers.hpp"

using strata::test::error_of;
using strata::test::render;

TEST_CASE("values print as Python's str(): None, True, repr inside lists and dicts") {
  CHECK(render("{{ none }}|{{ None }}|{{ true }}|{{ False }}") == "None|None|True|False");
  CHECK(render("{{ [1, 'a', none, true, (1,), {'k': \"v'\"}] }}") == "[1, 'a', None, True, (1,), {'k': \"v'\"}]");
  CHECK(render("{{ (1, 2) }}{{ () }}{{ [] }}{{ {} }}") == "(1, 2)()[]{}");
  CHECK(render("{{ ['a\\nb', 'tab\\t', '\\\\', 'é'] }}") == "['a\\nb', 'tab\\t', '\\\\', 'é']");
  CHECK(render("{{ undefined_name }}") == "");
}

TEST_CASE("floats print with Python's shortest round-trip repr") {
  CHECK(render("{{ 1.0 }} {{ 0.1 + 0.2 }} {{ 1e16 }} {{ 1e-5 }} {{ 0.0001 }} {{ 123456.75 }} {{ -0.0 }}") ==
        "1.0 0.30000000000000004 1e+16 1e-05 0.0001 123456.75 -0.0");
  CHECK(render("{{ x }}", R"({"x": 1e22})") == "1e+22");
  CHECK(render("{{ 7 / 2 }} {{ 4 / 2 }} {{ 1.5 * 2 }}") == "3.5 2.0 3.0");
}

TEST_CASE("string literals decode Python escapes and adjacent literals concatenate") {
  CHECK(render(R"({{ 'a\tb\n' ~ "q\"" ~ '\x41\u00e9' ~ '\q' }})") == "a\tb\nq\"Aé\\q");
  CHECK(render("{{ 'a' 'b' \"c\" }}") == "abc");
}

TEST_CASE("arithmetic follows Python: floor division and modulo round toward negative infinity") {
  CHECK(render("{{ 1 + 2 }}|{{ 7 // 2 }}|{{ -7 // 2 }}|{{ -7 % 3 }}|{{ 7 % -3 }}|{{ 2 ** 10 }}|{{ 10 - 2 - 3 }}") ==
        "3|3|-4|2|-2|1024|5");
  CHECK(render("{{ true + 1 }} {{ 'ab' * 2 }} {{ [1] * 3 }} {{ [1] + [2] }}") == "2 abab [1, 1, 1] [1, 2]");
}

TEST_CASE("operator precedence matches Jinja: filters bind tighter than arithmetic, ~ sits between + and *") {
  CHECK(render("{{ 2 + 3 * 4 }} {{ (2 + 3) * 4 }} {{ 2 ** 3 ** 2 }} {{ -2 ** 2 }}") == "14 20 64 4");
  CHECK(render("{{ 'a' ~ 2 * 3 }}") == "a6");
  // + binds looser than ~, so this is ('a' ~ 1) + 2, which Python rejects.
  CHECK_THAT(error_of("{{ 'a' ~ 1 + 2 }}"), Catch::Contains("can only concatenate str"));
  CHECK(render("{{ 1 + -1|abs }} {{ 'abc'|upper + 'd' }}") == "2 ABCd");
  CHECK(render("{{ not true is false }} {{ not 1 == 2 }}") == "True True");
}

TEST_CASE("comparisons chain like Python and `in` tests substrings, items and keys") {
  CHECK(render("{{ 1 < 2 < 3 }} {{ 1 < 2 > 3 }} {{ 1 == 1.0 }} {{ true == 1 }} {{ (1, 2) == [1, 2] }}") ==
        "True False True True False");
  CHECK(render("{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'z' not in 'abc' }}") ==
        "True True True True");
}

TEST_CASE("and/or return an operand, not a bool, like Python") {
  CHECK(render("{{ 1 and 2 }} {{ 0 and 2 }} {{ 0 or 'x' }} {{ none or [] }}") == "2 0 x []");
}

TEST_CASE("the inline if yields Undefined (prints nothing) when false without else") {
  CHECK(render("[{{ 'y' if false }}]{{ 'a' if 1 else 'b' }}{{ 'a' if 0 else 'b' if 0 else 'c' }}") == "[]ac");
}

TEST_CASE("attributes and subscripts reach into dicts and lists, negative indexes count from the end") {
  const char* ctx = R"({"x": {"a": {"b": 5}, "l": [1, 2, 3]}})";
  CHECK(render("{{ x.a.b }} {{ x['a']['b'] }} {{ x.l.0 }} {{ x.l[-1] }}", ctx) == "5 5 1 3");
  CHECK(render("{{ x.missing is defined }} {{ x.l[10] is defined }} {{ none.attr is defined }}", ctx) ==
        "False False False");
}

TEST_CASE("slices work on lists and strings, by code point for non-ASCII text") {
  CHECK(render("{{ [1, 2, 3][1:] }}{{ [1, 2, 3][::-1] }}{{ [1, 2, 3][:-1] }}{{ [1, 2, 3, 4, 5][1::2] }}") ==
        "[2, 3][3, 2, 1][1, 2][2, 4]");
  CHECK(render("{{ 'hello'[-3:] }} {{ 'héllo'[1] }} {{ 'héllo'[1:3] }} {{ 'añb'[::-1] }}") == "llo é él bña");
}

TEST_CASE("list, tuple and dict displays build values; dicts keep insertion order") {
  CHECK(render("{{ {'z': 1, 'a': 2} }} {{ [1, [2, (3, 4)]] }}") == "{'z': 1, 'a': 2} [1, [2, (3, 4)]]");
  CHECK(render("{{ d }}", R"({"d": {"zeta": 1, "alpha": 2}})") == "{'zeta': 1, 'alpha': 2}");
}

TEST_CASE("calls pass positional and keyword arguments") {
  CHECK(render("{% macro f(a, b=2, c=3) %}{{ a }}{{ b }}{{ c }}{% endmacro %}{{ f(1) }} {{ f(1, c=9) }} {{ f(a=5, b=6) }}") ==
        "123 129 563");
}

TEST_CASE("mixing types the way Python rejects fails with Python's message") {
  CHECK_THAT(error_of("{{ 'a' + 1 }}"), Catch::Contains("can only concatenate str (not \"int\") to str"));
  CHECK_THAT(error_of("{{ 1 < 'a' }}"), Catch::Contains("'<' not supported between instances of 'int' and 'str'"));
  CHECK_THAT(error_of("{{ '</think>' in none }}"), Catch::Contains("argument of type 'NoneType' is not iterable"));
  CHECK_THAT(error_of("{{ 5 // 0 }}"), Catch::Contains("division or modulo by zero"));
}
