// hfstatic/ext/graph.h — the in-memory form of a method: typed I/O, SSA nodes, attributes.
//
// The exporter and tests build MethodDefs; the program reader produces them; lowering passes rewrite
// them. Values are named: a method input, a constant (program-wide tensor table), or a node output.
// Every value is defined exactly once; nodes appear in a valid execution order.
//
//   hfs::MethodDef m;
//   m.name = "decode";
//   m.inputs.push_back({"x", {hfs::DType::kF32, {1, 4}}, hfs::IORole::kInput, ""});
//   m.nodes.push_back({"silu", {"x"}, {"y"}, {}});
//   m.outputs.push_back({"y", {hfs::DType::kF32, {1, 4}}, hfs::IORole::kOutput, ""});
//   (compiled and run by tests/api/usage_examples_test.cpp: keep the two in step)
#pragma once

#include <string>
#include <vector>

#include "hfstatic/export_macro.h"
#include "hfstatic/tensor.h"
#include "hfstatic/value.h"

namespace hfs {

enum class IORole : uint8_t {
  kInput,   // read-only input (inputs) / plain result (outputs)
  kState,   // input: a buffer the method updates in place; output: the updated state, with alias_of
  kOutput,  // outputs only
};
HFS_API std::string_view io_role_name(IORole r);
HFS_API Result<IORole> io_role_from_name(std::string_view s);

struct HFS_API IOSpec {
  std::string name;  // for outputs: the value (node result or input) returned
  TensorType type;
  IORole role = IORole::kInput;
  std::string alias_of;  // outputs with role kState: the input whose buffer holds the result
};

struct HFS_API NodeDef {
  std::string op;
  std::vector<std::string> inputs;  // "" marks an absent optional operand
  std::vector<std::string> outputs;
  Attrs attrs;
};

struct HFS_API MethodDef {
  std::string name;
  std::vector<IOSpec> inputs;
  std::vector<IOSpec> outputs;
  std::vector<NodeDef> nodes;
};

// A constant in the program's tensor table (data lives in the file's data section).
struct HFS_API ConstantInfo {
  std::string name;
  TensorType type;
  uint64_t offset = 0;  // from the start of the data section; a multiple of 64
  uint64_t nbytes = 0;
};

}  // namespace hfs
