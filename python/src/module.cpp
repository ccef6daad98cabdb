// The `hfstatic._hfstatic` extension module; python/hfstatic/__init__.py re-exports it.
#include "common.h"
#include "hfstatic/ext/backend.h"

PYBIND11_MODULE(_hfstatic, m) {
  m.doc() = "hfstatic: run HuggingFace decoder LLMs as fixed-shape programs";
  m.attr("__version__") = HFS_VERSION;
  hfs::py_bind::bind_errors(m);
  hfs::py_bind::bind_program(m);
  hfs::py_bind::bind_tokenizer(m);
  hfs::py_bind::bind_runner(m);
  hfs::py_bind::bind_export(m);
  hfs::py_bind::bind_engine(m);
  hfs::py_bind::bind_constraint(m);
  hfs::py_bind::bind_hub(m);
  m.def("backends", &hfs::registered_backends,
        "The backends built into this library, by name (e.g. ['cpu_fast', 'cpu_ref', 'vulkan']).");
}
