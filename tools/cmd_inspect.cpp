// `hfstatic inspect`: what a program holds — metadata, method signatures, op counts, bytes, memory plan.
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <nlohmann/json.hpp>

#include "backend_settings.h"
#include "cli.h"
#include "common.h"
#include "io_util.h"
#include "hfstatic/ext/io_contract.h"
#include "hfstatic/ext/method.h"
#include "hfstatic/program.h"
#include "option_checks.h"

namespace hfs::cli {
namespace {

struct InspectArgs {
  std::string path;
  bool json = false;
  std::vector<std::string> backends = {"cpu_fast"};
  int device = -1;
};

nlohmann::json io_json(const IOSpec& s) {
  nlohmann::json j = {{"name", s.name},
                      {"dtype", std::string(dtype_name(s.type.dtype))},
                      {"shape", s.type.shape.to_vector()},
                      {"role", std::string(io_role_name(s.role))}};
  if (!s.alias_of.empty()) j["alias_of"] = s.alias_of;
  return j;
}

// Weight parameters (constants other than embedded files, RoPE tables and i8 scales) and, for a mixture of
// experts, the sparse layers and the parameters one token reads: everything but the unselected experts'
// share, (E − top_k) / E of each stacked expert projection.
nlohmann::json parameter_summary(const Program& p) {
  std::map<std::string, int64_t> numel;
  int64_t total = 0;
  for (const ConstantInfo& c : p.constants()) {
    const std::string& n = c.name;
    const bool weight = n.rfind("file:", 0) != 0 && n.rfind("rope.", 0) != 0 &&
                        !(n.size() > 6 && n.compare(n.size() - 6, 6, ".scale") == 0);
    if (!weight) continue;
    numel[n] = c.type.shape.numel();
    total += numel[n];
  }
  nlohmann::json j = {{"total", total}, {"active_per_token", total}, {"moe_layers", nlohmann::json::array()}};
  if (p.methods().empty()) return j;
  double inactive = 0;
  for (const NodeDef& node : p.methods().front().nodes) {
    if (node.op != "moe" || node.inputs.size() < 5) continue;
    auto top_k = node.attrs.find("top_k");
    const int64_t k = top_k == node.attrs.end() ? 0 : top_k->second.as_int();
    int64_t experts = 0, expert_params = 0;
    for (size_t i = 2; i < 5; ++i) {
      auto c = p.constant(node.inputs[i]);
      if (c.ok()) experts = c->shape[0];
      if (auto it = numel.find(node.inputs[i]); it != numel.end()) expert_params += it->second;
    }
    if (experts <= 0) continue;
    inactive += static_cast<double>(expert_params) * static_cast<double>(experts - k) / static_cast<double>(experts);
    j["moe_layers"].push_back({{"node", node.outputs.empty() ? std::string() : node.outputs[0]},
                               {"experts", experts},
                               {"top_k", k},
                               {"expert_params", expert_params}});
  }
  j["active_per_token"] = total - static_cast<int64_t>(inactive + 0.5);
  return j;
}

int inspect(const InspectArgs& a) {
  auto prog = Program::load(a.path);
  if (!prog) return fail(prog.error());
  const Program& p = **prog;
  // Checked against its I/O contract first: printing a program the runner would reject hides why.
  if (Status valid = validate_contract(p); !valid) return fail(valid.error());
  nlohmann::json j;
  j["file"] = a.path;
  j["format_version"] = p.format_version();
  j["file_bytes"] = p.file_size();
  j["metadata"] = nlohmann::json::parse(Value(p.metadata()).to_json());
  j["constants"] = {{"count", p.constants().size()}, {"bytes", p.constant_bytes()}};
  j["parameters"] = parameter_summary(p);
  MethodOptions mo;
  auto backends = backend_options(a.backends, 0, a.device);
  if (!backends) return usage_error("inspect", backends.error().message());
  mo.backends = std::move(*backends);
  j["kernels"] = backend_kernels(mo.backends);
  for (const MethodDef& m : p.methods()) {
    nlohmann::json mj;
    mj["name"] = m.name;
    for (const IOSpec& s : m.inputs) mj["inputs"].push_back(io_json(s));
    for (const IOSpec& s : m.outputs) mj["outputs"].push_back(io_json(s));
    std::map<std::string, int> ops;
    for (const NodeDef& n : m.nodes) ops[n.op]++;
    mj["nodes"] = m.nodes.size();
    mj["ops"] = ops;
    auto loaded = Method::load(*prog, m.name, mo);
    if (!loaded) return fail(loaded.error());
    const MethodPlan& plan = (*loaded)->plan();
    mj["plan"] = {{"arena_bytes", plan.arena_bytes},
                  {"unshared_bytes", plan.unshared_bytes},
                  {"delegate_scratch_bytes", plan.delegate_scratch},
                  {"partitions", plan.partition_backends}};
    // What lowering passes (caller's, then the backends') made of the method: its node count and the
    // constants they added (e.g. the vulkan backend's concatenated Q/K/V weights), which replace the
    // program's in what the backends upload.
    const MethodDef& lowered = (*loaded)->def();
    std::set<std::string> defined;
    for (const IOSpec& s : lowered.inputs) defined.insert(s.name);
    for (const NodeDef& n : lowered.nodes) defined.insert(n.outputs.begin(), n.outputs.end());
    std::set<std::string> added;
    for (const NodeDef& n : lowered.nodes)
      for (const std::string& v : n.inputs)
        if (!v.empty() && !defined.count(v) && !p.constant(v).ok()) added.insert(v);
    mj["plan"]["lowered_nodes"] = lowered.nodes.size();
    mj["plan"]["pass_constants"] = added;
    // Which nodes each backend runs (a backend that does not claim a node leaves it to the next).
    for (size_t q = 0; q < plan.partition_nodes.size(); ++q) {
      std::map<std::string, int> part_ops;
      for (size_t i : plan.partition_nodes[q]) part_ops[(*loaded)->def().nodes[i].op]++;
      mj["plan"]["placement"].push_back(
          {{"backend", plan.partition_backends[q]}, {"nodes", plan.partition_nodes[q]}, {"ops", part_ops}});
    }
    j["methods"].push_back(mj);
  }
  if (a.json) {
    outf("%s\n", j.dump(2).c_str());
    return 0;
  }
  outf("%s: hfstatic program, format v%u, %llu bytes\n", a.path.c_str(), p.format_version(),
              static_cast<unsigned long long>(p.file_size()));
  outf("metadata:\n");
  for (const auto& [k, v] : p.metadata()) {
    std::string s = v.to_json();
    if (s.size() > 100) s = s.substr(0, 97) + "...";
    outf("  %-34s %s\n", k.c_str(), s.c_str());
  }
  outf("constants: %zu tensors, %.2f MiB\n", p.constants().size(),
              static_cast<double>(p.constant_bytes()) / (1 << 20));
  if (const auto& pj = j["parameters"]; pj["moe_layers"].empty()) {
    outf("parameters: %lld\n", static_cast<long long>(pj["total"].get<int64_t>()));
  } else {
    const auto& first = pj["moe_layers"][0];
    outf("parameters: %lld, %lld active per token (%zu sparse layers, %lld experts, top %lld)\n",
         static_cast<long long>(pj["total"].get<int64_t>()), static_cast<long long>(pj["active_per_token"].get<int64_t>()),
         pj["moe_layers"].size(), static_cast<long long>(first["experts"].get<int64_t>()),
         static_cast<long long>(first["top_k"].get<int64_t>()));
  }
  if (const std::string k = describe_kernels(j["kernels"].get<std::map<std::string, std::string>>()); !k.empty())
    outf("kernels: %s (results are bit-identical run to run on one kernel level, not across levels)\n", k.c_str());
  for (const auto& mj : j["methods"]) {
    outf("method %s: %d nodes, arena %.2f MiB (unshared %.2f MiB), delegate scratch %.2f MiB\n",
                mj["name"].get<std::string>().c_str(), mj["nodes"].get<int>(),
                mj["plan"]["arena_bytes"].get<double>() / (1 << 20), mj["plan"]["unshared_bytes"].get<double>() / (1 << 20),
                mj["plan"]["delegate_scratch_bytes"].get<double>() / (1 << 20));
    for (const char* dir : {"inputs", "outputs"}) {
      outf("  %s:\n", dir);
      for (const auto& s : mj[dir]) {
        std::string shape;
        for (auto d : s["shape"]) shape += (shape.empty() ? "" : ", ") + std::to_string(d.get<int64_t>());
        outf("    %-22s %-5s [%s] %s%s\n", s["name"].get<std::string>().c_str(),
                    s["dtype"].get<std::string>().c_str(), shape.c_str(), s["role"].get<std::string>().c_str(),
                    s.contains("alias_of") ? (" alias_of " + s["alias_of"].get<std::string>()).c_str() : "");
      }
    }
    outf("  ops:");
    for (auto& [op, n] : mj["ops"].items()) outf(" %s×%d", op.c_str(), n.get<int>());
    outf("\n");
    if (mj["plan"]["lowered_nodes"].get<size_t>() != mj["nodes"].get<size_t>() || !mj["plan"]["pass_constants"].empty()) {
      const auto& added = mj["plan"]["pass_constants"];
      outf("  after passes: %zu nodes, %zu constants added%s", mj["plan"]["lowered_nodes"].get<size_t>(), added.size(),
           added.empty() ? "\n" : ":\n");
      for (const auto& c : added) outf("    %s\n", c.get<std::string>().c_str());
    }
    size_t q = 0;
    for (const auto& part : mj["plan"]["placement"]) {
      outf("  partition %zu on %s: %zu nodes,", q++, part["backend"].get<std::string>().c_str(), part["nodes"].size());
      for (auto& [op, n] : part["ops"].items()) outf(" %s×%d", op.c_str(), n.get<int>());
      outf("\n");
    }
  }
  return 0;
}

RunFn setup(CLI::App& sub) {
  auto a = std::make_shared<InspectArgs>();
  sub.add_option("file", a->path, "Program file (.hfs)")->required();
  sub.add_flag("--json", a->json, "Print one JSON object");
  sub.add_option("--backend", a->backends,
                 "Backends to plan with (priority order); cpu_ref alone = the portable reference")
      ->capture_default_str()
      ->check(backend_name());
  add_device_option(sub, a->device);
  return [a] { return inspect(*a); };
}

[[maybe_unused]] const bool kReg =
    register_command({"inspect",
                      "Check a program against its I/O contract, then show its metadata, method signatures, op "
                      "counts and memory plan",
                      &setup});

}  // namespace
}  // namespace hfs::cli
