#include "runtime/graph_analysis.h"

namespace hfs::detail {

std::string node_label(size_t index, const NodeDef& node) {
  return "node " + std::to_string(index) + " (op '" + node.op + "')";
}

Result<TypeMap> infer_value_types(std::span<const IOSpec> inputs, std::span<const NodeDef> nodes,
                                  const ConstantStore& constants, std::string_view where) {
  TypeMap types;
  for (const IOSpec& in : inputs) types.emplace(in.name, in.type);
  std::vector<const TensorType*> operands;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeDef& n = nodes[i];
    const OpSchema* schema = find_op(n.op);
    if (!schema)
      return make_error(ErrorCode::kUnknownOp, std::string(where) + ": " + node_label(i, n) + ": unknown op");
    operands.clear();
    for (const std::string& name : n.inputs) {
      if (name.empty()) {
        operands.push_back(nullptr);
        continue;
      }
      auto it = types.find(name);
      if (it == types.end()) {
        const TensorView* c = constants.find(name);
        if (!c)
          return make_error(ErrorCode::kUndefinedValue, std::string(where) + ": " + node_label(i, n) + ": operand '" +
                                                            name + "' is not an input, constant or earlier result");
        it = types.emplace(name, c->type()).first;
      }
      operands.push_back(&it->second);
    }
    if (!schema->infer)
      return make_error(ErrorCode::kInternal, std::string(where) + ": " + node_label(i, n) + ": op has no shape rule");
    HFS_ASSIGN_OR_RETURN_CTX(std::vector<TensorType> out, schema->infer(operands, n.attrs),
                             std::string(where) + ": " + node_label(i, n));
    if (out.size() != n.outputs.size())
      return make_error(ErrorCode::kShapeMismatch, std::string(where) + ": " + node_label(i, n) + ": expected " +
                                                       std::to_string(out.size()) + " outputs, got " +
                                                       std::to_string(n.outputs.size()));
    for (size_t k = 0; k < out.size(); ++k) types[n.outputs[k]] = out[k];
  }
  return types;
}

std::map<std::string, AliasInfo, std::less<>> alias_info(std::span<const NodeDef> nodes) {
  std::map<std::string, AliasInfo, std::less<>> info;
  auto lookup = [&](const std::string& v) -> AliasInfo {
    auto it = info.find(v);
    return it == info.end() ? AliasInfo{v, 0} : it->second;
  };
  for (const NodeDef& n : nodes) {
    const OpSchema* s = find_op(n.op);
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      AliasInfo a{n.outputs[k], 0};
      if (k == 0 && s && s->alias_input >= 0 && static_cast<size_t>(s->alias_input) < n.inputs.size() &&
          !n.inputs[static_cast<size_t>(s->alias_input)].empty()) {
        a = lookup(n.inputs[static_cast<size_t>(s->alias_input)]);
        if (s->in_place) ++a.version;
      }
      info[n.outputs[k]] = a;
    }
  }
  return info;
}

std::vector<const TensorType*> operand_types(const NodeDef& node, const TypeMap& types) {
  std::vector<const TensorType*> out;
  out.reserve(node.inputs.size());
  for (const std::string& name : node.inputs) {
    auto it = name.empty() ? types.end() : types.find(name);
    out.push_back(it == types.end() ? nullptr : &it->second);
  }
  return out;
}

}  // namespace hfs::detail
