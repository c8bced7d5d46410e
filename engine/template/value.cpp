#include "engine/template/value.hpp"

#include "engine/template/chat_template.hpp"

namespace strata::jinja {

namespace {
uint16_t container_depth(int deepest_child) {
  if (deepest_child + 1 > kMaxValueNesting)
    throw TemplateError("value nested deeper than " + std::to_string(kMaxValueNesting) + " levels");
  return static_cast<uint16_t>(deepest_child + 1);
}
}  // namespace

Value Value::list(List items, bool tuple) {
  Value v(Kind::List);
  v.tuple_ = tuple;
  int deepest = 0;
  for (const Value& item : items) deepest = item.depth_ > deepest ? item.depth_ : deepest;
  v.depth_ = container_depth(deepest);
  v.obj_ = std::make_shared<List>(std::move(items));
  return v;
}

Value Value::dict(std::shared_ptr<Dict> d) {
  Value v(Kind::Dict);
  int deepest = 0;
  for (const auto& entry : d->entries) deepest = entry.second.depth_ > deepest ? entry.second.depth_ : deepest;
  v.depth_ = container_depth(deepest);
  v.obj_ = std::move(d);
  return v;
}

Value Value::dict() { return dict(std::make_shared<Dict>()); }

Value Value::ns(std::shared_ptr<Dict> attrs) {
  Value v(Kind::Namespace);
  v.obj_ = std::move(attrs);
  return v;
}

Value Value::loop(std::shared_ptr<LoopInfo> info) {
  Value v(Kind::Loop);
  v.obj_ = std::move(info);
  return v;
}

Value Value::callable(std::shared_ptr<Callable> fn) {
  Value v(Kind::Callable);
  v.obj_ = std::move(fn);
  return v;
}

double Value::to_double() const {
  switch (kind_) {
    case Kind::Float: return num_.f;
    case Kind::Int: return static_cast<double>(num_.i);
    case Kind::Bool: return num_.b ? 1.0 : 0.0;
    default: return 0.0;
  }
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None: return false;
    case Kind::Bool: return num_.b;
    case Kind::Int: return num_.i != 0;
    case Kind::Float: return num_.f != 0.0;
    case Kind::String: return !str_.empty();
    case Kind::List: return !items().empty();
    case Kind::Dict: return !dict_ref().entries.empty();
    default: return true;
  }
}

const char* Value::type_name() const {
  switch (kind_) {
    case Kind::Undefined: return "Undefined";
    case Kind::None: return "NoneType";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return "str";
    case Kind::List: return tuple_ ? "tuple" : "list";
    case Kind::Dict: return "dict";
    case Kind::Namespace: return "Namespace";
    case Kind::Loop: return "LoopContext";
    case Kind::Callable: return "function";
  }
  return "object";
}

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : entries)
    if (k == key) return &v;
  return nullptr;
}

void Dict::set(const std::string& key, Value v) {
  for (auto& [k, existing] : entries) {
    if (k == key) {
      existing = std::move(v);
      return;
    }
  }
  entries.emplace_back(key, std::move(v));
}

const Value* CallArgs::kwarg(std::string_view name) const {
  for (const auto& [k, v] : keyword)
    if (k == name) return &v;
  return nullptr;
}

thread_local int ValueNestingGuard::depth_ = 0;

ValueNestingGuard::ValueNestingGuard() {
  if (++depth_ > kMaxValueNesting) {
    --depth_;
    throw TemplateError("value nested deeper than " + std::to_string(kMaxValueNesting) + " levels");
  }
}

bool py_equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind() == Kind::Float || b.kind() == Kind::Float) return a.to_double() == b.to_double();
    return a.to_int() == b.to_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::Undefined:
    case Kind::None: return true;
    case Kind::String: return a.str() == b.str();
    case Kind::List: {
      ValueNestingGuard guard;
      // Python: a list never equals a tuple.
      if (a.is_tuple() != b.is_tuple()) return false;
      const List& x = a.items();
      const List& y = b.items();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i)
        if (!py_equal(x[i], y[i])) return false;
      return true;
    }
    case Kind::Dict: {
      ValueNestingGuard guard;
      const Dict& x = a.dict_ref();
      const Dict& y = b.dict_ref();
      if (x.entries.size() != y.entries.size()) return false;
      for (const auto& [k, v] : x.entries) {
        const Value* other = y.find(k);
        if (!other || !py_equal(v, *other)) return false;
      }
      return true;
    }
    default: return a.object() == b.object();
  }
}

}  // namespace strata::jinja
