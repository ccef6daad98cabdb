#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include <cstdio>

#include "hfstatic/ext/method.h"
#include "hfstatic/program.h"
#include "hfstatic/ext/program_writer.h"
#include "runtime/test_support.h"

namespace hfs {
namespace {

using testing_rt::claim;
using testing_rt::executions;
using testing_rt::f32;
using testing_rt::in_spec;
using testing_rt::out_spec;
using testing_rt::state_out;

MethodOptions with_backend(const std::string& name, Value settings) {
  MethodOptions o;
  o.backends.backends = {name};
  o.backends.settings[name] = std::move(settings);
  return o;
}

std::unique_ptr<Method> create_ok(MethodDef def, const MethodOptions& o = {},
                                  std::shared_ptr<ConstantStore> c = owned_constants()) {
  Result<std::unique_ptr<Method>> m = Method::create(std::move(def), std::move(c), o);
  EXPECT_TRUE(m.ok()) << m.error().to_string();
  return m.ok() ? std::move(m.value()) : nullptr;
}

TensorView view(std::vector<float>& v) { return TensorView(v.data(), DType::kF32, Shape{static_cast<int64_t>(v.size())}); }

// The A delegate returns its outputs in reversed order; results still land in program order.
TEST(Method, DelegateOutputOrderIsMappedBackToProgramOrder) {
  // a = 2x [A]; b = a + x [A]; c = -b [ref]. Outputs in program order: b, a, c.
  MethodDef def{"m", {in_spec("x", f32({4}))}, {out_spec("b", f32({4})), out_spec("a", f32({4})), out_spec("c", f32({4}))},
                {{"test_rt.scale2", {"x"}, {"a"}, {}}, {"test_rt.add", {"a", "x"}, {"b"}, {}},
                 {"test_rt.neg", {"b"}, {"c"}, {}}}};
  auto m = create_ok(def, with_backend("test_rt_a", claim({"test_rt.scale2", "test_rt.add"})));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->plan().partition_backends, (std::vector<std::string>{"test_rt_a", "cpu_ref"}));
  std::vector<float> x = {1, -2, 3.5f, 0}, b(4), a(4), c(4);
  std::vector<TensorView> in = {view(x)}, out = {view(b), view(a), view(c)};
  ASSERT_TRUE(m->execute(in, out).ok());
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_FLOAT_EQ(a[i], 2 * x[i]);
    EXPECT_FLOAT_EQ(b[i], 3 * x[i]);
    EXPECT_FLOAT_EQ(c[i], -3 * x[i]);
  }
}

