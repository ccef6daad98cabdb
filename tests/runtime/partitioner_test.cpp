#include <algorithm>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "hfstatic/ext/backend.h"
#include "hfstatic/ext/method.h"
#include "runtime/test_support.h"
#include "support/fault_backend.h"
#include "support/hf_static_fixture.h"

namespace hfs {
namespace {

using testing_rt::claim;
using testing_rt::f32;
using testing_rt::in_spec;
using testing_rt::out_spec;
using testing_rt::state_out;

Partitioner make(std::vector<std::string> names, std::map<std::string, Value> settings = {}) {
  BackendOptions o;
  o.backends = std::move(names);
  o.settings = std::move(settings);
  Result<Partitioner> p = Partitioner::from_options(o);
  EXPECT_TRUE(p.ok()) << p.error().to_string();
  return std::move(p.value());
}

std::vector<std::string> backend_names(const Partitioner& p, const std::vector<Partition>& parts) {
  std::vector<std::string> out;
  for (const Partition& q : parts) out.emplace_back(p.backends()[q.backend]->name());
  return out;
}

TEST(Partitioner, UnknownBackendListsRegisteredOnes) {
  BackendOptions o;
  o.backends = {"no_such_backend"};
  Result<Partitioner> p = Partitioner::from_options(o);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(p.error().message().find("'no_such_backend'"), std::string::npos) << p.error().message();
  EXPECT_NE(p.error().message().find("cpu_ref"), std::string::npos) << p.error().message();
  EXPECT_NE(p.error().message().find("test_rt_a"), std::string::npos) << p.error().message();
}

TEST(Partitioner, SettingsForUnregisteredBackendAreRejected) {
  BackendOptions o;
  o.settings["typo_backend"] = Value::object();
  Result<Partitioner> p = Partitioner::from_options(o);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(p.error().message().find("typo_backend"), std::string::npos);
}

TEST(Partitioner, ReferenceAppendedLastOnceAndSettingsReachFactories) {
  Partitioner p = make({"test_rt_b", "cpu_ref", "test_rt_a"}, {{"test_rt_a", claim({"test_rt.neg"})}});
  ASSERT_EQ(p.backends().size(), 3u);
  EXPECT_EQ(p.backends()[0]->name(), "test_rt_b");
  EXPECT_EQ(p.backends()[1]->name(), "test_rt_a");
  EXPECT_EQ(p.backends()[2]->name(), "cpu_ref");
  EXPECT_EQ(testing_rt::received_settings()["test_rt_a"], claim({"test_rt.neg"}));
  EXPECT_TRUE(testing_rt::received_settings()["test_rt_b"].is_null());
  EXPECT_EQ(make({}).backends().size(), 1u);
}

TEST(Partitioner, FactoryErrorNamesTheBackend) {
  Value s = Value::object();
  s.set("fail", Value(true));
  BackendOptions o;
  o.backends = {"test_rt_a"};
  o.settings["test_rt_a"] = s;
  Result<Partitioner> p = Partitioner::from_options(o);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find("backend 'test_rt_a'"), std::string::npos) << p.error().message();
}

TEST(Partitioner, DisconnectedClaimedNodesFormTwoPartitions) {
  // p = scale2(x), q = scale2(y) are claimed by A but not connected to each other; r = add(p, q) → ref.
  MethodDef m{"m", {in_spec("x", f32({4})), in_spec("y", f32({4}))}, {out_spec("r", f32({4}))},
              {{"test_rt.scale2", {"x"}, {"p"}, {}}, {"test_rt.scale2", {"y"}, {"q"}, {}},
               {"test_rt.add", {"p", "q"}, {"r"}, {}}}};
  Partitioner p = make({"test_rt_a"}, {{"test_rt_a", claim({"test_rt.scale2"})}});
  auto parts = p.partition(m, *owned_constants());
  ASSERT_TRUE(parts.ok()) << parts.error().to_string();
  ASSERT_EQ(parts->size(), 3u);
  EXPECT_EQ(backend_names(p, *parts), (std::vector<std::string>{"test_rt_a", "test_rt_a", "cpu_ref"}));
  EXPECT_EQ((*parts)[0].nodes, std::vector<size_t>{0});
  EXPECT_EQ((*parts)[1].nodes, std::vector<size_t>{1});
  EXPECT_EQ((*parts)[2].nodes, std::vector<size_t>{2});
}

TEST(Partitioner, ConnectedClaimedNodesMerge) {
  // a = scale2(x); b = neg(x); c = add(a, b); d = scale2(c): A claims scale2 and add → {0, 2, 3}, ref {1}.
  MethodDef m{"m", {in_spec("x", f32({4}))}, {out_spec("d", f32({4}))},
              {{"test_rt.scale2", {"x"}, {"a"}, {}}, {"test_rt.neg", {"x"}, {"b"}, {}},
               {"test_rt.add", {"a", "b"}, {"c"}, {}}, {"test_rt.scale2", {"c"}, {"d"}, {}}}};
  Partitioner p = make({"test_rt_a"}, {{"test_rt_a", claim({"test_rt.scale2", "test_rt.add"})}});
  auto parts = p.partition(m, *owned_constants());
  ASSERT_TRUE(parts.ok()) << parts.error().to_string();
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ(backend_names(p, *parts), (std::vector<std::string>{"cpu_ref", "test_rt_a"}));
  EXPECT_EQ((*parts)[1].nodes, (std::vector<size_t>{0, 2, 3}));
}

TEST(Partitioner, SplitsWhenMergingWouldCreateACycle) {
  // a = scale2(x) [A]; b = neg(a) [ref]; c = add(a, b) [A]. {a, c} are connected, but merging them would
  // make A depend on ref and ref on A, so A is split around the ref partition.
  MethodDef m{"m", {in_spec("x", f32({4}))}, {out_spec("c", f32({4}))},
              {{"test_rt.scale2", {"x"}, {"a"}, {}}, {"test_rt.neg", {"a"}, {"b"}, {}},
               {"test_rt.add", {"a", "b"}, {"c"}, {}}}};
  Partitioner p = make({"test_rt_a"}, {{"test_rt_a", claim({"test_rt.scale2", "test_rt.add"})}});
  auto parts = p.partition(m, *owned_constants());
  ASSERT_TRUE(parts.ok()) << parts.error().to_string();
  EXPECT_EQ(backend_names(p, *parts), (std::vector<std::string>{"test_rt_a", "cpu_ref", "test_rt_a"}));
}

TEST(Partitioner, InPlaceUpdateRunsAfterEarlierReadersInOtherPartitions) {
  // n0: a = neg(x) [ref]; n1: r = scale2(s) [A] reads s; n2: s2 = inplace_add(s, a) [ref] overwrites s.
  // The ref nodes merge, but the merged partition must run after A (write-after-read on s).
  MethodDef m{"m",
              {in_spec("x", f32({4})), in_spec("s", f32({4}), IORole::kState)},
              {out_spec("r", f32({4})), state_out("s2", f32({4}), "s")},
              {{"test_rt.neg", {"x"}, {"a"}, {}}, {"test_rt.scale2", {"s"}, {"r"}, {}},
               {"test_rt.inplace_add", {"s", "a"}, {"s2"}, {}}}};
  Partitioner p = make({"test_rt_a"}, {{"test_rt_a", claim({"test_rt.scale2"})}});
  auto parts = p.partition(m, *owned_constants());
  ASSERT_TRUE(parts.ok()) << parts.error().to_string();
  EXPECT_EQ(backend_names(p, *parts), (std::vector<std::string>{"test_rt_a", "cpu_ref"}));
  EXPECT_EQ((*parts)[1].nodes, (std::vector<size_t>{0, 2}));
}

TEST(Partitioner, NodeNoBackendSupportsIsAnError) {
  MethodDef m{"m", {in_spec("x", f32({4}))}, {out_spec("y", f32({4}))}, {{"test_rt.noref", {"x"}, {"y"}, {}}}};
  auto parts = make({}).partition(m, *owned_constants());
  ASSERT_FALSE(parts.ok());
  EXPECT_EQ(parts.error().code(), ErrorCode::kUnsupported);
  EXPECT_NE(parts.error().message().find("node 0 (op 'test_rt.noref')"), std::string::npos) << parts.error().message();
}

// Random DAGs with random claims: the partitions must cover every node once, hold one backend that
// supports all their nodes, be weakly connected, and only read results of earlier partitions.
TEST(Partitioner, RandomGraphsGiveValidPartitions) {
  std::mt19937 rng(99);
  const char* ops[] = {"test_rt.add", "test_rt.scale2", "test_rt.neg"};
  for (int round = 0; round < 300; ++round) {
    MethodDef m{"r", {in_spec("x0", f32({2})), in_spec("x1", f32({2}))}, {}, {}};
    std::vector<std::string> values = {"x0", "x1"};
    size_t n = 1 + rng() % 25;
    for (size_t i = 0; i < n; ++i) {
      const char* op = ops[rng() % 3];
      std::string name = "v";
      name += std::to_string(i);  // not "v" + to_string(i): GCC 12 raises a false -Wrestrict on it
      NodeDef node{op, {}, {name}, {}};
      int arity = std::string(op) == "test_rt.add" ? 2 : 1;
      for (int k = 0; k < arity; ++k) node.inputs.push_back(values[rng() % values.size()]);
      values.push_back(node.outputs[0]);
      m.nodes.push_back(node);
    }
    m.outputs.push_back(out_spec(values.back(), f32({2})));
    std::map<std::string, Value> settings = {{"test_rt_a", claim({ops[rng() % 3]})},
                                             {"test_rt_b", claim({ops[rng() % 3], ops[rng() % 3]})}};
    Partitioner p = make({"test_rt_a", "test_rt_b"}, settings);
    auto parts = p.partition(m, *owned_constants());
    ASSERT_TRUE(parts.ok()) << parts.error().to_string();

    std::map<std::string, size_t> producer_part;
    std::set<size_t> seen;
    for (size_t q = 0; q < parts->size(); ++q) {
      const Partition& part = (*parts)[q];
      ASSERT_FALSE(part.nodes.empty());
      ASSERT_TRUE(std::is_sorted(part.nodes.begin(), part.nodes.end()));
      std::set<std::string> local;
      for (size_t i : part.nodes) {
        ASSERT_TRUE(seen.insert(i).second) << "node " << i << " twice";
        const NodeDef& node = m.nodes[i];
        // Highest-priority supporting backend owns it.
        size_t want = 0;
        std::vector<const TensorType*> none(node.inputs.size(), nullptr);
        while (!p.backends()[want]->supports(node, none)) ++want;
        ASSERT_EQ(part.backend, want) << "round " << round << " node " << i;
        for (const std::string& in : node.inputs) {
          if (in[0] == 'x' || local.count(in)) continue;
          ASSERT_TRUE(producer_part.count(in)) << "round " << round << ": partition " << q << " reads '" << in
                                               << "' before it is produced";
          ASSERT_LT(producer_part[in], q);
        }
        local.insert(node.outputs[0]);
      }
      for (const std::string& v : local) producer_part[v] = q;
      // Weak connectivity inside the partition.
      std::vector<size_t> comp(part.nodes.size());
      for (size_t k = 0; k < comp.size(); ++k) comp[k] = k;
      std::function<size_t(size_t)> find = [&](size_t k) { return comp[k] == k ? k : comp[k] = find(comp[k]); };
      for (size_t a = 0; a < part.nodes.size(); ++a)
        for (size_t b = 0; b < part.nodes.size(); ++b)
          for (const std::string& in : m.nodes[part.nodes[b]].inputs)
            if (in == m.nodes[part.nodes[a]].outputs[0]) comp[find(a)] = find(b);
      std::set<size_t> roots;
      for (size_t k = 0; k < comp.size(); ++k) roots.insert(find(k));
      ASSERT_EQ(roots.size(), 1u) << "round " << round << ": partition " << q << " is not connected";
    }
    ASSERT_EQ(seen.size(), n);
  }
}

}  // namespace
}  // namespace hfs

