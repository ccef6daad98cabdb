#include "chat/parser.h"

#include <algorithm>
#include <array>
#include <initializer_list>
#include <span>
#include <string_view>

#include "chat/builtins.h"
#include "chat/lexer.h"

namespace hfs::chat {
namespace {

constexpr int kMaxNesting = 200;

class Parser {
 public:
  explicit Parser(std::vector<Token> toks) : t_(std::move(toks)) {}

  Result<std::shared_ptr<const Program>> run() {
    auto prog = std::make_shared<Program>();
    std::string stop;
    HFS_ASSIGN_OR_RETURN(auto body, parse_body({}, "", 0, 0));
    prog->body = std::move(body);
    return std::shared_ptr<const Program>(std::move(prog));
  }

 private:
  // ---- token helpers ----
  const Token& cur() const { return t_[std::min(pos_, t_.size() - 1)]; }
  const Token& peek(size_t ahead = 1) const { return t_[std::min(pos_ + ahead, t_.size() - 1)]; }
  bool is_op(const Token& t, std::string_view op) const { return t.kind == TokKind::kOp && t.text == op; }
  bool is_name(const Token& t, std::string_view n) const { return t.kind == TokKind::kName && t.text == n; }
  bool at_op(std::string_view op) const { return is_op(cur(), op); }
  bool at_name(std::string_view n) const { return is_name(cur(), n); }

  static std::string describe(const Token& t) {
    switch (t.kind) {
      case TokKind::kText: return "template text";
      case TokKind::kEnd: return "end of template";
      case TokKind::kString: return "string '" + t.text.substr(0, 40) + "'";
      default: return "'" + t.text + "'";
    }
  }
  Error error_at(const Token& t, const std::string& msg) const {
    return make_error(ErrorCode::kInvalidArgument, "chat template: " + where(t.line, t.col) + ": " + msg);
  }
  Error expected(const std::string& what) const { return error_at(cur(), "expected " + what + ", got " + describe(cur())); }
  Status expect_op(std::string_view op) {
    if (!at_op(op)) return expected("'" + std::string(op) + "'");
    ++pos_;
    return Ok{};
  }
  Status expect_close_stmt(std::string_view after) {
    if (cur().kind != TokKind::kCloseStmt) return expected("'%}' after '" + std::string(after) + "'");
    ++pos_;
    return Ok{};
  }
  Result<std::string> expect_name(const std::string& what) {
    if (cur().kind != TokKind::kName) return expected(what);
    return t_[pos_++].text;
  }

  struct DepthGuard {
    Parser* p;
    explicit DepthGuard(Parser* p_) : p(p_) { ++p->depth_; }
    ~DepthGuard() { --p->depth_; }
  };
  Status check_depth() const {
    if (depth_ > kMaxNesting)
      return error_at(cur(), "nesting deeper than " + std::to_string(kMaxNesting) + " levels");
    return Ok{};
  }

  template <typename T>
  static std::unique_ptr<T> node(const Token& at) {
    auto n = std::make_unique<T>();
    n->line = at.line;
    n->col = at.col;
    return n;
  }
  static ExprPtr expr_node(ExprKind k, const Token& at) {
    auto e = node<Expr>(at);
    e->kind = k;
    return e;
  }

  // ---- statements ----

