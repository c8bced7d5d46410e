// Walks a parsed template and writes its output. One Interpreter renders one template once; it owns the
// scopes, the output buffers and the budget counters (loop iterations, call depth, output bytes) that
// keep a hostile template from hanging or exhausting memory.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "engine/template/ast.hpp"
#include "engine/template/chat_template.hpp"
#include "engine/template/operators.hpp"
#include "engine/template/value.hpp"

namespace strata::jinja {

// Variables of one frame. A for-loop iteration, a macro call and a `with` block each get their own,
// which is why `set` inside a loop does not leak out (Jinja's scoping; namespaces exist to cross it).
struct Scope {
  std::vector<std::pair<std::string, Value>> vars;
  std::shared_ptr<Scope> parent;
  const Value* find(const std::string& name) const;
  void set(const std::string& name, Value v);
};

class Interpreter {
 public:
  Interpreter(const Program& program, const TemplateLimits& limits);
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;
  // Renders with `context` (a Dict of variables) and returns the output.
  std::string render(std::shared_ptr<Dict> context);

  // For builtins.
  Value getattr(const Value& obj, const std::string& name);
  Value getitem(const Value& obj, const Value& key);
  Value apply_filter(const std::string& name, const Value& value, CallArgs& args);
  bool apply_test(const std::string& name, const Value& value, CallArgs& args);
  Value call(const Value& callee, CallArgs& args);
  List to_list(const Value& iterable);  // dict -> keys, str -> characters, Undefined -> []
  const SizeLimits& size_limits() const { return size_limits_; }
  void count_iterations(size_t n);
  // Namespaces are the only mutable values, so every reference cycle a template can build
  // (`set ns.me = ns`) runs through one; the interpreter empties them when the render ends.
  void track_namespace(const std::shared_ptr<Dict>& ns) { namespaces_.push_back(ns); }

 private:
  enum class Flow { Normal, Break, Continue };

  void exec(const Body& body);
  void exec_stmt(const Stmt& stmt);
  void exec_for(const ForStmt& f);
  std::string run_loop(const ForStmt& f, const Value& iterable, int depth, bool capture);
  void assign(const Target& target, Value value, size_t pos);
  Value define_macro(const MacroStmt& m);
  Value invoke_macro(const MacroStmt& m, const std::weak_ptr<Scope>& closure, CallArgs& args);
  std::string capture(const Body& body);
  Value apply_filters(const std::vector<std::unique_ptr<FilterExpr>>& filters, Value v);

  Value eval(const Expr& e);
  Value eval_inner(const Expr& e);
  Value eval_call(const CallExpr& c);
  Value eval_compare(const CompareExpr& c);
  Value eval_slice(const SliceExpr& s);
  CallArgs eval_args(const Arguments& a);
  Value lookup(const std::string& name);
  [[noreturn]] void fail(size_t pos, const std::string& what) const;
  [[noreturn]] void fail_undefined(size_t pos, const Value& undefined) const;
  void emit(const std::string& s);
  void emit(const Value& v);
  void check_stack() const;

  const Program& program_;
  TemplateLimits limits_;
  SizeLimits size_limits_;
  std::shared_ptr<Scope> root_;
  std::shared_ptr<Scope> scope_;
  std::string* out_ = nullptr;
  Flow flow_ = Flow::Normal;
  long iterations_ = 0;
  int depth_ = 0;
  // Each limit alone keeps recursion shallow, but they multiply (200 macro levels each evaluating a
  // 200-deep expression), so the stack itself is budgeted too. Threads get 8 MiB stacks by default.
  static constexpr size_t kStackBudgetBytes = 2u << 20;
  const char* stack_base_ = nullptr;
  std::vector<std::shared_ptr<Dict>> namespaces_;
};

// A positioned runtime error: message already carries "line L, column C".
struct PositionedError : TemplateError {
  using TemplateError::TemplateError;
};

}  // namespace strata::jinja
