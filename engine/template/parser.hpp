// Builds the syntax tree from the lexer's tokens with Jinja2's grammar and operator precedence
// (filters and tests bind tighter than arithmetic; `not` looser than comparisons).
#pragma once
#include <string>

#include "engine/template/ast.hpp"

namespace strata::jinja {

// Throws TemplateError("template syntax error at line L, column C: ...") on any syntax error.
// max_nesting bounds bracket and block nesting so a hostile template cannot exhaust the stack.
std::unique_ptr<Program> parse_template(const std::string& source, int max_nesting);

}  // namespace strata::jinja
