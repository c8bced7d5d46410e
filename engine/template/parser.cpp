#include "engine/template/parser.hpp"

#include <initializer_list>

#include "engine/template/chat_template.hpp"
#include "engine/template/lexer.hpp"

namespace strata::jinja {
namespace {

class Parser {
 public:
  Parser(LexedTemplate lexed, int max_nesting) : lexed_(std::move(lexed)), max_nesting_(max_nesting) {}

  std::unique_ptr<Program> run() {
    auto program = std::make_unique<Program>();
    program->body = parse_body({});
    program->source = std::move(lexed_.source);
    return program;
  }

 private:
  // ---- token stream ----
  const Token& cur() const { return lexed_.tokens[i_]; }
  const Token& peek(size_t n = 1) const {
    size_t j = i_ + n < lexed_.tokens.size() ? i_ + n : lexed_.tokens.size() - 1;
    return lexed_.tokens[j];
  }
  void advance() {
    if (cur().type != Tok::Eof) ++i_;
  }
  bool is_op(const char* op) const { return cur().type == Tok::Op && cur().text == op; }
  bool is_name(const char* name) const { return cur().type == Tok::Name && cur().text == name; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    advance();
    return true;
  }
  bool skip_name(const char* name) {
    if (!is_name(name)) return false;
    advance();
    return true;
  }

  [[noreturn]] void fail(size_t pos, const std::string& what) const {
    throw TemplateError("template syntax error at " + describe_position(lexed_.source, pos) + ": " + what);
  }
  static std::string describe(const Token& t) {
    switch (t.type) {
      case Tok::Eof: return "end of template";
      case Tok::VarEnd: return "end of print statement '}}'";
      case Tok::BlockEnd: return "end of statement block '%}'";
      case Tok::Data: return "template text";
      case Tok::String: return "string literal";
      case Tok::Int:
      case Tok::Float: return "number " + t.text;
      default: return "'" + t.text + "'";
    }
  }
  [[noreturn]] void unexpected(const std::string& expected) const {
    fail(cur().pos, "expected " + expected + ", got " + describe(cur()));
  }
  void expect_op(const char* op) {
    if (!skip_op(op)) unexpected(std::string("'") + op + "'");
  }
  std::string expect_name() {
    if (cur().type != Tok::Name) unexpected("a name");
    std::string n = cur().text;
    advance();
    return n;
  }
  void expect_block_end() {
    if (cur().type != Tok::BlockEnd) unexpected("end of statement block '%}'");
    advance();
  }

  struct DepthGuard {
    Parser& p;
    DepthGuard(Parser& parser, size_t pos) : p(parser) {
      if (++p.depth_ > p.max_nesting_)
        p.fail(pos, "nesting deeper than " + std::to_string(p.max_nesting_) + " levels");
    }
    ~DepthGuard() { --p.depth_; }
  };

  // ---- statements ----
  // Parses until a block tag whose name is in `end_names` (left unconsumed: cur() is that name) or Eof.
  Body parse_body(std::initializer_list<const char*> end_names) {
    Body body;
    while (true) {
      const Token& t = cur();
      if (t.type == Tok::Eof) {
        if (end_names.size() != 0) {
          std::string names;
          for (const char* n : end_names) names += std::string(names.empty() ? "" : " or ") + "'" + n + "'";
          fail(t.pos, "unexpected end of template, expected " + names);
        }
        return body;
      }
      if (t.type == Tok::Data) {
        body.push_back(std::make_unique<TextStmt>(t.text, t.pos));
        advance();
      } else if (t.type == Tok::VarBegin) {
        size_t pos = t.pos;
        advance();
        auto expr = parse_tuple(true, {});
        if (cur().type != Tok::VarEnd) unexpected("end of print statement '}}'");
        advance();
        body.push_back(std::make_unique<PrintStmt>(std::move(expr), pos));
      } else if (t.type == Tok::BlockBegin) {
        const Token& name = peek();
        for (const char* end : end_names) {
          if (name.type == Tok::Name && name.text == end) {
            advance();  // leave the end name current
            return body;
          }
        }
        advance();
        body.push_back(parse_statement());
      } else {
        unexpected("template text or a tag");
      }
    }
  }

