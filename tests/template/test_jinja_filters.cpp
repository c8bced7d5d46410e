// Each built-in filter, with the outputs Jinja 3.1 (and transformers' tojson) give.
#include <catch2/catch.hpp>

#include "tests/template/render_helpers.hpp"

using strata::test::error_of;
using strata::test::render;

TEST_CASE("length and count measure strings in code points, lists and dicts; Undefined is empty") {
  CHECK(render("{{ [1, 2, 3]|length }}{{ 'héé'|count }}{{ {'a': 1}|length }}{{ nothing|length }}") == "3310");
}

TEST_CASE("join converts items to text and can join an attribute") {
  CHECK(render("{{ [1, 2]|join(', ') }}|{{ 'ab'|join('-') }}|{{ xs|join('/', attribute='n') }}",
               R"({"xs": [{"n": "a"}, {"n": "b"}]})") == "1, 2|a-b|a/b");
}

TEST_CASE("case filters: upper, lower, capitalize, title") {
  CHECK(render("{{ 'aB'|upper }} {{ 'aB'|lower }} {{ 'hELLO wORLD'|capitalize }} {{ 'hello big-world(x'|title }}") ==
        "AB ab Hello world Hello Big-World(X");
}

TEST_CASE("trim strips whitespace or the given characters; replace honours count") {
  CHECK(render("[{{ '  x \\n'|trim }}][{{ 'xxhixx'|trim('x') }}][{{ 'aaa'|replace('a', 'b', 2) }}]") ==
        "[x][hi][bba]");
}

TEST_CASE("first, last and list take items from sequences, strings and dict keys") {
  CHECK(render("{{ [1, 2]|first }}{{ [1, 2]|last }}{{ 'ab'|list }}{{ {'k': 1}|list }}{{ ([]|first) is defined }}") ==
        "12['a', 'b']['k']False");
}

TEST_CASE("tojson is json.dumps with ensure_ascii=False, key order kept, and indent/separators/sort_keys") {
  const char* ctx = R"({"x": {"b": [1, 2.0, "é\u2028\"\\\n"], "a": null, "c": {}, "d": []}})";
  CHECK(render("{{ x|tojson }}", ctx) == "{\"b\": [1, 2.0, \"é\u2028\\\"\\\\\\n\"], \"a\": null, \"c\": {}, \"d\": []}");
  CHECK(render("{{ x|tojson(indent=2) }}", ctx) ==
        "{\n  \"b\": [\n    1,\n    2.0,\n    \"é\u2028\\\"\\\\\\n\"\n  ],\n  \"a\": null,\n  \"c\": {},\n  \"d\": []\n}");
  CHECK(render("{{ x|tojson(separators=(',', ':')) }}", ctx) ==
        "{\"b\":[1,2.0,\"é\u2028\\\"\\\\\\n\"],\"a\":null,\"c\":{},\"d\":[]}");
  CHECK(render("{{ x|tojson(sort_keys=true) }}", ctx) ==
        "{\"a\": null, \"b\": [1, 2.0, \"é\u2028\\\"\\\\\\n\"], \"c\": {}, \"d\": []}");
  CHECK(render("{{ 'é😀'|tojson(ensure_ascii=true) }}") == R"("\u00e9\ud83d\ude00")");
  CHECK(render("{{ '<b>&'|tojson }}") == "\"<b>&\"");  // transformers' tojson does not HTML-escape
  CHECK_THAT(error_of("{{ nothing|tojson }}"), Catch::Contains("not JSON serializable"));
}

TEST_CASE("string, int and float convert like Python, falling back to the default") {
  CHECK(render("{{ 42|string }}{{ none|string }}|{{ '42'|int + 1 }}|{{ '4.5'|int }}|{{ 'x'|int(7) }}|{{ '3.5'|float }}|"
               "{{ 'x'|float }}|{{ 3.9|int }}|{{ ' 1_000 '|int }}") ==
        "42None|43|4|7|3.5|0.0|3|1000");
}

TEST_CASE("default replaces Undefined (and falsy values when boolean=true), not None") {
  CHECK(render("{{ u|default('d') }}|{{ none|default('d') }}|{{ ''|default('d', true) }}|{{ u|d('x') }}") ==
        "d|None|d|x");
}

TEST_CASE("items lists a dict's pairs as tuples, in order") {
  CHECK(render("{{ x|items|list }}{% for k, v in x|items %}{{ k }}{{ v }}{% endfor %}", R"({"x": {"b": 1, "a": 2}})") ==
        "[('b', 1), ('a', 2)]b1a2");
}

