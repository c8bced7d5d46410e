// `is` tests, the Python methods templates call, and the globals transformers provides.
#include <catch2/catch.hpp>

#include <ctime>

#include "tests/template/render_helpers.hpp"

using strata::test::error_of;
using strata::test::render;

TEST_CASE("type tests follow Python: bool is a number but not an integer") {
  CHECK(render("{{ x is defined }}{{ y is undefined }}{{ none is none }}{{ 'a' is string }}{{ 1 is number }}"
               "{{ true is number }}{{ 1 is integer }}{{ true is integer }}{{ 1.0 is float }}{{ {} is mapping }}"
               "{{ [] is mapping }}{{ true is boolean }}{{ 1 is boolean }}",
               R"({"x": 1})") == "TrueTrueTrueTrueTrueTrueTrueFalseTrueTrueFalseTrueFalse");
}

TEST_CASE("iterable and sequence hold for strings, lists, dicts and Undefined, not numbers") {
  CHECK(render("{{ [] is iterable }}{{ 'a' is iterable }}{{ {} is iterable }}{{ u is iterable }}{{ 1 is iterable }}"
               "{{ 'a' is sequence }}{{ 1 is sequence }}") == "TrueTrueTrueTrueFalseTrueFalse");
}

TEST_CASE("true and false test identity with the booleans, not truthiness") {
  CHECK(render("{{ true is true }}{{ 1 is true }}{{ false is false }}{{ 0 is false }}{{ x is false }}",
               R"({"x": false})") == "TrueFalseTrueFalseTrue");
}

TEST_CASE("value tests: odd, even, divisibleby, eq/equalto, in, with or without parentheses") {
  CHECK(render("{{ 3 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 9 is divisibleby(4) }}{{ 1 is eq 1 }}"
               "{{ 1 is equalto(2) }}{{ 1 is in [1, 2] }}{{ 'a' is in 'abc' }}{{ 1 is not none }}") ==
        "TrueTrueTrueFalseTrueFalseTrueTrueTrue");
}

TEST_CASE("an unknown test fails naming it") {
  CHECK_THAT(error_of("{{ 1 is nosuch }}"), Catch::Contains("no test named 'nosuch'"));
}

TEST_CASE("string methods: strip family with chars, split with sep and maxsplit, affixes, case, replace") {
  CHECK(render("[{{ '  a b '.strip() }}][{{ '\\n\\nx\\n'.strip('\\n') }}][{{ 'xay'.lstrip('x') }}][{{ 'xay'.rstrip('y') }}]") ==
        "[a b][x][ay][xa]");
  CHECK(render("{{ 'a b  c'.split() }}{{ 'a,b,c'.split(',', 1) }}{{ 'a</think>b'.split('</think>')[-1] }}") ==
        "['a', 'b', 'c']['a', 'b,c']b");
  CHECK(render("{{ 'abc'.startswith('ab') }}{{ 'abc'.endswith(('x', 'c')) }}{{ 'abc'.startswith('b') }}") ==
        "TrueTrueFalse");
  CHECK(render("{{ 'AbC'.upper() }}{{ 'AbC'.lower() }}|{{ 'a-b cD'.title() }}|{{ 'aXa'.replace('a', 'b') }}") ==
        "ABCabc|A-B Cd|bXb");
}

TEST_CASE("str.format fills automatic, numbered and named fields") {
  CHECK(render("{{ '{}-{}'.format(1, 'a') }} {{ '{1}{0}'.format('a', 'b') }} {{ '{x}!'.format(x=2) }} {{ '{{}}'.format() }}") ==
        "1-a ba 2! {}");
}

TEST_CASE("percent formatting works like Python's str % args") {
  CHECK(render("{{ '%s-%d' % ('a', 3) }} {{ '%s' % none }} {{ '%r' % 'a' }} {{ 'x: %(a)s' % {'a': 1} }} {{ '%05.1f' % 3.14159 }}") ==
        "a-3 None 'a' x: 1 003.1");
}

TEST_CASE("dict methods: get with default, items, keys, values in insertion order") {
  const char* ctx = R"({"d": {"b": 1, "a": 2}})";
  CHECK(render("{{ d.get('a') }}{{ d.get('z') }}{{ d.get('z', 5) }}{{ d.items()|list }}{{ d.keys()|list }}"
               "{{ d.values()|list }}",
               ctx) == "2None5[('b', 1), ('a', 2)]['b', 'a'][1, 2]");
}

TEST_CASE("the sandbox refuses methods that mutate lists and dicts") {
  CHECK_THAT(error_of("{{ [].append(1) }}"), Catch::Contains("access to attribute 'append' of 'list' object is unsafe"));
  CHECK_THAT(error_of("{{ {}.update({}) }}"), Catch::Contains("unsafe"));
}

TEST_CASE("range, dict and namespace build values") {
  CHECK(render("{{ range(3)|list }}{{ range(1, 10, 3)|list }}{{ range(5, 0, -2)|list }}{{ dict(a=1, b=2) }}") ==
        "[0, 1, 2][1, 4, 7][5, 3, 1]{'a': 1, 'b': 2}");
  CHECK(render("{% set ns = namespace(a=1) %}{% set ns.b = 2 %}{{ ns.a }}{{ ns.b }}") == "12");
}

TEST_CASE("raise_exception stops rendering with TemplateRaise carrying exactly the template's message") {
  try {
    render("before{{ raise_exception('Conversation roles must alternate') }}");
    FAIL("expected TemplateRaise");
  } catch (const strata::TemplateRaise& e) {
    CHECK(std::string(e.what()) == "Conversation roles must alternate");
  }
}

TEST_CASE("strftime_now formats the current local time") {
  char year[8];
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  std::strftime(year, sizeof year, "%Y", &local);
  CHECK(render("{{ strftime_now('%Y') }}") == year);
}

TEST_CASE("globals can be shadowed by template variables") {
  CHECK(render("{{ range }}", R"({"range": "mine"})") == "mine");
}

TEST_CASE("attribute lookup finds a dict's method before its key, as Python's getattr does; [] finds the key") {
  const char* ctx = R"({"schema": {"type": "array", "items": {"type": "string"}}})";
  CHECK(render("{{ schema['items'].type }}|{{ schema.items.type is defined }}|{{ schema.items is defined }}", ctx) ==
        "string|False|True");
  CHECK(render("{% set up = 'abc'.upper %}{{ up() }}") == "ABC");
}

TEST_CASE("wordcount counts runs of letters and digits in any script, not symbols or emoji") {
  CHECK(render("{{ '你好, Привет, مرحبا 🎉👩\u200d👩 x_1'|wordcount }}") == "4");
}
