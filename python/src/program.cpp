// hfstatic.Program: a loaded, verified program file — metadata, methods, constants (read-only facts).
#include <string>

#include "common.h"
#include "hfstatic/ext/metadata_keys.h"

namespace hfs::py_bind {

py::object to_python(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kNull: return py::none();
    case Value::Kind::kBool: return py::bool_(v.as_bool());
    case Value::Kind::kInt: return py::int_(v.as_int());
    case Value::Kind::kFloat: return py::float_(v.as_float());
    case Value::Kind::kString: return py::str(v.as_string());
    case Value::Kind::kArray: {
      py::list out;
      for (const Value& e : v.as_array()) out.append(to_python(e));
      return out;
    }
    case Value::Kind::kObject: {
      py::dict out;
      for (const auto& [k, e] : v.as_object()) out[py::str(k)] = to_python(e);
      return out;
    }
  }
  return py::none();
}

void bind_program(py::module_& m) {
  py::class_<PyProgram, std::shared_ptr<PyProgram>>(m, "Program", R"(A loaded, verified program file (.hfs).

Program(path) maps the file and verifies it; failures raise hfstatic.Error (e.g. code "io", "bad_magic").
A Program is immutable and may be shared: Runner(program) and Tokenizer.from_program(program) reuse it.)")
      .def(py::init([](py::object path) {
             std::string p = fspath(path);
             Result<std::shared_ptr<const Program>> r = [&] {
               py::gil_scoped_release nogil;
               return Program::load(p);
             }();
             return std::make_shared<PyProgram>(PyProgram{unwrap(std::move(r))});
           }),
           py::arg("path"))
      .def_property_readonly("path", [](const PyProgram& p) { return p.program->path(); })
      .def_property_readonly("format_version", [](const PyProgram& p) { return p.program->format_version(); })
      .def_property_readonly("file_size", [](const PyProgram& p) { return p.program->file_size(); })
      .def_property_readonly(
          "metadata",
          [](const PyProgram& p) {
            py::dict out;
            for (const auto& [k, v] : p.program->metadata()) out[py::str(k)] = to_python(v);
            return out;
          },
          "The metadata as a new dict (e.g. metadata['io.contract'] == 'hf_static').")
      .def_property_readonly(
          "methods",
          [](const PyProgram& p) {
            py::list out;
            for (const MethodDef& md : p.program->methods()) out.append(md.name);
            return out;
          },
          "Method names, e.g. ['decode', 'prefill'].")
      .def_property_readonly(
          "constants",
          [](const PyProgram& p) {
            py::list out;
            for (const ConstantInfo& c : p.program->constants()) out.append(c.name);
            return out;
          },
          "Constant tensor names.")
      .def("__repr__", [](const PyProgram& p) {
        const Value* c = p.program->meta(keys::kContract);
        return "<hfstatic.Program '" + p.program->path() + "' contract=" +
               (c && c->is_string() ? c->as_string() : std::string("?")) + ">";
      });
}

}  // namespace hfs::py_bind