  // Parses until `{% <one of stops>`; leaves pos_ on the stop keyword. `opener` names the block for errors.
  Result<Body> parse_body(std::initializer_list<std::string_view> stops, std::string_view opener, int open_line,
                          int open_col) {
    DepthGuard g(this);
    HFS_TRY(check_depth());
    Body body;
    for (;;) {
      const Token& t = cur();
      if (t.kind == TokKind::kEnd) {
        if (stops.size() == 0) return body;
        return error_at(t, "'" + std::string(opener) + "' opened at " + where(open_line, open_col) +
                               " is never closed (expected '{% " + std::string(*(stops.end() - 1)) + " %}')");
      }
      if (t.kind == TokKind::kText) {
        auto s = node<Stmt>(t);
        s->kind = StmtKind::kText;
        s->text = t.text;
        body.push_back(std::move(s));
        ++pos_;
        continue;
      }
      if (t.kind == TokKind::kOpenExpr) {
        ++pos_;
        auto s = node<Stmt>(t);
        s->kind = StmtKind::kOutput;
        HFS_ASSIGN_OR_RETURN(auto e, parse_expr(true));
        s->expr = std::move(e);
        if (cur().kind != TokKind::kCloseExpr) return expected("'}}'");
        ++pos_;
        body.push_back(std::move(s));
        continue;
      }
      if (t.kind == TokKind::kOpenStmt) {
        const Token& kw = peek();
        if (kw.kind == TokKind::kName && std::find(stops.begin(), stops.end(), kw.text) != stops.end()) {
          ++pos_;
          return body;
        }
        ++pos_;
        HFS_ASSIGN_OR_RETURN(auto s, parse_statement());
        body.push_back(std::move(s));
        continue;
      }
      return error_at(t, "unexpected " + describe(t) + " outside a tag");
    }
  }

  Result<StmtPtr> parse_statement() {
    const Token kw = cur();
    if (kw.kind != TokKind::kName) return expected("a statement keyword after '{%'");
    const std::string& k = kw.text;
    if (k == "if") return parse_if();
    if (k == "for") return parse_for();
    if (k == "set") return parse_set();
    if (k == "macro") return parse_macro();
    if (k == "call") return parse_call_block();
    if (k == "break" || k == "continue") {
      ++pos_;
      auto s = node<Stmt>(kw);
      s->kind = k == "break" ? StmtKind::kBreak : StmtKind::kContinue;
      HFS_TRY(expect_close_stmt(k));
      return StmtPtr(std::move(s));
    }
    static constexpr std::string_view kUnsupported[] = {
        "include", "import", "from", "extends", "block", "raw", "filter", "with", "autoescape", "generation", "do",
        "trans", "pluralize"};
    for (std::string_view u : kUnsupported) {
      if (k == u)
        return make_error(ErrorCode::kUnsupported, "chat template: " + where(kw.line, kw.col) + ": statement '{% " + k +
                                                       " %}' is not supported by this Jinja subset");
    }
    return error_at(kw, "unknown statement '" + k + "' (or a closing tag without its opening one)");
  }

  Result<StmtPtr> parse_if() {
    const Token kw = cur();
    ++pos_;
    auto s = node<Stmt>(kw);
    s->kind = StmtKind::kIf;
    HFS_ASSIGN_OR_RETURN(auto cond, parse_expr(true));
    s->conds.push_back(std::move(cond));
    HFS_TRY(expect_close_stmt("if"));
    for (;;) {
      HFS_ASSIGN_OR_RETURN(auto body, parse_body({"elif", "else", "endif"}, "if", kw.line, kw.col));
      s->bodies.push_back(std::move(body));
      std::string which = cur().text;
      ++pos_;
      if (which == "elif") {
        HFS_ASSIGN_OR_RETURN(auto c, parse_expr(true));
        s->conds.push_back(std::move(c));
        HFS_TRY(expect_close_stmt("elif"));
        continue;
      }
      if (which == "else") {
        HFS_TRY(expect_close_stmt("else"));
        HFS_ASSIGN_OR_RETURN(auto eb, parse_body({"endif"}, "if", kw.line, kw.col));
        s->bodies.push_back(std::move(eb));
        ++pos_;
      }
      HFS_TRY(expect_close_stmt("endif"));
      return StmtPtr(std::move(s));
    }
  }

  Status parse_targets(std::vector<std::string>& out, std::string_view stmt) {
    bool paren = at_op("(");
    if (paren) ++pos_;
    for (;;) {
      HFS_ASSIGN_OR_RETURN(auto n, expect_name("a variable name in '" + std::string(stmt) + "'"));
      out.push_back(std::move(n));
      if (!at_op(",")) break;
      ++pos_;
    }
    if (paren) HFS_TRY(expect_op(")"));
    return Ok{};
  }

