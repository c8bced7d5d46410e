// Statements: control flow, loops and their `loop` object, assignment and Jinja's scoping, macros.
#include <catch2/catch.hpp>

#include "tests/template/render_helpers.hpp"

using strata::test::render;

TEST_CASE("if / elif / else picks the first true branch") {
  const char* tpl = "{% if x %}a{% elif y %}b{% else %}c{% endif %}";
  CHECK(render(tpl, R"({"x": 1})") == "a");
  CHECK(render(tpl, R"({"y": 1})") == "b");
  CHECK(render(tpl, R"({"x": 0, "y": ""})") == "c");
}

TEST_CASE("for exposes loop.index, index0, revindex, first, last, length, previtem and nextitem") {
  CHECK(render("{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
               "{{ loop.first|int }}{{ loop.last|int }}{{ loop.length }};{% endfor %}") ==
        "1032103;2121003;3210013;");
  CHECK(render("{% for x in [1, 2, 3] %}{{ loop.previtem }}-{{ loop.nextitem }}|{% endfor %}") == "-2|1-3|2-|");
  CHECK(render("{% for x in [1, 2, 3] %}{{ loop.cycle('a', 'b') }}{% endfor %}") == "aba");
}

TEST_CASE("for over a dict yields keys; k, v unpacks items") {
  const char* ctx = R"({"d": {"z": 1, "a": 2}})";
  CHECK(render("{% for k in d %}{{ k }}{% endfor %}", ctx) == "za");
  CHECK(render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", ctx) == "z=1;a=2;");
  CHECK(render("{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }}{% endfor %}") == "37");
}

TEST_CASE("for with an if filter counts only the kept items, and else runs when nothing is iterated") {
  CHECK(render("{% for x in [1, 2, 3] if x > 1 %}{{ loop.index }}/{{ loop.length }}:{{ x }} {% endfor %}") ==
        "1/2:2 2/2:3 ");
  CHECK(render("{% for x in [] %}a{% else %}empty{% endfor %}") == "empty");
  CHECK(render("{% for x in missing %}a{% else %}none{% endfor %}") == "none");
}

TEST_CASE("break and continue control the innermost loop") {
  CHECK(render("{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}"
               "{% endif %}{{ x }}{% endfor %}") == "0134");
  CHECK(render("{% for a in [1, 2] %}{% for b in [1, 2, 3] %}{% if b == 2 %}{% break %}{% endif %}{{ a }}{{ b }}"
               "{% endfor %}{% endfor %}") == "1121");
}

TEST_CASE("recursive loops call loop() on children and track depth") {
  const char* ctx = R"({"tree": [{"n": 1, "c": [{"n": 2, "c": []}]}, {"n": 3}]})";
  CHECK(render("{% for item in tree recursive %}[{{ loop.depth }}:{{ item.n }}{% if item.c %}{{ loop(item.c) }}"
               "{% endif %}]{% endfor %}",
               ctx) == "[1:1[2:2]][1:3]");
}

TEST_CASE("set inside a loop does not leak out, nor survive to the next iteration; namespaces do") {
  CHECK(render("{% set x = 1 %}{% for i in [1] %}{{ x }}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}") == "121");
  CHECK(render("{% for i in [1, 2] %}{% if i == 1 %}{% set x = 'a' %}{% endif %}[{{ x }}]{% endfor %}") == "[a][]");
  CHECK(render("{% set ns = namespace(total=0) %}{% for i in [1, 2, 3] %}{% set ns.total = ns.total + i %}"
               "{% endfor %}{{ ns.total }}") == "6");
}

TEST_CASE("set inside if at top level changes the template's variable") {
  CHECK(render("{% if not flag is defined %}{% set flag = false %}{% endif %}{{ flag }}") == "False");
}

TEST_CASE("set unpacks tuples, and a block set captures output through filters") {
  CHECK(render("{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = 1, 2 %}{{ t }}") == "12(1, 2)");
  CHECK(render("{% set x %}block {{ 1 }}{% endset %}{{ x }}|{% set y | upper %}b{% endset %}{{ y }}") ==
        "block 1|B");
}

TEST_CASE("macros take defaults, keyword arguments and extra arguments in varargs/kwargs") {
  CHECK(render("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}"
               "{{ greet('A') }} {{ greet('B', punct='?') }} {{ greet(name='C') }}") == "Hi A! Hi B? Hi C!");
  CHECK(render("{% macro m(a) %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, z=3) }}") == "(2,){'z': 3}");
  CHECK(render("{% macro fact(n) %}{% if n > 1 %}{{ n * fact(n - 1)|int }}{% else %}1{% endif %}{% endmacro %}"
               "{{ fact(5) }}") == "120");
}

TEST_CASE("call blocks pass their body to the macro as caller(), with arguments") {
  CHECK(render("{% macro wrap() %}[{{ caller() }}]{% endmacro %}{% call wrap() %}inner{% endcall %}") == "[inner]");
  CHECK(render("{% macro wrap() %}[{{ caller(5) }}]{% endmacro %}{% call(x) wrap() %}got {{ x }}{% endcall %}") ==
        "[got 5]");
}

TEST_CASE("filter blocks apply filters to their rendered body") {
  CHECK(render("{% filter upper %}hello {{ 'w' }}{% endfilter %}") == "HELLO W");
  CHECK(render("{% filter trim | upper %}  x  {% endfilter %}") == "X");
}

TEST_CASE("with opens a scope whose names vanish afterwards") {
  CHECK(render("{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]") == "3[]");
}

TEST_CASE("transformers' generation tag renders its body unchanged") {
  CHECK(render("{% generation %}answer{% endgeneration %}") == "answer");
}
