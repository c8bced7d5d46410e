// Python's operators on template values: arithmetic (with Python's int/float rules, floor division and
// modulo), ordering, membership and printf-style `%` formatting. Type mismatches throw TemplateError
// with Python's wording, because a template that fails in Python must fail here too.
#pragma once
#include <string>

#include "engine/template/value.hpp"

namespace strata::jinja {

struct SizeLimits {
  size_t max_string_bytes;  // strings built by `+`, `*`, `~` and `%`
  long max_list_items;      // lists built by `+`, `*` and range()
};

// op is one of + - * / // % **. Neither operand is Undefined (the interpreter reports those itself).
Value binary_op(const std::string& op, const Value& a, const Value& b, const SizeLimits& limits);
// a < b, as Python orders numbers, strings and lists; throws for other pairs.
bool py_less(const Value& a, const Value& b);
// needle in container.
bool py_contains(const Value& container, const Value& needle);
// "fmt" % args
std::string percent_format(const std::string& fmt, const Value& args);

}  // namespace strata::jinja
