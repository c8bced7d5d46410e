// The parsed form of a template. Nodes are passive data: the parser builds them, the interpreter walks
// them. Every node keeps the source offset it came from so runtime errors can name a line.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/template/value.hpp"

namespace strata::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class ExprKind {
  Literal, Name, List, Dict, Attr, Item, Slice, Call, Filter, Test, Not, Neg, Pos, Binary, And, Or, Compare,
  Conditional
};

struct Expr {
  Expr(ExprKind k, size_t p) : kind(k), pos(p) {}
  virtual ~Expr() = default;
  ExprKind kind;
  size_t pos;
};

struct Arguments {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keyword;
};

struct LiteralExpr : Expr {
  LiteralExpr(Value v, size_t p) : Expr(ExprKind::Literal, p), value(std::move(v)) {}
  Value value;
};
struct NameExpr : Expr {
  NameExpr(std::string n, size_t p) : Expr(ExprKind::Name, p), name(std::move(n)) {}
  std::string name;
};
struct ListExpr : Expr {  // list or tuple display
  ListExpr(bool t, size_t p) : Expr(ExprKind::List, p), tuple(t) {}
  bool tuple;
  std::vector<ExprPtr> items;
};
struct DictExpr : Expr {
  explicit DictExpr(size_t p) : Expr(ExprKind::Dict, p) {}
  std::vector<std::pair<ExprPtr, ExprPtr>> items;
};
struct AttrExpr : Expr {  // obj.name
  AttrExpr(ExprPtr o, std::string n, size_t p) : Expr(ExprKind::Attr, p), object(std::move(o)), name(std::move(n)) {}
  ExprPtr object;
  std::string name;
};
struct ItemExpr : Expr {  // obj[index]
  ItemExpr(ExprPtr o, ExprPtr i, size_t p) : Expr(ExprKind::Item, p), object(std::move(o)), index(std::move(i)) {}
  ExprPtr object, index;
};
struct SliceExpr : Expr {  // obj[start:stop:step], each part optional
  explicit SliceExpr(size_t p) : Expr(ExprKind::Slice, p) {}
  ExprPtr object, start, stop, step;
};
struct CallExpr : Expr {
  CallExpr(ExprPtr c, size_t p) : Expr(ExprKind::Call, p), callee(std::move(c)) {}
  ExprPtr callee;
  Arguments args;
};
struct FilterExpr : Expr {  // value|name(args); value is null inside a filter block
  FilterExpr(ExprPtr v, std::string n, size_t p) : Expr(ExprKind::Filter, p), value(std::move(v)), name(std::move(n)) {}
  ExprPtr value;
  std::string name;
  Arguments args;
};
struct TestExpr : Expr {  // value is [not] name(args)
  TestExpr(ExprPtr v, std::string n, size_t p) : Expr(ExprKind::Test, p), value(std::move(v)), name(std::move(n)) {}
  ExprPtr value;
  std::string name;
  Arguments args;
  bool negated = false;
};
struct UnaryExpr : Expr {  // not / - / +
  UnaryExpr(ExprKind k, ExprPtr o, size_t p) : Expr(k, p), operand(std::move(o)) {}
  ExprPtr operand;
};
struct BinaryExpr : Expr {  // arithmetic, `~`, and/or (kinds And/Or short-circuit)
  BinaryExpr(ExprKind k, std::string o, ExprPtr l, ExprPtr r, size_t p)
      : Expr(k, p), op(std::move(o)), left(std::move(l)), right(std::move(r)) {}
  std::string op;
  ExprPtr left, right;
};
struct CompareExpr : Expr {  // a < b <= c: chained like Python
  CompareExpr(ExprPtr f, size_t p) : Expr(ExprKind::Compare, p), first(std::move(f)) {}
  ExprPtr first;
  std::vector<std::pair<std::string, ExprPtr>> rest;  // op is ==, !=, <, <=, >, >=, in, notin
};
struct ConditionalExpr : Expr {  // a if cond else b; a missing else yields Undefined
  explicit ConditionalExpr(size_t p) : Expr(ExprKind::Conditional, p) {}
  ExprPtr cond, then, otherwise;
};

enum class StmtKind { Text, Print, If, For, Set, SetBlock, Macro, CallBlock, FilterBlock, Break, Continue, Scoped };

struct Stmt {
  Stmt(StmtKind k, size_t p) : kind(k), pos(p) {}
  virtual ~Stmt() = default;
  StmtKind kind;
  size_t pos;
};

struct TextStmt : Stmt {
  TextStmt(std::string t, size_t p) : Stmt(StmtKind::Text, p), text(std::move(t)) {}
  std::string text;
};
struct PrintStmt : Stmt {
  PrintStmt(ExprPtr e, size_t p) : Stmt(StmtKind::Print, p), expr(std::move(e)) {}
  ExprPtr expr;
};
struct IfStmt : Stmt {
  explicit IfStmt(size_t p) : Stmt(StmtKind::If, p) {}
  std::vector<std::pair<ExprPtr, Body>> branches;  // if, elif...
  Body otherwise;
};
// An assignment target: a name, a tuple of names to unpack, or `ns.attr`.
struct Target {
  std::vector<std::string> names;  // one name, or several for unpacking
  bool unpack = false;
  std::string attr;  // non-empty: names[0].attr
};
struct ForStmt : Stmt {
  explicit ForStmt(size_t p) : Stmt(StmtKind::For, p) {}
  Target target;
  ExprPtr iterable, filter;
  Body body, otherwise;
  bool recursive = false;
};
struct SetStmt : Stmt {
  explicit SetStmt(size_t p) : Stmt(StmtKind::Set, p) {}
  Target target;
  ExprPtr value;
};
struct SetBlockStmt : Stmt {  // {% set x | filters %}body{% endset %}
  explicit SetBlockStmt(size_t p) : Stmt(StmtKind::SetBlock, p) {}
  Target target;
  std::vector<std::unique_ptr<FilterExpr>> filters;
  Body body;
};
struct MacroStmt : Stmt {
  explicit MacroStmt(size_t p) : Stmt(StmtKind::Macro, p) {}
  std::string name;
  std::vector<std::pair<std::string, ExprPtr>> params;  // default may be null
  Body body;
};
struct CallBlockStmt : Stmt {  // {% call(params) macro(args) %}body{% endcall %}
  explicit CallBlockStmt(size_t p) : Stmt(StmtKind::CallBlock, p) {}
  std::unique_ptr<MacroStmt> caller;  // the body as an anonymous macro named "caller"
  ExprPtr call;
};
struct FilterBlockStmt : Stmt {
  explicit FilterBlockStmt(size_t p) : Stmt(StmtKind::FilterBlock, p) {}
  std::vector<std::unique_ptr<FilterExpr>> filters;
  Body body;
};
struct LoopControlStmt : Stmt {  // break / continue
  LoopControlStmt(StmtKind k, size_t p) : Stmt(k, p) {}
};
// A body with its own scope: `with`, `block`, and transformers' `generation` tag.
struct ScopedStmt : Stmt {
  explicit ScopedStmt(size_t p) : Stmt(StmtKind::Scoped, p) {}
  std::vector<std::pair<std::string, ExprPtr>> assignments;
  Body body;
};

struct Program {
  std::string source;  // normalized source, for positions in error messages
  Body body;
};

}  // namespace strata::jinja
