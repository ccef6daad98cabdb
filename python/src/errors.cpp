// hfstatic.Error: the one exception type of the module, carrying the hfs::ErrorCode name in `.code`.
#include "common.h"

#include <pybind11/eval.h>

namespace hfs::py_bind {
namespace {

// Defined in Python so that it has a normal constructor (`Error(message, code)`): Python code (runner
// registries, user runners) raises it too.
constexpr const char* kErrorClass = R"(
class Error(RuntimeError):
    """An hfstatic failure.

    `code` is the stable lower-case error code name (e.g. "capacity_exceeded", "io", "unknown_contract");
    str(e) is "<code>: <message>" and names the file/tensor/key/method involved.
    """

    def __init__(self, message, code="internal"):
        super().__init__(message)
        self.code = code

    def __reduce__(self):
        return (type(self), (str(self), self.code))
)";

// Owned for the life of the process: the translator may run during interpreter shutdown.
PyObject* g_error_type = nullptr;

}  // namespace

void bind_errors(py::module_& m) {
  py::dict scope;
  scope["__builtins__"] = py::module_::import("builtins");
  scope["__name__"] = "hfstatic";
  py::exec(kErrorClass, scope);
  py::object cls = scope["Error"];
  g_error_type = cls.inc_ref().ptr();
  m.attr("Error") = cls;

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const PyError& e) {
      py::object type = py::reinterpret_borrow<py::object>(g_error_type);
      py::object inst = type(e.text, std::string(error_code_name(e.error.code())));
      PyErr_SetObject(g_error_type, inst.ptr());
    }
  });
}

std::string fspath(py::handle path) {
  // Leaked on purpose: a static py::object would be destroyed after the interpreter is gone.
  static py::handle os_fspath = py::object(py::module_::import("os").attr("fspath")).release();
  return os_fspath(path).cast<std::string>();  // str or bytes
}

}  // namespace hfs::py_bind