// Caller passes, then backend passes in priority order, then partitioning and compilation.
TEST(Method, PassesRunCallerFirstThenBackendsInPriorityOrder) {
  MethodDef def{"m", {in_spec("x", f32({4}))}, {out_spec("y", f32({4}))}, {{"test_rt.scale2", {"x"}, {"y"}, {}}}};
  MethodOptions o;
  o.backends.backends = {"test_rt_b", "test_rt_a"};
  o.backends.settings["test_rt_a"] = claim({"test_rt.neg"});
  o.backends.settings["test_rt_b"] = claim({"test_rt.neg"});
  auto record = [](std::string n) {
    return Pass{n, [n](MethodDef&, ConstantStore&) -> Status {
                  testing_rt::test_log().push_back("caller:" + n);
                  return Ok{};
                }};
  };
  o.passes = {record("first"), record("second")};
  // A caller pass that rewrites the graph: y = scale2(x) becomes y = -(2x) with an extra node.
  o.passes.push_back(Pass{"negate", [](MethodDef& m, ConstantStore&) -> Status {
                            testing_rt::test_log().push_back("caller:negate");
                            m.nodes[0].outputs = {"t"};
                            m.nodes.push_back(NodeDef{"test_rt.neg", {"t"}, {"y"}, {}});
                            return Ok{};
                          }});
  testing_rt::test_log().clear();
  auto m = create_ok(def, o);
  ASSERT_TRUE(m);
  const std::vector<std::string>& log = testing_rt::test_log();
  const std::vector<std::string> lowering = {"caller:first", "caller:second", "caller:negate", "pass:test_rt_b",
                                             "pass:test_rt_a"};
  ASSERT_GT(log.size(), lowering.size() + 1);
  EXPECT_EQ(std::vector<std::string>(log.begin(), log.begin() + 5), lowering);
  // Then partitioning (the highest-priority backend is asked first), then compilation.
  EXPECT_EQ(log[5], "supports:test_rt_b");
  for (size_t i = 5; i + 1 < log.size(); ++i) EXPECT_EQ(log[i].rfind("supports:", 0), 0u) << log[i];
  EXPECT_EQ(log.back(), "compile:test_rt_b");
  EXPECT_EQ(m->def().nodes.size(), 2u);
  EXPECT_EQ(m->plan().partition_backends, (std::vector<std::string>{"cpu_ref", "test_rt_b"}));
  std::vector<float> x = {1, 2, 3, 4}, y(4);
  std::vector<TensorView> in = {view(x)}, out = {view(y)};
  ASSERT_TRUE(m->execute(in, out).ok());
  for (size_t i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(y[i], -2 * x[i]);
}

TEST(Method, FailingPassAndSignatureChangesAreReported) {
  MethodDef def{"m", {in_spec("x", f32({4}))}, {out_spec("y", f32({4}))}, {{"test_rt.scale2", {"x"}, {"y"}, {}}}};
  MethodOptions o;
  o.passes = {Pass{"boom", [](MethodDef&, ConstantStore&) -> Status {
                     return make_error(ErrorCode::kInvalidArgument, "bad graph");
                   }}};
  auto r = Method::create(def, owned_constants(), o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("pass 'boom'"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("bad graph"), std::string::npos);
  o.passes = {Pass{"rename", [](MethodDef& m, ConstantStore&) -> Status {
                     m.inputs[0].type.shape = Shape{8};
                     return Ok{};
                   }}};
  r = Method::create(def, owned_constants(), o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("'rename' changed the method's I/O signature"), std::string::npos)
      << r.error().message();
}

// A state output is the input's own buffer; the in-place update is visible in the input.
TEST(Method, StateOutputsAliasTheInputBuffer) {
  // t = 2d [A]; s2 = s += t [ref, in place]; y = 2 * s2 [A].
  MethodDef def{"m",
                {in_spec("s", f32({4}), IORole::kState), in_spec("d", f32({4}))},
                {out_spec("y", f32({4})), state_out("s2", f32({4}), "s")},
                {{"test_rt.scale2", {"d"}, {"t"}, {}}, {"test_rt.inplace_add", {"s", "t"}, {"s2"}, {}},
                 {"test_rt.scale2", {"s2"}, {"y"}, {}}}};
  for (const char* backend : {"cpu_ref", "test_rt_a"}) {
    MethodOptions o = std::string(backend) == "cpu_ref" ? MethodOptions{} : with_backend(backend, claim({"test_rt.scale2"}));
    auto m = create_ok(def, o);
    ASSERT_TRUE(m);
    std::vector<float> s = {1, 2, 3, 4}, d = {0.5f, -1, 0, 2}, y(4);
    std::vector<TensorView> in = {view(s), view(d)}, out = {view(y), TensorView()};
    std::vector<float> expect = s;
    for (int step = 0; step < 3; ++step) {
      ASSERT_TRUE(m->execute(in, out).ok());
      for (size_t i = 0; i < 4; ++i) expect[i] += 2 * d[i];
      EXPECT_EQ(out[1].ptr, s.data());
      EXPECT_EQ(out[1].shape, (Shape{4}));
      for (size_t i = 0; i < 4; ++i) {
        EXPECT_FLOAT_EQ(s[i], expect[i]) << backend << " step " << step;
        EXPECT_FLOAT_EQ(y[i], 2 * expect[i]) << backend << " step " << step;
      }
    }
  }
}

TEST(Method, InPlaceUpdateWaitsForEarlierReaders) {
  // r = 2s [A] must read s before s += -x [ref] overwrites it, although no data edge says so.
  MethodDef def{"m",
                {in_spec("x", f32({4})), in_spec("s", f32({4}), IORole::kState)},
                {out_spec("r", f32({4})), state_out("s2", f32({4}), "s")},
                {{"test_rt.neg", {"x"}, {"a"}, {}}, {"test_rt.scale2", {"s"}, {"r"}, {}},
                 {"test_rt.inplace_add", {"s", "a"}, {"s2"}, {}}}};
  auto m = create_ok(def, with_backend("test_rt_a", claim({"test_rt.scale2"})));
  ASSERT_TRUE(m);
  std::vector<float> x = {1, 1, 1, 1}, s = {10, 20, 30, 40}, r(4);
  std::vector<TensorView> in = {view(x), view(s)}, out = {view(r), TensorView()};
  ASSERT_TRUE(m->execute(in, out).ok());
  EXPECT_EQ(r, (std::vector<float>{20, 40, 60, 80}));
  EXPECT_EQ(s, (std::vector<float>{9, 19, 29, 39}));
}

// Claimed nodes in two disconnected components → two partitions of that backend.
TEST(Method, DisconnectedClaimsGiveTwoPartitions) {
  MethodDef def{"m", {in_spec("x", f32({4})), in_spec("y", f32({4}))}, {out_spec("r", f32({4}))},
                {{"test_rt.scale2", {"x"}, {"p"}, {}}, {"test_rt.scale2", {"y"}, {"q"}, {}},
                 {"test_rt.add", {"p", "q"}, {"r"}, {}}}};
  auto m = create_ok(def, with_backend("test_rt_a", claim({"test_rt.scale2"})));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->plan().partition_backends, (std::vector<std::string>{"test_rt_a", "test_rt_a", "cpu_ref"}));
  std::vector<float> x = {1, 2, 3, 4}, y = {-1, 0, 1, 2}, r(4);
  std::vector<TensorView> in = {view(x), view(y)}, out = {view(r)};
  ASSERT_TRUE(m->execute(in, out).ok());
  for (size_t i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(r[i], 2 * x[i] + 2 * y[i]);
}

// Values crossing partitions share arena bytes when their lifetimes do not meet.
TEST(Method, ArenaSharesBytesAlongAChain) {
  // x → 2x [A] → neg [ref] → 2x [A] → neg [ref] → 2x [A] = out: four boundary values of 1 KiB each.
  MethodDef def{"m", {in_spec("x", f32({256}))}, {out_spec("o", f32({256}))},
                {{"test_rt.scale2", {"x"}, {"a"}, {}}, {"test_rt.neg", {"a"}, {"b"}, {}},
                 {"test_rt.scale2", {"b"}, {"c"}, {}}, {"test_rt.neg", {"c"}, {"d"}, {}},
                 {"test_rt.scale2", {"d"}, {"o"}, {}}}};
  auto m = create_ok(def, with_backend("test_rt_a", claim({"test_rt.scale2"})));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->plan().partition_backends.size(), 5u);
  EXPECT_EQ(m->plan().unshared_bytes, 4u * 1024);
  EXPECT_EQ(m->plan().arena_bytes, 2u * 1024);  // a/c and b/d alternate
  std::vector<float> x(256), o(256);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 0.25f - 7;
  std::vector<TensorView> in = {TensorView(x.data(), DType::kF32, Shape{256})};
  std::vector<TensorView> out = {TensorView(o.data(), DType::kF32, Shape{256})};
  ASSERT_TRUE(m->execute(in, out).ok());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_FLOAT_EQ(o[i], 8 * x[i]);
}

TEST(Method, ReferenceDelegateSharesScratchAndAliasesViews) {
  // All on cpu_ref: a = 2x; v = view(a) [2, 2]; w = view(v) [4]; b = -w; c = 2b; y = -c.
  // Scratch: a (with its views) and b are live together, then c reuses a's bytes: b at 64, end 64 + 16.
  Attrs v22, v4;
  v22["shape"] = Value::int_array({2, 2});
  v4["shape"] = Value::int_array({4});
  MethodDef def{"m", {in_spec("x", f32({4}))}, {out_spec("y", f32({4}))},
                {{"test_rt.scale2", {"x"}, {"a"}, {}}, {"test_rt.view", {"a"}, {"v"}, v22},
                 {"test_rt.view", {"v"}, {"w"}, v4}, {"test_rt.neg", {"w"}, {"b"}, {}},
                 {"test_rt.scale2", {"b"}, {"c"}, {}}, {"test_rt.neg", {"c"}, {"y"}, {}}}};
  auto m = create_ok(def);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->plan().partition_backends, (std::vector<std::string>{"cpu_ref"}));
  EXPECT_EQ(m->plan().arena_bytes, 0u);
  EXPECT_EQ(m->plan().delegate_scratch, 80u);
  std::vector<float> x = {1, 2, 3, 4}, y(4);
  std::vector<TensorView> in = {view(x)}, out = {view(y)};
  ASSERT_TRUE(m->execute(in, out).ok());
  for (size_t i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(y[i], 4 * x[i]);
}

TEST(Method, ViewsAcrossPartitionsShareTheArenaSlot) {
  // a = 2x [A]; v = view(a) [ref, must be a's buffer]; o = 2v [A].
  Attrs v22;
  v22["shape"] = Value::int_array({2, 2});
  MethodDef def{"m", {in_spec("x", f32({4}))}, {out_spec("o", f32({2, 2}))},
                {{"test_rt.scale2", {"x"}, {"a"}, {}}, {"test_rt.view", {"a"}, {"v"}, v22},
                 {"test_rt.scale2", {"v"}, {"o"}, {}}}};
  auto m = create_ok(def, with_backend("test_rt_a", claim({"test_rt.scale2"})));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->plan().partition_backends, (std::vector<std::string>{"test_rt_a", "cpu_ref", "test_rt_a"}));
  EXPECT_EQ(m->plan().unshared_bytes, 64u);  // a and v are one slot
  std::vector<float> x = {1, 2, 3, 4}, o(4);
  std::vector<TensorView> in = {view(x)}, out = {TensorView(o.data(), DType::kF32, Shape{2, 2})};
  Status st = m->execute(in, out);
  ASSERT_TRUE(st.ok()) << st.error().to_string();
  for (size_t i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(o[i], 4 * x[i]);
}

TEST(Method, OutputsThatAreInputsAreCopied) {
  auto consts = owned_constants();
  std::vector<float> w = {5, 6, 7, 8};
  ASSERT_TRUE(consts->add("w", f32({4}), std::as_bytes(std::span(w))).ok());
  MethodDef def{"m", {in_spec("x", f32({4}))}, {out_spec("x", f32({4})), out_spec("y", f32({4}))},
                {{"test_rt.add", {"x", "w"}, {"y"}, {}}}};
  auto m = create_ok(def, {}, consts);
  ASSERT_TRUE(m);
  std::vector<float> x = {1, 2, 3, 4}, o0(4), o1(4);
  std::vector<TensorView> in = {view(x)}, out = {view(o0), view(o1)};
  ASSERT_TRUE(m->execute(in, out).ok());
  EXPECT_EQ(o0, x);
  EXPECT_EQ(o1, (std::vector<float>{6, 8, 10, 12}));
}

// The verifier rejects outputs that name a constant or repeat another output: a method must compute what
// it returns, and each output owns its caller buffer.
TEST(Method, RejectsConstantAndRepeatedOutputs) {
  auto consts = owned_constants();
  std::vector<float> w = {5, 6, 7, 8};
  ASSERT_TRUE(consts->add("w", f32({4}), std::as_bytes(std::span(w))).ok());
  MethodDef constant_out{"m", {in_spec("x", f32({4}))}, {out_spec("w", f32({4}))}, {}};
  auto r = Method::create(constant_out, consts);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kOutputNotProduced);
  MethodDef repeated{"m", {in_spec("x", f32({4}))}, {out_spec("y", f32({4})), out_spec("y", f32({4}))},
                     {{"test_rt.add", {"x", "w"}, {"y"}, {}}}};
  r = Method::create(repeated, consts);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kDuplicateName);
}

