// Chat-template syntax tree: expressions and statements as the parser builds them.
//
// One node struct per family (Expr, Stmt) with a kind tag rather than a class per node: the tree is
// walked by one evaluator switch, and every node carries its source line/column for error messages.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja_value.h"

namespace hfs::chat {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind : uint8_t {
  kLiteral,   // literal
  kName,      // name
  kList,      // items
  kTuple,     // items
  kDict,      // items = k0, v0, k1, v1, ...
  kAttr,      // items[0] . name
  kIndex,     // items[0] [ items[1] ]
  kSlice,     // items[0] [ items[1] : items[2] : items[3] ]  (null entries = omitted)
  kCall,      // items[0] ( items[1..] , kwargs )
  kFilter,    // items[0] | name ( items[1..] , kwargs )
  kTest,      // items[0] is [not] name ( items[1..] )
  kUnary,     // name ∈ {not, -, +}; items[0]
  kBinary,    // name = operator (and, or, in, not in, ==, +, ~, ...); items[0], items[1]
  kTernary,   // items[0] if items[1] else items[2] (items[2] null → undefined)
};

struct Expr {
  ExprKind kind;
  int line = 0;
  int col = 0;
  std::string name;
  bool negated = false;  // kTest: `is not`
  JValue literal;
  std::vector<ExprPtr> items;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class StmtKind : uint8_t {
  kText,      // text
  kOutput,    // {{ expr }}
  kIf,        // conds[i] → bodies[i]; bodies.size() == conds.size() + 1 when there is an else
  kFor,       // for targets in expr [if cond] → bodies[0]; else → bodies[1] (optional)
  kSet,       // set targets[0] [. attr] = expr  |  set a, b = expr  |  {% set x %}bodies[0]{% endset %}
  kMacro,     // macro name(params) → bodies[0]
  kCallBlock, // {% call expr %} bodies[0] {% endcall %}: expr's macro sees bodies[0] as caller()
  kBreak,
  kContinue,
};

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null → required
};

struct Stmt {
  StmtKind kind;
  int line = 0;
  int col = 0;
  std::string text;                  // kText; kMacro name; kSet attribute ("" when none)
  ExprPtr expr;                      // kOutput, kFor iterable, kSet value, kCallBlock call
  ExprPtr cond;                      // kFor inline filter
  std::vector<ExprPtr> conds;        // kIf
  std::vector<Body> bodies;
  std::vector<std::string> targets;  // kFor / kSet names
  std::vector<MacroParam> params;    // kMacro
};

struct Program {
  Body body;
};

}  // namespace hfs::chat
