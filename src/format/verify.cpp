// verify_method: the structural rules every method must satisfy before anything executes it.
//
// Two passes. The name pass resolves every operand to its definition (input, constant or node output)
// and, when a node reads a value defined by a later node, builds the node dependency graph to tell a real
// cycle (kCycle) from a mere ordering error (kUndefinedValue). The typed pass then walks nodes in order,
// running each op's InferFn and tracking buffers: every value has a storage root (itself, or for aliasing
// ops the root of the aliased operand); an in-place op invalidates every other value on its root, and any
// later read of an invalidated value is a use-after-in-place.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "format/checks.h"
#include "hfstatic/ext/ops.h"
#include "hfstatic/program.h"

namespace hfs {
namespace {

enum class DefKind { kInput, kConstant, kNode };

struct Def {
  DefKind kind;
  size_t index;  // input index, constant index or node index
};

class Verifier {
 public:
  Verifier(const MethodDef& m, std::span<const ConstantInfo> constants) : m_(m), constants_(constants) {}

  Status run(ValueTypes* types_out) {
    HFS_TRY(check_name());
    HFS_TRY(define_inputs());
    HFS_TRY(define_node_outputs());
    HFS_TRY(check_operands_defined());
    for (size_t i = 0; i < m_.nodes.size(); ++i) HFS_TRY(type_node(i));
    HFS_TRY(check_outputs());
    if (types_out) *types_out = std::move(types_);
    return Ok{};
  }

 private:
  std::string where() const { return "method '" + m_.name + "'"; }
  std::string where(size_t node) const {
    return where() + " node " + std::to_string(node) + " (" + m_.nodes[node].op + ")";
  }
  Error fail(ErrorCode code, const std::string& at, const std::string& what) const {
    return make_error(code, at + ": " + what);
  }

  Status check_name() {
    if (m_.name.empty()) return make_error(ErrorCode::kInvalidArgument, "method with an empty name");
    for (size_t i = 0; i < constants_.size(); ++i) constant_index_.emplace(constants_[i].name, i);
    return Ok{};
  }

  Status check_type(const std::string& at, const TensorType& t) const {
    if (!format::checked_nbytes(t))
      return fail(ErrorCode::kShapeMismatch, at,
                  "invalid type " + t.to_string() +
                      " (negative dim, more than 2^53 elements, or not a whole number of dtype blocks)");
    return Ok{};
  }

  Status define_inputs() {
    for (size_t i = 0; i < m_.inputs.size(); ++i) {
      const IOSpec& io = m_.inputs[i];
      std::string at = where() + " input " + std::to_string(i) + " '" + io.name + "'";
      if (io.name.empty()) return fail(ErrorCode::kInvalidArgument, where() + " input " + std::to_string(i), "empty name");
      if (io.role == IORole::kOutput)
        return fail(ErrorCode::kInvalidArgument, at, "role 'output' is not valid for an input (expected input or state)");
      if (!io.alias_of.empty()) return fail(ErrorCode::kBadAlias, at, "inputs cannot have alias_of");
      if (defs_.count(io.name)) return fail(ErrorCode::kDuplicateName, at, "input name used twice");
      if (constant_index_.count(io.name))
        return fail(ErrorCode::kDuplicateName, at, "input name is also the name of a constant");
      HFS_TRY(check_type(at, io.type));
      defs_.emplace(io.name, Def{DefKind::kInput, i});
    }
    return Ok{};
  }

  Status define_node_outputs() {
    for (size_t n = 0; n < m_.nodes.size(); ++n) {
      const NodeDef& node = m_.nodes[n];
      for (size_t k = 0; k < node.outputs.size(); ++k) {
        const std::string& v = node.outputs[k];
        std::string at = where(n) + " output " + std::to_string(k);
        if (v.empty()) return fail(ErrorCode::kInvalidArgument, at, "empty value name");
        if (constant_index_.count(v))
          return fail(ErrorCode::kValueRedefined, at, "value '" + v + "' is already defined as a constant");
        auto it = defs_.find(v);
        if (it != defs_.end()) {
          std::string first = it->second.kind == DefKind::kInput
                                  ? "a method input"
                                  : "node " + std::to_string(it->second.index) + " (" + m_.nodes[it->second.index].op + ")";
          return fail(ErrorCode::kValueRedefined, at, "value '" + v + "' is already defined by " + first);
        }
        defs_.emplace(v, Def{DefKind::kNode, n});
      }
    }
    return Ok{};
  }