TEST(Method, MethodWithoutNodesPassesValuesThrough) {
  MethodDef def{"m", {in_spec("x", f32({4})), in_spec("s", f32({4}), IORole::kState)},
                {out_spec("x", f32({4})), state_out("s", f32({4}), "s")}, {}};
  auto m = create_ok(def);
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->plan().partition_backends.empty());
  std::vector<float> x = {1, 2, 3, 4}, s = {5, 6, 7, 8}, o(4);
  std::vector<TensorView> in = {view(x), view(s)}, out = {view(o), TensorView()};
  ASSERT_TRUE(m->execute(in, out).ok());
  EXPECT_EQ(o, x);
  EXPECT_EQ(out[1].ptr, s.data());
}

// Random graphs, random claims: every output must match a naive interpreter written here, whatever the
// partitioning, arena sharing and delegate output order.
TEST(Method, RandomGraphsMatchANaiveInterpreter) {
  std::mt19937 rng(7);
  const char* ops[] = {"test_rt.add", "test_rt.scale2", "test_rt.neg"};
  for (int round = 0; round < 150; ++round) {
    MethodDef def{"r", {in_spec("x0", f32({3})), in_spec("x1", f32({3}))}, {}, {}};
    std::vector<std::string> values = {"x0", "x1"};
    const size_t n = 1 + rng() % 20;
    for (size_t i = 0; i < n; ++i) {
      const char* op = ops[rng() % 3];
      std::string name = "v";
      name += std::to_string(i);
      NodeDef node{op, {}, {name}, {}};
      for (int k = 0; k < (std::string(op) == "test_rt.add" ? 2 : 1); ++k)
        node.inputs.push_back(values[rng() % values.size()]);
      values.push_back(name);
      def.nodes.push_back(node);
    }
    // Distinct outputs (the verifier rejects an output listed twice).
    std::vector<std::string> pool = values;
    std::shuffle(pool.begin(), pool.end(), rng);
    const size_t n_out = std::min<size_t>(1 + rng() % 4, pool.size());
    for (size_t k = 0; k < n_out; ++k) def.outputs.push_back(out_spec(pool[k], f32({3})));
    MethodOptions o;
    o.backends.backends = {"test_rt_a", "test_rt_b"};
    o.backends.settings["test_rt_a"] = claim({ops[rng() % 3]});
    o.backends.settings["test_rt_b"] = claim({ops[rng() % 3]});

    // Naive interpreter.
    std::map<std::string, std::vector<float>> env;
    env["x0"] = {1.5f, -2, 0.25f};
    env["x1"] = {-1, 3, 0.5f};
    for (const NodeDef& node : def.nodes) {
      std::vector<float> r(3);
      for (size_t j = 0; j < 3; ++j) {
        float a = env[node.inputs[0]][j];
        r[j] = node.op == "test_rt.add" ? a + env[node.inputs[1]][j] : node.op == "test_rt.scale2" ? 2 * a : -a;
      }
      env[node.outputs[0]] = r;
    }

    auto m = create_ok(def, o);
    ASSERT_TRUE(m) << "round " << round;
    EXPECT_LE(m->plan().arena_bytes, m->plan().unshared_bytes);
    std::vector<float> x0 = env["x0"], x1 = env["x1"];
    std::vector<std::vector<float>> results(n_out, std::vector<float>(3, 12345.f));
    std::vector<TensorView> in = {view(x0), view(x1)}, out;
    for (auto& r : results) out.push_back(view(r));
    for (int rep = 0; rep < 2; ++rep) {  // a second run must not see the first run's leftovers
      Status st = m->execute(in, out);
      ASSERT_TRUE(st.ok()) << st.error().to_string();
      for (size_t k = 0; k < n_out; ++k)
        ASSERT_EQ(results[k], env[def.outputs[k].name]) << "round " << round << " output " << k;
    }
  }
}

