// The op registry: schemas registered from each op's own file, looked up by verification and backends.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>

#include "hfstatic/ext/ops.h"

namespace hfs {
namespace {

std::map<std::string, std::unique_ptr<OpSchema>, std::less<>>& registry() {
  static std::map<std::string, std::unique_ptr<OpSchema>, std::less<>> r;
  return r;
}

std::string_view kind_name(Value::Kind k) {
  switch (k) {
    case Value::Kind::kNull: return "null";
    case Value::Kind::kBool: return "bool";
    case Value::Kind::kInt: return "int";
    case Value::Kind::kFloat: return "float";
    case Value::Kind::kString: return "string";
    case Value::Kind::kArray: return "int array";
    case Value::Kind::kObject: return "object";
  }
  return "?";
}

bool kind_accepts(Value::Kind want, const Value& v) {
  switch (want) {
    case Value::Kind::kFloat: return v.is_number();
    case Value::Kind::kArray:
      if (!v.is_array()) return false;
      for (const Value& e : v.as_array())
        if (!e.is_int()) return false;
      return true;
    default: return v.kind() == want;
  }
}

}  // namespace

bool register_op(OpSchema schema) {
  std::string name(schema.name);
  auto& r = registry();
  if (r.count(name)) {
    std::fprintf(stderr, "hfstatic: op '%s' registered twice\n", name.c_str());
    std::abort();
  }
  r.emplace(name, std::make_unique<OpSchema>(std::move(schema)));
  return true;
}

const OpSchema* find_op(std::string_view name) {
  auto& r = registry();
  auto it = r.find(name);
  return it == r.end() ? nullptr : it->second.get();
}

std::vector<const OpSchema*> all_ops() {
  std::vector<const OpSchema*> out;
  for (auto& [n, s] : registry()) out.push_back(s.get());
  return out;  // std::map keeps them sorted by name
}

Status check_attrs(const OpSchema& schema, const Attrs& attrs) {
  for (const auto& [name, value] : attrs) {
    auto it = std::find_if(schema.attrs.begin(), schema.attrs.end(), [&key = name](const AttrSpec& s) { return s.name == key; });
    if (it == schema.attrs.end()) {
      std::string known;
      for (const AttrSpec& s : schema.attrs) known += (known.empty() ? "" : ", ") + std::string(s.name);
      return make_error(ErrorCode::kUnknownAttribute, "op '" + std::string(schema.name) + "': unknown attribute '" +
                                                          name + "' (expected one of: " + (known.empty() ? "none" : known) + ")");
    }
    if (!kind_accepts(it->kind, value))
      return make_error(ErrorCode::kBadAttribute, "op '" + std::string(schema.name) + "': attribute '" + name +
                                                      "' must be " + std::string(kind_name(it->kind)) + ", got " +
                                                      value.to_json());
  }
  for (const AttrSpec& s : schema.attrs)
    if (s.required && attrs.find(s.name) == attrs.end())
      return make_error(ErrorCode::kBadAttribute,
                        "op '" + std::string(schema.name) + "': missing required attribute '" + std::string(s.name) + "'");
  return Ok{};
}

double attr_float(const Attrs& a, std::string_view name, double def) {
  auto it = a.find(name);
  return it == a.end() ? def : it->second.as_float();
}

int64_t attr_int(const Attrs& a, std::string_view name, int64_t def) {
  auto it = a.find(name);
  return it == a.end() ? def : it->second.as_int();
}

bool attr_bool(const Attrs& a, std::string_view name, bool def) {
  auto it = a.find(name);
  return it == a.end() ? def : it->second.as_bool();
}

std::vector<int64_t> attr_ints(const Attrs& a, std::string_view name) {
  std::vector<int64_t> out;
  auto it = a.find(name);
  if (it == a.end()) return out;
  for (const Value& v : it->second.as_array()) out.push_back(v.as_int());
  return out;
}

Status run_reference(const NodeDef& node, std::span<const TensorView> inputs, std::span<const TensorView> outputs) {
  const OpSchema* s = find_op(node.op);
  if (!s || !s->reference) return make_error(ErrorCode::kUnknownOp, "no reference kernel for op '" + node.op + "'");
  return s->reference(KernelArgs{inputs, outputs, node.attrs});
}

}  // namespace hfs
