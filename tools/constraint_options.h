// tools/constraint_options.h — the structured-output options `run` and `chat` share, llama-cli's names:
// --grammar TEXT | --grammar-file F, -j/--json-schema TEXT | --json-schema-file F, --regex R, --json-object
// (at most one), and the constraint they name.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "hfstatic/constraint.h"
#include "hfstatic/error.h"

namespace hfs::cli {

struct ConstraintArgs {
  std::string grammar;  // GBNF text (or, as before, a file's path: see grammar_text)
  std::string grammar_file;
  std::string json_schema;  // JSON Schema text (or, as before, a file's path)
  std::string json_schema_file;
  std::string regex;
  bool json_object = false;
};

void add_constraint_options(CLI::App& sub, ConstraintArgs& args);
// The compiled constraint, or nullptr when no option was given; errors name the option and file.
[[nodiscard]] Result<std::shared_ptr<const Grammar>> load_constraint(const ConstraintArgs& args);

}  // namespace hfs::cli
