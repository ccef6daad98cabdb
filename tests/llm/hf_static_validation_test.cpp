// The hf_static metadata/signature corruption matrix: each broken program is rejected before the first
// step with its own error naming the key or tensor, expected and got.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>

#include "hfstatic/ext/io_contract.h"
#include "hfstatic/ext/metadata_keys.h"
#include "support/hf_static_fixture.h"
#include "support/program_rewrite.h"
#include "support/require_cli.h"

namespace hfs {
namespace {

struct Corruption {
  std::string name;
  test::ProgramEdit edit;
  ErrorCode code;
  std::vector<std::string> message_has;  // substrings the message must contain
};

// Readable names in test listings instead of gtest's byte dump.
void PrintTo(const Corruption& c, std::ostream* os) { *os << c.name; }

void set_key(Metadata& m, std::string_view k, Value v) { m[std::string(k)] = std::move(v); }

std::vector<Corruption> corruptions() {
  using K = Metadata;
  auto meta = [](std::function<void(K&)> f) { return test::ProgramEdit{std::move(f), {}}; };
  auto method = [](std::function<void(MethodDef&)> f) { return test::ProgramEdit{{}, std::move(f)}; };
  std::vector<Corruption> c;
  c.push_back({"NoContract", meta([](K& m) { m.erase(std::string(keys::kContract)); }), ErrorCode::kMissingMetadata,
               {std::string(keys::kContract)}});
  c.push_back({"UnknownContract", meta([](K& m) { set_key(m, keys::kContract, Value("hf_dynamic")); }),
               ErrorCode::kUnknownContract, {"hf_dynamic", "hf_static"}});
  c.push_back({"UnsupportedVersion", meta([](K& m) { set_key(m, keys::kContractVersion, Value(3)); }),
               ErrorCode::kBadMetadata, {"version 3", "versions 1 to 2"}});
  // Version 2 needs its sequence keys; version 1 refuses them (a v1 runtime would misread the pool).
  c.push_back({"Version2WithoutSequences", meta([](K& m) { set_key(m, keys::kContractVersion, Value(2)); }),
               ErrorCode::kMissingMetadata, {std::string(keys::kMaxSequences)}});
  c.push_back({"SequencesInVersion1", meta([](K& m) { set_key(m, keys::kMaxSequences, Value(2)); }),
               ErrorCode::kBadMetadata, {std::string(keys::kMaxSequences), "version 2"}});
  // Minor versions: a newer minor is refused naming it and the cache dtype it most likely brings; an int8
  // cache needs minor 1 (a program may not use what its minor does not declare); an unknown dtype is refused
  // naming the allowed ones, as a runtime from before int8 caches refuses "int8".
  c.push_back({"UnknownMinor", meta([](K& m) {
                 set_key(m, keys::kContractMinor, Value(2));
                 set_key(m, keys::kCacheDType, Value("int4"));
               }),
               ErrorCode::kBadMetadata, {"minor 2", "minor versions 0 to 1", "cache_dtype", "int4"}});
  c.push_back({"MinorNotInt", meta([](K& m) { set_key(m, keys::kContractMinor, Value("1")); }), ErrorCode::kBadMetadata,
               {std::string(keys::kContractMinor), "integer"}});
  c.push_back({"Int8CacheWithoutMinor", meta([](K& m) { set_key(m, keys::kCacheDType, Value("int8")); }),
               ErrorCode::kBadMetadata, {std::string(keys::kContractMinor), "int8", "got 0"}});
  c.push_back({"UnknownCacheDTypeAtMinor1", meta([](K& m) {
                 set_key(m, keys::kContractMinor, Value(1));
                 set_key(m, keys::kCacheDType, Value("int4"));
               }),
               ErrorCode::kBadMetadata, {std::string(keys::kCacheDType), "int4", "\"int8\""}});
  // Metadata saying int8 over f32 cache tensors (no scales): the signature check names the first cache.
  c.push_back({"Int8MetadataOverF32Caches", meta([](K& m) {
                 set_key(m, keys::kContractMinor, Value(1));
                 set_key(m, keys::kCacheDType, Value("int8"));
               }),
               ErrorCode::kContractViolation, {"k_cache_0", "i8", "f32"}});
  c.push_back({"ContractNotString", meta([](K& m) { set_key(m, keys::kContract, Value(5)); }), ErrorCode::kBadMetadata,
               {std::string(keys::kContract), "string", "5"}});
  c.push_back({"VersionWrongType", meta([](K& m) { set_key(m, keys::kContractVersion, Value("1")); }),
               ErrorCode::kBadMetadata, {std::string(keys::kContractVersion), "integer"}});
  // Every required key, removed.
  for (std::string_view k : {keys::kPrefillMethod, keys::kPrefillTokens, keys::kDecodeMethod, keys::kDecodeTokens,
                             keys::kContextLength, keys::kNumLayers, keys::kNumKvHeads, keys::kHeadDim, keys::kLayerKinds,
                             keys::kLayerCacheLengths, keys::kSlidingWindow, keys::kCacheDType, keys::kCacheLayout,
                             keys::kVocabSize, keys::kBosTokenId, keys::kEosTokenIds, keys::kPadTokenId, keys::kLogitsMode}) {
    std::string key(k);
    std::string name = "Missing_" + key.substr(key.find('.') + 1);
    c.push_back({name, meta([key](K& m) { m.erase(key); }), ErrorCode::kMissingMetadata, {key}});
  }
  // Wrong types and out-of-range values.
  c.push_back({"ContextNotInt", meta([](K& m) { set_key(m, keys::kContextLength, Value(24.5)); }), ErrorCode::kBadMetadata,
               {std::string(keys::kContextLength), "24.5"}});
  c.push_back({"ChunkOverContext", meta([](K& m) { set_key(m, keys::kPrefillTokens, Value(25)); }),
               ErrorCode::kBadMetadata, {std::string(keys::kPrefillTokens), "25"}});
  c.push_back({"DecodeTokensTwo", meta([](K& m) { set_key(m, keys::kDecodeTokens, Value(2)); }), ErrorCode::kBadMetadata,
               {std::string(keys::kDecodeTokens)}});
  c.push_back({"NegativeLayers", meta([](K& m) { set_key(m, keys::kNumLayers, Value(-1)); }), ErrorCode::kBadMetadata,
               {std::string(keys::kNumLayers), "-1"}});
  c.push_back({"BadCacheDType", meta([](K& m) { set_key(m, keys::kCacheDType, Value("q8")); }), ErrorCode::kBadMetadata,
               {std::string(keys::kCacheDType), "q8"}});
  c.push_back({"BadLayout", meta([](K& m) { set_key(m, keys::kCacheLayout, Value("bshd")); }), ErrorCode::kBadMetadata,
               {std::string(keys::kCacheLayout), "bshd"}});
  c.push_back({"BadLogitsMode", meta([](K& m) { set_key(m, keys::kLogitsMode, Value("first")); }), ErrorCode::kBadMetadata,
               {std::string(keys::kLogitsMode)}});
  c.push_back({"EosOutOfVocab", meta([](K& m) { set_key(m, keys::kEosTokenIds, Value::int_array({2, 512})); }),
               ErrorCode::kBadMetadata, {std::string(keys::kEosTokenIds)}});
  // bos may be -1 (none); pad must be a real id.
  c.push_back({"BosOutOfVocab", meta([](K& m) { set_key(m, keys::kBosTokenId, Value(512)); }), ErrorCode::kBadMetadata,
               {std::string(keys::kBosTokenId), "[-1, 511]", "512"}});
  c.push_back({"BosBelowNone", meta([](K& m) { set_key(m, keys::kBosTokenId, Value(-2)); }), ErrorCode::kBadMetadata,
               {std::string(keys::kBosTokenId), "-2"}});
  c.push_back({"PadOutOfVocab", meta([](K& m) { set_key(m, keys::kPadTokenId, Value(512)); }), ErrorCode::kBadMetadata,
               {std::string(keys::kPadTokenId), "[0, 511]", "512"}});
  c.push_back({"PadNegative", meta([](K& m) { set_key(m, keys::kPadTokenId, Value(-1)); }), ErrorCode::kBadMetadata,
               {std::string(keys::kPadTokenId), "-1"}});
  c.push_back({"LayerKindNotString",
               meta([](K& m) { set_key(m, keys::kLayerKinds, Value(Value::Array{Value("global"), Value(3)})); }),
               ErrorCode::kBadMetadata, {std::string(keys::kLayerKinds), "layer 1", "3"}});
  c.push_back({"LayerKindsWrongCount", meta([](K& m) { set_key(m, keys::kLayerKinds, Value(Value::Array{Value("global")})); }),
               ErrorCode::kBadMetadata, {std::string(keys::kLayerKinds), "2"}});
  c.push_back({"LayerKindUnknown",
               meta([](K& m) { set_key(m, keys::kLayerKinds, Value(Value::Array{Value("global"), Value("local")})); }),
               ErrorCode::kBadMetadata, {std::string(keys::kLayerKinds), "local"}});
  c.push_back({"GlobalCacheShorterThanContext",
               meta([](K& m) { set_key(m, keys::kLayerCacheLengths, Value::int_array({24, 20})); }),
               ErrorCode::kBadMetadata, {std::string(keys::kLayerCacheLengths), "layer 1", "20"}});
  // Method names and step sizes.
  c.push_back({"MissingMethod", meta([](K& m) { set_key(m, keys::kDecodeMethod, Value("step")); }),
               ErrorCode::kMissingMethod, {"'step'", "decode", "prefill"}});
  c.push_back({"StepSizeMismatch",
               meta([](K& m) {
                 set_key(m, keys::kPrefillTokens, Value(5));
               }),
               ErrorCode::kContractViolation, {std::string(keys::kPrefillTokens), "i32[1, 5]", "[1, 4]"}});
  // Geometry drift between metadata and the program's tensors.
  c.push_back({"KvHeadsDrift", meta([](K& m) { set_key(m, keys::kNumKvHeads, Value(1)); }), ErrorCode::kContractViolation,
               {"k_cache_0", "expected", "got"}});
  c.push_back({"HeadDimDrift", meta([](K& m) { set_key(m, keys::kHeadDim, Value(8)); }), ErrorCode::kContractViolation,
               {"k_cache_0"}});
  c.push_back({"CacheDTypeDrift", meta([](K& m) { set_key(m, keys::kCacheDType, Value("f16")); }),
               ErrorCode::kContractViolation, {"k_cache_0", "f16", "f32"}});
  c.push_back({"MaskLengthDrift",
               meta([](K& m) {
                 set_key(m, keys::kContextLength, Value(30));
                 set_key(m, keys::kLayerCacheLengths, Value::int_array({30, 30}));
               }),
               ErrorCode::kContractViolation, {"attn_mask_global", "[1, 1, 4, 30]", "[1, 1, 4, 24]"}});
  c.push_back({"VocabDrift", meta([](K& m) { set_key(m, keys::kVocabSize, Value(600)); }), ErrorCode::kContractViolation,
               {"logits", "600", "512"}});
  c.push_back({"LogitsModeDrift", meta([](K& m) { set_key(m, keys::kLogitsMode, Value("all")); }),
               ErrorCode::kContractViolation, {"logits_index"}});
  // Output aliases pointing at the wrong inputs (outputs swapped: v before k).
  c.push_back({"AliasOrder", method([](MethodDef& d) { std::swap(d.outputs[1], d.outputs[2]); }),
               ErrorCode::kContractViolation, {"output 1", "k_cache_0_out", "alias_of 'k_cache_0'", "v_cache_0_out"}});
  return c;
}

// The optional prefill variant keys, on a program that has them (C = 8, variants 2 and 4).
std::vector<Corruption> variant_corruptions() {
  using K = Metadata;
  auto meta = [](std::function<void(K&)> f) { return test::ProgramEdit{std::move(f), {}}; };
  auto names = [](std::vector<std::string> v) {
    Value::Array a;
    for (auto& n : v) a.emplace_back(n);
    return Value(std::move(a));
  };
  std::vector<Corruption> c;
  c.push_back({"VariantTokensMissing", meta([](K& m) { m.erase(std::string(keys::kPrefillVariantTokens)); }),
               ErrorCode::kMissingMetadata,
               {std::string(keys::kPrefillVariantMethods), std::string(keys::kPrefillVariantTokens)}});
  c.push_back({"VariantMethodsMissing", meta([](K& m) { m.erase(std::string(keys::kPrefillVariantMethods)); }),
               ErrorCode::kMissingMetadata,
               {std::string(keys::kPrefillVariantMethods), std::string(keys::kPrefillVariantTokens)}});
  c.push_back({"VariantMethodsNotAList", meta([](K& m) { set_key(m, keys::kPrefillVariantMethods, Value("prefill_2")); }),
               ErrorCode::kBadMetadata, {std::string(keys::kPrefillVariantMethods), "array"}});
  c.push_back({"TooManyVariants",
               meta([names](K& m) {
                 std::vector<std::string> many(17, "prefill_2");
                 set_key(m, keys::kPrefillVariantMethods, names(many));
               }),
               ErrorCode::kBadMetadata, {std::string(keys::kPrefillVariantMethods), "at most 16", "17"}});
  c.push_back({"VariantCountMismatch", meta([](K& m) { set_key(m, keys::kPrefillVariantTokens, Value::int_array({2})); }),
               ErrorCode::kBadMetadata, {std::string(keys::kPrefillVariantTokens), "2 step sizes", "got 1"}});
  c.push_back({"VariantNotAscending",
               meta([names](K& m) {
                 set_key(m, keys::kPrefillVariantMethods, names({"prefill_4", "prefill_2"}));
                 set_key(m, keys::kPrefillVariantTokens, Value::int_array({4, 2}));
               }),
               ErrorCode::kBadMetadata, {std::string(keys::kPrefillVariantTokens), "ascending", "[4,2]"}});
  c.push_back({"VariantNotBelowChunk", meta([](K& m) { set_key(m, keys::kPrefillVariantTokens, Value::int_array({2, 8})); }),
               ErrorCode::kBadMetadata, {std::string(keys::kPrefillVariantTokens), "[1, 7]"}});
  c.push_back({"VariantMissingMethod",
               meta([names](K& m) { set_key(m, keys::kPrefillVariantMethods, names({"prefill_2", "prefill_3"})); }),
               ErrorCode::kMissingMethod, {"'prefill_3'", "prefill_4"}});
  c.push_back({"VariantStepSizeMismatch",
               meta([](K& m) { set_key(m, keys::kPrefillVariantTokens, Value::int_array({2, 5})); }),
               ErrorCode::kContractViolation,
               {"'prefill_4'", std::string(keys::kPrefillVariantTokens), "i32[1, 5]", "[1, 4]"}});
  return c;
}

// The step-method and sequence-pool keys, on a version-2 program (2 sequences, C = 4, N = 24, steps 2 and 4).
std::vector<Corruption> step_corruptions() {
  using K = Metadata;
  auto meta = [](std::function<void(K&)> f) { return test::ProgramEdit{std::move(f), {}}; };
  std::vector<Corruption> c;
  c.push_back({"StepTokensMissing", meta([](K& m) { m.erase(std::string(keys::kStepTokens)); }), ErrorCode::kMissingMetadata,
               {std::string(keys::kStepMethods), std::string(keys::kStepTokens)}});
  c.push_back({"StepBelowTwo", meta([](K& m) { set_key(m, keys::kStepTokens, Value::int_array({1, 4})); }),
               ErrorCode::kBadMetadata, {std::string(keys::kStepTokens), "[2, 24]"}});
  c.push_back({"StepNotAscending", meta([](K& m) { set_key(m, keys::kStepTokens, Value::int_array({4, 2})); }),
               ErrorCode::kBadMetadata, {std::string(keys::kStepTokens), "ascending"}});
  c.push_back({"StepSizeMismatch", meta([](K& m) { set_key(m, keys::kStepTokens, Value::int_array({2, 3})); }),
               ErrorCode::kContractViolation, {"'step_4'", std::string(keys::kStepTokens), "[1, 3]"}});
  // A step method must return every row's logits: the 4-token prefill method (a logits_index input, one
  // logits row) listed as a step method is rejected.
  c.push_back({"StepLogitsOneRow",
               meta([](K& m) {
                 set_key(m, keys::kStepMethods, Value(Value::Array{Value("step_2"), Value("prefill")}));
               }),
               ErrorCode::kContractViolation, {"'prefill'", "input 2", "cache_slots_global", "logits_index"}});
  c.push_back({"SequencesOne", meta([](K& m) { set_key(m, keys::kMaxSequences, Value(1)); }), ErrorCode::kBadMetadata,
               {std::string(keys::kMaxSequences), "[2, 4096]", "got 1"}});
  c.push_back({"PoolBelowContext", meta([](K& m) { set_key(m, keys::kGlobalPoolSlots, Value(16)); }),
               ErrorCode::kBadMetadata, {std::string(keys::kGlobalPoolSlots), "16"}});
  // Pool metadata and cache shapes disagree: every global cache must be global_pool_slots long.
  c.push_back({"PoolDrift", meta([](K& m) { set_key(m, keys::kGlobalPoolSlots, Value(40)); }), ErrorCode::kBadMetadata,
               {std::string(keys::kLayerCacheLengths), std::string(keys::kGlobalPoolSlots), "40", "got 48"}});
  return c;
}

// The sliding-window rules, on a program whose layers are all sliding (mistral, W = 8, C = 4, N = 24):
// the ring must hold min(W + C − 1, N) = 11 rows, and every sliding layer's ring has one length.
std::vector<Corruption> sliding_corruptions() {
  using K = Metadata;
  auto meta = [](std::function<void(K&)> f) { return test::ProgramEdit{std::move(f), {}}; };
  auto ring = [](const K& m) { return m.at(std::string(keys::kLayerCacheLengths)).as_array().at(0).as_int(); };
  std::vector<Corruption> c;
  c.push_back({"SlidingWindowZero", meta([](K& m) { set_key(m, keys::kSlidingWindow, Value(0)); }),
               ErrorCode::kBadMetadata, {std::string(keys::kSlidingWindow), "≥ 1", "sliding layers", "got 0"}});
  c.push_back({"RingShorterThanWindowPlusChunk",
               meta([](K& m) { set_key(m, keys::kLayerCacheLengths, Value::int_array({10, 10})); }),
               ErrorCode::kBadMetadata, {std::string(keys::kLayerCacheLengths), "layer 0", "ring length", "= 11", "got 10"}});
  c.push_back({"RingLengthsDiffer",
               meta([ring](K& m) {
                 const int64_t len = ring(m);
                 set_key(m, keys::kLayerCacheLengths, Value::int_array({len, len + 1}));
               }),
               ErrorCode::kBadMetadata, {std::string(keys::kLayerCacheLengths), "layer 1", "equal to the other sliding"}});
  return c;
}

void expect_rejected(const std::string& good_path, const Corruption& c) {
  auto good = Program::load(good_path);
  ASSERT_TRUE(good.ok()) << good.error().to_string();
  // The unmodified program is accepted (so each failure below is caused by its edit alone).
  ASSERT_TRUE(create_io_manager(*good).ok());
  const std::string path = test::temp_dir() + "/" + c.name + ".hfs";
  Status st = test::rewrite_program(**good, path, c.edit);
  ASSERT_TRUE(st.ok()) << st.error().to_string();
  auto bad = Program::load(path);
  ASSERT_TRUE(bad.ok()) << bad.error().to_string();
  auto io = create_io_manager(*bad);
  ASSERT_FALSE(io.ok()) << c.name << " was accepted";
  EXPECT_EQ(io.error().code(), c.code) << io.error().to_string();
  for (const std::string& s : c.message_has) EXPECT_NE(io.error().message().find(s), std::string::npos)
      << "message lacks '" << s << "': " << io.error().message();
  // Runner::create reports the same error, and so does the allocation-free check inspect uses.
  auto r = Runner::create(*bad);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), c.code);
  Status checked = validate_contract(**bad);
  ASSERT_FALSE(checked.ok());
  EXPECT_EQ(checked.error().code(), c.code);
  EXPECT_EQ(checked.error().message(), io.error().message());
  // `hfstatic inspect` reports the problem instead of printing a program the runner would reject (where
  // this build has the CLI: support/require_cli.h).
  if (!test::cli_built()) return;
  const std::string cmd = std::string(HFS_CLI_PATH) + " inspect " + path + " 2>&1 >/dev/null";
  std::string err;
  if (FILE* f = popen(cmd.c_str(), "r")) {
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) err.append(buf, n);
    EXPECT_EQ(WEXITSTATUS(pclose(f)), 1) << err;
  }
  // The CLI registers fewer contracts than this binary (tests add fakes), so the "known" list may differ.
  const std::string want = io.error().message().substr(0, io.error().message().find(" (known: "));
  EXPECT_NE(err.find(want), std::string::npos) << err;
}

