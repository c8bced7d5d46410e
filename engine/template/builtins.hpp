// Jinja's built-in filters and tests, the Python methods chat templates call on strings, dicts and the
// loop object, and the globals transformers provides. Each throws TemplateError with the builtin's name
// on a bad argument.
#pragma once
#include <initializer_list>
#include <optional>
#include <string>

#include "engine/template/value.hpp"

namespace strata::jinja {

class Interpreter;
using FilterFn = Value (*)(Interpreter&, const Value&, CallArgs&);
using TestFn = bool (*)(Interpreter&, const Value&, CallArgs&);

FilterFn find_filter(const std::string& name);  // null when unknown
TestFn find_test(const std::string& name);
// Calls obj.name(args) when obj's type has that method; returns false when it has none.
bool call_method(Interpreter& in, const Value& obj, const std::string& name, CallArgs& args, Value& result);
// What `obj.name` means for a method name (Python looks attributes up before items, so `d.items` is the
// method even when d has an "items" key): a bound method, an Undefined that refuses a mutating method,
// or nullopt when the type has no such method.
std::optional<Value> method_attribute(const Value& obj, const std::string& name);
// raise_exception, range, namespace, dict, strftime_now.
const Value* find_global(const std::string& name);

// Binds call arguments to a builtin's named parameters, Python style (positional first, then keywords).
class Params {
 public:
  Params(const char* function, const CallArgs& args, std::initializer_list<const char*> names);
  const Value* get(size_t i) const { return i < bound_.size() ? bound_[i] : nullptr; }
  Value get_or(size_t i, Value fallback) const { return get(i) ? *get(i) : fallback; }
  bool flag(size_t i, bool fallback) const { return get(i) ? get(i)->truthy() : fallback; }
  int64_t integer(size_t i, int64_t fallback) const;
  std::string string(size_t i, const std::string& fallback) const;
  const char* function() const { return function_; }

 private:
  const char* function_;
  std::vector<const Value*> bound_;
};

}  // namespace strata::jinja
