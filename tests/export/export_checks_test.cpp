// Checkpoint content checks at export: every config value the exporter reads is range-checked before
// anything sized by it exists, the embedded tokenizer is loaded as the runtime will load it, weight values
// must be finite (and fit the stored dtype), and a tensor name may be stored only once. Each class is one
// table or test here; tests/tools/test_export_checks.py covers the same classes through the CLI.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "core/json_duplicate_keys.h"
#include "hfstatic/export.h"
#include "hfstatic/ext/metadata_keys.h"
#include "hfstatic/ext/safetensors.h"
#include "support/checkpoint_writer.h"
#include "support/address_space.h"

namespace hfs {
namespace {

using nlohmann::json;
using testing::CheckpointWriter;

json llama_config() {
  return {{"model_type", "llama"},    {"hidden_size", 16},        {"num_hidden_layers", 2},
          {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"intermediate_size", 24},
          {"vocab_size", 32},         {"max_position_embeddings", 64}, {"rms_norm_eps", 1e-5},
          {"rope_theta", 10000.0},    {"tie_word_embeddings", false}, {"bos_token_id", 1},
          {"eos_token_id", 2}};
}

json with(json c, const json& changes) {
  for (const auto& [k, v] : changes.items()) c[k] = v;
  return c;
}

json qwen2_config() { return with(llama_config(), {{"model_type", "qwen2"}, {"use_sliding_window", true}, {"sliding_window", 8}}); }
json mistral_config() { return with(llama_config(), {{"model_type", "mistral"}, {"sliding_window", 8}}); }
json phi3_config() { return with(llama_config(), {{"model_type", "phi3"}, {"partial_rotary_factor", 0.5}}); }
json gemma2_config() {
  return with(llama_config(), {{"model_type", "gemma2"}, {"head_dim", 8}, {"query_pre_attn_scalar", 16},
                               {"attn_logit_softcapping", 50.0}, {"final_logit_softcapping", 30.0},
                               {"sliding_window", 8}, {"tie_word_embeddings", true}});
}
json gemma3_config() {
  return with(gemma2_config(), {{"model_type", "gemma3_text"}, {"sliding_window_pattern", 2},
                                {"rope_local_base_freq", 10000.0}});
}

// A tiny BPE tokenizer whose ids stay below the test models' vocab_size 32.
std::string small_tokenizer(const std::string& extra_added = "") {
  return R"({"version":"1.0","added_tokens":[)" + extra_added +
         R"(],"model":{"type":"BPE","vocab":{"<unk>":0,"<s>":1,"</s>":2,"H":3,"e":4,"l":5,"o":6," ":7,"w":8,"r":9,"d":10},)"
         R"("merges":[]}})";
}

class ExportChecks : public ::testing::Test {
 protected:
  std::string dir = testing::temp_dir("export_checks");
  CheckpointWriter w{dir};
  void TearDown() override { std::filesystem::remove_all(dir); }