  Result<StmtPtr> parse_for() {
    const Token kw = cur();
    ++pos_;
    auto s = node<Stmt>(kw);
    s->kind = StmtKind::kFor;
    HFS_TRY(parse_targets(s->targets, "for"));
    if (!at_name("in")) return expected("'in' in 'for'");
    ++pos_;
    HFS_ASSIGN_OR_RETURN(auto iter, parse_expr(false));
    s->expr = std::move(iter);
    if (at_name("if")) {
      ++pos_;
      HFS_ASSIGN_OR_RETURN(auto c, parse_expr(false));
      s->cond = std::move(c);
    }
    if (at_name("recursive"))
      return make_error(ErrorCode::kUnsupported,
                        "chat template: " + where(cur().line, cur().col) + ": recursive for-loops are not supported");
    HFS_TRY(expect_close_stmt("for"));
    HFS_ASSIGN_OR_RETURN(auto body, parse_body({"else", "endfor"}, "for", kw.line, kw.col));
    s->bodies.push_back(std::move(body));
    if (cur().text == "else") {
      ++pos_;
      HFS_TRY(expect_close_stmt("else"));
      HFS_ASSIGN_OR_RETURN(auto eb, parse_body({"endfor"}, "for", kw.line, kw.col));
      s->bodies.push_back(std::move(eb));
    }
    ++pos_;
    HFS_TRY(expect_close_stmt("endfor"));
    return StmtPtr(std::move(s));
  }

  Result<StmtPtr> parse_set() {
    const Token kw = cur();
    ++pos_;
    auto s = node<Stmt>(kw);
    s->kind = StmtKind::kSet;
    HFS_ASSIGN_OR_RETURN(auto first, expect_name("a variable name after 'set'"));
    s->targets.push_back(std::move(first));
    if (at_op(".")) {
      ++pos_;
      HFS_ASSIGN_OR_RETURN(auto attr, expect_name("an attribute name in 'set'"));
      s->text = std::move(attr);
    } else {
      while (at_op(",")) {
        ++pos_;
        HFS_ASSIGN_OR_RETURN(auto n, expect_name("a variable name in 'set'"));
        s->targets.push_back(std::move(n));
      }
    }
    if (at_op("=")) {
      ++pos_;
      HFS_ASSIGN_OR_RETURN(auto e, parse_expr(true));
      if (at_op(",")) {  // {% set a = 1, 2 %} assigns a tuple
        auto tup = expr_node(ExprKind::kTuple, kw);
        tup->items.push_back(std::move(e));
        while (at_op(",")) {
          ++pos_;
          HFS_ASSIGN_OR_RETURN(auto more, parse_expr(true));
          tup->items.push_back(std::move(more));
        }
        s->expr = std::move(tup);
      } else {
        s->expr = std::move(e);
      }
      HFS_TRY(expect_close_stmt("set"));
      return StmtPtr(std::move(s));
    }
    if (cur().kind != TokKind::kCloseStmt) return expected("'=' or '%}' in 'set'");
    if (s->targets.size() != 1 || !s->text.empty()) return error_at(kw, "a block 'set' takes exactly one plain name");
    ++pos_;
    HFS_ASSIGN_OR_RETURN(auto body, parse_body({"endset"}, "set", kw.line, kw.col));
    s->bodies.push_back(std::move(body));
    ++pos_;
    HFS_TRY(expect_close_stmt("endset"));
    return StmtPtr(std::move(s));
  }

