// python/src/io_allocator.h — Runner(io_allocator=...): where the runner's I/O buffers live.
//
//   None / "backend"   the highest-priority backend's allocator (the default)
//   "heap"             64-byte-aligned heap memory
//   "shared_memory"    memfd-backed shared memory (as shared_memory_io=True)
//   an object with allocate(nbytes) -> a writable, C-contiguous buffer (numpy array, bytearray, mmap...)
//        of at least nbytes, 64-byte aligned; hfstatic zero-fills it and keeps it alive while the runner
//        lives. It is called once per I/O buffer while the runner is created, never while it runs.
#pragma once

#include <memory>

#include "common.h"
#include "hfstatic/ext/allocator.h"

namespace hfs::py_bind {

// Null for the backend's choice; raises ValueError/TypeError for anything else it cannot use.
std::shared_ptr<Allocator> io_allocator_from(const py::object& spec);

}  // namespace hfs::py_bind