  std::optional<Def> lookup(const std::string& v) const {
    if (auto it = defs_.find(v); it != defs_.end()) return it->second;
    if (auto it = constant_index_.find(v); it != constant_index_.end()) return Def{DefKind::kConstant, it->second};
    return std::nullopt;
  }

  Status check_operands_defined() {
    struct Forward {
      size_t node, operand, producer;
    };
    std::optional<Forward> first_forward;
    for (size_t n = 0; n < m_.nodes.size(); ++n) {
      const NodeDef& node = m_.nodes[n];
      for (size_t k = 0; k < node.inputs.size(); ++k) {
        const std::string& v = node.inputs[k];
        if (v.empty()) continue;
        auto d = lookup(v);
        if (!d)
          return fail(ErrorCode::kUndefinedValue, where(n) + " input " + std::to_string(k),
                      "value '" + v + "' is not defined (not an input, constant or node output)");
        if (d->kind == DefKind::kNode && d->index >= n && !first_forward) first_forward = Forward{n, k, d->index};
      }
    }
    if (!first_forward) return Ok{};
    if (auto cycle = find_cycle()) {
      std::string path;
      for (size_t n : *cycle) path += "node " + std::to_string(n) + " (" + m_.nodes[n].op + ") -> ";
      path += "node " + std::to_string(cycle->front());
      return fail(ErrorCode::kCycle, where(), "dependency cycle: " + path);
    }
    const Forward& f = *first_forward;
    return fail(ErrorCode::kUndefinedValue, where(f.node) + " input " + std::to_string(f.operand),
                "value '" + m_.nodes[f.node].inputs[f.operand] + "' is used before its definition by node " +
                    std::to_string(f.producer) + " (" + m_.nodes[f.producer].op +
                    "); nodes must be listed in execution order");
  }

  // Iterative DFS over producer -> consumer edges; returns the nodes of one cycle in order.
  std::optional<std::vector<size_t>> find_cycle() const {
    const size_t n = m_.nodes.size();
    std::vector<std::vector<size_t>> succ(n);
    for (size_t c = 0; c < n; ++c)
      for (const std::string& v : m_.nodes[c].inputs) {
        if (v.empty()) continue;
        auto d = lookup(v);
        if (d && d->kind == DefKind::kNode) succ[d->index].push_back(c);
      }
    enum : uint8_t { kWhite, kGrey, kBlack };
    std::vector<uint8_t> color(n, kWhite);
    std::vector<size_t> parent(n, SIZE_MAX);
    for (size_t root = 0; root < n; ++root) {
      if (color[root] != kWhite) continue;
      std::vector<std::pair<size_t, size_t>> stack{{root, 0}};  // (node, next successor)
      color[root] = kGrey;
      while (!stack.empty()) {
        auto& [u, next] = stack.back();
        if (next == succ[u].size()) {
          color[u] = kBlack;
          stack.pop_back();
          continue;
        }
        size_t w = succ[u][next++];
        if (color[w] == kGrey) {
          std::vector<size_t> cycle{u};
          for (size_t x = u; x != w;) cycle.push_back(x = parent[x]);
          std::reverse(cycle.begin(), cycle.end());
          return cycle;
        }
        if (color[w] == kWhite) {
          color[w] = kGrey;
          parent[w] = u;
          stack.emplace_back(w, 0);
        }
      }
    }
    return std::nullopt;
  }

  // --- typed pass ------------------------------------------------------------------------------------

  const TensorType& type_of(const std::string& v) {
    if (auto it = types_.find(v); it != types_.end()) return it->second;
    auto d = lookup(v);  // resolved in the name pass; only inputs/constants reach here lazily
    TensorType t = d->kind == DefKind::kInput ? m_.inputs[d->index].type : constants_[d->index].type;
    return types_.emplace(v, t).first->second;
  }

  const std::string& root_of(const std::string& v) const {
    auto it = root_.find(v);
    return it == root_.end() ? v : it->second;
  }