// The same with views and in-place updates (of the state input and of intermediates): once a buffer is
// updated in place, later nodes only see the new version, as the verifier requires.
TEST(Method, RandomAliasingGraphsMatchANaiveInterpreter) {
  std::mt19937 rng(11);
  const char* ops[] = {"test_rt.add", "test_rt.scale2", "test_rt.neg", "test_rt.view", "test_rt.inplace_add"};
  Attrs same_shape;
  same_shape["shape"] = Value::int_array({3});
  for (int round = 0; round < 200; ++round) {
    MethodDef def{"r", {in_spec("x", f32({3})), in_spec("s", f32({3}), IORole::kState)}, {}, {}};
    // Live values and the buffer group (alias root) each belongs to.
    std::vector<std::pair<std::string, std::string>> pool = {{"x", "x"}, {"s", "s"}};
    std::string state = "s";
    const size_t n = 1 + rng() % 16;
    for (size_t i = 0; i < n; ++i) {
      std::string op = ops[rng() % 5];
      std::string name = "v";
      name += std::to_string(i);
      auto [a, group] = pool[rng() % pool.size()];
      if (op == "test_rt.inplace_add") {
        if (group == "x") continue;  // x is read-only
        std::vector<std::string> others;
        for (const auto& [v, g] : pool)
          if (g != group) others.push_back(v);
        if (others.empty()) continue;
        def.nodes.push_back(NodeDef{op, {a, others[rng() % others.size()]}, {name}, {}});
        std::erase_if(pool, [&, g = group](const auto& e) { return e.second == g; });  // old versions are dead
        pool.emplace_back(name, group);
        if (group == "s") state = name;
      } else if (op == "test_rt.view") {
        def.nodes.push_back(NodeDef{op, {a}, {name}, same_shape});
        pool.emplace_back(name, group);
      } else {
        NodeDef node{op, {a}, {name}, {}};
        if (op == "test_rt.add") node.inputs.push_back(pool[rng() % pool.size()].first);
        def.nodes.push_back(node);
        pool.emplace_back(name, name);
      }
    }
    // Distinct plain outputs, none the state value (the verifier rejects an output listed twice).
    std::vector<std::string> names;
    for (const auto& pv : pool)
      if (pv.first != state && std::find(names.begin(), names.end(), pv.first) == names.end()) names.push_back(pv.first);
    std::shuffle(names.begin(), names.end(), rng);
    const size_t n_out = std::min<size_t>(1 + rng() % 3, names.size());
    for (size_t k = 0; k < n_out; ++k) def.outputs.push_back(out_spec(names[k], f32({3})));
    def.outputs.push_back(state_out(state, f32({3}), "s"));
    MethodOptions o;
    o.backends.backends = {"test_rt_a", "test_rt_b"};
    o.backends.settings["test_rt_a"] = claim({ops[rng() % 3]});
    o.backends.settings["test_rt_b"] = claim({ops[rng() % 3]});

    std::map<std::string, std::vector<float>> env;
    env["x"] = {1.5f, -2, 0.25f};
    env["s"] = {-1, 3, 0.5f};
    for (const NodeDef& node : def.nodes) {
      std::vector<float> r(3);
      for (size_t j = 0; j < 3; ++j) {
        float a = env[node.inputs[0]][j];
        if (node.op == "test_rt.add" || node.op == "test_rt.inplace_add") r[j] = a + env[node.inputs[1]][j];
        else if (node.op == "test_rt.scale2") r[j] = 2 * a;
        else if (node.op == "test_rt.neg") r[j] = -a;
        else r[j] = a;
      }
      env[node.outputs[0]] = r;
    }

    auto m = create_ok(def, o);
    ASSERT_TRUE(m) << "round " << round;
    std::vector<float> x = env["x"], st = env["s"];
    std::vector<std::vector<float>> results(n_out, std::vector<float>(3, 12345.f));
    std::vector<TensorView> in = {view(x), view(st)}, out;
    for (auto& r : results) out.push_back(view(r));
    out.emplace_back();
    Status status = m->execute(in, out);
    ASSERT_TRUE(status.ok()) << "round " << round << ": " << status.error().to_string();
    for (size_t k = 0; k < n_out; ++k)
      ASSERT_EQ(results[k], env[def.outputs[k].name]) << "round " << round << " output " << k;
    ASSERT_EQ(out[n_out].ptr, st.data());
    ASSERT_EQ(st, env[state]) << "round " << round;
    ASSERT_EQ(x, env["x"]) << "round " << round << ": read-only input changed";
  }
}

