// hfstatic/ext/backend.h — how execution backends plug in: kernels (delegates), passes, allocator, options.
//
// A backend claims nodes (`supports`), compiles maximal connected subgraphs of claimed nodes into
// Delegates, contributes transform passes that run before partitioning, and names the Allocator its
// I/O buffers should live in. docs/backends.md walks through the portable CPU backend as the example.
//
//   hfs::BackendOptions opts;
//   opts.backends = {"cpu_fast"};                 // priority order; "cpu_ref" takes the rest
//   opts.settings["cpu_fast"].set("threads", hfs::Value(2));
//   auto part = hfs::Partitioner::from_options(opts);
//   (compiled and run by tests/api/usage_examples_test.cpp: keep the two in step)
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hfstatic/error.h"
#include "hfstatic/export_macro.h"
#include "hfstatic/ext/allocator.h"
#include "hfstatic/ext/graph.h"
#include "hfstatic/tensor.h"
#include "hfstatic/value.h"

namespace hfs {

// Name → tensor for every constant a method may use: the program's (zero-copy) plus those that passes
// add (e.g. pre-packed weights), which the store owns.
class HFS_API ConstantStore {
 public:
  virtual ~ConstantStore() = default;
  virtual const TensorView* find(std::string_view name) const = 0;
  // Adds an owned constant (copied). Fails if the name exists.
  [[nodiscard]] virtual Status add(const std::string& name, const TensorType& type, std::span<const std::byte> bytes) = 0;
  // Adds a constant over `type.nbytes()` bytes at `data` that `owner` keeps alive (not copied). Fails if
  // the name exists. A pass that builds the same constant for several methods of a program shares one
  // copy this way (and one device upload: backends key uploads by address). Default: a copy, as add().
  [[nodiscard]] virtual Status add_shared(const std::string& name, const TensorType& type,
                                          std::shared_ptr<const void> owner, const void* data) {
    (void)owner;
    return add(name, type, {static_cast<const std::byte*>(data), static_cast<size_t>(type.nbytes())});
  }
  // Hint from a backend that keeps its own copy of bytes [offset, offset + length) of constant `name`
  // (e.g. pre-packed weights) and will not read them again soon: a store whose constants are file-mapped
  // drops their resident pages, so the process does not hold both copies. The bytes stay valid and
  // unchanged (a later read faults them back in from the page cache). Default: nothing.
  virtual void release_pages(std::string_view /*name*/, uint64_t /*offset*/ = 0, uint64_t /*length*/ = UINT64_MAX) const {}
  // Whether release_pages really drops resident pages (a file-mapped store). A backend that copies a
  // constant only to read it faster should not where the original stays resident: that would be two copies.
  virtual bool releases_pages() const { return false; }
};

// A graph rewrite run at lowering time. Passes see the whole method and may add constants.
struct HFS_API Pass {
  std::string name;
  std::function<Status(MethodDef& method, ConstantStore& constants)> run;
};

// A piece of a method assigned to one backend: nodes in execution order; `inputs` are the values it
// reads from outside (method inputs, constants excluded, or other partitions' results) and `outputs`
// the values it produces that are used outside (by later partitions or as method outputs). Buffers follow
// the ops' aliasing: an output with role kState lives in the buffer of input `alias_of` (a view or an
// in-place update of it), and outputs that alias one another are handed the same pointer.
struct HFS_API Subgraph {
  std::vector<NodeDef> nodes;
  std::vector<IOSpec> inputs;
  std::vector<IOSpec> outputs;
  const ConstantStore* constants = nullptr;
};

class HFS_API Delegate {
 public:
  virtual ~Delegate() = default;
  // Buffers for the subgraph's inputs (subgraph order) and outputs (in this delegate's own order:
  // outputs[i] is subgraph output output_order()[i]). Must not allocate.
  [[nodiscard]] virtual Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs) = 0;
  // Permutation from the delegate's output positions to the subgraph's outputs (identity by default;
  // an empty vector also means identity).
  // The Method binds results back in program order, whatever this returns.
  virtual std::vector<int> output_order() const;
  // Bytes of internal scratch the delegate allocated at compile time (reported by inspect/plan).
  virtual size_t scratch_bytes() const { return 0; }
};

class HFS_API Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  // `types` gives each operand's type (nullptr for absent optional operands).
  virtual bool supports(const NodeDef& node, std::span<const TensorType* const> types) const = 0;
  [[nodiscard]] virtual Result<std::unique_ptr<Delegate>> compile(const Subgraph& subgraph) = 0;
  // Where this backend wants I/O buffers; heap by default.
  virtual std::shared_ptr<Allocator> allocator() const { return heap_allocator(); }
  // Transform passes this backend contributes; run after caller passes, before partitioning.
  virtual std::vector<Pass> passes() const { return {}; }
};

// Builds a backend from its settings object (e.g. {"threads": 2}).
using BackendFactory = std::function<Result<std::unique_ptr<Backend>>(const Value& settings)>;
HFS_API bool register_backend(std::string name, BackendFactory factory);  // from the backend's own file
HFS_API std::vector<std::string> registered_backends();
inline constexpr std::string_view kReferenceBackend = "cpu_ref";

struct HFS_API BackendOptions {
  std::vector<std::string> backends;      // priority order; kReferenceBackend is always appended last
  std::map<std::string, Value> settings;  // per-backend settings, by backend name
};

struct HFS_API Partition {
  size_t backend = 0;             // index into Partitioner::backends()
  std::vector<size_t> nodes;      // node indices in the method, execution order
};

class HFS_API Partitioner {
 public:
  // Unknown backend name → kNotFound naming it and listing the registered ones.
  [[nodiscard]] static Result<Partitioner> from_options(const BackendOptions& options);
  explicit Partitioner(std::vector<std::shared_ptr<Backend>> backends);

  const std::vector<std::shared_ptr<Backend>>& backends() const { return backends_; }
  // Assigns maximal connected supported subgraphs to backends in priority order; the reference
  // backend takes the rest. Partitions are returned in a valid execution order.
  [[nodiscard]] Result<std::vector<Partition>> partition(const MethodDef& method, const ConstantStore& constants) const;

 private:
  std::vector<std::shared_ptr<Backend>> backends_;
};

}  // namespace hfs
