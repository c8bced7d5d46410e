// Jinja's tests (`x is name(args)`), with Python's type semantics: bool counts as a number but not as
// an integer; Undefined is iterable and a sequence (it iterates as empty), as in Jinja.
#include <cctype>
#include <unordered_map>

#include "engine/template/builtins.hpp"
#include "engine/template/chat_template.hpp"
#include "engine/template/interpreter.hpp"
#include "engine/template/operators.hpp"
#include "engine/template/unicode_text.hpp"

namespace strata::jinja {
namespace {

const Value& one_arg(const char* test, const CallArgs& args) {
  if (args.positional.size() != 1 || !args.keyword.empty())
    throw TemplateError(std::string("test '") + test + "' takes exactly one argument");
  return args.positional[0];
}

int64_t integral(const char* test, const Value& v) {
  if (v.is_int() || v.kind() == Kind::Bool) return v.to_int();
  if (v.kind() == Kind::Float && v.as_float() == static_cast<double>(static_cast<int64_t>(v.as_float())))
    return static_cast<int64_t>(v.as_float());
  throw TemplateError(std::string("test '") + test + "' needs an integer, got " + v.type_name());
}

bool test_defined(Interpreter&, const Value& v, CallArgs&) { return !v.is_undefined(); }
bool test_undefined(Interpreter&, const Value& v, CallArgs&) { return v.is_undefined(); }
bool test_none(Interpreter&, const Value& v, CallArgs&) { return v.is_none(); }
bool test_string(Interpreter&, const Value& v, CallArgs&) { return v.is_string(); }
bool test_number(Interpreter&, const Value& v, CallArgs&) { return v.is_number(); }
bool test_integer(Interpreter&, const Value& v, CallArgs&) { return v.is_int(); }
bool test_float(Interpreter&, const Value& v, CallArgs&) { return v.kind() == Kind::Float; }
bool test_mapping(Interpreter&, const Value& v, CallArgs&) { return v.is_dict(); }
bool test_boolean(Interpreter&, const Value& v, CallArgs&) { return v.kind() == Kind::Bool; }
bool test_true(Interpreter&, const Value& v, CallArgs&) { return v.kind() == Kind::Bool && v.as_bool(); }
bool test_false(Interpreter&, const Value& v, CallArgs&) { return v.kind() == Kind::Bool && !v.as_bool(); }
bool test_callable(Interpreter&, const Value& v, CallArgs&) { return v.kind() == Kind::Callable; }
bool test_iterable(Interpreter&, const Value& v, CallArgs&) {
  return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict();
}
bool test_sequence(Interpreter&, const Value& v, CallArgs&) {
  return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict();
}
bool test_odd(Interpreter&, const Value& v, CallArgs&) { return integral("odd", v) % 2 != 0; }
bool test_even(Interpreter&, const Value& v, CallArgs&) { return integral("even", v) % 2 == 0; }
bool test_divisibleby(Interpreter&, const Value& v, CallArgs& args) {
  int64_t d = integral("divisibleby", one_arg("divisibleby", args));
  if (d == 0) throw TemplateError("test 'divisibleby': division by zero");
  return integral("divisibleby", v) % d == 0;
}
bool test_eq(Interpreter&, const Value& v, CallArgs& args) { return py_equal(v, one_arg("eq", args)); }
bool test_ne(Interpreter&, const Value& v, CallArgs& args) { return !py_equal(v, one_arg("ne", args)); }
bool test_lt(Interpreter&, const Value& v, CallArgs& args) { return py_less(v, one_arg("lt", args)); }
bool test_gt(Interpreter&, const Value& v, CallArgs& args) { return py_less(one_arg("gt", args), v); }
bool test_le(Interpreter&, const Value& v, CallArgs& args) { return !py_less(one_arg("le", args), v); }
bool test_ge(Interpreter&, const Value& v, CallArgs& args) { return !py_less(v, one_arg("ge", args)); }
bool test_in(Interpreter&, const Value& v, CallArgs& args) { return py_contains(one_arg("in", args), v); }
bool test_sameas(Interpreter&, const Value& v, CallArgs& args) {
  const Value& o = one_arg("sameas", args);
  if (v.kind() != o.kind()) return false;
  switch (v.kind()) {
    case Kind::None:
    case Kind::Undefined: return true;
    case Kind::Bool: return v.as_bool() == o.as_bool();
    case Kind::Int: return v.as_int() == o.as_int();
    case Kind::List:
    case Kind::Dict:
    case Kind::Namespace:
    case Kind::Callable: return v.object() == o.object();
    default: return py_equal(v, o);
  }
}
bool test_lower(Interpreter&, const Value& v, CallArgs&) {
  if (!v.is_string()) return false;
  bool cased = false;
  for (char c : v.str()) {
    if (std::isupper(static_cast<unsigned char>(c))) return false;
    cased = cased || std::islower(static_cast<unsigned char>(c));
  }
  return cased;
}
bool test_upper(Interpreter&, const Value& v, CallArgs&) {
  if (!v.is_string()) return false;
  bool cased = false;
  for (char c : v.str()) {
    if (std::islower(static_cast<unsigned char>(c))) return false;
    cased = cased || std::isupper(static_cast<unsigned char>(c));
  }
  return cased;
}
bool test_escaped(Interpreter&, const Value&, CallArgs&) { return false; }

}  // namespace

TestFn find_test(const std::string& name) {
  static const std::unordered_map<std::string, TestFn> tests = {
      {"defined", test_defined},   {"undefined", test_undefined}, {"none", test_none},
      {"string", test_string},     {"number", test_number},       {"integer", test_integer},
      {"float", test_float},       {"mapping", test_mapping},     {"iterable", test_iterable},
      {"sequence", test_sequence}, {"boolean", test_boolean},     {"true", test_true},
      {"false", test_false},       {"callable", test_callable},   {"odd", test_odd},
      {"even", test_even},         {"divisibleby", test_divisibleby},
      {"eq", test_eq},             {"equalto", test_eq},          {"==", test_eq},
      {"ne", test_ne},             {"!=", test_ne},               {"lt", test_lt},
      {"lessthan", test_lt},       {"<", test_lt},                {"gt", test_gt},
      {"greaterthan", test_gt},    {">", test_gt},                {"le", test_le},
      {"<=", test_le},             {"ge", test_ge},               {">=", test_ge},
      {"in", test_in},             {"sameas", test_sameas},       {"lower", test_lower},
      {"upper", test_upper},       {"escaped", test_escaped},
  };
  auto it = tests.find(name);
  return it == tests.end() ? nullptr : it->second;
}

}  // namespace strata::jinja
