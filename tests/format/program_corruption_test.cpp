// Corruption matrix: each test takes the valid tiny program, breaks exactly one rule (patching header
// bytes, or rewriting the manifest JSON and re-encoding the header sizes), and checks the specific
// ErrorCode and that the message names the offending item. Every corrupted file goes through all three
// load paths (from_bytes, mmap, read()), which must agree.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>

#include "hfstatic/program.h"
#include "support/program_fixtures.h"
#include "support/address_space.h"

namespace hfs {
namespace {

using nlohmann::json;

class Corrupt : public ::testing::Test {
 protected:
  void SetUp() override {
    auto b = test::tiny_program_bytes();
    ASSERT_TRUE(b) << b.error().to_string();
    good_ = *b;
    uint64_t moff = test::get_u64(good_, 16), msize = test::get_u64(good_, 24), doff = test::get_u64(good_, 32);
    manifest_ = json::parse(std::string(reinterpret_cast<const char*>(good_.data() + moff), msize));
    data_.assign(good_.begin() + static_cast<ptrdiff_t>(doff), good_.end());
    ASSERT_TRUE(Program::from_bytes(good_));
  }

  // Loads `file` through every path; all must fail with the same code. Returns the from_bytes error.
  Error load_bad(const std::vector<std::byte>& file) {
    auto mem = Program::from_bytes(file, "corrupt.hfs");
    EXPECT_FALSE(mem) << "corrupted file loaded";
    if (mem) return make_error(ErrorCode::kOk, "");
    std::string path = test::temp_path("corrupt");
    EXPECT_TRUE(test::write_file_bytes(path, file));
    for (bool mm : {true, false}) {
      auto p = Program::load(path, {.use_mmap = mm});
      EXPECT_FALSE(p);
      if (!p) {
        EXPECT_EQ(p.error().code(), mem.error().code()) << p.error().to_string();
        EXPECT_NE(p.error().message().find(path), std::string::npos) << "load errors name the file";
      }
    }
    std::remove(path.c_str());
    return mem.error();
  }

  Error with_manifest(const std::function<void(json&)>& edit) {
    json m = manifest_;
    edit(m);
    return load_bad(test::assemble_program_json(m.dump(), data_));
  }