  void write_model(const json& config, DType dtype = DType::kF32) {
    w.config = config;
    testing::write_tiny_model(w, dtype);
    w.write();
  }
  // Replaces one config.json value by raw JSON text (integers beyond int64, exact spellings). Values that
  // overflow a double (1e999) never get this far: the JSON parser rejects them.
  void set_raw(const std::string& key, const std::string& raw) {
    json c = w.config;
    c[key] = "@RAW@";
    std::string text = c.dump(2);
    text.replace(text.find("\"@RAW@\""), 7, raw);
    testing::write_text(dir + "/config.json", text);
  }
  Error plan_error(const ExportOptions& opt = {}) {
    auto p = build_export_plan(dir, opt);
    EXPECT_FALSE(p.ok()) << "export of " << dir << " was expected to fail";
    return p.ok() ? make_error(ErrorCode::kOk, "") : p.error();
  }
  void expect_plan_ok(const ExportOptions& opt = {}) {
    auto p = build_export_plan(dir, opt);
    EXPECT_TRUE(p.ok()) << p.error().to_string();
  }
};

// --- config values: one row per key and class of bad value -------------------------------------------

struct BadConfig {
  const char* name;         // test name
  json (*config)();         // a valid config of the architecture that reads the key
  const char* key;
  const char* raw;          // the bad value as JSON text
  const char* expected;     // substring of the message after "key '<key>'"
};

const BadConfig kBadConfigs[] = {
    {"LayersZero", llama_config, "num_hidden_layers", "0", "in [1, 2]"},
    {"LayersHuge", llama_config, "num_hidden_layers", "1000000000000", "cover layers 0..1"},
    {"LayersNotInteger", llama_config, "num_hidden_layers", "2.5", "expected an integer"},
    {"HiddenZero", llama_config, "hidden_size", "0", "got 0"},
    {"HiddenHuge", llama_config, "hidden_size", "4611686018427387904", "no tensor in the checkpoint has a larger dimension"},
    {"HeadsNegative", llama_config, "num_attention_heads", "-4", "got -4"},
    {"HeadsHuge", llama_config, "num_attention_heads", "1000000000000", "got 1000000000000"},
    {"IntermediateZero", llama_config, "intermediate_size", "0", "got 0"},
    {"IntermediateHuge", llama_config, "intermediate_size", "9223372036854775807", "larger dimension"},
    {"VocabZero", llama_config, "vocab_size", "0", "got 0"},
    {"VocabHuge", llama_config, "vocab_size", "1099511627776", "got 1099511627776"},
    {"MaxPositionsZero", llama_config, "max_position_embeddings", "0", "got 0"},
    {"KvHeadsZero", llama_config, "num_key_value_heads", "0", "got 0"},
    {"KvHeadsAboveHeads", llama_config, "num_key_value_heads", "8", "at most num_attention_heads"},
    {"KvHeadsNotDividing", llama_config, "num_key_value_heads", "3", "must divide num_attention_heads 4"},
    {"HeadDimOdd", llama_config, "head_dim", "3", "must be even"},
    {"HeadDimHuge", llama_config, "head_dim", "2305843009213693952", "num_attention_heads × head_dim"},
    {"EpsZero", llama_config, "rms_norm_eps", "0", "finite number > 0, got 0"},
    {"EpsNegative", llama_config, "rms_norm_eps", "-1e-05", "got -1e-05"},
    {"EpsNotNumber", llama_config, "rms_norm_eps", "\"small\"", "expected a number"},
    {"RopeThetaZero", llama_config, "rope_theta", "0", "finite number > 0"},
    {"RopeThetaNegative", llama_config, "rope_theta", "-10000", "got -10000"},
    {"RopeThetaBeyondFloat", llama_config, "rope_theta", "1e39", "≤ 3.40282e+38"},
    {"RopeLinearFactorZero", llama_config, "rope_scaling", R"({"rope_type": "linear", "factor": 0})", "'factor'"},
    {"RopeLlama3LowFactorNegative", llama_config, "rope_scaling",
     R"({"rope_type": "llama3", "factor": 8, "low_freq_factor": -1, "high_freq_factor": 4, "original_max_position_embeddings": 32})",
     "'low_freq_factor'"},
    {"RopeLlama3OriginalLengthZero", llama_config, "rope_scaling",
     R"({"rope_type": "llama3", "factor": 8, "low_freq_factor": 1, "high_freq_factor": 4, "original_max_position_embeddings": 0})",
     "'original_max_position_embeddings'"},
    {"BosBelowMinusOne", llama_config, "bos_token_id", "-5", "id -5 outside [-1, 31]"},
    {"BosBeyondVocab", llama_config, "bos_token_id", "32", "id 32 outside [-1, 31]"},
    {"EosBeyondVocab", llama_config, "eos_token_id", "[2, 40]", "id 40 outside [0, 31]"},
    {"EosNegative", llama_config, "eos_token_id", "-1", "id -1 outside [0, 31]"},
    {"PadBelowMinusOne", llama_config, "pad_token_id", "-2", "id -2 outside [-1, 31]"},
    {"PadBeyondVocab", llama_config, "pad_token_id", "99", "id 99 outside [-1, 31]"},
    {"MaxWindowLayersNegative", qwen2_config, "max_window_layers", "-1", "got -1"},
    {"SlidingWindowZero", mistral_config, "sliding_window", "0", "got 0"},
    {"PartialRotaryAboveOne", phi3_config, "partial_rotary_factor", "2", "≤ 1, got 2"},
    {"PartialRotaryHuge", phi3_config, "partial_rotary_factor", "1e308", "≤ 1, got 1e+308"},
    {"QueryPreAttnScalarZero", gemma2_config, "query_pre_attn_scalar", "0", "got 0"},
    {"AttnSoftcapNegative", gemma2_config, "attn_logit_softcapping", "-1", "≥ 0, got -1"},
    {"FinalSoftcapNegative", gemma2_config, "final_logit_softcapping", "-30", "≥ 0, got -30"},
    {"SlidingPatternZero", gemma3_config, "sliding_window_pattern", "0", "got 0"},
    {"RopeLocalBaseZero", gemma3_config, "rope_local_base_freq", "0", "got 0"},
};

class BadConfigValue : public ExportChecks, public ::testing::WithParamInterface<BadConfig> {};

TEST_P(BadConfigValue, NamesKeyValueAndRange) {
  const BadConfig& c = GetParam();
  write_model(c.config());
  expect_plan_ok();  // the unmodified config exports: the error below is the bad value's
  set_raw(c.key, c.raw);
  Error e = plan_error();
  EXPECT_EQ(e.code(), ErrorCode::kBadCheckpoint) << e.message();
  const std::string& m = e.message();
  EXPECT_NE(m.find("key '" + std::string(c.key) + "'"), std::string::npos) << m;
  EXPECT_NE(m.find(c.expected), std::string::npos) << "expected '" << c.expected << "' in: " << m;
  EXPECT_EQ(m.find("node"), std::string::npos) << "blamed on a graph node: " << m;
}

INSTANTIATE_TEST_SUITE_P(Keys, BadConfigValue, ::testing::ValuesIn(kBadConfigs),
                         [](const ::testing::TestParamInfo<BadConfig>& i) { return std::string(i.param.name); });

TEST_F(ExportChecks, BadIdsInGenerationConfigNameThatFile) {
  write_model(llama_config());
  testing::write_text(dir + "/generation_config.json", R"({"bos_token_id": 1, "eos_token_id": [2, 77]})");
  Error e = plan_error();
  EXPECT_NE(e.message().find("generation_config.json: key 'eos_token_id': id 77"), std::string::npos) << e.message();
}

#if !defined(__SANITIZE_ADDRESS__)
// Absurd sizes fail on the range check, before anything sized by them exists: in a child capped at
// ~512 MiB more address space than it has now, and at 5 s of CPU time (RLIMIT_CPU: the kernel stops a
// child that loops over 10^7 layers; CPU time, unlike wall time, does not grow on a busy machine). Each value once allocated (or tried to)
// in proportion: 10^7 layer descriptions are ~40 GB, a RoPE table for head_dim 2^61 more.
TEST_F(ExportChecks, AbsurdSizesFailFastWithoutAllocating) {
  write_model(llama_config());
  const std::pair<const char*, const char*> cases[] = {
      {"num_hidden_layers", "10000000"}, {"num_hidden_layers", "4611686018427387904"},
      {"hidden_size", "4611686018427387904"}, {"head_dim", "2305843009213693952"}, {"vocab_size", "1000000000"}};
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (!test::cap_address_space_above_current(rlim_t{512} << 20)) ::_exit(3);
    const rlimit cpu{5, 6};  // soft: SIGXCPU after 5 CPU-seconds; hard: SIGKILL at 6
    if (::setrlimit(RLIMIT_CPU, &cpu) != 0) ::_exit(4);
    int code = 10;
    try {  // an allocation beyond the cap throws; the child must not go on running the test suite
      for (const auto& [key, raw] : cases) {
        set_raw(key, raw);
        auto p = build_export_plan(dir, {});
        if (p.ok() || p.error().message().find("key '" + std::string(key) + "'") == std::string::npos ||
            p.error().message().find(std::string("got ") + raw) == std::string::npos)
          ::_exit(code);  // which case failed: 10 + its index
        ++code;
      }
    } catch (...) {
      ::_exit(code + 100);
    }
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "child crashed or ran past its 5 s of CPU time (signal "
                                 << (WIFSIGNALED(status) ? WTERMSIG(status) : 0) << ")";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "case " << WEXITSTATUS(status) % 100 - 10
                                     << (WEXITSTATUS(status) >= 100 ? " threw (an allocation past the cap)"
                                                                    : " was not a clean error naming its key");
}
#endif

TEST_F(ExportChecks, ShapeMismatchNamesTensorAndConfigKeys) {
  w.config = llama_config();
  testing::write_tiny_model(w);
  w.add("model.embed_tokens.weight", DType::kF32, {30, 16});
  w.write();
  Error e = plan_error();
  EXPECT_NE(e.message().find("'model.embed_tokens.weight': expected shape [32, 16], got [30, 16]"), std::string::npos)
      << e.message();
  EXPECT_NE(e.message().find("[vocab_size, hidden_size] from " + dir + "/config.json"), std::string::npos) << e.message();
}

TEST_F(ExportChecks, SlidingWindowBeyondContextIsClampedNotOverflowed) {
  write_model(mistral_config());
  set_raw("sliding_window", "9223372036854775807");
  auto p = build_export_plan(dir, {});
  ASSERT_TRUE(p.ok()) << p.error().to_string();
  EXPECT_EQ(p->metadata.at(std::string(keys::kSlidingWindow)).as_int(), 64);  // = the context: no window
}

// --- tokenizer ---------------------------------------------------------------------------------------

TEST_F(ExportChecks, ValidTokenizerExportsAndMissingOneIsAllowed) {
  write_model(llama_config());
  expect_plan_ok();  // no tokenizer.json: a token-id-only program
  testing::write_text(dir + "/tokenizer.json", small_tokenizer());
  expect_plan_ok();
}

struct BadTokenizer {
  const char* name;
  std::string (*text)();
  const char* expected;
};

const BadTokenizer kBadTokenizers[] = {
    {"Garbage", [] { return std::string("{not json at all"); }, "tokenizer.json"},
    {"Empty", [] { return std::string(); }, "top level"},
    {"Truncated", [] { std::string t = small_tokenizer(); return t.substr(0, t.size() / 2); }, "tokenizer.json"},
    {"NotBpe", [] { return std::string(R"({"model":{"type":"Unigram","vocab":[]}})"); }, "'Unigram' is not supported"},
    {"EmptyVocabulary", [] { return std::string(R"({"model":{"type":"BPE","vocab":{},"merges":[]}})"); },
     "the vocabulary is empty"},
    {"OnlyAddedTokens",
     [] {
       return std::string(R"({"added_tokens":[{"id":0,"content":"<s>","special":true}],)"
                          R"("model":{"type":"BPE","vocab":{},"merges":[]}})");
     },
     "encodes 'Hello world' to no tokens"},
    {"VocabularyBeyondModel",
     [] { return small_tokenizer(R"({"id":40,"content":"<extra>","special":true})"); },
     "token '<extra>' has id 40"},
};

class BadTokenizerFile : public ExportChecks, public ::testing::WithParamInterface<BadTokenizer> {};

TEST_P(BadTokenizerFile, FailsExportNamingTheFile) {
  write_model(llama_config());
  testing::write_text(dir + "/tokenizer.json", GetParam().text());
  Error e = plan_error();
  EXPECT_TRUE(e.code() == ErrorCode::kBadCheckpoint || e.code() == ErrorCode::kUnsupportedModel) << e.to_string();
  EXPECT_NE(e.message().find(dir + "/tokenizer.json"), std::string::npos) << e.message();
  EXPECT_NE(e.message().find(GetParam().expected), std::string::npos) << e.message();
  const std::string out = dir + "/out.hfs";
  EXPECT_FALSE(export_checkpoint(dir, out).ok());
  EXPECT_FALSE(std::filesystem::exists(out));
}

INSTANTIATE_TEST_SUITE_P(Files, BadTokenizerFile, ::testing::ValuesIn(kBadTokenizers),
                         [](const ::testing::TestParamInfo<BadTokenizer>& i) { return std::string(i.param.name); });

TEST_F(ExportChecks, TokenizerConfigErrorsNameThatFile) {
  write_model(llama_config());
  testing::write_text(dir + "/tokenizer.json", small_tokenizer());
  testing::write_text(dir + "/tokenizer_config.json", R"({"bos_token": "<nope>"})");
  Error e = plan_error();
  EXPECT_NE(e.message().find(dir + "/tokenizer_config.json"), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("'<nope>'"), std::string::npos) << e.message();
  // An eos token the tokenizer knows, but whose id has no embedding row.
  testing::write_text(dir + "/tokenizer.json", small_tokenizer(R"({"id":35,"content":"<end>","special":true})"));
  testing::write_text(dir + "/tokenizer_config.json", R"({"eos_token": "<end>"})");
  e = plan_error();
  EXPECT_NE(e.message().find("token '<end>' has id 35"), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("vocab_size 32"), std::string::npos) << e.message();
}

// --- weight values -----------------------------------------------------------------------------------

struct BadWeight {
  DType dtype;
  float value;
  const char* expected;
};

class NonFiniteWeight : public ExportChecks, public ::testing::WithParamInterface<BadWeight> {};

TEST_P(NonFiniteWeight, NamesTensorAndElementInEveryWeightsMode) {
  const BadWeight& b = GetParam();
  w.config = llama_config();
  testing::write_tiny_model(w, b.dtype);
  std::vector<float> v = testing::random_values(24 * 16, 7);
  v[2 * 16 + 5] = b.value;
  w.add("model.layers.1.mlp.up_proj.weight", b.dtype, {24, 16}, v);
  w.write();
  for (WeightsMode mode : {WeightsMode::kKeep, WeightsMode::kF32, WeightsMode::kF16, WeightsMode::kInt8, WeightsMode::kInt4}) {
    ExportOptions opt;
    opt.weights = mode;
    Error e = plan_error(opt);
    EXPECT_EQ(e.code(), ErrorCode::kBadCheckpoint);
    const std::string& m = e.message();
    EXPECT_NE(m.find(dir + "/model.safetensors: tensor 'model.layers.1.mlp.up_proj.weight': element [2, 5] (element 37) is " +
                     std::string(b.expected)),
              std::string::npos)
        << m;
  }
  EXPECT_FALSE(export_checkpoint(dir, dir + "/out.hfs").ok());
  EXPECT_FALSE(std::filesystem::exists(dir + "/out.hfs"));
}

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

INSTANTIATE_TEST_SUITE_P(Values, NonFiniteWeight,
                         ::testing::Values(BadWeight{DType::kF32, kNaN, "NaN"}, BadWeight{DType::kF32, kInf, "+inf"},
                                           BadWeight{DType::kF16, -kInf, "-inf"}, BadWeight{DType::kF16, kNaN, "NaN"},
                                           BadWeight{DType::kBF16, kInf, "+inf"}, BadWeight{DType::kBF16, kNaN, "NaN"}));

TEST_F(ExportChecks, NonFiniteNormAndFusedWeightsAreFound) {
  w.config = phi3_config();
  testing::write_tiny_model(w);
  std::vector<float> norm(16, 1.0f);
  norm[15] = kNaN;
  w.add("model.norm.weight", DType::kF32, {16}, norm);
  w.write();
  EXPECT_NE(plan_error().message().find("'model.norm.weight': element [15] (element 15) is NaN"), std::string::npos);
  w.add("model.norm.weight", DType::kF32, {16}, std::vector<float>(16, 1.0f));
  std::vector<float> qkv = testing::random_values(32 * 16, 3);  // (4 + 2·2) heads × 4 rows
  qkv.back() = -kInf;                                           // in the v part
  w.add("model.layers.0.self_attn.qkv_proj.weight", DType::kF32, {32, 16}, qkv);
  w.write();
  EXPECT_NE(plan_error().message().find("'model.layers.0.self_attn.qkv_proj.weight': element [31, 15]"), std::string::npos);
}

TEST_F(ExportChecks, ValuesBeyondTheStoredDtypeOverflowOnlyThere) {
  w.config = llama_config();
  testing::write_tiny_model(w);
  std::vector<float> v = testing::random_values(24 * 16, 9);
  v[100] = 70000.0f;  // beyond f16's 65504
  w.add("model.layers.0.mlp.gate_proj.weight", DType::kF32, {24, 16}, v);
  w.write();
  for (WeightsMode ok : {WeightsMode::kKeep, WeightsMode::kF32, WeightsMode::kBF16, WeightsMode::kInt8}) {
    ExportOptions opt;
    opt.weights = ok;
    expect_plan_ok(opt);
  }
  ExportOptions f16;
  f16.weights = WeightsMode::kF16;
  Error e = plan_error(f16);
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(e.message().find("'model.layers.0.mlp.gate_proj.weight': element [6, 4] (element 100) = 70000"),
            std::string::npos) << e.message();
  EXPECT_NE(e.message().find("overflows f16"), std::string::npos) << e.message();
}

// --- duplicate tensor names --------------------------------------------------------------------------

Result<std::vector<SafetensorInfo>> parse_header(const std::string& header, size_t data = 16) {
  std::vector<uint8_t> bytes = testing::safetensors_bytes({}, header);
  bytes.resize(bytes.size() + data, 0);
  return parse_safetensors({reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()}, "dup.safetensors");
}

TEST(DuplicateNames, InOneHeader) {
  auto r = parse_header(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                        R"("w":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kBadCheckpoint);
  EXPECT_NE(r.error().message().find("dup.safetensors: tensor 'w' is listed twice in the header"), std::string::npos)
      << r.error().message();
  // The same name spelled with an escape is the same key.
  r = parse_header(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                   R"("\u0077":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("'w' is listed twice"), std::string::npos) << r.error().message();
  // A field given twice inside one entry.
  r = parse_header(R"({"w":{"dtype":"F32","dtype":"F16","shape":[2],"data_offsets":[0,8]}})");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("tensor 'w': key 'dtype' appears twice"), std::string::npos) << r.error().message();
  // Distinct names, and equal keys in different objects, are fine.
  EXPECT_TRUE(parse_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                           R"("b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})").ok());
}

TEST(DuplicateNames, KeyFinder) {
  EXPECT_FALSE(first_duplicate_key(R"({"a":1,"b":{"a":2},"c":[{"a":1},{"a":2}]})"));
  EXPECT_EQ(first_duplicate_key(R"({"a":1,"b":{"x":[{"k":1,"k":2}]}})"), (std::vector<std::string>{"b", "x", "k"}));
  EXPECT_EQ(first_duplicate_key(R"({"a":1,"a":2,"b":3,"b":4})"), (std::vector<std::string>{"a"}));
  EXPECT_FALSE(first_duplicate_key("{not json"));
}

TEST_F(ExportChecks, DuplicateNamesAcrossShards) {
  // Two shards both store "t"; the index points at the second. Which copy a loader sees is ambiguous.
  auto t0 = testing::make_tensor("t", DType::kF32, {2}, {1, 2});
  auto t1 = testing::make_tensor("t", DType::kF32, {2}, {3, 4});
  auto u = testing::make_tensor("u", DType::kF32, {2}, {5, 6});
  testing::write_bytes(dir + "/a.safetensors", testing::safetensors_bytes({t0, u}));
  testing::write_bytes(dir + "/b.safetensors", testing::safetensors_bytes({t1}));
  testing::write_text(dir + "/model.safetensors.index.json",
                      R"({"weight_map":{"t":"b.safetensors","u":"a.safetensors"}})");
  auto ck = Checkpoint::open(dir);
  ASSERT_FALSE(ck.ok());
  EXPECT_EQ(ck.error().code(), ErrorCode::kBadCheckpoint);
  EXPECT_NE(ck.error().message().find("tensor 't' is stored in both 'b.safetensors' and 'a.safetensors'"), std::string::npos)
      << ck.error().message();
  // The index itself naming a tensor twice.
  testing::write_bytes(dir + "/b.safetensors", testing::safetensors_bytes({}));
  testing::write_text(dir + "/model.safetensors.index.json",
                      R"({"weight_map":{"t":"a.safetensors","u":"a.safetensors","t":"a.safetensors"}})");
  ck = Checkpoint::open(dir);
  ASSERT_FALSE(ck.ok());
  EXPECT_NE(ck.error().message().find("model.safetensors.index.json: weight_map lists tensor 't' twice"), std::string::npos)
      << ck.error().message();
}

}  // namespace
}  // namespace hfs
