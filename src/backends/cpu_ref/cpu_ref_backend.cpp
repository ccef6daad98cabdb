// "cpu_ref": the portable reference backend. It claims every node whose op has a reference kernel and
// runs a subgraph node by node with hfs::run_reference. Intermediate values are planned
// (runtime/subgraph_storage.h) into one scratch buffer allocated at compile time; views and in-place
// updates share their source's storage (a subgraph input, output, constant or scratch slot) instead of
// copying.
#include <cstring>
#include <map>

#include "hfstatic/ext/backend.h"
#include "hfstatic/ext/method.h"
#include "hfstatic/ext/ops.h"
#include "runtime/graph_analysis.h"
#include "runtime/subgraph_storage.h"

namespace hfs {
namespace {

// Where a value's bytes are at execute time.
struct Ref {
  enum class Kind : uint8_t { kAbsent, kInput, kOutput, kConstant, kScratch };
  Kind kind = Kind::kAbsent;
  size_t index = 0;            // input/output position, or scratch offset
  const void* cptr = nullptr;  // kConstant
};

struct Operand {
  Ref ref;
  TensorType type;
};

struct Step {
  size_t node = 0;
  size_t in_begin = 0, in_count = 0, out_begin = 0, out_count = 0;  // ranges in the operand table
};

// Output `dst` receives the bytes at `src` after the run when they are not already the same buffer.
struct CopyOut {
  size_t output = 0;
  Ref src;
  size_t nbytes = 0;
};

class CpuRefDelegate final : public Delegate {
 public:
  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs) override {
    if (inputs.size() != num_inputs_ || outputs.size() != num_outputs_)
      return make_error(ErrorCode::kBadBinding, "cpu_ref delegate: expected " + std::to_string(num_inputs_) +
                                                    " inputs and " + std::to_string(num_outputs_) + " outputs, got " +
                                                    std::to_string(inputs.size()) + " and " +
                                                    std::to_string(outputs.size()));
    for (size_t k = 0; k < operands_.size(); ++k)
      views_[k] = TensorView(resolve(operands_[k].ref, inputs, outputs), operands_[k].type.dtype, operands_[k].type.shape);
    for (const Step& s : steps_) {
      std::span<const TensorView> in(views_.data() + s.in_begin, s.in_count);
      std::span<const TensorView> out(views_.data() + s.out_begin, s.out_count);
      HFS_TRY_CTX(run_reference(nodes_[s.node], in, out), "cpu_ref: " + detail::node_label(s.node, nodes_[s.node]));
    }
    for (const CopyOut& c : copies_) {
      const void* src = resolve(c.src, inputs, outputs);
      if (src != outputs[c.output].ptr && c.nbytes) std::memmove(outputs[c.output].ptr, src, c.nbytes);
    }
    return Ok{};
  }

  size_t scratch_bytes() const override { return scratch_.size(); }

  std::vector<NodeDef> nodes_;
  std::vector<Operand> operands_;
  std::vector<TensorView> views_;  // operands_ resolved; sized at compile so execute never allocates
  std::vector<Step> steps_;
  std::vector<CopyOut> copies_;
  size_t num_inputs_ = 0, num_outputs_ = 0;
  Buffer scratch_;

 private:
  void* resolve(const Ref& r, std::span<const TensorView> inputs, std::span<const TensorView> outputs) const {
    switch (r.kind) {
      case Ref::Kind::kAbsent: return nullptr;
      case Ref::Kind::kInput: return inputs[r.index].ptr;
      case Ref::Kind::kOutput: return outputs[r.index].ptr;
      case Ref::Kind::kConstant: return const_cast<void*>(r.cptr);
      case Ref::Kind::kScratch: return static_cast<std::byte*>(scratch_.data()) + r.index;
    }
    return nullptr;
  }
};

class CpuRefBackend final : public Backend {
 public:
  std::string_view name() const override { return kReferenceBackend; }

  bool supports(const NodeDef& node, std::span<const TensorType* const>) const override {
    const OpSchema* s = find_op(node.op);
    return s && s->reference;
  }

  Result<std::unique_ptr<Delegate>> compile(const Subgraph& sg) override {
    const std::string where = "cpu_ref: subgraph";
    if (!sg.constants) return make_error(ErrorCode::kInvalidArgument, where + ": no constant store");
    HFS_ASSIGN_OR_RETURN(detail::TypeMap types, detail::infer_value_types(sg.inputs, sg.nodes, *sg.constants, where));
    // Storage per root value: runtime/subgraph_storage.h (the Vulkan backend plans the same way).
    HFS_ASSIGN_OR_RETURN(detail::SubgraphStorage plan, detail::plan_subgraph_storage(sg, types, where));
    std::map<std::string, Ref, std::less<>> storage;
    for (const auto& [root, s] : plan.roots) {
      using K = detail::ValueStorage::Kind;
      switch (s.kind) {
        case K::kInput: storage.emplace(root, Ref{Ref::Kind::kInput, s.index, nullptr}); break;
        case K::kOutput: storage.emplace(root, Ref{Ref::Kind::kOutput, s.index, nullptr}); break;
        case K::kConstant: storage.emplace(root, Ref{Ref::Kind::kConstant, 0, s.constant->ptr}); break;
        case K::kScratch: storage.emplace(root, Ref{Ref::Kind::kScratch, s.offset, nullptr}); break;
      }
    }
    auto root_of = [&](const std::string& v) -> const std::string& { return plan.root_of(v); };
    const size_t total = plan.scratch_bytes;

    auto d = std::make_unique<CpuRefDelegate>();
    if (total) {
      HFS_ASSIGN_OR_RETURN_CTX(Buffer buf, allocator()->allocate(total), where + ": scratch");
      d->scratch_ = std::move(buf);
    }
    d->nodes_ = sg.nodes;
    d->num_inputs_ = sg.inputs.size();
    d->num_outputs_ = sg.outputs.size();
    auto operand = [&](const std::string& v) -> Operand {
      if (v.empty()) return Operand{};
      return Operand{storage.at(root_of(v)), types[v]};
    };
    for (size_t i = 0; i < sg.nodes.size(); ++i) {
      Step s{i, d->operands_.size(), sg.nodes[i].inputs.size(), 0, sg.nodes[i].outputs.size()};
      for (const std::string& in : sg.nodes[i].inputs) d->operands_.push_back(operand(in));
      s.out_begin = d->operands_.size();
      for (const std::string& out : sg.nodes[i].outputs) d->operands_.push_back(operand(out));
      d->steps_.push_back(s);
    }
    for (size_t j = 0; j < sg.outputs.size(); ++j) {
      Ref src = storage.at(root_of(sg.outputs[j].name));
      if (src.kind == Ref::Kind::kOutput && src.index == j) continue;
      d->copies_.push_back(CopyOut{j, src, sg.outputs[j].type.nbytes()});
    }
    d->views_.resize(d->operands_.size());
    return std::unique_ptr<Delegate>(std::move(d));
  }
};

const bool kRegistered = register_backend(std::string(kReferenceBackend), [](const Value& settings)
                                              -> Result<std::unique_ptr<Backend>> {
  if (!settings.is_null() && !(settings.is_object() && settings.size() == 0))
    return make_error(ErrorCode::kInvalidArgument, "cpu_ref takes no settings, got " + settings.to_json());
  return std::unique_ptr<Backend>(std::make_unique<CpuRefBackend>());
});

}  // namespace
}  // namespace hfs
