// Grammar (compiled from GBNF, a regex, or the built-in JSON object grammar) and GrammarMatcher.
#include "constrain/compiled_grammar.h"
#include "constrain/gbnf_parser.h"
#include "constrain/json_schema.h"
#include "constrain/match_state.h"
#include "constrain/regex_compiler.h"
#include "hfstatic/constraint.h"

namespace hfs {

namespace {

// Whitespace is bounded per position: a model that keeps emitting spaces still has to make progress.
constexpr std::string_view kJsonObject = R"(root   ::= object
value  ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( member ( "," ws member )* )? "}"
member ::= string ws ":" ws value ws
array  ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
string ::= "\"" ( [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""
number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws     ::= [ \t\n]{0,8}
)";

}  // namespace

Grammar::Grammar(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Grammar::~Grammar() = default;

Result<std::shared_ptr<const Grammar>> Grammar::from_gbnf(std::string_view text, std::string_view root) {
  return from_gbnf(text, root, ConstraintLimits{});
}

Result<std::shared_ptr<const Grammar>> Grammar::from_gbnf(std::string_view text, std::string_view root,
                                                          const ConstraintLimits& limits) {
  const cst::Budget budget(limits);
  cst::RuleSet rules;
  HFS_TRY(cst::parse_gbnf(text, rules, budget));
  HFS_ASSIGN_OR_RETURN(cst::CompiledGrammar g, cst::compile(rules, std::string(root), "grammar", budget));
  return std::shared_ptr<const Grammar>(new Grammar(std::make_unique<Impl>(Impl{std::move(g)})));
}

Result<std::shared_ptr<const Grammar>> Grammar::from_regex(std::string_view pattern, const ConstraintLimits& limits) {
  const cst::Budget budget(limits);
  cst::RuleSet rules;
  HFS_TRY(cst::compile_regex(pattern, rules, {}, budget));
  HFS_ASSIGN_OR_RETURN(cst::CompiledGrammar g, cst::compile(rules, "root", "regex", budget));
  return std::shared_ptr<const Grammar>(new Grammar(std::make_unique<Impl>(Impl{std::move(g)})));
}

Result<std::string> Grammar::json_schema_gbnf(std::string_view schema_json, const ConstraintLimits& limits) {
  return json_schema_to_gbnf(schema_json, limits);
}

Result<std::shared_ptr<const Grammar>> Grammar::from_json_schema(std::string_view schema_json, const ConstraintLimits& limits) {
  // One budget for both halves: the time limit covers converting and compiling together.
  const cst::Budget budget(limits);
  HFS_ASSIGN_OR_RETURN(std::string gbnf, json_schema_to_gbnf(schema_json, budget));
  cst::RuleSet rules;
  HFS_TRY(cst::parse_gbnf(gbnf, rules, budget));
  HFS_ASSIGN_OR_RETURN(cst::CompiledGrammar g, cst::compile(rules, "root", "json schema", budget));
  return std::shared_ptr<const Grammar>(new Grammar(std::make_unique<Impl>(Impl{std::move(g)})));
}

std::string_view Grammar::json_object_gbnf() { return kJsonObject; }

std::shared_ptr<const Grammar> Grammar::json_object() {
  static const std::shared_ptr<const Grammar> g = [] {
    auto r = from_gbnf(kJsonObject);
    return r ? *r : nullptr;  // a fixed text: tests/constrain check it compiles
  }();
  return g;
}

struct GrammarMatcher::State {
  cst::MatchState cur, next, saved;
  std::vector<uint32_t> work;
};

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar)
    : grammar_(std::move(grammar)), st_(std::make_unique<State>()) {
  reset();
}
GrammarMatcher::~GrammarMatcher() = default;
GrammarMatcher::GrammarMatcher(const GrammarMatcher& o) : grammar_(o.grammar_), st_(std::make_unique<State>(*o.st_)) {}
GrammarMatcher& GrammarMatcher::operator=(const GrammarMatcher& o) {
  if (this != &o) {
    grammar_ = o.grammar_;
    st_ = std::make_unique<State>(*o.st_);
  }
  return *this;
}

void GrammarMatcher::reset() { cst::initial_state(grammar_->impl().g, st_->cur, st_->work); }

bool GrammarMatcher::feed(std::string_view bytes) {
  State& s = *st_;
  s.saved.copy_from(s.cur);
  for (char c : bytes) {
    if (!cst::advance_byte(grammar_->impl().g, s.cur, static_cast<uint8_t>(c), s.next, s.work)) {
      s.cur.copy_from(s.saved);
      return false;
    }
    std::swap(s.cur, s.next);
  }
  return true;
}

bool GrammarMatcher::complete() const { return st_->cur.complete(); }
bool GrammarMatcher::can_continue() const { return st_->cur.stack_count() > 0; }

}  // namespace hfs
