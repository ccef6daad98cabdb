#include "constraint_options.h"

#include <cstdio>
#include <filesystem>

#include "common.h"

#include "core/regular_file.h"
#include "option_checks.h"

namespace hfs::cli {
namespace {

// --grammar and --json-schema take the text itself (as llama-cli and the Python binding do). Before, they took
// a path; a value that cannot be the text (no "::=" in a grammar; not starting with '{', "true" or "false" for
// a schema) and names an existing file is still read as one, with a note: no value is both.
bool looks_like_text(const std::string& value, bool grammar) {
  if (grammar) return value.find("::=") != std::string::npos;
  const size_t i = value.find_first_not_of(" \t\r\n");
  return i != std::string::npos && (value[i] == '{' || value.compare(i, 4, "true") == 0 || value.compare(i, 5, "false") == 0);
}

Result<std::string> option_text(const std::string& value, bool grammar) {
  const char* flag = grammar ? "--grammar" : "--json-schema";
  if (looks_like_text(value, grammar)) return value;
  std::error_code ec;
  if (std::filesystem::exists(value, ec)) {
    std::fprintf(stderr, "hfstatic: note: %s takes the %s itself now; reading the file '%s' (use %s-file)\n", flag,
                 grammar ? "grammar" : "schema", value.c_str(), flag);
    HFS_ASSIGN_OR_RETURN_CTX(std::string text, io::read_regular_file(value, kMaxTextFileBytes), flag);
    return text;
  }
  return make_error(ErrorCode::kInvalidArgument,
                    std::string(flag) + ": expected " +
                        (grammar ? "GBNF text (rules `name ::= ...`, start rule root)" : "a JSON Schema (an object, true or false)") +
                        ", got '" + value + "' (for a file, use " + flag + "-file)");
}

}  // namespace

void add_constraint_options(CLI::App& sub, ConstraintArgs& a) {
  excludes_each_other(
      {sub.add_option("--grammar", a.grammar,
                      "Constrain the output to this GBNF grammar (llama.cpp syntax, start rule `root`), e.g. "
                      "'root ::= \"yes\" | \"no\"'"),
       sub.add_option("--grammar-file", a.grammar_file,
                      "Like --grammar, the grammar read from this file (at most 64 MiB)"),
       sub.add_option("-j,--json-schema", a.json_schema,
                      "Constrain the output to a JSON document valid against this JSON Schema, e.g. "
                      "'{\"type\": \"object\", \"properties\": {\"n\": {\"type\": \"integer\", \"minimum\": 1}}}' "
                      "(the supported keywords are in docs/structured-output.md; others are an error naming them)"),
       sub.add_option("--json-schema-file", a.json_schema_file,
                      "Like --json-schema, the schema read from this file (at most 64 MiB)"),
       sub.add_option("--regex", a.regex,
                      "Constrain the output to match this regular expression as a whole (classes, \\d \\w \\s, "
                      "groups, |, * + ? {m,n}; no lookaround or backreferences). Every constraint is compiled within "
                      "limits: groups and subschemas nested at most 64 deep, 1000000 grammar elements once "
                      "repetitions are expanded, 2 s; past one, an error names it"),
       sub.add_flag("--json-object", a.json_object,
                    "Constrain the output to one JSON object (run's --json is the output format, not this)")});
}

Result<std::shared_ptr<const Grammar>> load_constraint(const ConstraintArgs& a) {
  if (!a.grammar.empty()) {
    HFS_ASSIGN_OR_RETURN(std::string text, option_text(a.grammar, true));
    HFS_ASSIGN_OR_RETURN_CTX(auto g, Grammar::from_gbnf(text), "--grammar");
    return g;
  }
  if (!a.grammar_file.empty()) {
    HFS_ASSIGN_OR_RETURN_CTX(std::string text, io::read_regular_file(a.grammar_file, kMaxTextFileBytes), "--grammar-file");
    HFS_ASSIGN_OR_RETURN_CTX(auto g, Grammar::from_gbnf(text), "--grammar-file " + a.grammar_file);
    return g;
  }
  if (!a.json_schema.empty()) {
    HFS_ASSIGN_OR_RETURN(std::string text, option_text(a.json_schema, false));
    HFS_ASSIGN_OR_RETURN_CTX(auto g, Grammar::from_json_schema(text), "--json-schema");
    return g;
  }
  if (!a.json_schema_file.empty()) {
    HFS_ASSIGN_OR_RETURN_CTX(std::string text, io::read_regular_file(a.json_schema_file, kMaxTextFileBytes),
                             "--json-schema-file");
    HFS_ASSIGN_OR_RETURN_CTX(auto g, Grammar::from_json_schema(text), "--json-schema-file " + a.json_schema_file);
    return g;
  }
  if (!a.regex.empty()) {
    HFS_ASSIGN_OR_RETURN_CTX(auto g, Grammar::from_regex(a.regex), "--regex");
    return g;
  }
  if (a.json_object) return Grammar::json_object();
  return std::shared_ptr<const Grammar>();
}

}  // namespace hfs::cli
