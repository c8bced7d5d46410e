#include "engine/template/interpreter.hpp"

#include "engine/template/builtins.hpp"
#include "engine/template/lexer.hpp"
#include "engine/template/python_text.hpp"
#include "engine/template/unicode_text.hpp"

namespace strata::jinja {

const Value* Scope::find(const std::string& name) const {
  for (const Scope* s = this; s; s = s->parent.get())
    for (const auto& [k, v] : s->vars)
      if (k == name) return &v;
  return nullptr;
}

void Scope::set(const std::string& name, Value v) {
  for (auto& [k, existing] : vars) {
    if (k == name) {
      existing = std::move(v);
      return;
    }
  }
  vars.emplace_back(name, std::move(v));
}

Interpreter::Interpreter(const Program& program, const TemplateLimits& limits)
    : program_(program),
      limits_(limits),
      size_limits_{limits.max_output_bytes, limits.max_loop_iterations} {}

Interpreter::~Interpreter() {
  for (auto& ns : namespaces_) ns->entries.clear();
}

std::string Interpreter::render(std::shared_ptr<Dict> context) {
  char base_marker;
  stack_base_ = &base_marker;
  root_ = std::make_shared<Scope>();
  root_->vars = context->entries;
  scope_ = root_;
  std::string out;
  out_ = &out;
  exec(program_.body);
  return out;
}

void Interpreter::fail(size_t pos, const std::string& what) const {
  throw PositionedError("template error at " + describe_position(program_.source, pos) + ": " + what);
}

void Interpreter::fail_undefined(size_t pos, const Value& undefined) const {
  fail(pos, undefined.str().empty() ? "value is undefined" : undefined.str());
}

void Interpreter::emit(const std::string& s) {
  if (out_->size() + s.size() > limits_.max_output_bytes)
    throw TemplateError("template output exceeds the limit of " + std::to_string(limits_.max_output_bytes) +
                        " bytes");
  *out_ += s;
}

void Interpreter::emit(const Value& v) {
  if (v.is_string()) return emit(v.str());
  std::string s;
  py_str_append(s, v);
  emit(s);
}

void Interpreter::check_stack() const {
  char marker;
  const char* here = &marker;
  size_t used = here < stack_base_ ? static_cast<size_t>(stack_base_ - here) : static_cast<size_t>(here - stack_base_);
  if (used > kStackBudgetBytes) throw TemplateError("template recursion exceeds the stack budget");
}

void Interpreter::count_iterations(size_t n) {
  iterations_ += static_cast<long>(n);
  if (iterations_ > limits_.max_loop_iterations)
    throw TemplateError("template exceeds the limit of " + std::to_string(limits_.max_loop_iterations) +
                        " loop iterations");
}

// ---------------------------------------------------------------- statements

void Interpreter::exec(const Body& body) {
  for (const auto& stmt : body) {
    exec_stmt(*stmt);
    if (flow_ != Flow::Normal) return;
  }
}

std::string Interpreter::capture(const Body& body) {
  std::string buffer;
  std::string* saved = out_;
  out_ = &buffer;
  try {
    exec(body);
  } catch (...) {
    out_ = saved;
    throw;
  }
  out_ = saved;
  return buffer;
}

Value Interpreter::apply_filters(const std::vector<std::unique_ptr<FilterExpr>>& filters, Value v) {
  for (const auto& f : filters) {
    CallArgs args = eval_args(f->args);
    try {
      v = apply_filter(f->name, v, args);
    } catch (const PositionedError&) {
      throw;
    } catch (const TemplateRaise&) {
      throw;
    } catch (const TemplateError& e) {
      fail(f->pos, e.what());
    }
  }
  return v;
}

void Interpreter::exec_stmt(const Stmt& stmt) {
  check_stack();
  switch (stmt.kind) {
    case StmtKind::Text: emit(static_cast<const TextStmt&>(stmt).text); return;
    case StmtKind::Print: {
      const Expr& e = *static_cast<const PrintStmt&>(stmt).expr;
      if (e.kind == ExprKind::Literal) return emit(static_cast<const LiteralExpr&>(e).value);
      try {
        emit(eval(e));
      } catch (const PositionedError&) {
        throw;
      } catch (const TemplateRaise&) {
        throw;
      } catch (const TemplateError& err) {
        fail(stmt.pos, err.what());
      }
      return;
    }
    case StmtKind::If: {
      const auto& s = static_cast<const IfStmt&>(stmt);
      for (const auto& [cond, body] : s.branches) {
        if (eval(*cond).truthy()) return exec(body);
      }
      return exec(s.otherwise);
    }
    case StmtKind::For: return exec_for(static_cast<const ForStmt&>(stmt));
    case StmtKind::Set: {
      const auto& s = static_cast<const SetStmt&>(stmt);
      return assign(s.target, eval(*s.value), s.pos);
    }
    case StmtKind::SetBlock: {
      const auto& s = static_cast<const SetBlockStmt&>(stmt);
      return assign(s.target, apply_filters(s.filters, Value(capture(s.body))), s.pos);
    }
    case StmtKind::Macro: {
      const auto& m = static_cast<const MacroStmt&>(stmt);
      scope_->set(m.name, define_macro(m));
      return;
    }
    case StmtKind::CallBlock: {
      const auto& s = static_cast<const CallBlockStmt&>(stmt);
      const auto& call = static_cast<const CallExpr&>(*s.call);
      Value callee = eval(*call.callee);
      CallArgs args = eval_args(call.args);
      args.keyword.emplace_back("caller", define_macro(*s.caller));
      Value result;
      try {
        result = this->call(callee, args);
      } catch (const PositionedError&) {
        throw;
      } catch (const TemplateRaise&) {
        throw;
      } catch (const TemplateError& e) {
        fail(s.pos, e.what());
      }
      emit(result);
      return;
    }
    case StmtKind::FilterBlock: {
      const auto& s = static_cast<const FilterBlockStmt&>(stmt);
      emit(apply_filters(s.filters, Value(capture(s.body))));
      return;
    }
    case StmtKind::Break: flow_ = Flow::Break; return;
    case StmtKind::Continue: flow_ = Flow::Continue; return;
    case StmtKind::Scoped: {
      const auto& s = static_cast<const ScopedStmt&>(stmt);
      auto inner = std::make_shared<Scope>();
      inner->parent = scope_;
      for (const auto& [name, expr] : s.assignments) inner->set(name, eval(*expr));
      auto saved = scope_;
      scope_ = inner;
      try {
        exec(s.body);
      } catch (...) {
        scope_ = saved;
        throw;
      }
      scope_ = saved;
      return;
    }
  }
}

void Interpreter::assign(const Target& target, Value value, size_t pos) {
  if (!target.attr.empty()) {
    const Value* ns = scope_->find(target.names[0]);
    if (!ns || ns->kind() != Kind::Namespace)
      fail(pos, "cannot assign attribute '" + target.attr + "' on '" + target.names[0] +
                    "': only namespace objects accept attribute assignment");
    ns->ns_ref().set(target.attr, std::move(value));
    return;
  }
  if (!target.unpack) {
    scope_->set(target.names[0], std::move(value));
    return;
  }
  List items;
  try {
    items = to_list(value);
  } catch (const TemplateError& e) {
    fail(pos, std::string("cannot unpack non-iterable ") + value.type_name() + " object");
  }
  if (items.size() != target.names.size())
    fail(pos, items.size() > target.names.size()
                  ? "too many values to unpack (expected " + std::to_string(target.names.size()) + ")"
                  : "not enough values to unpack (expected " + std::to_string(target.names.size()) + ", got " +
                        std::to_string(items.size()) + ")");
  for (size_t i = 0; i < items.size(); ++i) scope_->set(target.names[i], items[i]);
}

void Interpreter::exec_for(const ForStmt& f) {
  Value iterable = eval(*f.iterable);
  run_loop(f, iterable, 1, false);
}

// Runs one (possibly recursive) loop. With `capture`, the output is returned instead of emitted:
// that is what `loop(children)` yields inside a recursive loop.
std::string Interpreter::run_loop(const ForStmt& f, const Value& iterable, int depth, bool capture_output) {
  if (iterable.is_none() || iterable.is_number())
    fail(f.iterable->pos, std::string("'") + iterable.type_name() + "' object is not iterable");
  auto items = std::make_shared<List>(to_list(iterable));
  auto outer = scope_;
  std::string buffer;
  std::string* saved_out = out_;
  if (capture_output) out_ = &buffer;
  auto restore = [&]() {
    scope_ = outer;
    out_ = saved_out;
  };
  try {
    if (f.filter) {  // `for x in xs if cond`: loop.length and loop.index count the kept items only
      auto kept = std::make_shared<List>();
      for (const Value& item : *items) {
        count_iterations(1);
        scope_ = std::make_shared<Scope>();
        scope_->parent = outer;
        assign(f.target, item, f.pos);
        if (eval(*f.filter).truthy()) kept->push_back(item);
      }
      scope_ = outer;
      items = kept;
    }
    auto info = std::make_shared<LoopInfo>();
    info->items = items;
    info->depth = depth;
    if (f.recursive) {
      if (depth > limits_.max_recursion_depth)
        fail(f.pos, "recursive loop deeper than " + std::to_string(limits_.max_recursion_depth) + " levels");
      auto fn = std::make_shared<Callable>();
      fn->name = "loop";
      const ForStmt* stmt = &f;
      fn->fn = [stmt, depth](Interpreter& in, CallArgs& args) {
        if (args.positional.size() != 1) throw TemplateError("loop() takes exactly one argument");
        return Value(in.run_loop(*stmt, args.positional[0], depth + 1, true));
      };
      info->recurse = fn;
    }
    Value loop_value = Value::loop(info);
    for (size_t i = 0; i < items->size(); ++i) {
      count_iterations(1);
      info->index0 = i;
      scope_ = std::make_shared<Scope>();
      scope_->parent = outer;
      scope_->vars.reserve(4);
      scope_->vars.emplace_back("loop", loop_value);
      assign(f.target, (*items)[i], f.pos);
      exec(f.body);
      if (flow_ == Flow::Break) {
        flow_ = Flow::Normal;
        break;
      }
      flow_ = Flow::Normal;
    }
    if (items->empty() && !f.otherwise.empty()) {
      scope_ = std::make_shared<Scope>();
      scope_->parent = outer;
      exec(f.otherwise);
    }
  } catch (...) {
    restore();
    throw;
  }
  restore();
  return buffer;
}

Value Interpreter::define_macro(const MacroStmt& m) {
  auto fn = std::make_shared<Callable>();
  fn->name = m.name;
  const MacroStmt* stmt = &m;
  // Weak: the macro is stored in the scope it closes over, and a strong reference would be a cycle.
  std::weak_ptr<Scope> closure = scope_;
  fn->fn = [stmt, closure](Interpreter& in, CallArgs& args) { return in.invoke_macro(*stmt, closure, args); };
  return Value::callable(std::move(fn));
}

Value Interpreter::invoke_macro(const MacroStmt& m, const std::weak_ptr<Scope>& closure, CallArgs& args) {
  if (depth_ >= limits_.max_recursion_depth)
    throw TemplateError("macro calls nested deeper than " + std::to_string(limits_.max_recursion_depth) + " levels");
  auto frame = std::make_shared<Scope>();
  frame->parent = closure.lock();
  if (!frame->parent) frame->parent = root_;  // the defining loop iteration is over: see the template's names
  List varargs;
  for (size_t i = 0; i < args.positional.size(); ++i) {
    if (i < m.params.size()) frame->set(m.params[i].first, args.positional[i]);
    else varargs.push_back(args.positional[i]);
  }
  auto kwargs = std::make_shared<Dict>();
  for (auto& [k, v] : args.keyword) {
    bool is_param = false;
    for (size_t i = 0; i < m.params.size(); ++i) {
      if (m.params[i].first != k) continue;
      if (i < args.positional.size())
        throw TemplateError("macro '" + m.name + "' got multiple values for argument '" + k + "'");
      is_param = true;
    }
    if (is_param || k == "caller") frame->set(k, v);
    else kwargs->set(k, v);
  }
  auto saved_scope = scope_;
  std::string* saved_out = out_;
  std::string buffer;
  ++depth_;
  try {
    scope_ = frame;
    // Defaults are evaluated at call time inside the macro's frame, as Jinja does.
    for (size_t i = 0; i < m.params.size(); ++i) {
      bool bound = false;
      for (const auto& [k, v] : frame->vars) bound = bound || k == m.params[i].first;
      if (bound) continue;
      if (m.params[i].second) frame->set(m.params[i].first, eval(*m.params[i].second));
      else frame->set(m.params[i].first, Value::undefined("parameter '" + m.params[i].first + "' was not provided"));
    }
    frame->set("varargs", Value::list(std::move(varargs), true));
    frame->set("kwargs", Value::dict(kwargs));
    out_ = &buffer;
    exec(m.body);
  } catch (...) {
    --depth_;
    scope_ = saved_scope;
    out_ = saved_out;
    throw;
  }
  --depth_;
  scope_ = saved_scope;
  out_ = saved_out;
  flow_ = Flow::Normal;
  return Value(std::move(buffer));
}

// ---------------------------------------------------------------- expressions

Value Interpreter::lookup(const std::string& name) {
  if (const Value* v = scope_->find(name)) return *v;
  if (const Value* g = find_global(name)) return *g;
  return Value::undefined("'" + name + "' is undefined");
}

CallArgs Interpreter::eval_args(const Arguments& a) {
  CallArgs args;
  args.positional.reserve(a.positional.size());
  for (const auto& e : a.positional) args.positional.push_back(eval(*e));
  for (const auto& [k, e] : a.keyword) args.keyword.emplace_back(k, eval(*e));
  return args;
}

Value Interpreter::eval(const Expr& e) {
  check_stack();
  try {
    return eval_inner(e);
  } catch (const PositionedError&) {
    throw;
  } catch (const TemplateRaise&) {
    throw;
  } catch (const TemplateError& err) {
    fail(e.pos, err.what());
  }
}

static const char* object_type(const Value& v) {
  switch (v.kind()) {
    case Kind::Dict: return "'dict object'";
    case Kind::List: return v.is_tuple() ? "'tuple object'" : "'list object'";
    case Kind::String: return "'str object'";
    case Kind::None: return "'None'";
    case Kind::Int: return "'int object'";
    case Kind::Float: return "'float object'";
    case Kind::Bool: return v.as_bool() ? "'True'" : "'False'";
    case Kind::Namespace: return "'Namespace object'";
    case Kind::Loop: return "'LoopContext object'";
    default: return "'object'";
  }
}

Value Interpreter::getattr(const Value& obj, const std::string& name) {
  switch (obj.kind()) {
    case Kind::Undefined: throw TemplateError(obj.str().empty() ? "value is undefined" : obj.str());
    case Kind::Dict:
      if (auto method = method_attribute(obj, name)) return *method;
      if (const Value* v = obj.dict_ref().find(name)) return *v;
      break;
    case Kind::String:
    case Kind::List:
      if (auto method = method_attribute(obj, name)) return *method;
      break;
    case Kind::Namespace:
      if (const Value* v = obj.ns_ref().find(name)) return *v;
      break;
    case Kind::Loop: {
      const LoopInfo& l = obj.loop_ref();
      int64_t n = static_cast<int64_t>(l.items->size()), i = static_cast<int64_t>(l.index0);
      if (name == "index") return Value(i + 1);
      if (name == "index0") return Value(i);
      if (name == "revindex") return Value(n - i);
      if (name == "revindex0") return Value(n - i - 1);
      if (name == "first") return Value(i == 0);
      if (name == "last") return Value(i == n - 1);
      if (name == "length") return Value(n);
      if (name == "depth") return Value(int64_t{l.depth});
      if (name == "depth0") return Value(int64_t{l.depth - 1});
      if (name == "previtem") return i > 0 ? (*l.items)[i - 1] : Value::undefined("there is no previous item");
      if (name == "nextitem") return i + 1 < n ? (*l.items)[i + 1] : Value::undefined("there is no next item");
      break;
    }
    default: break;
  }
  return Value::undefined(std::string(object_type(obj)) + " has no attribute '" + name + "'");
}

static int64_t normalize_index(int64_t i, size_t n) { return i < 0 ? i + static_cast<int64_t>(n) : i; }

Value Interpreter::getitem(const Value& obj, const Value& key) {
  if (obj.is_undefined()) throw TemplateError(obj.str().empty() ? "value is undefined" : obj.str());
  bool int_key = key.is_int() || key.kind() == Kind::Bool;
  if (int_key && obj.is_list()) {
    const List& items = obj.items();
    int64_t i = normalize_index(key.to_int(), items.size());
    if (i >= 0 && i < static_cast<int64_t>(items.size())) return items[i];
    return Value::undefined(std::string(object_type(obj)) + " has no element " + std::to_string(key.to_int()));
  }
  if (int_key && obj.is_string()) {
    const std::string& s = obj.str();
    if (is_ascii(s)) {
      int64_t i = normalize_index(key.to_int(), s.size());
      if (i >= 0 && i < static_cast<int64_t>(s.size())) return Value(std::string(1, s[i]));
    } else {
      auto cps = utf8_decode(s);
      int64_t i = normalize_index(key.to_int(), cps.size());
      if (i >= 0 && i < static_cast<int64_t>(cps.size())) return Value(utf8_encode(cps, i, i + 1));
    }
    return Value::undefined("'str object' has no element " + std::to_string(key.to_int()));
  }
  if (key.is_string()) {
    if (obj.is_dict()) {
      if (const Value* v = obj.dict_ref().find(key.str())) return *v;
      return Value::undefined("'dict object' has no attribute '" + key.str() + "'");
    }
    return getattr(obj, key.str());
  }
  return Value::undefined(std::string(object_type(obj)) + " has no element " + py_repr(key));
}

Value Interpreter::eval_slice(const SliceExpr& s) {
  Value obj = eval(*s.object);
  if (obj.is_undefined()) fail_undefined(s.pos, obj);
  auto bound = [&](const ExprPtr& e, bool& present) -> int64_t {
    present = false;
    if (!e) return 0;
    Value v = eval(*e);
    if (v.is_none()) return 0;
    if (!(v.is_int() || v.kind() == Kind::Bool)) fail(e->pos, "slice indices must be integers or None");
    present = true;
    return v.to_int();
  };
  bool has_start, has_stop, has_step;
  int64_t start = bound(s.start, has_start), stop = bound(s.stop, has_stop), step = bound(s.step, has_step);
  if (!has_step) step = 1;
  if (step == 0) fail(s.pos, "slice step cannot be zero");
  std::vector<char32_t> cps;
  bool ascii = obj.is_string() && is_ascii(obj.str());
  if (obj.is_string() && !ascii) cps = utf8_decode(obj.str());
  int64_t n;
  if (obj.is_list()) n = static_cast<int64_t>(obj.items().size());
  else if (obj.is_string()) n = ascii ? static_cast<int64_t>(obj.str().size()) : static_cast<int64_t>(cps.size());
  else fail(s.pos, std::string("'") + obj.type_name() + "' object is not subscriptable");
  // Python's slice.indices()
  auto clamp = [&](int64_t v, bool present, int64_t def_pos, int64_t def_neg) {
    if (!present) return step > 0 ? def_pos : def_neg;
    if (v < 0) v += n;
    if (step > 0) return v < 0 ? int64_t{0} : (v > n ? n : v);
    return v < -1 ? int64_t{-1} : (v > n - 1 ? n - 1 : v);
  };
  int64_t lo = clamp(start, has_start, 0, n - 1);
  int64_t hi = clamp(stop, has_stop, n, -1);
  std::vector<int64_t> idx;
  if (step > 0)
    for (int64_t i = lo; i < hi; i += step) idx.push_back(i);
  else
    for (int64_t i = lo; i > hi; i += step) idx.push_back(i);
  if (obj.is_list()) {
    List out;
    out.reserve(idx.size());
    for (int64_t i : idx) out.push_back(obj.items()[i]);
    return Value::list(std::move(out), obj.is_tuple());
  }
  std::string out;
  for (int64_t i : idx) {
    if (ascii) out += obj.str()[i];
    else utf8_append(out, cps[i]);
  }
  return Value(std::move(out));
}

Value Interpreter::call(const Value& callee, CallArgs& args) {
  if (callee.kind() == Kind::Callable) return callee.callable_ref().fn(*this, args);
  if (callee.kind() == Kind::Loop) {
    if (!callee.loop_ref().recurse) throw TemplateError("loop() can only be called inside a 'recursive' for loop");
    return callee.loop_ref().recurse->fn(*this, args);
  }
  if (callee.is_undefined()) throw TemplateError(callee.str().empty() ? "value is undefined" : callee.str());
  throw TemplateError(std::string("'") + callee.type_name() + "' object is not callable");
}

Value Interpreter::eval_call(const CallExpr& c) {
  if (c.callee->kind == ExprKind::Attr) {
    const auto& attr = static_cast<const AttrExpr&>(*c.callee);
    Value obj = eval(*attr.object);
    if (obj.is_undefined()) fail_undefined(attr.pos, obj);
    CallArgs args = eval_args(c.args);
    Value result;
    if (call_method(*this, obj, attr.name, args, result)) return result;
    return call(getattr(obj, attr.name), args);
  }
  Value callee = eval(*c.callee);
  CallArgs args = eval_args(c.args);
  return call(callee, args);
}

Value Interpreter::eval_compare(const CompareExpr& c) {
  Value left = eval(*c.first);
  for (const auto& [op, expr] : c.rest) {
    Value right = eval(*expr);
    bool ok;
    if (op == "==") ok = py_equal(left, right);
    else if (op == "!=") ok = !py_equal(left, right);
    else if (op == "in") ok = py_contains(right, left);
    else if (op == "notin") ok = !py_contains(right, left);
    else {
      if (left.is_undefined()) fail_undefined(c.pos, left);
      if (right.is_undefined()) fail_undefined(expr->pos, right);
      if (op == "<") ok = py_less(left, right);
      else if (op == ">") ok = py_less(right, left);
      else if (op == "<=") ok = !py_less(right, left);
      else ok = !py_less(left, right);
    }
    if (!ok) return Value(false);
    left = std::move(right);
  }
  return Value(true);
}

Value Interpreter::eval_inner(const Expr& e) {
  switch (e.kind) {
    case ExprKind::Literal: return static_cast<const LiteralExpr&>(e).value;
    case ExprKind::Name: return lookup(static_cast<const NameExpr&>(e).name);
    case ExprKind::List: {
      const auto& l = static_cast<const ListExpr&>(e);
      List items;
      items.reserve(l.items.size());
      for (const auto& item : l.items) items.push_back(eval(*item));
      return Value::list(std::move(items), l.tuple);
    }
    case ExprKind::Dict: {
      const auto& d = static_cast<const DictExpr&>(e);
      auto dict = std::make_shared<Dict>();
      for (const auto& [k, v] : d.items) {
        Value key = eval(*k);
        if (!key.is_string()) fail(k->pos, "dict keys must be strings in chat templates");
        dict->set(key.str(), eval(*v));
      }
      return Value::dict(std::move(dict));
    }
    case ExprKind::Attr: {
      const auto& a = static_cast<const AttrExpr&>(e);
      Value obj = eval(*a.object);
      if (obj.is_undefined()) fail_undefined(a.pos, obj);
      return getattr(obj, a.name);
    }
    case ExprKind::Item: {
      const auto& i = static_cast<const ItemExpr&>(e);
      Value obj = eval(*i.object);
      if (obj.is_undefined()) fail_undefined(i.pos, obj);
      return getitem(obj, eval(*i.index));
    }
    case ExprKind::Slice: return eval_slice(static_cast<const SliceExpr&>(e));
    case ExprKind::Call: return eval_call(static_cast<const CallExpr&>(e));
    case ExprKind::Filter: {
      const auto& f = static_cast<const FilterExpr&>(e);
      Value v = eval(*f.value);
      CallArgs args = eval_args(f.args);
      return apply_filter(f.name, v, args);
    }
    case ExprKind::Test: {
      const auto& t = static_cast<const TestExpr&>(e);
      Value v = eval(*t.value);
      CallArgs args = eval_args(t.args);
      bool r = apply_test(t.name, v, args);
      return Value(t.negated ? !r : r);
    }
    case ExprKind::Not: return Value(!eval(*static_cast<const UnaryExpr&>(e).operand).truthy());
    case ExprKind::Neg:
    case ExprKind::Pos: {
      const auto& u = static_cast<const UnaryExpr&>(e);
      Value v = eval(*u.operand);
      if (v.is_undefined()) fail_undefined(u.pos, v);
      if (!v.is_number())
        fail(u.pos, std::string("bad operand type for unary ") + (e.kind == ExprKind::Neg ? "-" : "+") + ": '" +
                        v.type_name() + "'");
      if (e.kind == ExprKind::Pos) return v.kind() == Kind::Bool ? Value(v.to_int()) : v;
      if (v.kind() == Kind::Float) return Value(-v.as_float());
      if (v.to_int() == INT64_MIN) fail(u.pos, "integer overflow");
      return Value(-v.to_int());
    }
    case ExprKind::And: {
      const auto& b = static_cast<const BinaryExpr&>(e);
      Value left = eval(*b.left);
      return left.truthy() ? eval(*b.right) : left;
    }
    case ExprKind::Or: {
      const auto& b = static_cast<const BinaryExpr&>(e);
      Value left = eval(*b.left);
      return left.truthy() ? left : eval(*b.right);
    }
    case ExprKind::Binary: {
      const auto& b = static_cast<const BinaryExpr&>(e);
      Value left = eval(*b.left);
      Value right = eval(*b.right);
      if (b.op == "~") {
        std::string s = py_str(left);
        py_str_append(s, right);
        if (s.size() > limits_.max_output_bytes) fail(b.pos, "string concatenation exceeds the output size limit");
        return Value(std::move(s));
      }
      if (left.is_undefined()) fail_undefined(b.pos, left);
      if (right.is_undefined()) fail_undefined(b.pos, right);
      return binary_op(b.op, left, right, size_limits_);
    }
    case ExprKind::Compare: return eval_compare(static_cast<const CompareExpr&>(e));
    case ExprKind::Conditional: {
      const auto& c = static_cast<const ConditionalExpr&>(e);
      if (eval(*c.cond).truthy()) return eval(*c.then);
      if (c.otherwise) return eval(*c.otherwise);
      return Value::undefined("the inline if expression evaluated to false and had no else");
    }
  }
  fail(e.pos, "unknown expression");
}

Value Interpreter::apply_filter(const std::string& name, const Value& value, CallArgs& args) {
  FilterFn fn = find_filter(name);
  if (!fn) throw TemplateError("no filter named '" + name + "'");
  return fn(*this, value, args);
}

bool Interpreter::apply_test(const std::string& name, const Value& value, CallArgs& args) {
  TestFn fn = find_test(name);
  if (!fn) throw TemplateError("no test named '" + name + "'");
  return fn(*this, value, args);
}

List Interpreter::to_list(const Value& v) {
  switch (v.kind()) {
    case Kind::Undefined: return {};
    case Kind::List: return v.items();
    case Kind::Dict: {
      List keys;
      keys.reserve(v.dict_ref().entries.size());
      for (const auto& [k, val] : v.dict_ref().entries) keys.emplace_back(k);
      return keys;
    }
    case Kind::String: {
      List chars;
      const std::string& s = v.str();
      if (is_ascii(s)) {
        for (char c : s) chars.emplace_back(std::string(1, c));
      } else {
        auto cps = utf8_decode(s);
        for (size_t i = 0; i < cps.size(); ++i) chars.emplace_back(utf8_encode(cps, i, i + 1));
      }
      return chars;
    }
    default: throw TemplateError(std::string("'") + v.type_name() + "' object is not iterable");
  }
}

}  // namespace strata::jinja