  Status type_node(size_t n) {
    const NodeDef& node = m_.nodes[n];
    const OpSchema* op = find_op(node.op);
    if (!op) return fail(ErrorCode::kUnknownOp, where(n), "unknown op '" + node.op + "'");
    HFS_TRY_CTX(check_attrs(*op, node.attrs), where(n));
    const size_t nin = node.inputs.size();
    if (nin < static_cast<size_t>(op->min_inputs) || nin > static_cast<size_t>(op->max_inputs)) {
      std::string want = op->min_inputs == op->max_inputs
                             ? std::to_string(op->min_inputs)
                             : std::to_string(op->min_inputs) + ".." + std::to_string(op->max_inputs);
      return fail(ErrorCode::kInvalidArgument, where(n), "expected " + want + " operands, got " + std::to_string(nin));
    }
    if (node.outputs.size() != static_cast<size_t>(op->num_outputs))
      return fail(ErrorCode::kInvalidArgument, where(n),
                  "expected " + std::to_string(op->num_outputs) + " outputs, got " + std::to_string(node.outputs.size()));
    std::vector<const TensorType*> in_types(nin, nullptr);
    for (size_t k = 0; k < nin; ++k) {
      const std::string& v = node.inputs[k];
      if (v.empty()) {
        if (k < static_cast<size_t>(op->min_inputs))
          return fail(ErrorCode::kInvalidArgument, where(n) + " input " + std::to_string(k),
                      "required operand is absent (\"\")");
        continue;
      }
      if (auto it = clobbered_by_.find(v); it != clobbered_by_.end())
        return fail(ErrorCode::kUseAfterInPlace, where(n) + " input " + std::to_string(k),
                    "value '" + v + "' is read after node " + std::to_string(it->second) + " (" +
                        m_.nodes[it->second].op + ") updated its buffer in place");
      in_types[k] = &type_of(v);
    }
    HFS_ASSIGN_OR_RETURN_CTX(
        std::vector<TensorType> inferred,
        op->infer ? op->infer(in_types, node.attrs)
                  : Result<std::vector<TensorType>>(make_error(ErrorCode::kInternal, "op has no shape rule")),
        where(n));
    if (inferred.size() != node.outputs.size())
      return fail(ErrorCode::kInternal, where(n),
                  "shape rule returned " + std::to_string(inferred.size()) + " types for " +
                      std::to_string(node.outputs.size()) + " outputs");
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      HFS_TRY(check_type(where(n) + " output '" + node.outputs[k] + "'", inferred[k]));
      types_[node.outputs[k]] = inferred[k];
    }
    if (op->alias_input >= 0) HFS_TRY(track_alias(n, *op));
    return Ok{};
  }

  Status track_alias(size_t n, const OpSchema& op) {
    const NodeDef& node = m_.nodes[n];
    const size_t a = static_cast<size_t>(op.alias_input);
    std::string at = where(n) + " input " + std::to_string(a);
    if (a >= node.inputs.size() || node.inputs[a].empty())
      return fail(ErrorCode::kBadAlias, at, "the operand whose buffer output 0 reuses is absent");
    const std::string& src = node.inputs[a];
    const std::string root = root_of(src);
    if (op.in_place) {
      auto d = lookup(root);
      if (d->kind == DefKind::kConstant)
        return fail(ErrorCode::kBadAlias, at, "in-place update of '" + src + "' would write into constant '" + root + "'");
      if (d->kind == DefKind::kInput && m_.inputs[d->index].role != IORole::kState)
        return fail(ErrorCode::kBadAlias, at,
                    "in-place update of '" + src + "' would write into read-only input '" + root +
                        "' (declare it with role state)");
      if (types_[node.outputs[0]] != type_of(src))
        return fail(ErrorCode::kShapeMismatch, where(n),
                    "in-place output '" + node.outputs[0] + "' has type " + types_[node.outputs[0]].to_string() +
                        " but the buffer it writes ('" + src + "') is " + type_of(src).to_string());
      // Every other value living in this buffer now holds the new contents.
      for (const std::string& v : on_root_[root]) clobbered_by_.emplace(v, n);
      clobbered_by_.emplace(root, n);
    }
    root_[node.outputs[0]] = root;
    on_root_[root].push_back(node.outputs[0]);
    return Ok{};
  }