  Result<StmtPtr> parse_macro() {
    const Token kw = cur();
    ++pos_;
    auto s = node<Stmt>(kw);
    s->kind = StmtKind::kMacro;
    HFS_ASSIGN_OR_RETURN(auto name, expect_name("a macro name"));
    s->text = std::move(name);
    HFS_TRY(expect_op("("));
    while (!at_op(")")) {
      MacroParam p;
      HFS_ASSIGN_OR_RETURN(auto pn, expect_name("a parameter name in macro '" + s->text + "'"));
      p.name = std::move(pn);
      if (at_op("=")) {
        ++pos_;
        HFS_ASSIGN_OR_RETURN(auto d, parse_expr(true));
        p.default_value = std::move(d);
      }
      s->params.push_back(std::move(p));
      if (!at_op(",")) break;
      ++pos_;
    }
    HFS_TRY(expect_op(")"));
    HFS_TRY(expect_close_stmt("macro"));
    HFS_ASSIGN_OR_RETURN(auto body, parse_body({"endmacro"}, "macro", kw.line, kw.col));
    s->bodies.push_back(std::move(body));
    ++pos_;
    if (cur().kind == TokKind::kName) ++pos_;  // {% endmacro name %}
    HFS_TRY(expect_close_stmt("endmacro"));
    return StmtPtr(std::move(s));
  }

  Result<StmtPtr> parse_call_block() {
    const Token kw = cur();
    ++pos_;
    if (at_op("("))
      return make_error(ErrorCode::kUnsupported,
                        "chat template: " + where(kw.line, kw.col) + ": call blocks with caller parameters are not supported");
    auto s = node<Stmt>(kw);
    s->kind = StmtKind::kCallBlock;
    HFS_ASSIGN_OR_RETURN(auto e, parse_expr(true));
    if (e->kind != ExprKind::kCall) return error_at(kw, "'{% call %}' needs a macro call, e.g. {% call m(x) %}");
    s->expr = std::move(e);
    HFS_TRY(expect_close_stmt("call"));
    HFS_ASSIGN_OR_RETURN(auto body, parse_body({"endcall"}, "call", kw.line, kw.col));
    s->bodies.push_back(std::move(body));
    ++pos_;
    HFS_TRY(expect_close_stmt("endcall"));
    return StmtPtr(std::move(s));
  }

  // ---- expressions ----

  Result<ExprPtr> parse_expr(bool allow_ternary) {
    DepthGuard g(this);
    HFS_TRY(check_depth());
    const Token start = cur();
    auto e = parse_or();
    if (!e) return e;
    if (allow_ternary && at_name("if")) {
      ++pos_;
      auto cond = parse_or();
      if (!cond) return cond;
      auto t = expr_node(ExprKind::kTernary, start);
      t->items.push_back(std::move(e.value()));
      t->items.push_back(std::move(cond.value()));
      if (at_name("else")) {
        ++pos_;
        auto other = parse_expr(true);
        if (!other) return other;
        t->items.push_back(std::move(other.value()));
      } else {
        t->items.push_back(nullptr);
      }
      return ExprPtr(std::move(t));
    }
    return e;
  }

  ExprPtr binary(const Token& at, std::string op, ExprPtr l, ExprPtr r) {
    auto b = expr_node(ExprKind::kBinary, at);
    b->name = std::move(op);
    b->items.push_back(std::move(l));
    b->items.push_back(std::move(r));
    return b;
  }

  // Left-associative binary operators by precedence, loosest first (Jinja's grammar). 'not' and the
  // comparisons sit between the two tables: they are not plain left-associative levels.
  struct BinaryLevel {
    bool keyword;                          // 'or' / 'and' are name tokens, the others operator tokens
    std::array<std::string_view, 4> ops;   // unused slots are empty
  };
  static constexpr BinaryLevel kLogicalLevels[] = {{true, {"or"}}, {true, {"and"}}};
  static constexpr BinaryLevel kArithmeticLevels[] = {
      {false, {"+", "-"}}, {false, {"~"}}, {false, {"*", "/", "//", "%"}}, {false, {"**"}}};

  bool at_level_op(const BinaryLevel& level) const {
    for (std::string_view op : level.ops)
      if (!op.empty() && (level.keyword ? at_name(op) : at_op(op))) return true;
    return false;
  }