// A plain output bound with a null pointer is not wanted: the partitions that only feed it are skipped
// (a prompt chunk's LM head), the state update and every wanted output still happen.
TEST(Method, UnwantedOutputsSkipThePartitionsThatOnlyFeedThem) {
  // t = 2x [A]; s2 = s += t [ref]; u = -t [ref]; y = 2u [A]; z = -x [ref] (its own partition).
  MethodDef def{"m",
                {in_spec("x", f32({4})), in_spec("s", f32({4}), IORole::kState)},
                {out_spec("y", f32({4})), state_out("s2", f32({4}), "s"), out_spec("z", f32({4}))},
                {{"test_rt.scale2", {"x"}, {"t"}, {}},
                 {"test_rt.inplace_add", {"s", "t"}, {"s2"}, {}},
                 {"test_rt.neg", {"t"}, {"u"}, {}},
                 {"test_rt.scale2", {"u"}, {"y"}, {}},
                 {"test_rt.neg", {"x"}, {"z"}, {}}}};
  auto m = create_ok(def, with_backend("test_rt_a", claim({"test_rt.scale2"})));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->plan().partition_backends,
            (std::vector<std::string>{"test_rt_a", "cpu_ref", "cpu_ref", "test_rt_a", "cpu_ref"}));
  EXPECT_TRUE(m->can_skip_output(0));   // y: its two partitions
  EXPECT_FALSE(m->can_skip_output(1));  // the state output
  EXPECT_TRUE(m->can_skip_output(2));   // z: its own partition
  std::vector<float> x = {1, -2, 3, 0.5f}, s = {10, 20, 30, 40}, y(4, 7.0f), z(4, 7.0f);
  const TensorView none(static_cast<void*>(nullptr), DType::kF32, Shape{4});
  std::vector<float> expect_s = s;
  auto run = [&](bool want_y, bool want_z) {
    std::vector<TensorView> in = {view(x), view(s)}, out = {want_y ? view(y) : none, TensorView(), want_z ? view(z) : none};
    executions()["test_rt_a"] = 0;
    Status st = m->execute(in, out);
    ASSERT_TRUE(st.ok()) << st.error().to_string();
    for (size_t i = 0; i < 4; ++i) expect_s[i] += 2 * x[i];
    EXPECT_EQ(s, expect_s);  // the state update runs whatever is wanted
    EXPECT_EQ(out[1].ptr, s.data());
  };
  run(true, true);
  EXPECT_EQ(executions()["test_rt_a"], 2);
  for (size_t i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(y[i], -4 * x[i]);
  std::fill(y.begin(), y.end(), 7.0f);
  std::fill(z.begin(), z.end(), 7.0f);
  run(false, true);
  EXPECT_EQ(executions()["test_rt_a"], 1);  // t's partition (it feeds the state), not y's
  EXPECT_EQ(y, std::vector<float>(4, 7.0f));
  for (size_t i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(z[i], -x[i]);
  run(false, false);
  EXPECT_EQ(executions()["test_rt_a"], 1);
  run(true, false);
  EXPECT_EQ(executions()["test_rt_a"], 2);
  for (size_t i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(y[i], -4 * x[i]);
}

// An unwanted output cannot be skipped when its partition must run anyway and computes it in the
// caller's buffer; nor when a wanted output is copied from it.
TEST(Method, UnwantedOutputThatItsPartitionStillWritesIsABindingError) {
  // a = 2x, b = 2a, both outputs, one partition.
  MethodDef def{"m", {in_spec("x", f32({4}))}, {out_spec("a", f32({4})), out_spec("b", f32({4}))},
                {{"test_rt.scale2", {"x"}, {"a"}, {}}, {"test_rt.scale2", {"a"}, {"b"}, {}}}};
  auto m = create_ok(def);
  ASSERT_TRUE(m);
  EXPECT_FALSE(m->can_skip_output(0));
  EXPECT_FALSE(m->can_skip_output(1));  // valid, but the one partition runs for a anyway
  std::vector<float> x = {1, 2, 3, 4}, b(4);
  std::vector<TensorView> in = {view(x)}, out = {TensorView(static_cast<void*>(nullptr), DType::kF32, Shape{4}), view(b)};
  Status st = m->execute(in, out);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), ErrorCode::kBadBinding);
  EXPECT_NE(st.error().message().find("output 'a': null data pointer, but partition 0"), std::string::npos)
      << st.error().message();
  // Both unwanted: nothing runs, nothing fails.
  out[1] = TensorView(static_cast<void*>(nullptr), DType::kF32, Shape{4});
  EXPECT_TRUE(m->execute(in, out).ok());
}