  StmtPtr parse_statement() {
    DepthGuard guard(*this, cur().pos);
    if (cur().type != Tok::Name) unexpected("a statement name");
    std::string tag = cur().text;
    size_t pos = cur().pos;
    advance();
    if (tag == "if") return parse_if(pos);
    if (tag == "for") return parse_for(pos);
    if (tag == "set") return parse_set(pos);
    if (tag == "macro") return parse_macro(pos);
    if (tag == "call") return parse_call_block(pos);
    if (tag == "filter") return parse_filter_block(pos);
    if (tag == "with") return parse_with(pos);
    if (tag == "block" || tag == "generation") return parse_scoped_tag(tag, pos);
    if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) fail(pos, "'" + tag + "' outside of a loop");
      expect_block_end();
      return std::make_unique<LoopControlStmt>(tag == "break" ? StmtKind::Break : StmtKind::Continue, pos);
    }
    if (tag == "include" || tag == "import" || tag == "from" || tag == "extends")
      fail(pos, "'" + tag + "' is not available: chat templates have no file access");
    if (tag.rfind("end", 0) == 0 || tag == "elif" || tag == "else")
      fail(pos, "unexpected '" + tag + "' without an open block");
    fail(pos, "unknown tag '" + tag + "'");
  }

  // At `{% end_name`: consumes the name (and an optional trailing name for endblock/endmacro) and `%}`.
  void finish_end_tag() {
    advance();
    if (cur().type == Tok::Name) advance();
    expect_block_end();
  }

  StmtPtr parse_if(size_t pos) {
    auto node = std::make_unique<IfStmt>(pos);
    auto cond = parse_tuple(true, {});
    expect_block_end();
    while (true) {
      Body body = parse_body({"elif", "else", "endif"});
      node->branches.emplace_back(std::move(cond), std::move(body));
      std::string which = cur().text;
      advance();
      if (which == "elif") {
        cond = parse_tuple(true, {});
        expect_block_end();
        continue;
      }
      if (which == "else") {
        expect_block_end();
        node->otherwise = parse_body({"endif"});
        advance();
      }
      expect_block_end();
      return node;
    }
  }

  Target parse_target(bool allow_namespace) {
    Target t;
    bool paren = skip_op("(");
    t.names.push_back(expect_name());
    if (allow_namespace && !paren && is_op(".")) {
      advance();
      t.attr = expect_name();
      return t;
    }
    while (skip_op(",")) {
      t.unpack = true;
      if (cur().type != Tok::Name) break;  // trailing comma
      t.names.push_back(expect_name());
    }
    if (paren) {
      expect_op(")");
      t.unpack = t.unpack || t.names.size() > 1;
    }
    return t;
  }

  StmtPtr parse_for(size_t pos) {
    auto node = std::make_unique<ForStmt>(pos);
    node->target = parse_target(false);
    if (!skip_name("in")) unexpected("'in'");
    node->iterable = parse_tuple(false, {"recursive"});
    if (skip_name("if")) node->filter = parse_expression(true);
    node->recursive = skip_name("recursive");
    expect_block_end();
    ++loop_depth_;
    node->body = parse_body({"else", "endfor"});
    --loop_depth_;
    if (cur().text == "else") {
      advance();
      expect_block_end();
      node->otherwise = parse_body({"endfor"});
    }
    advance();
    expect_block_end();
    return node;
  }

  StmtPtr parse_set(size_t pos) {
    Target target = parse_target(true);
    if (skip_op("=")) {
      auto node = std::make_unique<SetStmt>(pos);
      node->target = std::move(target);
      node->value = parse_tuple(true, {});
      expect_block_end();
      return node;
    }
    if (target.unpack || !target.attr.empty()) fail(pos, "a block set assigns a single name");
    auto node = std::make_unique<SetBlockStmt>(pos);
    node->target = std::move(target);
    while (skip_op("|")) node->filters.push_back(parse_filter(nullptr));
    expect_block_end();
    node->body = parse_body({"endset"});
    finish_end_tag();
    return node;
  }

  void parse_params(MacroStmt& m) {
    expect_op("(");
    while (!is_op(")")) {
      if (!m.params.empty()) expect_op(",");
      if (is_op(")")) break;
      std::string name = expect_name();
      ExprPtr def;
      if (skip_op("=")) def = parse_expression(true);
      else if (!m.params.empty() && m.params.back().second)
        fail(cur().pos, "parameter '" + name + "' without a default follows one with a default");
      m.params.emplace_back(std::move(name), std::move(def));
    }
    advance();
  }

  StmtPtr parse_macro(size_t pos) {
    auto node = std::make_unique<MacroStmt>(pos);
    node->name = expect_name();
    parse_params(*node);
    expect_block_end();
    int saved = loop_depth_;
    loop_depth_ = 0;  // break/continue cannot cross a macro boundary
    node->body = parse_body({"endmacro"});
    loop_depth_ = saved;
    finish_end_tag();
    return node;
  }

