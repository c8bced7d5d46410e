// Whitespace handling with transformers' settings (trim_blocks, lstrip_blocks): the part of rendering
// where a template "looks right" yet differs from the training format by one newline.
#include <catch2/catch.hpp>

#include "tests/template/render_helpers.hpp"

using strata::test::render;

TEST_CASE("trim_blocks drops the single newline after a block tag, not after an expression") {
  CHECK(render("{% if true %}\nA\n{% endif %}\nB") == "A\nB");
  CHECK(render("{{ 'x' }}\nB") == "x\nB");
  CHECK(render("{% if true %}\n\nA{% endif %}") == "\nA");
}

TEST_CASE("lstrip_blocks drops indentation before a block tag at the start of a line") {
  CHECK(render("  {% if true %}\n    A\n  {% endif %}\nB") == "    A\nB");
  CHECK(render("x  {% if true %}y{% endif %}") == "x  y");     // not at line start: kept
  CHECK(render("  {{ 'v' }}") == "  v");                       // expressions are not stripped
  CHECK(render("  {# note #}\nA") == "A");                     // comments are
}

TEST_CASE("a plus sign disables lstrip on the left and trim on the right") {
  CHECK(render("  {%+ if true %}A{% endif %}") == "  A");
  CHECK(render("{% if true +%}\nA{% endif %}") == "\nA");
}

TEST_CASE("a minus sign strips all whitespace, newlines included, on its side") {
  CHECK(render("a  \n {%- if true -%} \n\t b {%- endif %}") == "ab");
  CHECK(render("a\n\n{{- 'x' -}}\n\nb") == "axb");
  CHECK(render("a {#- c -#} b") == "ab");
}

TEST_CASE("one trailing newline of the template is dropped and CRLF becomes LF") {
  CHECK(render("A\n") == "A");
  CHECK(render("A\n\n") == "A\n");
  CHECK(render("A\r\nB\rC") == "A\nB\nC");
}

TEST_CASE("raw blocks print their content verbatim, with whitespace control on the tags") {
  CHECK(render("{% raw %}{{ a }} {% if %}{% endraw %}") == "{{ a }} {% if %}");
  CHECK(render("<{%- raw -%}  {{b}}  {%- endraw -%}  >") == "<{{b}}>");
}

TEST_CASE("comments produce nothing and may span lines") {
  CHECK(render("a{# one\ntwo #}b") == "ab");
}

TEST_CASE("a closing brace pair inside an expression's brackets does not end the expression") {
  CHECK(render("{{ {'a': {'b': {}}} }}") == "{'a': {'b': {}}}");
}

TEST_CASE("a typical indented template renders without stray spaces or blank lines") {
  const char* tpl =
      "{%- for m in messages %}\n"
      "    {%- if m.role == 'user' %}\n"
      "        {{- 'U:' + m.content + '\\n' }}\n"
      "    {%- else %}\n"
      "        {{- 'A:' + m.content + '\\n' }}\n"
      "    {%- endif %}\n"
      "{%- endfor %}\n";
  CHECK(render(tpl, R"({"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}]})") ==
        "U:hi\nA:yo\n");
}