// Binding errors name the input/output and say expected vs got.
TEST(Method, BindingErrors) {
  MethodDef def{"m", {in_spec("x", f32({4})), in_spec("s", f32({4}), IORole::kState)},
                {out_spec("y", f32({4})), state_out("s2", f32({4}), "s")},
                {{"test_rt.scale2", {"x"}, {"y"}, {}}, {"test_rt.inplace_add", {"s", "x"}, {"s2"}, {}}}};
  auto m = create_ok(def);
  ASSERT_TRUE(m);
  std::vector<float> x(4), s(4), y(4);
  std::vector<int32_t> xi(4);
  std::vector<float> x5(5);
  auto expect_bad = [&](std::vector<TensorView> in, std::vector<TensorView> out, const std::string& needle) {
    Status st = m->execute(in, out);
    ASSERT_FALSE(st.ok()) << needle;
    EXPECT_EQ(st.error().code(), ErrorCode::kBadBinding);
    EXPECT_NE(st.error().message().find(needle), std::string::npos) << st.error().message();
  };
  expect_bad({view(x)}, {view(y), TensorView()}, "expected 2 inputs, got 1");
  expect_bad({view(x), view(s)}, {view(y)}, "expected 2 outputs, got 1");
  expect_bad({TensorView(xi.data(), DType::kI32, Shape{4}), view(s)}, {view(y), TensorView()},
             "input 'x': expected dtype f32, got i32");
  expect_bad({view(x5), view(s)}, {view(y), TensorView()}, "input 'x': expected shape [4], got [5]");
  expect_bad({view(x), TensorView(static_cast<void*>(nullptr), DType::kF32, Shape{4})}, {view(y), TensorView()},
             "input 's': null data pointer");
  expect_bad({view(x), view(s)}, {TensorView(y.data(), DType::kF32, Shape{2, 2}), TensorView()},
             "output 'y': expected shape [4], got [2, 2]");
  expect_bad({view(x), view(s)}, {TensorView(y.data(), DType::kI32, Shape{4}), TensorView()},
             "output 'y': expected dtype f32, got i32");
  // The state output's entry is ignored on input (here: an empty view), then set.
  std::vector<TensorView> in = {view(x), view(s)}, out = {view(y), TensorView()};
  EXPECT_TRUE(m->execute(in, out).ok());
  EXPECT_EQ(out[1].ptr, s.data());
}