  Status check_outputs() {
    std::map<std::string, size_t, std::less<>> seen, aliased;
    for (size_t i = 0; i < m_.outputs.size(); ++i) {
      const IOSpec& io = m_.outputs[i];
      std::string at = where() + " output " + std::to_string(i) + " '" + io.name + "'";
      if (io.name.empty()) return fail(ErrorCode::kInvalidArgument, where() + " output " + std::to_string(i), "empty name");
      if (!seen.emplace(io.name, i).second) return fail(ErrorCode::kDuplicateName, at, "output listed twice");
      if (io.role == IORole::kInput)
        return fail(ErrorCode::kInvalidArgument, at, "role 'input' is not valid for an output (expected output or state)");
      auto d = lookup(io.name);
      if (!d) return fail(ErrorCode::kOutputNotProduced, at, "no node produces this value and it is not an input");
      if (d->kind == DefKind::kConstant)
        return fail(ErrorCode::kOutputNotProduced, at, "names a constant; outputs must be computed by the method");
      const TensorType& got = type_of(io.name);
      if (io.role == IORole::kState) {
        HFS_TRY(check_state_output(io, at, aliased, i));
      } else {
        if (!io.alias_of.empty())
          return fail(ErrorCode::kBadAlias, at, "alias_of '" + io.alias_of + "' is only valid for role state");
        if (auto it = clobbered_by_.find(io.name); it != clobbered_by_.end())
          return fail(ErrorCode::kUseAfterInPlace, at,
                      "returns a value overwritten in place by node " + std::to_string(it->second) + " (" +
                          m_.nodes[it->second].op + ")");
      }
      if (got.dtype != io.type.dtype)
        return fail(ErrorCode::kDTypeMismatch, at, "declared " + io.type.to_string() + ", inferred " + got.to_string());
      if (got.shape != io.type.shape)
        return fail(ErrorCode::kShapeMismatch, at, "declared " + io.type.to_string() + ", inferred " + got.to_string());
    }
    return Ok{};
  }

  Status check_state_output(const IOSpec& io, const std::string& at, std::map<std::string, size_t, std::less<>>& aliased,
                            size_t i) {
    if (io.alias_of.empty()) return fail(ErrorCode::kBadAlias, at, "role state requires alias_of (the state input it updates)");
    auto d = defs_.find(io.alias_of);
    if (d == defs_.end() || d->second.kind != DefKind::kInput)
      return fail(ErrorCode::kBadAlias, at, "alias_of '" + io.alias_of + "' is not an input of the method");
    const IOSpec& in = m_.inputs[d->second.index];
    if (in.role != IORole::kState)
      return fail(ErrorCode::kBadAlias, at, "alias_of '" + io.alias_of + "' is an input with role input, not state");
    if (in.type != io.type)
      return fail(ErrorCode::kBadAlias, at,
                  "type " + io.type.to_string() + " differs from state input '" + in.name + "' " + in.type.to_string());
    if (auto [it, fresh] = aliased.emplace(io.alias_of, i); !fresh)
      return fail(ErrorCode::kBadAlias, at,
                  "state input '" + io.alias_of + "' is already returned by output " + std::to_string(it->second));
    if (root_of(io.name) != io.alias_of)
      return fail(ErrorCode::kBadAlias, at,
                  "value '" + io.name + "' does not live in the buffer of '" + io.alias_of +
                      "' (it must be produced by in-place ops or views chained from that input)");
    if (auto it = clobbered_by_.find(io.name); it != clobbered_by_.end())
      return fail(ErrorCode::kBadAlias, at,
                  "value '" + io.name + "' is not the final version of '" + io.alias_of + "': node " +
                      std::to_string(it->second) + " (" + m_.nodes[it->second].op + ") updates it later");
    return Ok{};
  }

  const MethodDef& m_;
  std::span<const ConstantInfo> constants_;
  std::map<std::string, size_t, std::less<>> constant_index_;
  std::map<std::string, Def, std::less<>> defs_;  // inputs and node outputs
  ValueTypes types_;
  std::map<std::string, std::string, std::less<>> root_;                 // aliasing values -> buffer owner
  std::map<std::string, std::vector<std::string>, std::less<>> on_root_;  // buffer owner -> aliasing values
  std::map<std::string, size_t, std::less<>> clobbered_by_;              // value -> in-place node
};

}  // namespace

Status verify_method(const MethodDef& method, std::span<const ConstantInfo> constants, ValueTypes* types) {
  return Verifier(method, constants).run(types);
}

}  // namespace hfs
