// python/src/common.h — pieces shared by the binding files of the `hfstatic` Python module.
//
// Errors: C++ code calls `raise(err)` (or `check(status)` / `unwrap(result)`), which throws a PyError;
// the translator registered in errors.cpp turns it into `hfstatic.Error` with `.code` = the error code's
// name and str(e) = Error::to_string(). Throwing is fine here: this is binding code, not the public C++ API.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // in every file: type casters must be the same in all translation units

#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hfstatic/constraint.h"
#include "hfstatic/error.h"
#include "hfstatic/llm_runner.h"
#include "hfstatic/program.h"
#include "hfstatic/tokenizer.h"
#include "hfstatic/value.h"

namespace hfs::py_bind {

namespace py = pybind11;

struct PyError : std::exception {
  explicit PyError(Error e) : error(std::move(e)), text(error.to_string()) {}
  const char* what() const noexcept override { return text.c_str(); }
  Error error;
  std::string text;
};

[[noreturn]] inline void raise(const Error& e) { throw PyError(e); }
[[noreturn]] inline void raise(ErrorCode code, std::string message) { throw PyError(Error(code, std::move(message))); }
inline void check(const Status& s) {
  if (!s.ok()) raise(s.error());
}
template <typename T>
T unwrap(Result<T>&& r) {
  if (!r.ok()) raise(r.error());
  return std::move(r).value();
}

// str, bytes or os.PathLike → a path string (os.fspath semantics).
std::string fspath(py::handle path);

// A `draft=` keyword (None, "none", "ngram" or the path of a draft program, which must exist) and
// `draft_max` as a DraftConfig; errors are kInvalidArgument prefixed by `who` ("generate", "engine").
DraftConfig draft_config(const std::optional<std::string>& draft, int32_t draft_max, const std::string& who);
// The `grammar=` (GBNF text), `json_schema=` (a dict or JSON text), `regex=` or `json_object=True` keyword as a
// compiled constraint (at most one; none → nullptr); errors are kInvalidArgument prefixed by `who`.
std::shared_ptr<const Grammar> constraint_of(const py::object& grammar, const py::object& json_schema,
                                             const py::object& regex, bool json_object, const std::string& who);

// A `logit_bias=` keyword (None, or a dict {token id: bias} as OpenAI's logit_bias) as SamplingConfig's
// logit_bias; errors are kInvalidArgument prefixed by `who`.
std::vector<std::pair<int32_t, float>> logit_bias_of(const py::object& bias, const std::string& who);

// Metadata values as plain Python objects (None, bool, int, float, str, list, dict).
py::object to_python(const Value& v);

// The Python-visible wrappers. Programs and tokenizers are immutable and shared with the runners.
struct PyProgram {
  std::shared_ptr<const Program> program;
};
struct PyTokenizer {
  std::shared_ptr<const Tokenizer> tokenizer;
};

// Module sections, one per file.
void bind_errors(py::module_& m);
void bind_program(py::module_& m);
void bind_tokenizer(py::module_& m);
void bind_runner(py::module_& m);
void bind_export(py::module_& m);
void bind_engine(py::module_& m);
void bind_constraint(py::module_& m);
void bind_hub(py::module_& m);

}  // namespace hfs::py_bind