TEST(Method, RejectsBadAliasing) {
  // In-place update of a read-only input.
  MethodDef ro{"m", {in_spec("x", f32({4})), in_spec("d", f32({4}))}, {out_spec("y", f32({4}))},
               {{"test_rt.inplace_add", {"x", "d"}, {"y"}, {}}}};
  auto r = Method::create(ro, owned_constants());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kBadAlias);
  EXPECT_NE(r.error().message().find("input 'x'"), std::string::npos) << r.error().message();
  // A state output computed in a fresh buffer instead of its input's.
  MethodDef fresh{"m", {in_spec("s", f32({4}), IORole::kState)}, {state_out("s2", f32({4}), "s")},
                  {{"test_rt.scale2", {"s"}, {"s2"}, {}}}};
  r = Method::create(fresh, owned_constants());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kBadAlias);
  EXPECT_NE(r.error().message().find("'s2'"), std::string::npos) << r.error().message();
  // In-place update of a constant.
  auto consts = owned_constants();
  std::vector<float> w(4);
  ASSERT_TRUE(consts->add("w", f32({4}), std::as_bytes(std::span(w))).ok());
  MethodDef cw{"m", {in_spec("d", f32({4}))}, {out_spec("y", f32({4}))}, {{"test_rt.inplace_add", {"w", "d"}, {"y"}, {}}}};
  r = Method::create(cw, consts);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kBadAlias);
  EXPECT_NE(r.error().message().find("constant 'w'"), std::string::npos) << r.error().message();
}

TEST(Method, UnknownBackendAndUnsupportedNode) {
  MethodDef def{"m", {in_spec("x", f32({4}))}, {out_spec("y", f32({4}))}, {{"test_rt.noref", {"x"}, {"y"}, {}}}};
  auto r = Method::create(def, owned_constants(), with_backend("nope", Value()));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kNotFound);
  r = Method::create(def, owned_constants());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kUnsupported);
  EXPECT_EQ(Method::create(def, nullptr).error().code(), ErrorCode::kInvalidArgument);
}

TEST(ConstantStore, OwnedAddFindAndErrors) {
  auto c = owned_constants();
  EXPECT_EQ(c->find("w"), nullptr);
  std::vector<float> w = {1, 2, 3};
  ASSERT_TRUE(c->add("w", f32({3}), std::as_bytes(std::span(w))).ok());
  w[0] = 100;  // the store copied
  const TensorView* v = c->find("w");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->data<float>()[0], 1.0f);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(v->ptr) % 64, 0u);
  EXPECT_EQ(v->shape, (Shape{3}));
  Status dup = c->add("w", f32({3}), std::as_bytes(std::span(w)));
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().code(), ErrorCode::kDuplicateName);
  Status size = c->add("u", f32({4}), std::as_bytes(std::span(w)));
  ASSERT_FALSE(size.ok());
  EXPECT_EQ(size.error().code(), ErrorCode::kTensorSizeMismatch);
  EXPECT_NE(size.error().message().find("expected 16 bytes, got 12"), std::string::npos) << size.error().message();
  EXPECT_EQ(c->find("w"), v);  // stable across additions
}

// add_shared: the bytes are not copied, the owner outlives the caller's handle, two stores share them.
TEST(ConstantStore, AddSharedKeepsTheOwnersBytes) {
  auto bytes = std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3});
  std::weak_ptr<std::vector<float>> alive = bytes;
  const float* data = bytes->data();
  auto a = owned_constants(), b = owned_constants();
  ASSERT_TRUE(a->add_shared("w", f32({3}), bytes, data).ok());
  ASSERT_TRUE(b->add_shared("w", f32({3}), bytes, data).ok());
  bytes.reset();
  EXPECT_FALSE(alive.expired()) << "the stores keep the owner";
  ASSERT_NE(a->find("w"), nullptr);
  EXPECT_EQ(a->find("w")->ptr, data);
  EXPECT_EQ(b->find("w")->ptr, data);
  EXPECT_EQ(a->find("w")->shape, (Shape{3}));
  Status dup = a->add_shared("w", f32({3}), alive.lock(), data);
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().code(), ErrorCode::kDuplicateName);
  EXPECT_FALSE(a->add_shared("u", f32({3}), nullptr, data).ok());
  a.reset();
  b.reset();
  EXPECT_TRUE(alive.expired()) << "and release it with the last store";
}

