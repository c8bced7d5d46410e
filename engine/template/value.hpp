// The values a Jinja template computes with. They model the Python objects Jinja2 sees when transformers
// renders a chat template: None, bool, int, float, str, list/tuple, insertion-ordered dict, namespace,
// the loop object, callables, and Jinja's Undefined. Lists and dicts are shared and never mutated after
// construction (transformers renders in an immutable sandbox), so copying a Value is cheap and safe;
// only a namespace's attributes change, and that is the point of a namespace.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::jinja {

class Value;
struct Dict;
struct LoopInfo;
struct Callable;
using List = std::vector<Value>;

enum class Kind : uint8_t { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace, Loop, Callable };

constexpr int kMaxValueNesting = 512;

class Value {
 public:
  Value() = default;  // Undefined
  static Value undefined(std::string hint) {
    Value v;
    v.str_ = std::move(hint);
    return v;
  }
  static Value none() { return Value(Kind::None); }
  Value(bool b) : kind_(Kind::Bool) { num_.b = b; }  // NOLINT: Python's True/False
  Value(int v) : kind_(Kind::Int) { num_.i = v; }    // NOLINT
  Value(int64_t v) : kind_(Kind::Int) { num_.i = v; }  // NOLINT
  Value(double v) : kind_(Kind::Float) { num_.f = v; }  // NOLINT
  Value(std::string s) : kind_(Kind::String), str_(std::move(s)) {}  // NOLINT
  Value(const char* s) : kind_(Kind::String), str_(s) {}  // NOLINT
  static Value list(List items, bool tuple = false);
  static Value dict(std::shared_ptr<Dict> d);
  static Value dict();  // empty
  static Value ns(std::shared_ptr<Dict> attrs);
  static Value loop(std::shared_ptr<LoopInfo> info);
  static Value callable(std::shared_ptr<Callable> fn);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::Undefined; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_int() const { return kind_ == Kind::Int; }
  bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float || kind_ == Kind::Bool; }
  bool is_list() const { return kind_ == Kind::List; }
  bool is_tuple() const { return kind_ == Kind::List && tuple_; }
  bool is_dict() const { return kind_ == Kind::Dict; }
  bool is_mapping_like() const { return kind_ == Kind::Dict || kind_ == Kind::Namespace; }

  bool as_bool() const { return num_.b; }
  int64_t as_int() const { return num_.i; }
  double as_float() const { return num_.f; }
  // int, bool or float as a double (Python's numeric tower).
  double to_double() const;
  // int or bool as an integer.
  int64_t to_int() const { return kind_ == Kind::Bool ? (num_.b ? 1 : 0) : num_.i; }
  const std::string& str() const { return str_; }  // a String's text, or an Undefined's hint
  const List& items() const { return *static_cast<const List*>(obj_.get()); }
  const Dict& dict_ref() const { return *static_cast<const Dict*>(obj_.get()); }
  Dict& ns_ref() const { return *static_cast<Dict*>(obj_.get()); }  // a namespace's mutable attributes
  const LoopInfo& loop_ref() const { return *static_cast<const LoopInfo*>(obj_.get()); }
  const Callable& callable_ref() const { return *static_cast<const Callable*>(obj_.get()); }
  const std::shared_ptr<void>& object() const { return obj_; }
  int depth() const { return depth_; }

  // Python's bool(x).
  bool truthy() const;
  // Python's type name, for error messages ("str", "NoneType", "dict").
  const char* type_name() const;

 private:
  explicit Value(Kind k) : kind_(k) {}
  Kind kind_ = Kind::Undefined;
  bool tuple_ = false;
  // Containers below this one (0 for scalars and namespaces). Bounded at construction so that no value
  // tree is deeper than kMaxValueNesting: destroying one recurses once per level.
  uint16_t depth_ = 0;
  union {
    bool b;
    int64_t i;
    double f;
  } num_{};
  std::string str_;
  std::shared_ptr<void> obj_;
};

// A Python dict: keys keep their insertion order, which is what tojson and iteration show.
// Lookup is linear: the dicts chat templates see have a handful of keys.
struct Dict {
  std::vector<std::pair<std::string, Value>> entries;
  const Value* find(std::string_view key) const;
  void set(const std::string& key, Value v);  // replaces in place, or appends
};

struct LoopInfo {
  std::shared_ptr<const List> items;  // the (filtered) sequence; shared so an escaped `loop` stays valid
  size_t index0 = 0;
  int depth = 1;
  std::shared_ptr<Callable> recurse;  // `loop(...)` for recursive loops; null otherwise
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
  const Value* kwarg(std::string_view name) const;
};

class Interpreter;
struct Callable {
  std::string name;
  std::function<Value(Interpreter&, CallArgs&)> fn;
};

// Values a template builds can nest as deep as its loop budget allows (`set ns.x = [ns.x]` in a loop);
// the recursive walks over values (repr, equality, ordering, JSON in and out) hold one of these per level
// and refuse beyond kMaxValueNesting with a TemplateError instead of overflowing the stack. (Lists and
// dicts also refuse to be built deeper than that; namespaces can still reach themselves.)
class ValueNestingGuard {
 public:
  ValueNestingGuard();
  ~ValueNestingGuard() { --depth_; }
  ValueNestingGuard(const ValueNestingGuard&) = delete;
  ValueNestingGuard& operator=(const ValueNestingGuard&) = delete;

 private:
  static thread_local int depth_;
};

// Python equality (1 == 1.0 == True, element-wise for lists and dicts; Undefined equals only Undefined).
bool py_equal(const Value& a, const Value& b);

}  // namespace strata::jinja
