#include "io_allocator.h"

#include <cstring>
#include <string>

namespace hfs::py_bind {
namespace {

// Adapts a Python object's allocate(nbytes) to hfs::Allocator. Runner::create runs without the GIL, so
// every call into Python takes it.
class PyAllocator final : public Allocator {
 public:
  explicit PyAllocator(py::object obj) : obj_(std::move(obj)) {
    name_ = py::str(py::type::of(obj_).attr("__name__")).cast<std::string>();
  }
  ~PyAllocator() override {
    py::gil_scoped_acquire gil;
    obj_ = py::object();
  }
  std::string_view name() const override { return name_; }

  Result<Buffer> allocate(size_t bytes) override {
    if (bytes == 0) return Buffer();
    py::gil_scoped_acquire gil;
    const std::string call = "io_allocator " + name_ + ".allocate(" + std::to_string(bytes) + ")";
    py::object got;
    try {
      got = obj_.attr("allocate")(bytes);
    } catch (py::error_already_set& e) {
      return make_error(ErrorCode::kInvalidArgument, call + " raised " + e.what());
    }
    auto view = std::make_unique<Py_buffer>();
    if (PyObject_GetBuffer(got.ptr(), view.get(), PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) != 0) {
      PyErr_Clear();
      return make_error(ErrorCode::kInvalidArgument, call + ": expected a writable C-contiguous buffer, got " +
                                                         py::str(py::type::of(got).attr("__name__")).cast<std::string>());
    }
    void* data = view->buf;
    const auto len = static_cast<size_t>(view->len);
    // The Py_buffer holds a reference to the object: the memory lives until the Buffer releases it.
    std::shared_ptr<void> owner(view.release(), [](void* p) {
      auto* v = static_cast<Py_buffer*>(p);
      if (Py_IsInitialized()) {
        py::gil_scoped_acquire g;
        PyBuffer_Release(v);
      }
      delete v;
    });
    if (len < bytes)
      return make_error(ErrorCode::kInvalidArgument,
                        call + ": expected at least " + std::to_string(bytes) + " bytes, got " + std::to_string(len));
    if (reinterpret_cast<uintptr_t>(data) % kBufferAlignment != 0)
      return make_error(ErrorCode::kInvalidArgument,
                        call + ": expected memory aligned to " + std::to_string(kBufferAlignment) + " bytes");
    std::memset(data, 0, bytes);  // the Allocator contract; numpy.empty and friends do not zero
    return Buffer(data, bytes, std::move(owner));
  }

 private:
  py::object obj_;
  std::string name_;
};

}  // namespace

std::shared_ptr<Allocator> io_allocator_from(const py::object& spec) {
  if (spec.is_none()) return nullptr;
  if (py::isinstance<py::str>(spec)) {
    const auto s = spec.cast<std::string>();
    if (s == "backend") return nullptr;
    if (s == "heap") return heap_allocator();
    if (s == "shared_memory") return shared_memory_allocator();
    raise(ErrorCode::kInvalidArgument,
          "io_allocator: expected \"backend\", \"heap\", \"shared_memory\" or an object with allocate(nbytes), got '" + s + "'");
  }
  if (!py::hasattr(spec, "allocate") || !PyCallable_Check(spec.attr("allocate").ptr()))
    raise(ErrorCode::kInvalidArgument, "io_allocator: expected \"backend\", \"heap\", \"shared_memory\" or an object with "
                                       "allocate(nbytes), got a " +
                                           py::str(py::type::of(spec).attr("__name__")).cast<std::string>());
  return std::make_shared<PyAllocator>(spec);
}

}  // namespace hfs::py_bind