namespace hfs {
namespace {

// A delegate whose output_order() is no permutation of its outputs would bind the wrong buffers: loading
// the method fails, naming the partition, its backend and the order it got.
TEST(PartitionerDelegate, MalformedOutputOrderIsAnError) {
  auto program = Program::load(test::tiny_program({"llama", 4, 24}));
  ASSERT_TRUE(program.ok()) << program.error().to_string();
  for (const std::vector<int64_t>& order : {std::vector<int64_t>{1}, {0, 0}, {-1}}) {
    MethodOptions mo;
    mo.backends.backends = {test::kFaultBackend, "cpu_ref"};
    mo.backends.settings[test::kFaultBackend] = test::fault_settings("l1.attn_norm", order);
    auto m = Method::load(*program, "decode", mo);
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.error().code(), ErrorCode::kInternal);
    const std::string msg = m.error().message();
    EXPECT_NE(msg.find("backend 'test_fault'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("expected a permutation of 0..0 (1 outputs)"), std::string::npos) << msg;
  }
  // The same node with its own order loads.
  MethodOptions ok;
  ok.backends.backends = {test::kFaultBackend, "cpu_ref"};
  ok.backends.settings[test::kFaultBackend] = test::fault_settings("l1.attn_norm");
  EXPECT_TRUE(Method::load(*program, "decode", ok).ok());
}

}  // namespace
}  // namespace hfs