std::string temp_path(const char* name) {
  return std::string(HFS_BINARY_DIR) + "/runtime_test_" + name + "_" + std::to_string(getpid()) + ".hfs";
}

TEST(Method, LoadsFromAProgramWithZeroCopyConstants) {
  ProgramWriter w;
  std::vector<float> bias = {0.5f, 1, -1, 2};
  Result<std::string> bname = w.add_constant("bias", f32({4}), std::as_bytes(std::span(bias)));
  ASSERT_TRUE(bname.ok()) << bname.error().to_string();
  ASSERT_TRUE(w.add_method(MethodDef{"step", {in_spec("x", f32({4}))}, {out_spec("y", f32({4}))},
                                     {{"test_rt.add", {"x", *bname}, {"t"}, {}}, {"test_rt.scale2", {"t"}, {"y"}, {}}}})
                  .ok());
  const std::string path = temp_path("load");
  Status st = w.write(path);
  ASSERT_TRUE(st.ok()) << st.error().to_string();
  auto prog = Program::load(path);
  ASSERT_TRUE(prog.ok()) << prog.error().to_string();

  auto store = program_constants(*prog);
  const TensorView* c = store->find(*bname);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->ptr, (*prog)->constant(*bname)->ptr);  // a view, not a copy
  std::vector<float> extra = {1};
  EXPECT_EQ(store->add(*bname, f32({1}), std::as_bytes(std::span(extra))).error().code(), ErrorCode::kDuplicateName);
  EXPECT_TRUE(store->add("packed", f32({1}), std::as_bytes(std::span(extra))).ok());
  EXPECT_NE(store->find("packed"), nullptr);

  auto m = Method::load(*prog, "step");
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  std::vector<float> x = {1, 2, 3, 4}, y(4);
  std::vector<TensorView> in = {view(x)}, out = {view(y)};
  ASSERT_TRUE((*m)->execute(in, out).ok());
  for (size_t i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(y[i], 2 * (x[i] + bias[i]));

  auto missing = Method::load(*prog, "decode");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kMissingMethod);
  EXPECT_NE(missing.error().message().find("'decode'"), std::string::npos) << missing.error().message();
  EXPECT_NE(missing.error().message().find("available: step"), std::string::npos) << missing.error().message();
  unlink(path.c_str());
}

int64_t resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  long size = 0, resident = 0;
  if (f) {
    if (std::fscanf(f, "%ld %ld", &size, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<int64_t>(resident) * sysconf(_SC_PAGESIZE);
}

// release_pages on a file-mapped program drops the constant's resident pages (RSS falls by about its
// size) and the bytes read back unchanged afterwards; on the read() path (heap copy) it must do
// nothing, since MADV_DONTNEED would zero anonymous memory.
TEST(ConstantStore, ReleasePagesDropsMappedPagesAndKeepsBytes) {
  const size_t n = size_t{16} << 20 >> 2;  // 16 MiB of f32
  std::vector<float> big(n);
  for (size_t i = 0; i < n; ++i) big[i] = static_cast<float>(i % 9973) * 0.5f;
  ProgramWriter w;
  Result<std::string> name = w.add_constant("big", f32({static_cast<int64_t>(n)}), std::as_bytes(std::span(big)));
  ASSERT_TRUE(name.ok()) << name.error().to_string();
  const std::string path = temp_path("release");
  ASSERT_TRUE(w.write(path).ok());
  for (bool mmapped : {true, false}) {
    SCOPED_TRACE(mmapped ? "mmap" : "read()");
    LoadOptions lo;
    lo.use_mmap = mmapped;
    auto prog = Program::load(path, lo);
    ASSERT_TRUE(prog.ok()) << prog.error().to_string();
    ASSERT_EQ((*prog)->is_mmapped(), mmapped);
    auto store = program_constants(*prog);
    EXPECT_EQ(store->releases_pages(), mmapped);  // what a backend asks before copying a constant to read it faster
    const TensorView* c = store->find(*name);
    ASSERT_NE(c, nullptr);
    const float* p = c->data<const float>();
    double sum = 0;
    for (size_t i = 0; i < n; i += 1024) sum += p[i];  // touch every page
    const int64_t before = resident_bytes();
    store->release_pages(*name, 0, n * 2);  // first half
    store->release_pages(*name);            // all of it
    const int64_t after = resident_bytes();
    if (mmapped)
      EXPECT_GT(before - after, static_cast<int64_t>(n * 4) * 9 / 10) << "before " << before << " after " << after;
    else
      EXPECT_LT(before - after, static_cast<int64_t>(n * 4) / 10) << "before " << before << " after " << after;
    EXPECT_EQ(std::memcmp(p, big.data(), n * 4), 0);  // refaulted from the page cache / never dropped
    EXPECT_GT(sum, 0.0);
  }
  std::remove(path.c_str());
}

TEST(Method, IoAllocatorIsTheTopBackends) {
  MethodDef def{"m", {in_spec("x", f32({4}))}, {out_spec("y", f32({4}))}, {{"test_rt.scale2", {"x"}, {"y"}, {}}}};
  auto m = create_ok(def);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->io_allocator()->name(), "heap");
}

}  // namespace
}  // namespace hfs
