// Structured output in Python: the generation keywords' constraint (grammar=, json_schema=, regex=,
// json_object=), and the grammars as text, to read or to hand to another runtime (bench/grammar gives them to
// llama.cpp).
#include "common.h"
#include "hfstatic/constraint.h"

namespace hfs::py_bind {
namespace {

// A JSON Schema given as a str (its JSON text) or as a dict (or anything JSON-serializable, written out by
// Python's json module).
std::string json_text(const py::object& schema) {
  return py::isinstance<py::str>(schema) ? schema.cast<std::string>()
                                         : py::module_::import("json").attr("dumps")(schema).cast<std::string>();
}

}  // namespace

std::shared_ptr<const Grammar> constraint_of(const py::object& grammar, const py::object& json_schema,
                                             const py::object& regex, bool json_object, const std::string& who) {
  const int given = !grammar.is_none() + !json_schema.is_none() + !regex.is_none() + (json_object ? 1 : 0);
  if (given > 1)
    raise(ErrorCode::kInvalidArgument, who + ": grammar, json_schema, regex and json_object exclude each other: give one");
  auto take = [&](Result<std::shared_ptr<const Grammar>> g, const char* what) {
    if (!g) raise(g.error().with_context(who + ": " + what));
    return *g;
  };
  if (!grammar.is_none()) return take(Grammar::from_gbnf(py::str(grammar).cast<std::string>()), "grammar");
  if (!regex.is_none()) return take(Grammar::from_regex(py::str(regex).cast<std::string>()), "regex");
  if (!json_schema.is_none()) return take(Grammar::from_json_schema(json_text(json_schema)), "json_schema");
  if (json_object) return Grammar::json_object();
  return nullptr;
}

void bind_constraint(py::module_& m) {
  m.def(
      "json_schema_gbnf",
      [](const py::object& schema) { return unwrap(Grammar::json_schema_gbnf(json_text(schema))); },
      py::arg("schema"), "A JSON Schema (dict or JSON text) as the GBNF grammar generate(json_schema=...) uses.");
  m.def("json_object_gbnf", [] { return std::string(Grammar::json_object_gbnf()); },
        "The GBNF grammar generate(json_object=True) uses (any JSON object).");
}

}  // namespace hfs::py_bind
