#include "constraint_options.h"

#include "common.h"

#include "core/regular_file.h"
#include "option_checks.h"

namespace hfs::cli {

void add_constraint_options(CLI::App& sub, ConstraintArgs& a) {
  excludes_each_other(
      {sub.add_option("--grammar", a.grammar_file,
                      "Constrain the output to a GBNF grammar (llama.cpp syntax, start rule `root`) read from this file "
                      "(at most 64 MiB)"),
       sub.add_option("--json-schema", a.json_schema_file,
                      "Constrain the output to a JSON document valid against the JSON Schema in this file (the "
                      "supported keywords are in docs/structured-output.md; others are an error naming them; at most 64 MiB)"),
       sub.add_option("--regex", a.regex,
                      "Constrain the output to match this regular expression as a whole (classes, \\d \\w \\s, "
                      "groups, |, * + ? {m,n}; no lookaround or backreferences). Every constraint is compiled within "
                      "limits: groups and subschemas nested at most 64 deep, 1000000 grammar elements once "
                      "repetitions are expanded, 2 s; past one, an error names it"),
       sub.add_flag("--json-object", a.json_object,
                    "Constrain the output to one JSON object (run's --json is the output format, not this)")});
}

Result<std::shared_ptr<const Grammar>> load_constraint(const ConstraintArgs& a) {
  if (!a.grammar_file.empty()) {
    HFS_ASSIGN_OR_RETURN_CTX(std::string text, io::read_regular_file(a.grammar_file, kMaxTextFileBytes), "--grammar");
    HFS_ASSIGN_OR_RETURN_CTX(auto g, Grammar::from_gbnf(text), "--grammar " + a.grammar_file);
    return g;
  }
  if (!a.json_schema_file.empty()) {
    HFS_ASSIGN_OR_RETURN_CTX(std::string text, io::read_regular_file(a.json_schema_file, kMaxTextFileBytes), "--json-schema");
    HFS_ASSIGN_OR_RETURN_CTX(auto g, Grammar::from_json_schema(text), "--json-schema " + a.json_schema_file);
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
