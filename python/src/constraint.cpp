// The structured-output grammars as text: what generate(json_schema=...) and json_object=True compile, to
// read or to hand to another runtime (bench/grammar gives them to llama.cpp).
#include "common.h"
#include "hfstatic/constraint.h"

namespace hfs::py_bind {

void bind_constraint(py::module_& m) {
  m.def(
      "json_schema_gbnf",
      [](const py::object& schema) {
        const std::string text = py::isinstance<py::str>(schema)
                                     ? schema.cast<std::string>()
                                     : py::module_::import("json").attr("dumps")(schema).cast<std::string>();
        return unwrap(Grammar::json_schema_gbnf(text));
      },
      py::arg("schema"), "A JSON Schema (dict or JSON text) as the GBNF grammar generate(json_schema=...) uses.");
  m.def("json_object_gbnf", [] { return std::string(Grammar::json_object_gbnf()); },
        "The GBNF grammar generate(json_object=True) uses (any JSON object).");
}

}  // namespace hfs::py_bind