TEST_CASE("selectattr, rejectattr and map(attribute=) look attributes up on each item") {
  const char* ctx = R"({"xs": [{"a": 1}, {"a": 0}, {"a": 2}, {"b": 1}]})";
  CHECK(render("{{ xs|selectattr('a')|list }}", ctx) == "[{'a': 1}, {'a': 2}]");
  CHECK(render("{{ xs|rejectattr('a')|list }}", ctx) == "[{'a': 0}, {'b': 1}]");
  CHECK(render("{{ xs|selectattr('a', 'equalto', 2)|list }}", ctx) == "[{'a': 2}]");
  CHECK(render("{{ xs|map(attribute='a')|list }}", ctx) == "[1, 0, 2, Undefined]");
  CHECK(render("{{ xs|map(attribute='a', default=9)|list }}", ctx) == "[1, 0, 2, 9]");
  CHECK(render("{{ ts|selectattr('function.name', 'in', ['x'])|map(attribute='function.name')|list }}",
               R"({"ts": [{"function": {"name": "x"}}, {"function": {"name": "y"}}]})") == "['x']");
}

TEST_CASE("select, reject and map(filter) apply tests and filters by name") {
  CHECK(render("{{ [1, 2, 3, 4]|select('odd')|list }}{{ [1, 2, 3, 4]|reject('even')|list }}"
               "{{ ['a', 'b']|map('upper')|list }}{{ [1, 0, 2]|select|list }}") == "[1, 3][1, 3]['A', 'B'][1, 2]");
}

TEST_CASE("unique, sort and dictsort ignore case by default") {
  CHECK(render("{{ ['a', 'A', 'b']|unique|list }}") == "['a', 'b']");
  CHECK(render("{{ [3, 1, 2]|sort }}{{ ['b', 'A', 'a']|sort }}{{ ['b', 'A', 'a']|sort(case_sensitive=true) }}"
               "{{ [3, 1, 2]|sort(reverse=true) }}") == "[1, 2, 3]['A', 'a', 'b']['A', 'a', 'b'][3, 2, 1]");
  CHECK(render("{{ xs|sort(attribute='n')|map(attribute='n')|list }}", R"({"xs": [{"n": 2}, {"n": 1}]})") == "[1, 2]");
  CHECK(render("{{ {'b': 1, 'A': 2}|dictsort }}{{ {'b': 1, 'a': 2}|dictsort(by='value') }}") ==
        "[('A', 2), ('b', 1)][('b', 1), ('a', 2)]");
}

TEST_CASE("reverse reverses strings by code point and sequences") {
  CHECK(render("{{ 'añb'|reverse }}{{ [1, 2]|reverse|list }}") == "bña[2, 1]");
}

TEST_CASE("safe passes text through; indent indents lines after the first unless told otherwise") {
  CHECK(render("{{ '<x>'|safe }}") == "<x>");
  CHECK(render("{{ 'a\\nb\\n\\nc'|indent(2) }}") == "a\n  b\n\n  c");
  CHECK(render("{{ 'a\\nb'|indent(2, true) }}") == "  a\n  b");
  CHECK(render("{{ 'a\\n\\nb'|indent(2, blank=true) }}") == "a\n  \n  b");
}

TEST_CASE("round rounds half to even on the binary value, and keeps ints ints") {
  CHECK(render("{{ 2.5|round }} {{ 3.5|round }} {{ 3|round }} {{ 2.675|round(2) }} {{ 3.7|round(method='floor') }} "
               "{{ 3.2|round(method='ceil') }}") == "2.0 4.0 3 2.67 3.0 4.0");
}

TEST_CASE("abs, wordcount, sum, min and max") {
  CHECK(render("{{ (-3)|abs }} {{ -2.5|abs }} {{ 'a b, c'|wordcount }} {{ [1, 2, 3]|sum }} {{ [3, 1]|min }} "
               "{{ ['a', 'B']|max }}") == "3 2.5 3 6 1 B");
}

TEST_CASE("an unknown filter fails when it is used, naming it") {
  CHECK_THAT(error_of("{{ 1|nosuch }}"), Catch::Contains("no filter named 'nosuch'"));
  CHECK(render("{% if false %}{{ 1|nosuch }}{% endif %}ok") == "ok");
}
