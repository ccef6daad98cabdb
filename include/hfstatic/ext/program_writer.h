// hfstatic/ext/program_writer.h — builds a program file (used by the exporter and tests).
//
// Constants are streamed: a producer fills the tensor's bytes when the data section is written, so an
// exporter never holds more than one converted tensor. The file is written to "<path>.tmp.<pid>" and
// renamed over <path> only after a successful fsync, so a crash never leaves a half-written program, and
// a symbolic link at <path> is replaced, not written through (see check_destination).
//
//   hfs::ProgramWriter w;
//   w.set_metadata(std::string(hfs::keys::kGeneralName), hfs::Value("tiny"));
//   auto name = w.add_constant("w", {hfs::DType::kF32, {4, 4}}, bytes);   // Result<std::string>
//   HFS_TRY(w.add_method(method_def));
//   hfs::Status st = w.write("out.hfs");
//   (compiled and run by tests/api/usage_examples_test.cpp: keep the two in step)
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hfstatic/error.h"
#include "hfstatic/export_macro.h"
#include "hfstatic/ext/graph.h"
#include "hfstatic/value.h"

namespace hfs {

class HFS_API ProgramWriter {
 public:
  // Fills exactly `dst.size()` bytes. Called once, during write().
  using Producer = std::function<Status(std::span<std::byte> dst)>;
  // Called after each constant is written: (index, count, name) — export progress bars.
  using Progress = std::function<void(size_t, size_t, const std::string&)>;

  ProgramWriter();
  ~ProgramWriter();

  void set_metadata(std::string key, Value value);

  // Adds a constant and returns the name methods must use. Constant names are unique across all methods:
  // adding a name that exists with the same content returns that name (stored once); with different
  // content the constant is stored under a fresh name ("<name>.1", "<name>.2", ...) which is returned.
  // Content identity: a hash of `bytes`, or for lazy constants the caller's `content_key`.
  [[nodiscard]] Result<std::string> add_constant(const std::string& name, const TensorType& type,
                                                 std::span<const std::byte> bytes);
  [[nodiscard]] Result<std::string> add_constant_lazy(const std::string& name, const TensorType& type,
                                                      const std::string& content_key, Producer producer);

  // A constant whose bytes already sit in a file, unchanged (e.g. a checkpoint tensor exported in its own
  // dtype): written with copy_file_range, so the data never passes through user space (read/write
  // fallback where the kernel cannot). `offset` is the byte offset of the tensor inside `path`.
  [[nodiscard]] Result<std::string> add_constant_from_file(const std::string& name, const TensorType& type,
                                                           const std::string& content_key, const std::string& path,
                                                           uint64_t offset);

  // Methods reference constants by the names add_constant returned. Duplicate method names are an error.
  [[nodiscard]] Status add_method(MethodDef method);

  void set_progress(Progress progress);

  // Verifies every method (same rules as loading) and check_destination(path) before touching the file
  // system. A write that fails (ENOSPC, EFBIG, ...) names the file and removes the temp file: the
  // destination is either the complete new program or what it was before.
  [[nodiscard]] Status write(const std::string& path);

  // Whether `path` may receive a program: not empty, not ending in '/', and nothing there or a regular
  // file or a symbolic link. A symbolic link is replaced by the new regular file (rename semantics); its
  // target is never written. A directory, FIFO, socket or device is refused (kInvalidArgument) and left
  // alone. Exporters call this before a long export so a bad -o fails at once.
  [[nodiscard]] static Status check_destination(const std::string& path);

  // The temp file write(path) fills before renaming it over `path` (beside it, named after this process),
  // so that a process ended by a signal mid-write can remove it from its handler.
  static std::string temp_path(const std::string& path);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hfs