  std::vector<std::byte> good_;
  json manifest_;
  std::vector<std::byte> data_;
};

void expect_error(const Error& e, ErrorCode code, std::initializer_list<std::string_view> mentions) {
  if (std::getenv("HFS_PRINT_ERRORS")) std::fprintf(stderr, "  %s\n", e.to_string().c_str());
  EXPECT_EQ(error_code_name(e.code()), error_code_name(code)) << e.to_string();
  for (std::string_view s : mentions)
    EXPECT_NE(e.message().find(s), std::string::npos) << "message should mention '" << s << "': " << e.message();
}

// --- header -----------------------------------------------------------------------------------------

TEST_F(Corrupt, BadMagic) {
  auto f = good_;
  f[3] = std::byte{'X'};
  expect_error(load_bad(f), ErrorCode::kBadMagic, {"HFSTATIC", "corrupt.hfs"});
  expect_error(load_bad({std::byte{'G'}, std::byte{'I'}, std::byte{'F'}}), ErrorCode::kBadMagic, {"HFSTATIC"});
}

TEST_F(Corrupt, UnsupportedVersion) {
  auto f = good_;
  test::put_u32(f, 8, 7);
  expect_error(load_bad(f), ErrorCode::kBadVersion, {"expected 1, got 7"});
}

TEST_F(Corrupt, TruncatedFiles) {
  expect_error(load_bad({}), ErrorCode::kTruncated, {"0 bytes"});
  expect_error(load_bad(std::vector<std::byte>(good_.begin(), good_.begin() + 30)), ErrorCode::kTruncated, {"30 bytes"});
  // Cut inside the data section, inside the manifest, and right after the header.
  for (size_t keep : {good_.size() - 10, size_t{100}, size_t{64}}) {
    SCOPED_TRACE(keep);
    expect_error(load_bad(std::vector<std::byte>(good_.begin(), good_.begin() + static_cast<ptrdiff_t>(keep))),
                 ErrorCode::kTruncated, {std::to_string(keep)});
  }
}

TEST_F(Corrupt, ManifestRangeBeyondFile) {
  auto f = good_;
  test::put_u64(f, 24, f.size());  // manifest_size larger than what follows the header
  expect_error(load_bad(f), ErrorCode::kTruncated, {"manifest"});
}

TEST_F(Corrupt, InconsistentHeaderFields) {
  auto f = good_;
  test::put_u64(f, 32, test::get_u64(f, 32) + 8);  // data_offset not 64-aligned
  expect_error(load_bad(f), ErrorCode::kBadManifest, {"data_offset", "multiple of 64"});
  auto g = good_;
  g.insert(g.end(), 64, std::byte{0});  // trailing bytes not covered by the header
  test::put_u64(g, 48, g.size());
  expect_error(load_bad(g), ErrorCode::kBadManifest, {"data section"});
  auto h = good_;
  test::put_u32(h, 12, 16);
  expect_error(load_bad(h), ErrorCode::kBadManifest, {"header_size 16"});
}

// --- manifest JSON ---------------------------------------------------------------------------------

TEST_F(Corrupt, MalformedJson) {
  auto f = good_;
  f[64] = std::byte{'#'};
  expect_error(load_bad(f), ErrorCode::kBadManifest, {"manifest"});
}

TEST_F(Corrupt, DeeplyNestedJsonIsRejectedWithoutRecursion) {
  std::string deep(100000, '[');
  expect_error(load_bad(test::assemble_program_json(deep + std::string(100000, ']'), {})), ErrorCode::kBadManifest,
               {"nesting"});
}

TEST_F(Corrupt, MissingFieldNamesThePath) {
  expect_error(with_manifest([](json& m) { m["methods"][1]["nodes"][2].erase("inputs"); }), ErrorCode::kBadManifest,
               {"methods[1].nodes[2].inputs", "missing"});
  expect_error(with_manifest([](json& m) { m.erase("tensors"); }), ErrorCode::kBadManifest, {"tensors"});
  expect_error(with_manifest([](json& m) { m["tensors"][2].erase("nbytes"); }), ErrorCode::kBadManifest,
               {"tensors[2].nbytes"});
}

TEST_F(Corrupt, WrongJsonTypeNamesThePath) {
  expect_error(with_manifest([](json& m) { m["methods"][1]["nodes"][1]["inputs"] = 7; }), ErrorCode::kBadManifest,
               {"methods[1].nodes[1].inputs", "expected array"});
  expect_error(with_manifest([](json& m) { m["methods"][0]["nodes"][0]["inputs"][1] = 5; }), ErrorCode::kBadManifest,
               {"methods[0].nodes[0].inputs[1]", "expected string"});
  expect_error(with_manifest([](json& m) { m["tensors"][0]["offset"] = "0"; }), ErrorCode::kBadManifest,
               {"tensors[0].offset"});
  expect_error(with_manifest([](json& m) { m["metadata"] = json::array(); }), ErrorCode::kBadManifest, {"metadata"});
  expect_error(with_manifest([](json& m) { m["methods"][0]["outputs"][1]["role"] = "owner"; }),
               ErrorCode::kBadManifest, {"methods[0].outputs[1].role", "owner"});
}

TEST_F(Corrupt, UnknownKeysAreRejected) {
  expect_error(with_manifest([](json& m) { m["tensors"][1]["offest"] = 0; }), ErrorCode::kBadManifest,
               {"tensors[1]", "offest"});
}

TEST_F(Corrupt, UnknownDType) {
  expect_error(with_manifest([](json& m) { m["tensors"][0]["dtype"] = "f33"; }), ErrorCode::kBadManifest,
               {"tensors[0].dtype", "f33"});
  expect_error(with_manifest([](json& m) { m["methods"][1]["inputs"][0]["dtype"] = "q9"; }), ErrorCode::kBadManifest,
               {"methods[1].inputs[0].dtype", "q9"});
}

TEST_F(Corrupt, RankAndDimensionLimits) {
  expect_error(with_manifest([](json& m) { m["tensors"][2]["shape"] = {1, 1, 1, 1, 1, 1, 3}; }),
               ErrorCode::kBadManifest, {"tensors[2].shape", "rank 7"});
  expect_error(with_manifest([](json& m) { m["tensors"][2]["shape"] = {-3}; }), ErrorCode::kBadManifest,
               {"tensors[2].shape[0]", "-3"});
  expect_error(with_manifest([](json& m) { m["methods"][0]["inputs"][0]["shape"] = {int64_t{1} << 62, 4}; }),
               ErrorCode::kBadManifest, {"methods[0].inputs[0].shape[0]"});
  // Each dim is in range but the product overflows 64 bits.
  expect_error(with_manifest([](json& m) {
                 int64_t d = int64_t{1} << 40;
                 m["methods"][0]["inputs"][0]["shape"] = {d, d, d, d, d, d};
               }),
               ErrorCode::kBadManifest, {"methods[0].inputs[0].shape", "2^53"});
}

// --- tensor table ----------------------------------------------------------------------------------

TEST_F(Corrupt, DuplicateNames) {
  expect_error(with_manifest([](json& m) { m["tensors"][2]["name"] = "q"; }), ErrorCode::kDuplicateName, {"'q'"});
  expect_error(with_manifest([](json& m) { m["methods"][1]["name"] = "prefill"; }), ErrorCode::kDuplicateName,
               {"'prefill'"});
  expect_error(with_manifest([](json& m) { m["methods"][0]["inputs"][1]["name"] = "x"; }), ErrorCode::kDuplicateName,
               {"method 'prefill'", "'x'"});
  expect_error(with_manifest([](json& m) { m["methods"][0]["inputs"][0]["name"] = "w"; }), ErrorCode::kDuplicateName,
               {"'w'", "constant"});
  expect_error(with_manifest([](json& m) { m["methods"][0]["outputs"].push_back(m["methods"][0]["outputs"][0]); }),
               ErrorCode::kDuplicateName, {"'y'"});
}

TEST_F(Corrupt, TensorOutOfRange) {
  expect_error(with_manifest([&](json& m) { m["tensors"][1]["offset"] = data_.size(); }), ErrorCode::kTensorOutOfRange,
               {"tensor 'q'", "data section size"});
}

TEST_F(Corrupt, TensorOffsetNotAligned) {
  expect_error(with_manifest([](json& m) { m["tensors"][2]["offset"] = m["tensors"][2]["offset"].get<int64_t>() + 4; }),
               ErrorCode::kTensorOutOfRange, {"tensor 's'", "multiple of 64"});
}

TEST_F(Corrupt, TensorOverlap) {
  expect_error(with_manifest([](json& m) { m["tensors"][1]["offset"] = m["tensors"][0]["offset"]; }),
               ErrorCode::kTensorOverlap, {"'w'", "'q'"});
}

TEST_F(Corrupt, TensorSizeMismatch) {
  expect_error(with_manifest([](json& m) { m["tensors"][0]["shape"] = {2, 3}; }), ErrorCode::kTensorSizeMismatch,
               {"tensor 'w'", "24", "32"});
  // q4_0 rows must be whole 32-element blocks.
  expect_error(with_manifest([](json& m) { m["tensors"][1]["shape"] = {4, 16}; }), ErrorCode::kTensorSizeMismatch,
               {"tensor 'q'", "q4_0"});
}

// --- method graphs -----------------------------------------------------------------------------------

TEST_F(Corrupt, UndefinedValue) {
  expect_error(with_manifest([](json& m) { m["methods"][1]["nodes"][1]["inputs"][0] = "nope"; }),
               ErrorCode::kUndefinedValue, {"method 'decode' node 1 (test.add)", "'nope'"});
}

TEST_F(Corrupt, UsedBeforeDefinition) {
  // Swap prefill's first two nodes: scale reads h before add defines it (an order error, no cycle).
  expect_error(with_manifest([](json& m) { std::swap(m["methods"][0]["nodes"][0], m["methods"][0]["nodes"][1]); }),
               ErrorCode::kUndefinedValue, {"method 'prefill' node 0 (test.scale)", "'h'", "before its definition"});
}

TEST_F(Corrupt, ValueDefinedTwice) {
  expect_error(with_manifest([](json& m) { m["methods"][0]["nodes"][1]["outputs"][0] = "h"; }),
               ErrorCode::kValueRedefined, {"method 'prefill' node 1 (test.scale)", "'h'", "node 0"});
  expect_error(with_manifest([](json& m) { m["methods"][0]["nodes"][1]["outputs"][0] = "x"; }),
               ErrorCode::kValueRedefined, {"'x'", "input"});
}

TEST_F(Corrupt, Cycle) {
  // add(x, y) -> h; y = scale(h): nodes 0 and 1 depend on each other.
  expect_error(with_manifest([](json& m) { m["methods"][0]["nodes"][0]["inputs"][1] = "y"; }), ErrorCode::kCycle,
               {"method 'prefill'", "node 0 (test.add) -> node 1 (test.scale) -> node 0"});
  // A node reading its own output is a cycle of length one.
  expect_error(with_manifest([](json& m) { m["methods"][0]["nodes"][1]["inputs"][0] = "y"; }), ErrorCode::kCycle,
               {"node 1 (test.scale) -> node 1"});
}

TEST_F(Corrupt, UnknownOp) {
  expect_error(with_manifest([](json& m) { m["methods"][0]["nodes"][1]["op"] = "test.nope"; }), ErrorCode::kUnknownOp,
               {"method 'prefill' node 1 (test.nope)", "'test.nope'"});
}

TEST_F(Corrupt, UnknownOrMistypedAttribute) {
  expect_error(with_manifest([](json& m) { m["methods"][0]["nodes"][1]["attrs"]["bogus"] = 1; }),
               ErrorCode::kUnknownAttribute, {"method 'prefill' node 1 (test.scale)", "'bogus'"});
  expect_error(with_manifest([](json& m) { m["methods"][0]["nodes"][1]["attrs"]["value"] = "two"; }),
               ErrorCode::kBadAttribute, {"method 'prefill' node 1 (test.scale)", "'value'"});
  expect_error(with_manifest([](json& m) { m["methods"][0]["nodes"][1]["attrs"].erase("value"); }),
               ErrorCode::kBadAttribute, {"node 1", "'value'"});
}

TEST_F(Corrupt, WrongOperandCount) {
  expect_error(with_manifest([](json& m) { m["methods"][0]["nodes"][0]["inputs"].push_back("x"); }),
               ErrorCode::kInvalidArgument, {"method 'prefill' node 0 (test.add)", "expected 2 operands, got 3"});
  expect_error(with_manifest([](json& m) { m["methods"][0]["nodes"][0]["inputs"][1] = ""; }),
               ErrorCode::kInvalidArgument, {"node 0 (test.add) input 1", "required operand"});
  expect_error(with_manifest([](json& m) { m["methods"][0]["nodes"][0]["outputs"].push_back("h2"); }),
               ErrorCode::kInvalidArgument, {"node 0 (test.add)", "expected 1 outputs, got 2"});
}

TEST_F(Corrupt, OptionalOperandMayBeAbsent) {
  json m = manifest_;
  m["methods"][0]["nodes"][1]["inputs"] = {"h", ""};
  auto p = Program::from_bytes(test::assemble_program_json(m.dump(), data_));
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_EQ((*p)->method("prefill")->nodes[1].inputs, (std::vector<std::string>{"h", ""}));
}

TEST_F(Corrupt, OperandRejectedByShapeRule) {
  expect_error(with_manifest([](json& m) { m["methods"][0]["inputs"][0]["shape"] = {2, 5}; }),
               ErrorCode::kShapeMismatch, {"method 'prefill' node 0 (test.add)", "[2, 5]"});
  expect_error(with_manifest([](json& m) { m["methods"][0]["inputs"][0]["dtype"] = "i32"; }),
               ErrorCode::kDTypeMismatch, {"method 'prefill' node 0 (test.add)", "i32"});
}

TEST_F(Corrupt, DeclaredOutputDiffersFromInferred) {
  expect_error(with_manifest([](json& m) { m["methods"][0]["outputs"][0]["shape"] = {4, 2}; }),
               ErrorCode::kShapeMismatch, {"method 'prefill' output 0 'y'", "declared f32[4, 2]", "inferred f32[2, 4]"});
  expect_error(with_manifest([](json& m) { m["methods"][0]["outputs"][0]["dtype"] = "f16"; }),
               ErrorCode::kDTypeMismatch, {"output 0 'y'", "f16[2, 4]"});
}

TEST_F(Corrupt, OutputNeverProduced) {
  expect_error(with_manifest([](json& m) { m["methods"][1]["outputs"][0]["name"] = "logits"; }),
               ErrorCode::kOutputNotProduced, {"method 'decode' output 0 'logits'"});
  expect_error(with_manifest([](json& m) { m["methods"][1]["outputs"][0]["name"] = "w"; }),
               ErrorCode::kOutputNotProduced, {"'w'", "constant"});
}

TEST_F(Corrupt, AliasOfMissingInput) {
  expect_error(with_manifest([](json& m) { m["methods"][0]["outputs"][1]["alias_of"] = "k_cache"; }),
               ErrorCode::kBadAlias, {"output 1 'cache_out'", "'k_cache'"});
}

TEST_F(Corrupt, AliasOfNonStateInput) {
  expect_error(with_manifest([](json& m) { m["methods"][0]["outputs"][1]["alias_of"] = "x"; }), ErrorCode::kBadAlias,
               {"output 1 'cache_out'", "'x'", "not state"});
}

TEST_F(Corrupt, AliasOfInputWithDifferentType) {
  expect_error(with_manifest([](json& m) {
                 auto& out = m["methods"][0]["outputs"][1];
                 out["dtype"] = "f16";
               }),
               ErrorCode::kBadAlias, {"output 1 'cache_out'", "f16[2, 4]", "'cache' f32[2, 4]"});
}

TEST_F(Corrupt, StateOutputWithoutAliasOrAliasOnPlainOutput) {
  expect_error(with_manifest([](json& m) { m["methods"][0]["outputs"][1].erase("alias_of"); }), ErrorCode::kBadAlias,
               {"'cache_out'", "requires alias_of"});
  expect_error(with_manifest([](json& m) { m["methods"][0]["outputs"][0]["alias_of"] = "cache"; }),
               ErrorCode::kBadAlias, {"'y'", "only valid for role state"});
}

TEST_F(Corrupt, StateOutputNotAnInPlaceChainOfItsInput) {
  // y is a fresh buffer computed from h: returning it as the updated cache would lose the update.
  expect_error(with_manifest([](json& m) {
                 auto& outs = m["methods"][0]["outputs"];
                 outs.erase(outs.begin());
                 outs[0]["name"] = "y";
               }),
               ErrorCode::kBadAlias, {"'y'", "buffer of 'cache'"});
}

TEST_F(Corrupt, StateOutputThatIsNotTheFinalVersion) {
  // A second in-place write after cache_out makes cache_out stale.
  expect_error(with_manifest([](json& m) {
                 m["methods"][0]["nodes"].push_back({{"op", "test.inplace_write"},
                                                     {"inputs", {"cache_out", "y"}},
                                                     {"outputs", {"cache_out2"}},
                                                     {"attrs", json::object()}});
               }),
               ErrorCode::kBadAlias, {"'cache_out'", "final version", "node 3"});
}

TEST_F(Corrupt, InputReadAfterInPlaceUpdate) {
  expect_error(with_manifest([](json& m) {
                 m["methods"][0]["nodes"].push_back(
                     {{"op", "test.add"}, {"inputs", {"cache", "w"}}, {"outputs", {"z"}}, {"attrs", json::object()}});
               }),
               ErrorCode::kUseAfterInPlace,
               {"method 'prefill' node 3 (test.add) input 0", "'cache'", "node 2 (test.inplace_write)"});
}

TEST_F(Corrupt, InPlaceWriteIntoReadOnlyInputOrConstant) {
  expect_error(with_manifest([](json& m) { m["methods"][0]["inputs"][1]["role"] = "input"; }), ErrorCode::kBadAlias,
               {"method 'prefill' node 2 (test.inplace_write)", "read-only input 'cache'"});
  expect_error(with_manifest([](json& m) { m["methods"][0]["nodes"][2]["inputs"][0] = "w"; }), ErrorCode::kBadAlias,
               {"node 2 (test.inplace_write)", "constant 'w'"});
}

TEST_F(Corrupt, RoleMisuse) {
  expect_error(with_manifest([](json& m) { m["methods"][0]["inputs"][0]["role"] = "output"; }),
               ErrorCode::kInvalidArgument, {"input 0 'x'", "role 'output'"});
  expect_error(with_manifest([](json& m) { m["methods"][0]["outputs"][0]["role"] = "input"; }),
               ErrorCode::kInvalidArgument, {"output 0 'y'", "role 'input'"});
}

TEST_F(Corrupt, VerificationCanBeSkippedButBoundsChecksCannot) {
  json m = manifest_;
  m["methods"][0]["nodes"][1]["op"] = "test.nope";
  std::string path = test::temp_path("noverify");
  ASSERT_TRUE(test::write_file_bytes(path, test::assemble_program_json(m.dump(), data_)));
  EXPECT_TRUE(Program::load(path, {.use_mmap = true, .verify = false}));
  m["tensors"][1]["offset"] = 1 << 20;
  ASSERT_TRUE(test::write_file_bytes(path, test::assemble_program_json(m.dump(), data_)));
  auto p = Program::load(path, {.use_mmap = true, .verify = false});
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code(), ErrorCode::kTensorOutOfRange);
  std::remove(path.c_str());
}

// --- hostile sizes ---------------------------------------------------------------------------------

std::vector<std::vector<std::byte>> malicious_files() {
  std::vector<std::vector<std::byte>> out;
  // 1 KB file whose header claims a 2^60-byte manifest and a 2^62-byte data section.
  std::vector<std::byte> f(1024, std::byte{' '});
  std::memcpy(f.data(), "HFSTATIC", 8);
  test::put_u32(f, 8, 1);
  test::put_u32(f, 12, 64);
  test::put_u64(f, 16, 64);
  test::put_u64(f, 24, uint64_t{1} << 60);
  test::put_u64(f, 32, 1024);
  test::put_u64(f, 40, uint64_t{1} << 62);
  test::put_u64(f, 48, 1024);
  test::put_u64(f, 56, 0);
  out.push_back(f);
  // Offsets that wrap around 2^64.
  auto g = f;
  test::put_u64(g, 16, ~uint64_t{0} - 8);
  test::put_u64(g, 24, 64);
  out.push_back(g);
  // A consistent header with a tensor claiming 2^50 bytes (a matching f32[2^48] shape).
  std::string m = R"({"metadata":{},"methods":[],"tensors":[{"name":"huge","dtype":"f32","shape":[16777216,16777216],)"
                  R"("offset":0,"nbytes":1125899906842624}]})";
  out.push_back(test::assemble_program_json(m, std::vector<std::byte>(64)));
  // The same tensor with a small nbytes but the huge shape.
  std::string m2 = R"({"metadata":{},"methods":[],"tensors":[{"name":"huge","dtype":"f32","shape":[16777216,16777216],)"
                   R"("offset":0,"nbytes":64}]})";
  out.push_back(test::assemble_program_json(m2, std::vector<std::byte>(64)));
  // A method input of 2^52 elements: fine to declare (nothing is allocated at load), checked for overflow.
  std::string m3 = R"({"metadata":{},"tensors":[],"methods":[{"name":"m","inputs":[{"name":"x","dtype":"f32",)"
                   R"("shape":[1099511627776,1099511627776],"role":"input"}],"outputs":[],"nodes":[]}]})";
  out.push_back(test::assemble_program_json(m3, {}));
  return out;
}

TEST(MaliciousFile, HugeClaimedSizesGiveCleanErrors) {
  auto files = malicious_files();
  auto e0 = Program::from_bytes(files[0]);
  ASSERT_FALSE(e0);
  EXPECT_EQ(e0.error().code(), ErrorCode::kTruncated);
  EXPECT_NE(e0.error().message().find("manifest"), std::string::npos);
  auto e1 = Program::from_bytes(files[1]);
  ASSERT_FALSE(e1);
  EXPECT_EQ(e1.error().code(), ErrorCode::kTruncated);
  auto e2 = Program::from_bytes(files[2]);
  ASSERT_FALSE(e2);
  EXPECT_EQ(e2.error().code(), ErrorCode::kTensorOutOfRange);
  EXPECT_NE(e2.error().message().find("'huge'"), std::string::npos);
  auto e3 = Program::from_bytes(files[3]);
  ASSERT_FALSE(e3);
  EXPECT_EQ(e3.error().code(), ErrorCode::kTensorSizeMismatch);
  auto e4 = Program::from_bytes(files[4]);
  ASSERT_FALSE(e4);
  EXPECT_EQ(e4.error().code(), ErrorCode::kBadManifest);
}

#if !defined(__SANITIZE_ADDRESS__)
// In a child process capped at ~512 MiB more address space than it has now, every malicious file must
// still be rejected: proof that no claimed size drives an allocation.
TEST(MaliciousFile, NeverAllocatesGigabytes) {
  auto files = malicious_files();
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (!test::cap_address_space_above_current(rlim_t{512} << 20)) ::_exit(3);
    for (const auto& f : files) {
      auto p = Program::from_bytes(f);
      if (p) ::_exit(1);
    }
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "child crashed (signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0) << ")";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}
#endif

// Random byte flips and truncations of a valid file: loading returns (ok or an error), never crashes.
TEST(MaliciousFile, RandomCorruptionNeverCrashes) {
  auto good = test::tiny_program_bytes();
  ASSERT_TRUE(good);
  std::mt19937_64 rng(1234);
  int rejected = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    auto f = *good;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) f[rng() % f.size()] = static_cast<std::byte>(rng() & 0xff);
    if (iter % 10 == 0) f.resize(rng() % f.size());
    auto p = Program::from_bytes(f);
    if (!p) {
      ++rejected;
      EXPECT_FALSE(p.error().message().empty());
    }
  }
  EXPECT_GT(rejected, 1000);
}