  // `levels.front()`'s operators over operands of the tighter levels; past the last level, `tighter()`.
  template <typename Tighter>
  Result<ExprPtr> parse_levels(std::span<const BinaryLevel> levels, const Tighter& tighter) {
    if (levels.empty()) return tighter();
    auto l = parse_levels(levels.subspan(1), tighter);
    if (!l) return l;
    ExprPtr left = std::move(l.value());
    while (at_level_op(levels.front())) {
      const Token op = t_[pos_++];
      auto r = parse_levels(levels.subspan(1), tighter);
      if (!r) return r;
      left = binary(op, op.text, std::move(left), std::move(r.value()));
    }
    return left;
  }

  Result<ExprPtr> parse_or() {
    return parse_levels(kLogicalLevels, [this] { return parse_not(); });
  }

  Result<ExprPtr> parse_not() {
    DepthGuard g(this);
    HFS_TRY(check_depth());
    if (at_name("not")) {
      const Token op = t_[pos_++];
      auto inner = parse_not();
      if (!inner) return inner;
      auto u = expr_node(ExprKind::kUnary, op);
      u->name = "not";
      u->items.push_back(std::move(inner.value()));
      return ExprPtr(std::move(u));
    }
    return parse_compare();
  }

  Result<ExprPtr> parse_compare() {
    auto l = parse_math1();
    if (!l) return l;
    ExprPtr left = std::move(l.value());
    bool compared = false;
    for (;;) {
      const Token op = cur();
      std::string name;
      if (op.kind == TokKind::kOp &&
          (op.text == "==" || op.text == "!=" || op.text == "<" || op.text == ">" || op.text == "<=" || op.text == ">=")) {
        name = op.text;
        ++pos_;
      } else if (is_name(op, "in")) {
        name = "in";
        ++pos_;
      } else if (is_name(op, "not") && is_name(peek(), "in")) {
        name = "not in";
        pos_ += 2;
      } else {
        return left;
      }
      if (compared)
        return make_error(ErrorCode::kUnsupported, "chat template: " + where(op.line, op.col) +
                                                       ": chained comparisons (a < b < c) are not supported; use 'and'");
      compared = true;
      auto r = parse_math1();
      if (!r) return r;
      left = binary(op, name, std::move(left), std::move(r.value()));
    }
  }

  Result<ExprPtr> parse_math1() {
    return parse_levels(kArithmeticLevels, [this] { return parse_unary(true); });
  }

  Result<ExprPtr> parse_unary(bool with_filter) {
    DepthGuard g(this);
    HFS_TRY(check_depth());
    ExprPtr e;
    if (at_op("-") || at_op("+")) {
      const Token op = t_[pos_++];
      auto inner = parse_unary(false);
      if (!inner) return inner;
      auto u = expr_node(ExprKind::kUnary, op);
      u->name = op.text;
      u->items.push_back(std::move(inner.value()));
      e = std::move(u);
    } else {
      auto p = parse_primary();
      if (!p) return p;
      auto post = parse_postfix(std::move(p.value()));
      if (!post) return post;
      e = std::move(post.value());
    }
    if (!with_filter) return e;
    return parse_filter_expr(std::move(e));
  }

