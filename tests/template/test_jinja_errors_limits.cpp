// Errors name the place (line and column) and the cause; hostile templates hit a limit instead of
// hanging or exhausting memory; templates cannot reach files.
#include <catch2/catch.hpp>

#include "tests/template/render_helpers.hpp"

using strata::JinjaTemplate;
using strata::TemplateError;
using strata::TemplateLimits;
using strata::test::error_of;
using strata::test::render;

namespace {
std::string compile_error(const std::string& source) {
  try {
    JinjaTemplate::compile(source);
  } catch (const TemplateError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("syntax errors are reported at compile time with line and column") {
  CHECK(compile_error("line1\n{{ 1 + }}") ==
        "template syntax error at line 2, column 8: expected an expression, got end of print statement '}}'");
  CHECK_THAT(compile_error("{% if x %}\nabc"), Catch::Contains("line 2") && Catch::Contains("'endif'"));
  CHECK_THAT(compile_error("ab\n  {% for %}"), Catch::StartsWith("template syntax error at line 2, column 10"));
  CHECK_THAT(compile_error("{{ 'abc }}"), Catch::Contains("line 1, column 4: unterminated string literal"));
  CHECK_THAT(compile_error("{% endif %}"), Catch::Contains("unexpected 'endif'"));
  CHECK_THAT(compile_error("{% foo %}"), Catch::Contains("unknown tag 'foo'"));
  CHECK_THAT(compile_error("{{ x "), Catch::Contains("unexpected end of template"));
  CHECK_THAT(compile_error("{# open"), Catch::Contains("missing end of comment tag"));
  CHECK_THAT(compile_error("{{ a ? b }}"), Catch::Contains("unexpected character '?'"));
}

TEST_CASE("columns count code points, so a message points at the right place in non-ASCII text") {
  CHECK_THAT(compile_error("héllo {{ ) }}"), Catch::Contains("line 1, column 10"));
}

TEST_CASE("break and continue outside a loop are syntax errors") {
  CHECK_THAT(compile_error("{% break %}"), Catch::Contains("'break' outside of a loop"));
  CHECK_THAT(compile_error("{% for x in y %}{% macro m() %}{% continue %}{% endmacro %}{% endfor %}"),
             Catch::Contains("'continue' outside of a loop"));
}

TEST_CASE("templates have no file access: include, import, extends and from are refused") {
  for (const char* src : {"{% include 'x' %}", "{% import 'x' as y %}", "{% extends 'x' %}", "{% from 'x' import y %}"})
    CHECK_THAT(compile_error(src), Catch::Contains("no file access"));
}

TEST_CASE("runtime errors carry the line of the failing expression") {
  CHECK(error_of("ok\n{{ a.b.c }}") == "template error at line 2, column 5: 'a' is undefined");
  CHECK_THAT(error_of("{{ m.x.y }}", R"({"m": {}})"), Catch::Contains("'dict object' has no attribute 'x'"));
  CHECK_THAT(error_of("{% for x in none %}{% endfor %}"), Catch::Contains("'NoneType' object is not iterable"));
}

TEST_CASE("the loop iteration limit stops runaway loops") {
  TemplateLimits limits;
  limits.max_loop_iterations = 1000;
  CHECK(render("{% for i in range(10) %}{% for j in range(10) %}{% endfor %}{% endfor %}ok", "{}", limits) == "ok");
  CHECK_THAT(error_of("{% for i in range(100) %}{% for j in range(100) %}{% endfor %}{% endfor %}", "{}", limits),
             Catch::Contains("loop iterations"));
  CHECK_THAT(error_of("{{ range(100000000)|length }}"), Catch::Contains("loop iteration limit"));
}

TEST_CASE("unbounded macro recursion hits the recursion limit") {
  CHECK_THAT(error_of("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"), Catch::Contains("nested deeper than 200"));
}

TEST_CASE("deeply nested expressions and blocks are refused at compile time, not by a stack overflow") {
  std::string parens = "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
  CHECK_THAT(compile_error(parens), Catch::Contains("nesting deeper than"));
  std::string ifs;
  for (int i = 0; i < 5000; ++i) ifs += "{% if true %}";
  CHECK_THAT(compile_error(ifs), Catch::Contains("nesting deeper than"));
  CHECK_THAT(compile_error("{{ " + std::string(5000, '-') + "1 }}"), Catch::Contains("nesting deeper than"));
}

TEST_CASE("the output size limit bounds printed text and strings built by doubling") {
  TemplateLimits limits;
  limits.max_output_bytes = 1000;
  CHECK_THAT(error_of("{% for i in range(2000) %}x{% endfor %}", "{}", limits), Catch::Contains("output exceeds"));
  CHECK_THAT(error_of("{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}"),
             Catch::Contains("size limit"));
  CHECK_THAT(error_of("{{ 'x' * 100000000000 }}"), Catch::Contains("size limit"));
  CHECK_THAT(error_of("{{ [1] * 100000000000 }}"), Catch::Contains("limit"));
}

TEST_CASE("integer overflow is an error, not wrapped arithmetic") {
  CHECK_THAT(error_of("{{ 9223372036854775807 + 1 }}"), Catch::Contains("overflow"));
  CHECK_THAT(error_of("{{ 2 ** 64 }}"), Catch::Contains("overflow"));
}

TEST_CASE("a compiled template renders many times with nothing carried from one render to the next") {
  auto tpl = JinjaTemplate::compile("{% set ns = namespace(n=0) %}{% for x in xs %}{% set ns.n = ns.n + x %}{% endfor %}{{ ns.n }}");
  CHECK(tpl->render(nlohmann::json{{"xs", {1, 2, 3}}}) == "6");
  CHECK(tpl->render(nlohmann::json{{"xs", {4}}}) == "4");
}

TEST_CASE("values nested by a loop stop at the nesting limit instead of overflowing the stack") {
  // Each iteration wraps the list once more: building, printing, comparing and destroying a value
  // recurse once per level, so no value may be deeper than 512.
  const char* build = "{% set ns = namespace(x=[]) %}{% for i in range(N) %}{% set ns.x = [ns.x] %}{% endfor %}";
  auto with_n = [&](const char* n, const std::string& tail) {
    std::string s = build;
    s.replace(s.find('N'), 1, n);
    return s + tail;
  };
  CHECK(render(with_n("500", "{{ ns.x|tojson|length }}")) == "1002");
  CHECK_THAT(error_of(with_n("100000", "")), Catch::Contains("nested deeper than 512"));
}

TEST_CASE("a namespace that contains itself is refused when printed, and freed after the render") {
  CHECK_THAT(error_of("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}"), Catch::Contains("nested deeper than"));
  CHECK(render("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns.me.me is defined }}") == "True");
}

TEST_CASE("recursion limits that multiply are caught by the stack budget") {
  // 200 nested macro calls, each evaluating an expression 150 levels deep.
  std::string deep = std::string(150, '(') + "n" + std::string(150, ')');
  TemplateLimits limits;
  limits.max_recursion_depth = 100000;
  std::string src = "{% macro f(n) %}{{ f(" + deep + " + 1) }}{% endmacro %}{{ f(0) }}";
  CHECK_THAT(error_of(src, "{}", limits), Catch::Contains("stack budget"));
}