  StmtPtr parse_call_block(size_t pos) {
    auto node = std::make_unique<CallBlockStmt>(pos);
    node->caller = std::make_unique<MacroStmt>(pos);
    node->caller->name = "caller";
    if (is_op("(")) parse_params(*node->caller);
    node->call = parse_expression(true);
    if (node->call->kind != ExprKind::Call) fail(pos, "expected a macro call after 'call'");
    expect_block_end();
    int saved = loop_depth_;
    loop_depth_ = 0;
    node->caller->body = parse_body({"endcall"});
    loop_depth_ = saved;
    finish_end_tag();
    return node;
  }

  StmtPtr parse_filter_block(size_t pos) {
    auto node = std::make_unique<FilterBlockStmt>(pos);
    node->filters.push_back(parse_filter(nullptr));
    while (skip_op("|")) node->filters.push_back(parse_filter(nullptr));
    expect_block_end();
    node->body = parse_body({"endfilter"});
    finish_end_tag();
    return node;
  }

  StmtPtr parse_with(size_t pos) {
    auto node = std::make_unique<ScopedStmt>(pos);
    while (cur().type != Tok::BlockEnd) {
      if (!node->assignments.empty()) expect_op(",");
      std::string name = expect_name();
      expect_op("=");
      node->assignments.emplace_back(std::move(name), parse_expression(true));
    }
    expect_block_end();
    node->body = parse_body({"endwith"});
    finish_end_tag();
    return node;
  }

  StmtPtr parse_scoped_tag(const std::string& tag, size_t pos) {
    auto node = std::make_unique<ScopedStmt>(pos);
    if (tag == "block") {
      expect_name();
      skip_name("scoped");
      skip_name("required");
    }
    expect_block_end();
    if (tag == "block") node->body = parse_body({"endblock"});
    else node->body = parse_body({"endgeneration"});
    finish_end_tag();
    return node;
  }

  // ---- expressions ----
  bool at_tuple_end(std::initializer_list<const char*> extra_end) const {
    if (cur().type == Tok::VarEnd || cur().type == Tok::BlockEnd || is_op(")")) return true;
    for (const char* n : extra_end)
      if (is_name(n)) return true;
    return false;
  }