  Result<ExprPtr> parse_filter_expr(ExprPtr e) {
    for (;;) {
      if (at_op("|")) {
        const Token bar = t_[pos_++];
        HFS_ASSIGN_OR_RETURN(auto name, expect_name("a filter name after '|'"));
        if (!is_known_filter(name))
          return make_error(ErrorCode::kUnsupported, "chat template: " + where(bar.line, bar.col) + ": filter '" +
                                                         name + "' is not supported by this Jinja subset");
        auto f = expr_node(ExprKind::kFilter, bar);
        f->name = std::move(name);
        f->items.push_back(std::move(e));
        if (at_op("(")) HFS_TRY(parse_call_args(*f));
        e = std::move(f);
      } else if (at_name("is")) {
        const Token is = t_[pos_++];
        auto t = expr_node(ExprKind::kTest, is);
        if (at_name("not")) {
          t->negated = true;
          ++pos_;
        }
        HFS_ASSIGN_OR_RETURN(auto name, expect_name("a test name after 'is'"));
        if (!is_known_test(name))
          return make_error(ErrorCode::kUnsupported, "chat template: " + where(is.line, is.col) + ": test '" +
                                                         name + "' is not supported by this Jinja subset");
        t->name = std::move(name);
        t->items.push_back(std::move(e));
        if (at_op("(")) {
          HFS_TRY(parse_call_args(*t));
        } else {
          const Token& n = cur();
          bool arg_start = n.kind == TokKind::kString || n.kind == TokKind::kInt || n.kind == TokKind::kFloat ||
                           is_op(n, "[") || is_op(n, "{") ||
                           (n.kind == TokKind::kName && n.text != "else" && n.text != "or" && n.text != "and" &&
                            n.text != "if" && n.text != "in" && n.text != "not" && n.text != "is");
          if (arg_start) {
            auto p = parse_primary();
            if (!p) return p;
            auto post = parse_postfix(std::move(p.value()));
            if (!post) return post;
            t->items.push_back(std::move(post.value()));
          }
        }
        e = std::move(t);
      } else if (at_op("(")) {
        auto c = expr_node(ExprKind::kCall, cur());
        c->items.push_back(std::move(e));
        HFS_TRY(parse_call_args(*c));
        e = std::move(c);
      } else {
        return e;
      }
    }
  }

  // ( a, b, k=v ) appended to e.items[1..] / e.kwargs.
  Status parse_call_args(Expr& e) {
    HFS_TRY(expect_op("("));
    while (!at_op(")")) {
      if (at_op("*") || at_op("**"))
        return make_error(ErrorCode::kUnsupported,
                          "chat template: " + where(cur().line, cur().col) + ": *args / **kwargs in calls are not supported");
      if (cur().kind == TokKind::kName && is_op(peek(), "=")) {
        std::string key = cur().text;
        pos_ += 2;
        HFS_ASSIGN_OR_RETURN(auto v, parse_expr(true));
        e.kwargs.emplace_back(std::move(key), std::move(v));
      } else {
        if (!e.kwargs.empty()) return error_at(cur(), "positional argument after a keyword argument");
        HFS_ASSIGN_OR_RETURN(auto v, parse_expr(true));
        e.items.push_back(std::move(v));
      }
      if (!at_op(",")) break;
      ++pos_;
    }
    return expect_op(")");
  }

  Result<ExprPtr> parse_postfix(ExprPtr e) {
    for (;;) {
      if (at_op(".")) {
        const Token dot = t_[pos_++];
        auto a = expr_node(ExprKind::kAttr, dot);
        if (cur().kind == TokKind::kName) {
          a->name = cur().text;
        } else if (cur().kind == TokKind::kInt) {
          // x.0 is x[0] in Jinja
          auto idx = expr_node(ExprKind::kIndex, dot);
          idx->items.push_back(std::move(e));
          auto lit = expr_node(ExprKind::kLiteral, cur());
          lit->literal = JValue::integer(cur().int_value);
          idx->items.push_back(std::move(lit));
          ++pos_;
          e = std::move(idx);
          continue;
        } else {
          return expected("an attribute name after '.'");
        }
        ++pos_;
        a->items.push_back(std::move(e));
        e = std::move(a);
      } else if (at_op("[")) {
        const Token br = t_[pos_++];
        ExprPtr start, stop, step;
        bool slice = false;
        if (!at_op(":")) {
          auto s = parse_expr(true);
          if (!s) return s;
          start = std::move(s.value());
        }
        if (at_op(":")) {
          slice = true;
          ++pos_;
          if (!at_op(":") && !at_op("]")) {
            auto s = parse_expr(true);
            if (!s) return s;
            stop = std::move(s.value());
          }
          if (at_op(":")) {
            ++pos_;
            if (!at_op("]")) {
              auto s = parse_expr(true);
              if (!s) return s;
              step = std::move(s.value());
            }
          }
        }
        HFS_TRY(expect_op("]"));
        if (!slice && !start) return error_at(br, "empty subscript '[]'");
        auto x = expr_node(slice ? ExprKind::kSlice : ExprKind::kIndex, br);
        x->items.push_back(std::move(e));
        x->items.push_back(std::move(start));
        if (slice) {
          x->items.push_back(std::move(stop));
          x->items.push_back(std::move(step));
        }
        e = std::move(x);
      } else if (at_op("(")) {
        auto c = expr_node(ExprKind::kCall, cur());
        c->items.push_back(std::move(e));
        HFS_TRY(parse_call_args(*c));
        e = std::move(c);
      } else {
        return e;
      }
    }
  }