// Structured mutation: replace a random JSON node of the manifest with a hostile value (wrong kinds, huge
// or negative numbers, names of other values). Exercises the decoder and verifier far beyond byte flips.
TEST_F(Corrupt, RandomManifestMutationsNeverCrash) {
  std::mt19937_64 rng(99);
  const std::vector<json> hostile = {json(-1), json(0), json(int64_t{1} << 62), json(""), json("x"), json("h"),
                                     json("cache"), json("w"), json("test.inplace_write"), json::array(),
                                     json::object(), json(1.5), json(nullptr), json({1, 2, 3}), json({"h", ""})};
  int rejected = 0;
  for (int iter = 0; iter < 1500; ++iter) {
    json m = manifest_;
    for (int k = 0; k < 1 + static_cast<int>(rng() % 3); ++k) {
      json* node = &m;
      while ((node->is_object() || node->is_array()) && !node->empty() && rng() % 4 != 0) {
        size_t i = rng() % node->size();
        node = node->is_array() ? &(*node)[i] : &std::next(node->begin(), static_cast<ptrdiff_t>(i)).value();
      }
      *node = hostile[rng() % hostile.size()];
    }
    auto p = Program::from_bytes(test::assemble_program_json(m.dump(), data_));
    if (!p) {
      ++rejected;
      EXPECT_FALSE(p.error().message().empty());
    }
  }
  EXPECT_GT(rejected, 1000);
}

}  // namespace
}  // namespace hfs
