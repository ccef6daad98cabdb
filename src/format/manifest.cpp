#include "format/manifest.h"

#include <initializer_list>
#include <string>

#include "format/checks.h"
#include "hfstatic/dtype.h"

namespace hfs::format {
namespace {

Value shape_value(const Shape& s) { return Value::int_array(s.to_vector()); }

Value io_value(const IOSpec& io) {
  Value v = Value::object();
  v.set("name", Value(io.name));
  v.set("dtype", Value(std::string(dtype_name(io.type.dtype))));
  v.set("shape", shape_value(io.type.shape));
  v.set("role", Value(std::string(io_role_name(io.role))));
  if (!io.alias_of.empty()) v.set("alias_of", Value(io.alias_of));
  return v;
}

Value strings(const std::vector<std::string>& names) {
  Value a = Value::array();
  for (const auto& n : names) a.push_back(Value(n));
  return a;
}

// --- decoding ------------------------------------------------------------------------------------------

std::string_view kind_name(Value::Kind k) {
  switch (k) {
    case Value::Kind::kNull: return "null";
    case Value::Kind::kBool: return "bool";
    case Value::Kind::kInt: return "integer";
    case Value::Kind::kFloat: return "float";
    case Value::Kind::kString: return "string";
    case Value::Kind::kArray: return "array";
    case Value::Kind::kObject: return "object";
  }
  return "?";
}

Error bad(const std::string& path, const std::string& what) {
  return make_error(ErrorCode::kBadManifest, "manifest: " + path + ": " + what);
}

Error wrong_kind(const std::string& path, Value::Kind want, const Value& got) {
  std::string shown = got.to_json();
  if (shown.size() > 40) shown = shown.substr(0, 40) + "...";
  return bad(path, "expected " + std::string(kind_name(want)) + ", got " + std::string(kind_name(got.kind())) + " " + shown);
}

// Rejects keys outside `allowed` so typos and corruption are not silently ignored.
Status only_keys(const Value& obj, const std::string& path, std::initializer_list<std::string_view> allowed) {
  for (const auto& [k, v] : obj.as_object()) {
    bool ok = false;
    for (auto a : allowed) ok = ok || a == k;
    if (!ok) return bad(path, "unknown key '" + k + "'");
  }
  return Ok{};
}

Result<const Value*> field(const Value& obj, const std::string& path, std::string_view key, Value::Kind kind) {
  const Value* v = obj.get(key);
  std::string p = path + "." + std::string(key);
  if (!v) return bad(p, "missing required field");
  if (v->kind() != kind) return wrong_kind(p, kind, *v);
  return v;
}

Result<std::string> name_field(const Value& obj, const std::string& path, std::string_view key) {
  HFS_ASSIGN_OR_RETURN(const Value* v, field(obj, path, key, Value::Kind::kString));
  if (v->as_string().empty()) return bad(path + "." + std::string(key), "must not be empty");
  return v->as_string();
}

Result<int64_t> uint_field(const Value& obj, const std::string& path, std::string_view key) {
  HFS_ASSIGN_OR_RETURN(const Value* v, field(obj, path, key, Value::Kind::kInt));
  if (v->as_int() < 0) return bad(path + "." + std::string(key), "must be ≥ 0, got " + std::to_string(v->as_int()));
  return v->as_int();
}

Result<TensorType> type_fields(const Value& obj, const std::string& path) {
  HFS_ASSIGN_OR_RETURN(const Value* dt, field(obj, path, "dtype", Value::Kind::kString));
  auto dtype = dtype_from_name(dt->as_string());
  if (!dtype) return bad(path + ".dtype", dtype.error().message());
  HFS_ASSIGN_OR_RETURN(const Value* sh, field(obj, path, "shape", Value::Kind::kArray));
  const Value::Array& dims = sh->as_array();
  if (dims.size() > static_cast<size_t>(kMaxRank))
    return bad(path + ".shape", "rank " + std::to_string(dims.size()) + " exceeds the maximum " + std::to_string(kMaxRank));
  std::vector<int64_t> out;
  for (size_t i = 0; i < dims.size(); ++i) {
    std::string p = path + ".shape[" + std::to_string(i) + "]";
    if (!dims[i].is_int()) return wrong_kind(p, Value::Kind::kInt, dims[i]);
    int64_t d = dims[i].as_int();
    if (d < 0 || d > kMaxDim) return bad(p, "dimension must be in [0, 2^40], got " + std::to_string(d));
    out.push_back(d);
  }
  TensorType t{*dtype, Shape(std::span<const int64_t>(out))};
  if (!checked_numel(t.shape)) return bad(path + ".shape", "more than 2^53 elements in " + t.shape.to_string());
  return t;
}

Result<std::vector<std::string>> string_list(const Value& obj, const std::string& path, std::string_view key,
                                             bool allow_empty) {
  HFS_ASSIGN_OR_RETURN(const Value* arr, field(obj, path, key, Value::Kind::kArray));
  std::vector<std::string> out;
  const Value::Array& a = arr->as_array();
  for (size_t i = 0; i < a.size(); ++i) {
    std::string p = path + "." + std::string(key) + "[" + std::to_string(i) + "]";
    if (!a[i].is_string()) return wrong_kind(p, Value::Kind::kString, a[i]);
    if (!allow_empty && a[i].as_string().empty()) return bad(p, "must not be empty");
    out.push_back(a[i].as_string());
  }
  return out;
}

Result<IOSpec> decode_io(const Value& v, const std::string& path, bool is_output) {
  if (!v.is_object()) return wrong_kind(path, Value::Kind::kObject, v);
  if (is_output) {
    HFS_TRY(only_keys(v, path, {"name", "dtype", "shape", "role", "alias_of"}));
  } else {
    HFS_TRY(only_keys(v, path, {"name", "dtype", "shape", "role"}));
  }
  IOSpec io;
  HFS_ASSIGN_OR_RETURN(std::string name, name_field(v, path, "name"));
  io.name = std::move(name);
  HFS_ASSIGN_OR_RETURN(TensorType type, type_fields(v, path));
  io.type = std::move(type);
  HFS_ASSIGN_OR_RETURN(const Value* role, field(v, path, "role", Value::Kind::kString));
  auto r = io_role_from_name(role->as_string());
  if (!r) return bad(path + ".role", r.error().message());
  io.role = *r;
  if (const Value* a = v.get("alias_of")) {
    if (!a->is_string()) return wrong_kind(path + ".alias_of", Value::Kind::kString, *a);
    io.alias_of = a->as_string();
  }
  return io;
}

Result<NodeDef> decode_node(const Value& v, const std::string& path) {
  if (!v.is_object()) return wrong_kind(path, Value::Kind::kObject, v);
  HFS_TRY(only_keys(v, path, {"op", "inputs", "outputs", "attrs"}));
  NodeDef n;
  HFS_ASSIGN_OR_RETURN(std::string op, name_field(v, path, "op"));
  n.op = std::move(op);
  HFS_ASSIGN_OR_RETURN(std::vector<std::string> ins, string_list(v, path, "inputs", /*allow_empty=*/true));
  n.inputs = std::move(ins);
  HFS_ASSIGN_OR_RETURN(std::vector<std::string> outs, string_list(v, path, "outputs", /*allow_empty=*/false));
  n.outputs = std::move(outs);
  if (const Value* a = v.get("attrs")) {
    if (!a->is_object()) return wrong_kind(path + ".attrs", Value::Kind::kObject, *a);
    n.attrs = a->as_object();
  }
  return n;
}

Result<MethodDef> decode_method(const Value& v, const std::string& path) {
  if (!v.is_object()) return wrong_kind(path, Value::Kind::kObject, v);
  HFS_TRY(only_keys(v, path, {"name", "inputs", "outputs", "nodes"}));
  MethodDef m;
  HFS_ASSIGN_OR_RETURN(std::string name, name_field(v, path, "name"));
  m.name = std::move(name);
  for (auto [key, is_output] : {std::pair{"inputs", false}, std::pair{"outputs", true}}) {
    HFS_ASSIGN_OR_RETURN(const Value* arr, field(v, path, key, Value::Kind::kArray));
    const Value::Array& a = arr->as_array();
    for (size_t i = 0; i < a.size(); ++i) {
      HFS_ASSIGN_OR_RETURN(IOSpec io, decode_io(a[i], path + "." + key + "[" + std::to_string(i) + "]", is_output));
      (is_output ? m.outputs : m.inputs).push_back(std::move(io));
    }
  }
  HFS_ASSIGN_OR_RETURN(const Value* nodes, field(v, path, "nodes", Value::Kind::kArray));
  const Value::Array& a = nodes->as_array();
  for (size_t i = 0; i < a.size(); ++i) {
    HFS_ASSIGN_OR_RETURN(NodeDef n, decode_node(a[i], path + ".nodes[" + std::to_string(i) + "]"));
    m.nodes.push_back(std::move(n));
  }
  return m;
}

Result<ConstantInfo> decode_tensor(const Value& v, const std::string& path) {
  if (!v.is_object()) return wrong_kind(path, Value::Kind::kObject, v);
  HFS_TRY(only_keys(v, path, {"name", "dtype", "shape", "offset", "nbytes"}));
  ConstantInfo c;
  HFS_ASSIGN_OR_RETURN(std::string name, name_field(v, path, "name"));
  c.name = std::move(name);
  HFS_ASSIGN_OR_RETURN(TensorType type, type_fields(v, path));
  c.type = std::move(type);
  HFS_ASSIGN_OR_RETURN(int64_t off, uint_field(v, path, "offset"));
  c.offset = static_cast<uint64_t>(off);
  HFS_ASSIGN_OR_RETURN(int64_t nb, uint_field(v, path, "nbytes"));
  c.nbytes = static_cast<uint64_t>(nb);
  return c;
}

}  // namespace

Value encode_manifest(const Metadata& metadata, const std::vector<ConstantInfo>& tensors,
                      const std::vector<MethodDef>& methods) {
  Value root = Value::object();
  root.set("metadata", Value(metadata));
  Value ts = Value::array();
  for (const ConstantInfo& c : tensors) {
    Value t = Value::object();
    t.set("name", Value(c.name));
    t.set("dtype", Value(std::string(dtype_name(c.type.dtype))));
    t.set("shape", shape_value(c.type.shape));
    t.set("offset", Value(static_cast<int64_t>(c.offset)));
    t.set("nbytes", Value(static_cast<int64_t>(c.nbytes)));
    ts.push_back(std::move(t));
  }
  root.set("tensors", std::move(ts));
  Value ms = Value::array();
  for (const MethodDef& m : methods) {
    Value mv = Value::object();
    mv.set("name", Value(m.name));
    Value ins = Value::array(), outs = Value::array(), nodes = Value::array();
    for (const IOSpec& io : m.inputs) ins.push_back(io_value(io));
    for (const IOSpec& io : m.outputs) outs.push_back(io_value(io));
    for (const NodeDef& n : m.nodes) {
      Value nv = Value::object();
      nv.set("op", Value(n.op));
      nv.set("inputs", strings(n.inputs));
      nv.set("outputs", strings(n.outputs));
      nv.set("attrs", Value(n.attrs));
      nodes.push_back(std::move(nv));
    }
    mv.set("inputs", std::move(ins));
    mv.set("outputs", std::move(outs));
    mv.set("nodes", std::move(nodes));
    ms.push_back(std::move(mv));
  }
  root.set("methods", std::move(ms));
  return root;
}

Result<Manifest> decode_manifest(const Value& root) {
  if (!root.is_object()) return wrong_kind("<root>", Value::Kind::kObject, root);
  HFS_TRY(only_keys(root, "<root>", {"metadata", "tensors", "methods"}));
  Manifest m;
  auto meta = root.get("metadata");
  if (!meta) return bad("metadata", "missing required field");
  if (!meta->is_object()) return wrong_kind("metadata", Value::Kind::kObject, *meta);
  m.metadata = meta->as_object();
  auto ts = root.get("tensors");
  if (!ts) return bad("tensors", "missing required field");
  if (!ts->is_array()) return wrong_kind("tensors", Value::Kind::kArray, *ts);
  for (size_t i = 0; i < ts->as_array().size(); ++i) {
    HFS_ASSIGN_OR_RETURN(ConstantInfo t, decode_tensor(ts->as_array()[i], "tensors[" + std::to_string(i) + "]"));
    m.tensors.push_back(std::move(t));
  }
  auto ms = root.get("methods");
  if (!ms) return bad("methods", "missing required field");
  if (!ms->is_array()) return wrong_kind("methods", Value::Kind::kArray, *ms);
  for (size_t i = 0; i < ms->as_array().size(); ++i) {
    HFS_ASSIGN_OR_RETURN(MethodDef md, decode_method(ms->as_array()[i], "methods[" + std::to_string(i) + "]"));
    m.methods.push_back(std::move(md));
  }
  return m;
}

}  // namespace hfs::format