  Result<ExprPtr> parse_primary() {
    DepthGuard g(this);
    HFS_TRY(check_depth());
    const Token t = cur();
    switch (t.kind) {
      case TokKind::kName: {
        ++pos_;
        auto lit = expr_node(ExprKind::kLiteral, t);
        if (t.text == "true" || t.text == "True") lit->literal = JValue::boolean(true);
        else if (t.text == "false" || t.text == "False") lit->literal = JValue::boolean(false);
        else if (t.text == "none" || t.text == "None") lit->literal = JValue::none();
        else {
          auto n = expr_node(ExprKind::kName, t);
          n->name = t.text;
          return ExprPtr(std::move(n));
        }
        return ExprPtr(std::move(lit));
      }
      case TokKind::kString: {
        std::string s;
        while (cur().kind == TokKind::kString) s += t_[pos_++].text;  // adjacent literals concatenate
        auto lit = expr_node(ExprKind::kLiteral, t);
        lit->literal = JValue::string(std::move(s));
        return ExprPtr(std::move(lit));
      }
      case TokKind::kInt:
      case TokKind::kFloat: {
        ++pos_;
        auto lit = expr_node(ExprKind::kLiteral, t);
        lit->literal = t.kind == TokKind::kInt ? JValue::integer(t.int_value) : JValue::floating(t.float_value);
        return ExprPtr(std::move(lit));
      }
      case TokKind::kOp: {
        if (t.text == "(") {
          ++pos_;
          auto tup = expr_node(ExprKind::kTuple, t);
          if (at_op(")")) {
            ++pos_;
            return ExprPtr(std::move(tup));
          }
          auto first = parse_expr(true);
          if (!first) return first;
          if (at_op(")")) {
            ++pos_;
            return first;
          }
          tup->items.push_back(std::move(first.value()));
          while (at_op(",")) {
            ++pos_;
            if (at_op(")")) break;
            auto more = parse_expr(true);
            if (!more) return more;
            tup->items.push_back(std::move(more.value()));
          }
          HFS_TRY(expect_op(")"));
          return ExprPtr(std::move(tup));
        }
        if (t.text == "[") {
          ++pos_;
          auto list = expr_node(ExprKind::kList, t);
          while (!at_op("]")) {
            auto item = parse_expr(true);
            if (!item) return item;
            list->items.push_back(std::move(item.value()));
            if (!at_op(",")) break;
            ++pos_;
          }
          HFS_TRY(expect_op("]"));
          return ExprPtr(std::move(list));
        }
        if (t.text == "{") {
          ++pos_;
          auto dict = expr_node(ExprKind::kDict, t);
          while (!at_op("}")) {
            auto k = parse_expr(true);
            if (!k) return k;
            HFS_TRY(expect_op(":"));
            auto v = parse_expr(true);
            if (!v) return v;
            dict->items.push_back(std::move(k.value()));
            dict->items.push_back(std::move(v.value()));
            if (!at_op(",")) break;
            ++pos_;
          }
          HFS_TRY(expect_op("}"));
          return ExprPtr(std::move(dict));
        }
        break;
      }
      default: break;
    }
    return expected("an expression");
  }

  std::vector<Token> t_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

Result<std::shared_ptr<const Program>> parse_program(std::string_view source) {
  HFS_ASSIGN_OR_RETURN(auto toks, tokenize(source));
  Parser p(std::move(toks));
  return p.run();
}

}  // namespace hfs::chat
