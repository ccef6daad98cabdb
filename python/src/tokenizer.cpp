// hfstatic.Tokenizer: HF tokenizer.json encode/decode (hfs::Tokenizer), thread-safe and immutable.
#include <optional>
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "common.h"

namespace hfs::py_bind {

void bind_tokenizer(py::module_& m) {
  py::class_<PyTokenizer, std::shared_ptr<PyTokenizer>>(m, "Tokenizer", R"(A HuggingFace tokenizer.json tokenizer.

Tokenizer.from_dir(model_dir) reads tokenizer.json (+ tokenizer_config.json); Tokenizer.from_program(program)
uses the copies an exported program embeds. Immutable; encode/decode release the GIL.)")
      .def_static(
          "from_dir",
          [](py::object dir) {
            std::string d = fspath(dir);
            Result<std::shared_ptr<const Tokenizer>> r = [&] {
              py::gil_scoped_release nogil;
              return Tokenizer::from_dir(d);
            }();
            return std::make_shared<PyTokenizer>(PyTokenizer{unwrap(std::move(r))});
          },
          py::arg("path"))
      .def_static(
          "from_program",
          [](py::object program) {
            std::shared_ptr<const Program> prog;
            if (py::isinstance<PyProgram>(program)) {
              prog = program.cast<PyProgram&>().program;
            } else {
              std::string p = fspath(program);
              Result<std::shared_ptr<const Program>> loaded = [&] {
                py::gil_scoped_release nogil;
                return Program::load(p);
              }();
              prog = unwrap(std::move(loaded));
            }
            Result<std::shared_ptr<const Tokenizer>> r = [&] {
              py::gil_scoped_release nogil;
              return Tokenizer::from_program(*prog);
            }();
            return std::make_shared<PyTokenizer>(PyTokenizer{unwrap(std::move(r))});
          },
          py::arg("program"))
      .def(
          "encode",
          [](const PyTokenizer& t, const std::string& text, bool add_special) {
            Result<std::vector<int32_t>> r = [&] {
              py::gil_scoped_release nogil;
              return t.tokenizer->encode(text, add_special);
            }();
            return unwrap(std::move(r));
          },
          py::arg("text"), py::arg("add_special") = true)
      .def(
          "decode",
          [](const PyTokenizer& t, const std::vector<int32_t>& ids, bool skip_special) {
            Result<std::string> r = [&] {
              py::gil_scoped_release nogil;
              return t.tokenizer->decode(ids, skip_special);
            }();
            return unwrap(std::move(r));
          },
          py::arg("ids"), py::arg("skip_special") = false)
      .def_property_readonly("bos_id", [](const PyTokenizer& t) { return t.tokenizer->bos_id(); })
      .def_property_readonly("eos_ids", [](const PyTokenizer& t) { return t.tokenizer->eos_ids(); })
      .def_property_readonly("vocab_size", [](const PyTokenizer& t) { return t.tokenizer->vocab_size(); })
      .def("token_to_id", [](const PyTokenizer& t, const std::string& s) { return t.tokenizer->token_to_id(s); },
           py::arg("token"))
      .def("id_to_token", [](const PyTokenizer& t, int32_t id) { return t.tokenizer->id_to_token(id); }, py::arg("id"))
      .def("is_special", [](const PyTokenizer& t, int32_t id) { return t.tokenizer->is_special(id); }, py::arg("id"))
      .def("__repr__", [](const PyTokenizer& t) {
        return "<hfstatic.Tokenizer vocab_size=" + std::to_string(t.tokenizer->vocab_size()) + ">";
      });
}

}  // namespace hfs::py_bind
