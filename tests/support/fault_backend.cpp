#include "support/fault_backend.h"

#include <atomic>
#include <optional>
#include <vector>

#include "hfstatic/ext/backend.h"

namespace hfs::test {
namespace {

// Atomics: the runner may execute on any thread, the test arms from its own.
std::atomic<int64_t> g_calls{0};
std::atomic<int64_t> g_fail_at{-1};  // value of g_calls at which execute fails; -1: never

class FaultDelegate final : public Delegate {
 public:
  FaultDelegate(std::unique_ptr<Delegate> inner, std::string label, std::optional<std::vector<int>> order)
      : inner_(std::move(inner)), label_(std::move(label)), order_(std::move(order)) {}
  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs) override {
    const int64_t call = g_calls.fetch_add(1) + 1;
    if (call == g_fail_at.load())
      return make_error(ErrorCode::kExecution,
                        "test_fault: " + label_ + ": injected failure (call " + std::to_string(call) + ")");
    return inner_->execute(inputs, outputs);
  }
  std::vector<int> output_order() const override { return order_ ? *order_ : inner_->output_order(); }

 private:
  std::unique_ptr<Delegate> inner_;
  std::string label_;
  std::optional<std::vector<int>> order_;
};

class FaultBackend final : public Backend {
 public:
  FaultBackend(std::string node, std::shared_ptr<Backend> reference, std::optional<std::vector<int>> order)
      : node_(std::move(node)), ref_(std::move(reference)), order_(std::move(order)) {}
  std::string_view name() const override { return kFaultBackend; }
  bool supports(const NodeDef& node, std::span<const TensorType* const> types) const override {
    return !node.outputs.empty() && node.outputs[0] == node_ && ref_->supports(node, types);
  }
  Result<std::unique_ptr<Delegate>> compile(const Subgraph& sg) override {
    HFS_ASSIGN_OR_RETURN(auto inner, ref_->compile(sg));
    const NodeDef& n = sg.nodes.front();  // the partitioner hands us exactly the claimed node
    return std::unique_ptr<Delegate>(
        std::make_unique<FaultDelegate>(std::move(inner), "node '" + n.outputs[0] + "' (" + n.op + ")", order_));
  }

 private:
  std::string node_;
  std::shared_ptr<Backend> ref_;
  std::optional<std::vector<int>> order_;
};

const bool kRegistered = register_backend(kFaultBackend, [](const Value& s) -> Result<std::unique_ptr<Backend>> {
  const Value* node = s.get("node");
  if (!node || !node->is_string()) return make_error(ErrorCode::kInvalidArgument, "test_fault: needs {\"node\": name}");
  // The reference backend (always last in a default partitioner) runs the claimed node.
  std::optional<std::vector<int>> order;
  if (const Value* o = s.get("output_order")) {
    order.emplace();
    for (const Value& e : o->as_array()) order->push_back(static_cast<int>(e.as_int()));
  }
  HFS_ASSIGN_OR_RETURN(auto part, Partitioner::from_options(BackendOptions{}));
  return std::unique_ptr<Backend>(std::make_unique<FaultBackend>(node->as_string(), part.backends().back(), order));
});

}  // namespace

void FaultSwitch::arm(int64_t n) { g_fail_at.store(g_calls.load() + n); }
void FaultSwitch::disarm() { g_fail_at.store(-1); }
int64_t FaultSwitch::calls() { return g_calls.load(); }

Value fault_settings(const std::string& node_output) {
  Value s = Value::object();
  s.set("node", Value(node_output));
  return s;
}

Value fault_settings(const std::string& node_output, const std::vector<int64_t>& output_order) {
  Value s = fault_settings(node_output);
  s.set("output_order", Value::int_array(output_order));
  return s;
}

}  // namespace hfs::test