class HfStaticValidation : public ::testing::TestWithParam<Corruption> {};
class HfStaticVariantValidation : public ::testing::TestWithParam<Corruption> {};
class HfStaticSlidingValidation : public ::testing::TestWithParam<Corruption> {};
class HfStaticStepValidation : public ::testing::TestWithParam<Corruption> {};

TEST_P(HfStaticStepValidation, RejectsWithItsOwnError) {
  test::TinyModel m{"llama", 4, 24};
  m.sequences = 2;
  m.step_sizes = std::vector<int64_t>{2, 4};
  expect_rejected(test::tiny_program(m), GetParam());
}

TEST_P(HfStaticSlidingValidation, RejectsWithItsOwnError) {
  test::TinyModel m{"mistral", 4, 24};
  m.sliding_window = 8;
  expect_rejected(test::tiny_program(m), GetParam());
}

TEST_P(HfStaticValidation, RejectsWithItsOwnError) { expect_rejected(test::tiny_program({"llama", 4, 24}), GetParam()); }

TEST_P(HfStaticVariantValidation, RejectsWithItsOwnError) {
  test::TinyModel m{"llama", 8, 24};
  m.prefill_variants = std::vector<int64_t>{2, 4};
  expect_rejected(test::tiny_program(m), GetParam());
}

INSTANTIATE_TEST_SUITE_P(HfStatic, HfStaticValidation, ::testing::ValuesIn(corruptions()),
                         [](const auto& info) { return info.param.name; });
INSTANTIATE_TEST_SUITE_P(HfStatic, HfStaticVariantValidation, ::testing::ValuesIn(variant_corruptions()),
                         [](const auto& info) { return info.param.name; });
INSTANTIATE_TEST_SUITE_P(HfStatic, HfStaticStepValidation, ::testing::ValuesIn(step_corruptions()),
                         [](const auto& info) { return info.param.name; });
INSTANTIATE_TEST_SUITE_P(HfStatic, HfStaticSlidingValidation, ::testing::ValuesIn(sliding_corruptions()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace hfs