  // A comma-separated expression list that is a tuple when it has a comma (`{{ a, b }}`, `set x = 1, 2`).
  ExprPtr parse_tuple(bool with_condexpr, std::initializer_list<const char*> extra_end, bool explicit_paren = false) {
    size_t pos = cur().pos;
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) expect_op(",");
      if (at_tuple_end(extra_end)) break;
      items.push_back(parse_expression(with_condexpr));
      if (is_op(",")) is_tuple = true;
      else break;
    }
    if (!is_tuple) {
      if (!items.empty()) return std::move(items[0]);
      if (!explicit_paren) unexpected("an expression");
    }
    auto t = std::make_unique<ListExpr>(true, pos);
    t->items = std::move(items);
    return t;
  }

  ExprPtr parse_expression(bool with_condexpr) { return with_condexpr ? parse_condexpr() : parse_or(); }

  ExprPtr parse_condexpr() {
    auto expr = parse_or();
    while (is_name("if")) {
      size_t pos = cur().pos;
      advance();
      auto node = std::make_unique<ConditionalExpr>(pos);
      node->cond = parse_or();
      if (skip_name("else")) node->otherwise = parse_condexpr();
      node->then = std::move(expr);
      expr = std::move(node);
    }
    return expr;
  }

  ExprPtr parse_or() {
    auto left = parse_and();
    while (is_name("or")) {
      size_t pos = cur().pos;
      advance();
      left = std::make_unique<BinaryExpr>(ExprKind::Or, "or", std::move(left), parse_and(), pos);
    }
    return left;
  }

  ExprPtr parse_and() {
    auto left = parse_not();
    while (is_name("and")) {
      size_t pos = cur().pos;
      advance();
      left = std::make_unique<BinaryExpr>(ExprKind::And, "and", std::move(left), parse_not(), pos);
    }
    return left;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      size_t pos = cur().pos;
      DepthGuard guard(*this, pos);
      advance();
      return std::make_unique<UnaryExpr>(ExprKind::Not, parse_not(), pos);
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    size_t pos = cur().pos;
    auto first = parse_math1();
    std::unique_ptr<CompareExpr> cmp;
    while (true) {
      std::string op;
      if (cur().type == Tok::Op && (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
                                    cur().text == "<=" || cur().text == ">" || cur().text == ">=")) {
        op = cur().text;
        advance();
      } else if (is_name("in")) {
        op = "in";
        advance();
      } else if (is_name("not") && peek().type == Tok::Name && peek().text == "in") {
        op = "notin";
        advance();
        advance();
      } else {
        break;
      }
      if (!cmp) cmp = std::make_unique<CompareExpr>(std::move(first), pos);
      cmp->rest.emplace_back(op, parse_math1());
    }
    if (cmp) return cmp;
    return first;
  }

  ExprPtr parse_binary_level(int level) {
    // 0: + -   1: ~   2: * / // %   3: **
    static const std::vector<std::vector<std::string>> ops = {{"+", "-"}, {"~"}, {"*", "/", "//", "%"}, {"**"}};
    auto next = [&]() { return level == 3 ? parse_unary(true) : parse_binary_level(level + 1); };
    auto left = next();
    while (cur().type == Tok::Op) {
      bool match = false;
      for (const auto& op : ops[level]) match = match || cur().text == op;
      if (!match) break;
      std::string op = cur().text;
      size_t pos = cur().pos;
      advance();
      left = std::make_unique<BinaryExpr>(ExprKind::Binary, op, std::move(left), next(), pos);
    }
    return left;
  }
  ExprPtr parse_math1() { return parse_binary_level(0); }

  ExprPtr parse_unary(bool with_filter) {
    size_t pos = cur().pos;
    DepthGuard guard(*this, pos);
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      ExprKind k = is_op("-") ? ExprKind::Neg : ExprKind::Pos;
      advance();
      node = std::make_unique<UnaryExpr>(k, parse_unary(false), pos);
    } else {
      node = parse_postfix(parse_primary());
    }
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary() {
    const Token& t = cur();
    size_t pos = t.pos;
    switch (t.type) {
      case Tok::Name: {
        std::string n = t.text;
        advance();
        if (n == "true" || n == "True") return std::make_unique<LiteralExpr>(Value(true), pos);
        if (n == "false" || n == "False") return std::make_unique<LiteralExpr>(Value(false), pos);
        if (n == "none" || n == "None") return std::make_unique<LiteralExpr>(Value::none(), pos);
        return std::make_unique<NameExpr>(std::move(n), pos);
      }
      case Tok::String: {
        std::string s = t.text;
        advance();
        while (cur().type == Tok::String) {  // adjacent literals concatenate, as in Python
          s += cur().text;
          advance();
        }
        return std::make_unique<LiteralExpr>(Value(std::move(s)), pos);
      }
      case Tok::Int: {
        int64_t v = t.int_value;
        advance();
        return std::make_unique<LiteralExpr>(Value(v), pos);
      }
      case Tok::Float: {
        double v = t.float_value;
        advance();
        return std::make_unique<LiteralExpr>(Value(v), pos);
      }
      case Tok::Op:
        if (t.text == "(") {
          advance();
          auto e = parse_tuple(true, {}, true);
          expect_op(")");
          return e;
        }
        if (t.text == "[") return parse_list();
        if (t.text == "{") return parse_dict();
        break;
      default: break;
    }
    unexpected("an expression");
  }

  ExprPtr parse_list() {
    auto node = std::make_unique<ListExpr>(false, cur().pos);
    advance();
    while (!is_op("]")) {
      if (!node->items.empty()) expect_op(",");
      if (is_op("]")) break;
      node->items.push_back(parse_expression(true));
    }
    advance();
    return node;
  }

  ExprPtr parse_dict() {
    auto node = std::make_unique<DictExpr>(cur().pos);
    advance();
    while (!is_op("}")) {
      if (!node->items.empty()) expect_op(",");
      if (is_op("}")) break;
      auto key = parse_expression(true);
      expect_op(":");
      node->items.emplace_back(std::move(key), parse_expression(true));
    }
    advance();
    return node;
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      if (is_op(".") || is_op("[")) node = parse_subscript(std::move(node));
      else if (is_op("(")) node = parse_call(std::move(node));
      else return node;
    }
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    while (true) {
      if (is_op("|")) {
        advance();
        auto f = parse_filter(std::move(node));
        node = std::move(f);
      } else if (is_name("is")) {
        node = parse_test(std::move(node));
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr node) {
    size_t pos = cur().pos;
    if (skip_op(".")) {
      if (cur().type == Tok::Name) {
        std::string name = cur().text;
        advance();
        return std::make_unique<AttrExpr>(std::move(node), std::move(name), pos);
      }
      if (cur().type == Tok::Int) {
        auto idx = std::make_unique<LiteralExpr>(Value(cur().int_value), cur().pos);
        advance();
        return std::make_unique<ItemExpr>(std::move(node), std::move(idx), pos);
      }
      unexpected("an attribute name");
    }
    advance();  // '['
    std::vector<ExprPtr> args;
    while (!is_op("]")) {
      if (!args.empty()) {
        expect_op(",");
        if (is_op("]")) break;
      }
      args.push_back(parse_subscribed(node, pos));
    }
    advance();
    if (args.empty()) fail(pos, "empty subscript");
    if (args.size() == 1) {
      if (args[0]->kind == ExprKind::Slice) return std::move(args[0]);
      return std::make_unique<ItemExpr>(std::move(node), std::move(args[0]), pos);
    }
    auto tuple = std::make_unique<ListExpr>(true, pos);
    tuple->items = std::move(args);
    return std::make_unique<ItemExpr>(std::move(node), std::move(tuple), pos);
  }

  // One subscript: an index, or a slice that takes ownership of `node` when it is the only subscript.
  ExprPtr parse_subscribed(ExprPtr& node, size_t pos) {
    ExprPtr start;
    if (!is_op(":")) {
      start = parse_expression(true);
      if (!is_op(":")) return start;
    }
    advance();  // ':'
    auto slice = std::make_unique<SliceExpr>(pos);
    slice->start = std::move(start);
    if (!is_op("]") && !is_op(",") && !is_op(":")) slice->stop = parse_expression(true);
    if (skip_op(":") && !is_op("]") && !is_op(",")) slice->step = parse_expression(true);
    if (!node) fail(pos, "only one slice per subscript is supported");
    slice->object = std::move(node);
    return slice;
  }

  void parse_args(Arguments& args) {
    expect_op("(");
    while (!is_op(")")) {
      if (!args.positional.empty() || !args.keyword.empty()) {
        expect_op(",");
        if (is_op(")")) break;
      }
      if (cur().type == Tok::Name && peek().type == Tok::Op && peek().text == "=") {
        std::string key = cur().text;
        advance();
        advance();
        args.keyword.emplace_back(std::move(key), parse_expression(true));
      } else {
        if (!args.keyword.empty()) fail(cur().pos, "positional argument after keyword argument");
        if (is_op("*") || is_op("**")) fail(cur().pos, "argument unpacking (* and **) is not supported");
        args.positional.push_back(parse_expression(true));
      }
    }
    advance();
  }

  ExprPtr parse_call(ExprPtr node) {
    auto call = std::make_unique<CallExpr>(std::move(node), cur().pos);
    parse_args(call->args);
    return call;
  }

  std::string parse_dotted_name() {
    std::string name = expect_name();
    while (is_op(".") && peek().type == Tok::Name) {
      advance();
      name += "." + cur().text;
      advance();
    }
    return name;
  }

  std::unique_ptr<FilterExpr> parse_filter(ExprPtr value) {
    size_t pos = cur().pos;
    auto f = std::make_unique<FilterExpr>(std::move(value), parse_dotted_name(), pos);
    if (is_op("(")) parse_args(f->args);
    return f;
  }

  ExprPtr parse_test(ExprPtr value) {
    size_t pos = cur().pos;
    advance();  // 'is'
    bool negated = skip_name("not");
    auto t = std::make_unique<TestExpr>(std::move(value), parse_dotted_name(), pos);
    t->negated = negated;
    const Token& c = cur();
    bool starts_arg = c.type == Tok::Name || c.type == Tok::String || c.type == Tok::Int || c.type == Tok::Float ||
                      (c.type == Tok::Op && (c.text == "(" || c.text == "[" || c.text == "{"));
    if (is_op("(")) {
      parse_args(t->args);
    } else if (starts_arg && !is_name("else") && !is_name("or") && !is_name("and")) {
      if (is_name("is")) fail(c.pos, "tests cannot be chained with 'is'");
      t->args.positional.push_back(parse_postfix(parse_primary()));
    }
    return t;
  }

  LexedTemplate lexed_;
  size_t i_ = 0;
  int max_nesting_;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

std::unique_ptr<Program> parse_template(const std::string& source, int max_nesting) {
  return Parser(lex(source), max_nesting).run();
}

}  // namespace strata::jinja
