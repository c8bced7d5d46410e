// How Python turns values into text: str() (what `{{ x }}` prints), repr() (how lists and dicts show their
// elements), float repr (shortest round-trip digits), and json.dumps as transformers' tojson calls it.
// A chat template's output is compared byte for byte with Python's, so these follow CPython's rules.
#pragma once
#include <optional>
#include <string>

#include "engine/template/value.hpp"

namespace strata::jinja {

std::string py_str(const Value& v);
std::string py_repr(const Value& v);
void py_str_append(std::string& out, const Value& v);
std::string float_repr(double x);
std::string string_repr(const std::string& s);

struct JsonDumpOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;  // Python's indent (an int becomes that many spaces)
  std::string item_separator = ", ";  // Python's defaults; "," when indent is set
  std::string key_separator = ": ";
  bool sort_keys = false;
};
// Throws TemplateError for values JSON cannot represent (Undefined, namespaces, callables).
std::string json_dumps(const Value& v, const JsonDumpOptions& options);

}  // namespace strata::jinja
