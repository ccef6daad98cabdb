// The usage examples at the top of every public header (include/hfstatic/**.h) and README's C++ snippet,
// compiled and run: each test holds its example's lines unchanged (only literal paths such as
// "model.hfs" become fixture paths, and lines the examples leave to the reader are filled in), then
// checks what they produced. A header whose example changes must change here too; the header says so.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "hfstatic/ext/allocator.h"
#include "hfstatic/ext/backend.h"
#include "hfstatic/chat_template.h"
#include "hfstatic/dtype.h"
#include "hfstatic/engine.h"
#include "hfstatic/error.h"
#include "hfstatic/export.h"
#include "hfstatic/ext/graph.h"
#include "hfstatic/hub.h"
#include "hfstatic/ext/io_contract.h"
#include "hfstatic/constraint.h"
#include "hfstatic/llm_runner.h"
#include "hfstatic/ext/metadata_keys.h"
#include "hfstatic/ext/method.h"
#include "hfstatic/ext/ops.h"
#include "hfstatic/program.h"
#include "hfstatic/ext/program_writer.h"
#include "hfstatic/ext/safetensors.h"
#include "hfstatic/sampler.h"
#include "hfstatic/tensor.h"
#include "hfstatic/tokenizer.h"
#include "hfstatic/value.h"
#include "support/checkpoint_writer.h"
#include "support/program_fixtures.h"
#include "support/fixtures.h"
#include "support/require_fixture.h"

namespace {

// The stories260K checkpoint from the fixture locator; "" when missing.
std::string stories_dir() {
  const std::string d = hfs::test::stories_dir();
  return hfs::test::fixture_exists(d + "/config.json") ? d : std::string();
}

// ---- export.h
hfs::Status export_example(const std::string& checkpoint_dir, const std::string& out_path) {
  hfs::ExportOptions opt;
  opt.context = 512;                       // capacity in tokens; at most max_position_embeddings
  opt.weights = hfs::WeightsMode::kF16;    // linear/embedding weights; norms stay f32
  hfs::Status st = hfs::export_checkpoint(checkpoint_dir, out_path, opt);
  if (!st) std::fprintf(stderr, "%s\n", st.error().to_string().c_str());
  return st;
}

// stories260K exported by export.h's example, once per test binary; "" (and a test failure) when the
// fixture is missing.
const std::string& stories_program() {
  static const std::string path = [] {
    const std::string dir = stories_dir();
    if (dir.empty()) return std::string();
    std::string out = hfs::test::temp_path("usage_examples") + ".hfs";
    return export_example(dir, out) ? out : std::string();
  }();
  if (path.empty()) ADD_FAILURE() << hfs::test::missing(hfs::test::stories_dir()) << " (or its export failed)";
  return path;
}

// ---- hub.h
hfs::Status hub_example(const std::string& out_path) {
  hfs::hub::HubOptions opt = hfs::hub::HubOptions::from_env();   // HF_ENDPOINT, HF_HOME, HF_TOKEN, ...
  auto ref = hfs::hub::parse_repo_ref("HuggingFaceTB/SmolLM2-135M-Instruct@main");
  if (!ref) return ref.error();
  auto dir = hfs::hub::download_checkpoint(*ref, opt);   // the snapshot directory, a checkpoint dir
  if (!dir) return dir.error();                          // names the repo, file, URL and HTTP status
  HFS_TRY(hfs::export_checkpoint(*dir, out_path, {}));
  return hfs::Status();
}

// ---- error.h
int error_example(const std::string& model_path) {
  hfs::Result<std::shared_ptr<const hfs::Program>> p = hfs::Program::load(model_path);
  if (!p) { std::fprintf(stderr, "%s\n", p.error().to_string().c_str()); return 1; }
  std::printf("%zu methods\n", p.value()->methods().size());
  return 0;
}

// ---- program.h
hfs::Status program_example(const std::string& model_path, hfs::TensorView* q_proj) {
  auto prog = hfs::Program::load(model_path);
  if (!prog) return prog.error();
  const hfs::MethodDef* decode = (*prog)->method("decode");
  hfs::TensorView w = *(*prog)->constant("layers.0.self_attn.q_proj.weight");
  EXPECT_NE(decode, nullptr);
  *q_proj = w;  // the view stays valid while the Program lives: keep it for the checks
  return hfs::Ok{};
}

// ---- chat_template.h
hfs::Result<std::string> chat_template_example(std::string_view config_json_text) {
  hfs::Result<hfs::ChatTemplate> t = hfs::ChatTemplate::from_tokenizer_config(config_json_text);
  if (!t) return t.error();
  hfs::ChatContext ctx;
  ctx.messages = {{"system", "Be brief.", {}}, {"user", "Hi!", {}}};   // role, content, extra fields
  ctx.add_generation_prompt = true;
  ctx.bos_token = "<|begin_of_text|>";
  ctx.eos_token = "<|eot_id|>";
  hfs::Result<std::string> prompt = t->render(ctx);   // feed to the tokenizer without adding specials
  return prompt;
}

// ---- engine.h (the program exported for 4 sequences; *engine keeps it for the checks)
hfs::Status engine_example(const std::string& model_path, std::unique_ptr<hfs::Engine>* engine) {
  auto e = hfs::Engine::load(model_path);                  // exported with --sequences 4
  if (!e) return e.error();
  hfs::GenerationConfig g; g.max_new_tokens = 32;
  std::vector<int32_t> p1 = {1, 15, 43}, p2 = {1, 99};
  auto a = (*e)->add(p1, g), b = (*e)->add(p2, g);
  while (!(*e)->idle()) {
    auto events = (*e)->step();                           // each: {sequence, token, finished}
    if (!events) return events.error();
    for (const hfs::StepEvent& ev : *events) std::printf("seq %lld: %d\n", (long long)ev.sequence, ev.token);
  }
  EXPECT_TRUE(a.ok() && b.ok());
  *engine = std::move(*e);
  return hfs::Ok{};
}

// ---- llm_runner.h
hfs::Result<hfs::GenerationResult> runner_example(const std::string& model_path) {
  auto r = hfs::Runner::load(model_path);
  if (!r) return r.error();
  hfs::GenerationConfig g; g.max_new_tokens = 64;
  std::vector<int32_t> prompt = {1};          // token ids: Tokenizer::encode(text), or your own
  auto out = (*r)->generate(prompt, g, [](int32_t tok) { std::printf("%d ", tok); return true; });
  // continuation: the next generate() continues at (*r)->position(); (*r)->reset() starts over.
  return out;
}

// ---- constraint.h
int constraint_example(hfs::Runner* runner, const std::vector<int32_t>& prompt, hfs::GenerationResult* result) {
  auto g = hfs::Grammar::from_gbnf("root ::= \"yes\" | \"no\"\n");
  if (!g) { std::fprintf(stderr, "%s\n", g.error().to_string().c_str()); return 1; }
  hfs::GrammarMatcher m(*g);
  bool ok = m.feed("ye");                       // true: a valid prefix (m.complete() is false)
  hfs::GenerationConfig gen;
  gen.constraint = *g;                          // or hfs::Grammar::json_object(), Grammar::from_regex("\\d+")
  auto out = runner->generate(prompt, gen);     // tokens spelling "yes" or "no", then EOS
  if (!ok || m.complete() || !out) return 1;
  *result = *out;
  return 0;
}

// ---- tokenizer.h
int tokenizer_example(const std::string& model_dir, const std::vector<int32_t>& generated) {
  auto tok = hfs::Tokenizer::from_dir(model_dir);
  if (!tok) { std::fprintf(stderr, "%s\n", tok.error().to_string().c_str()); return 1; }
  hfs::Result<std::vector<int32_t>> ids = (*tok)->encode("Hello world");   // + special tokens, as HF does
  hfs::Result<std::string> text = (*tok)->decode(*ids, /*skip_special=*/true);

  hfs::StreamDecoder stream(**tok);                      // generation: one id at a time
  if (!stream.prime(*ids)) return 1;                     // the prompt's text counts as already shown
  for (int32_t id : generated) {                         // e.g. from Runner::generate's callback
    hfs::Result<std::string> piece = stream.feed(id);    // only complete UTF-8, "" while a char is split
    if (piece) std::fputs(piece->c_str(), stdout);
  }
  return text && *text == "Hello world" ? 0 : 2;
}

// ---- README.md, "From C++"
hfs::Status readme_example(const std::string& model_path) {
  auto program = hfs::Program::load(model_path);
  if (!program) return program.error();
  auto tok = hfs::Tokenizer::from_program(**program);      // the tokenizer the exporter embedded
  if (!tok) return tok.error();
  auto prompt = (*tok)->encode("Once upon a time");
  if (!prompt) return prompt.error();
  auto runner = hfs::Runner::create(*program);
  if (!runner) return runner.error();
  hfs::StreamDecoder stream(**tok, /*skip_special=*/true);
  HFS_TRY(stream.prime(*prompt));                          // the text continues the prompt's
  hfs::GenerationConfig g; g.max_new_tokens = 64;         // greedy unless g.sampling says otherwise
  auto out = (*runner)->generate(*prompt, g, [&](int32_t id) {
    if (auto piece = stream.feed(id)) std::fputs(piece->c_str(), stdout);
    return true;
  });
  if (!out) return out.error();
  return hfs::Ok{};
}

// ---- ops.h (the test op's name differs: "silu" is taken by src/ops/silu.cpp, the real instance)
hfs::Result<std::vector<hfs::TensorType>> infer_unary_f32(std::span<const hfs::TensorType* const> in,
                                                          const hfs::Attrs&) {
  if (in[0]->dtype != hfs::DType::kF32) return hfs::make_error(hfs::ErrorCode::kDTypeMismatch, "x: expected f32");
  return std::vector<hfs::TensorType>{*in[0]};
}
hfs::Status silu_kernel(const hfs::KernelArgs& a) {
  const float* x = a.inputs[0].data<float>();
  float* y = a.outputs[0].data<float>();
  for (int64_t i = 0; i < a.inputs[0].numel(); ++i) y[i] = x[i] / (1.0f + std::exp(-x[i]));
  return hfs::Ok{};
}

const bool kRegistered = hfs::register_op({
    .name = "test.example_silu", .min_inputs = 1, .max_inputs = 1, .num_outputs = 1, .attrs = {},
    .infer = &infer_unary_f32, .reference = &silu_kernel});

// ---- io_contract.h
struct MyContractIO {
  static hfs::Result<std::unique_ptr<hfs::IOManager>> make(std::shared_ptr<const hfs::Program>,
                                                           const hfs::IOManagerOptions&) {
    return hfs::make_error(hfs::ErrorCode::kUnsupported, "my_contract: made by the example's factory");
  }
};
const bool kReg = hfs::register_io_manager("my_contract", &MyContractIO::make);

// A one-method program (graph.h's method) with io.contract = `contract`, written by ProgramWriter.
std::shared_ptr<const hfs::Program> program_with_contract(const std::string& contract) {
  hfs::MethodDef m;
  m.name = "decode";
  m.inputs.push_back({"x", {hfs::DType::kF32, {1, 4}}, hfs::IORole::kInput, ""});
  m.nodes.push_back({"silu", {"x"}, {"y"}, {}});
  m.outputs.push_back({"y", {hfs::DType::kF32, {1, 4}}, hfs::IORole::kOutput, ""});
  hfs::ProgramWriter w;
  w.set_metadata(std::string(hfs::keys::kContract), hfs::Value(contract));
  EXPECT_TRUE(w.add_method(m));
  const std::string path = hfs::test::temp_path("contract") + ".hfs";
  EXPECT_TRUE(w.write(path));
  auto p = hfs::Program::load(path);
  EXPECT_TRUE(p) << p.error().to_string();
  return p ? *p : nullptr;
}

float silu(float x) { return x / (1.0f + std::exp(-x)); }

TEST(UsageExamples, Allocator) {
  std::shared_ptr<hfs::Allocator> a = hfs::heap_allocator();
  hfs::Result<hfs::Buffer> b = a->allocate(4096);      // 64-byte aligned, zero-filled
  ASSERT_TRUE(b);
  float* p = static_cast<float*>(b->data());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  EXPECT_EQ(p[0], 0.0f);
  EXPECT_EQ(p[1023], 0.0f);

  auto shm = hfs::shared_memory_allocator();
  auto sb = shm->allocate(1 << 20);
  ASSERT_TRUE(sb);
  int fd = sb->fd();   // another process can mmap(fd) and see the same bytes
  ASSERT_GE(fd, 0);
  std::memcpy(sb->data(), "shared", 7);
  void* again = mmap(nullptr, 1 << 20, PROT_READ, MAP_SHARED, fd, 0);
  ASSERT_NE(again, MAP_FAILED);
  EXPECT_STREQ(static_cast<const char*>(again), "shared");
  munmap(again, 1 << 20);
}

TEST(UsageExamples, Backend) {
  hfs::BackendOptions opts;
  opts.backends = {"cpu_fast"};                 // priority order; "cpu_ref" takes the rest
  opts.settings["cpu_fast"].set("threads", hfs::Value(2));
  auto part = hfs::Partitioner::from_options(opts);
  ASSERT_TRUE(part) << part.error().to_string();
  ASSERT_EQ(part->backends().size(), 2u);
  EXPECT_EQ(part->backends()[0]->name(), "cpu_fast");
  EXPECT_EQ(part->backends()[1]->name(), "cpu_ref");
}

TEST(UsageExamples, ChatTemplate) {
  const std::string config = R"({"chat_template": "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content }}{{ eos_token }}{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}"})";
  auto prompt = chat_template_example(config);
  ASSERT_TRUE(prompt) << prompt.error().to_string();
  EXPECT_EQ(*prompt, "<|begin_of_text|><system>Be brief.<|eot_id|><user>Hi!<|eot_id|><assistant>");
  EXPECT_EQ(chat_template_example("{}").error().code(), hfs::ErrorCode::kNotFound);
}

TEST(UsageExamples, DType) {
  const hfs::DTypeInfo& info = hfs::dtype_info(hfs::DType::kF16);   // {"f16", 1, 2, true}
  auto d = hfs::dtype_from_name("bf16");                            // Result<DType>
  EXPECT_EQ(info.name, "f16");
  EXPECT_EQ(info.block_elems, 1u);
  EXPECT_EQ(info.block_bytes, 2u);
  EXPECT_TRUE(info.is_float);
  ASSERT_TRUE(d);
  EXPECT_EQ(*d, hfs::DType::kBF16);
}

TEST(UsageExamples, Error) {
  const std::string missing = hfs::test::temp_path("missing") + ".hfs";
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(error_example(missing), 1);
  EXPECT_NE(::testing::internal::GetCapturedStderr().find(missing), std::string::npos);

  const std::string tiny = hfs::test::temp_path("tiny") + ".hfs";
  ASSERT_TRUE(hfs::test::write_tiny_program(tiny));
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(error_example(tiny), 0);
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "2 methods\n");
}

TEST(UsageExamples, ExportProgramAndMetadataKeys) {
  HFS_REQUIRE_FIXTURE(::hfs::test::stories_dir());
  const std::string& path = stories_program();
  ASSERT_FALSE(path.empty());
  auto loaded = hfs::Program::load(path);
  ASSERT_TRUE(loaded) << loaded.error().to_string();
  std::shared_ptr<const hfs::Program> prog = *loaded;
  // metadata_keys.h
  EXPECT_TRUE(prog->meta(hfs::keys::kContract)->as_string() == hfs::keys::kContractHfStatic);
  EXPECT_EQ(prog->meta(hfs::keys::kContextLength)->as_int(), 512);
  EXPECT_EQ(prog->meta(hfs::keys::kGeneralWeights)->as_string(), "f16");

  hfs::TensorView q_proj;
  ASSERT_TRUE(program_example(path, &q_proj));
  EXPECT_EQ(q_proj.dtype, hfs::DType::kF16);
  EXPECT_EQ(q_proj.shape, hfs::Shape({64, 64}));
}

// hub.h's example offline (HF_HUB_OFFLINE=1): its repository is put in a cache in huggingface_hub's
// layout by hand, holding the stories260K fixture, so the example resolves refs/main without a network.
TEST(UsageExamples, Hub) {
  HFS_REQUIRE_FIXTURE(::hfs::test::stories_dir());
  namespace fs = std::filesystem;
  const std::string dir = stories_dir();
  ASSERT_FALSE(dir.empty()) << hfs::test::missing(hfs::test::stories_dir());
  const fs::path cache = hfs::test::temp_path("hub_cache");
  const fs::path repo = cache / "models--HuggingFaceTB--SmolLM2-135M-Instruct";
  const std::string commit(40, 'c');
  fs::create_directories(repo / "blobs");
  fs::create_directories(repo / "snapshots" / commit);
  fs::create_directories(repo / "refs");
  int n = 0;
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"}) {
    const std::string etag = "etag" + std::to_string(n++);
    fs::copy_file(fs::path(dir) / f, repo / "blobs" / etag);
    fs::create_symlink(fs::path("../../blobs") / etag, repo / "snapshots" / commit / f);
  }
  std::ofstream(repo / "refs" / "main") << commit;
  setenv("HF_HUB_CACHE", cache.c_str(), 1);
  setenv("HF_HUB_OFFLINE", "1", 1);
  const std::string out = hfs::test::temp_path("hub_example") + ".hfs";
  hfs::Status st = hub_example(out);
  unsetenv("HF_HUB_CACHE");
  unsetenv("HF_HUB_OFFLINE");
  ASSERT_TRUE(st) << st.error().to_string();
  auto prog = hfs::Program::load(out);
  ASSERT_TRUE(prog) << prog.error().to_string();
  EXPECT_EQ((*prog)->meta(hfs::keys::kContract)->as_string(), hfs::keys::kContractHfStatic);
  fs::remove_all(cache);
  fs::remove(out);
}

// graph.h's method, written by program_writer.h's example, run by method.h's.
TEST(UsageExamples, GraphProgramWriterMethod) {
  const std::string path = hfs::test::temp_path("example") + ".hfs";
  auto write = [&](const hfs::MethodDef& method_def, std::span<const std::byte> bytes) -> hfs::Status {
    hfs::ProgramWriter w;
    w.set_metadata(std::string(hfs::keys::kGeneralName), hfs::Value("tiny"));
    auto name = w.add_constant("w", {hfs::DType::kF32, {4, 4}}, bytes);   // Result<std::string>
    HFS_TRY(w.add_method(method_def));
    hfs::Status st = w.write(path);
    EXPECT_TRUE(name && *name == "w");
    return st;
  };
  {
    hfs::MethodDef m;
    m.name = "decode";
    m.inputs.push_back({"x", {hfs::DType::kF32, {1, 4}}, hfs::IORole::kInput, ""});
    m.nodes.push_back({"silu", {"x"}, {"y"}, {}});
    m.outputs.push_back({"y", {hfs::DType::kF32, {1, 4}}, hfs::IORole::kOutput, ""});
    std::vector<std::byte> w_bytes(16 * sizeof(float));
    hfs::Status st = write(m, w_bytes);
    ASSERT_TRUE(st) << st.error().to_string();
  }
  auto prog = hfs::Program::load(path);
  hfs::MethodOptions mo;                       // backends: {"cpu_fast"} for the fast CPU backend
  auto m = hfs::Method::load(*prog, "decode", mo);
  ASSERT_TRUE(m) << m.error().to_string();
  float x[4] = {1, 2, 3, 4}, y[4];             // graph.h's decode(x f32[1,4]) -> y f32[1,4]
  std::vector<hfs::TensorView> in = {{x, hfs::DType::kF32, {1, 4}}}, out = {{y, hfs::DType::kF32, {1, 4}}};
  hfs::Status st = (*m)->execute(in, out);     // state outputs come back as the inputs' buffers
  ASSERT_TRUE(st) << st.error().to_string();
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(y[i], silu(x[i])) << i;
  EXPECT_EQ((*prog)->meta(hfs::keys::kGeneralName)->as_string(), "tiny");
}

TEST(UsageExamples, IOContract) {
  EXPECT_TRUE(kReg);
  std::shared_ptr<const hfs::Program> program = program_with_contract("my_contract");
  ASSERT_NE(program, nullptr);
  hfs::IOManagerOptions opts;
  auto io = hfs::create_io_manager(program, opts);     // picks by the program's io.contract
  if (!io) puts(io.error().to_string().c_str());       // unknown contract → lists the known ones
  ASSERT_FALSE(io);
  EXPECT_EQ(io.error().message(), "my_contract: made by the example's factory");

  program = program_with_contract("no_such_contract");
  ASSERT_NE(program, nullptr);
  auto unknown = hfs::create_io_manager(program, opts);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code(), hfs::ErrorCode::kUnknownContract);
  EXPECT_NE(unknown.error().message().find("hf_static"), std::string::npos) << unknown.error().message();
  EXPECT_NE(unknown.error().message().find("my_contract"), std::string::npos) << unknown.error().message();
}

TEST(UsageExamples, LlmRunner) {
  HFS_REQUIRE_FIXTURE(::hfs::test::stories_dir());
  const std::string& path = stories_program();
  ASSERT_FALSE(path.empty());
  ::testing::internal::CaptureStdout();
  auto out = runner_example(path);
  const std::string printed = ::testing::internal::GetCapturedStdout();
  ASSERT_TRUE(out) << out.error().to_string();
  std::string expected;
  for (int32_t t : out->tokens) expected += std::to_string(t) + " ";
  EXPECT_EQ(printed, expected);
  ASSERT_FALSE(out->tokens.empty());
  EXPECT_LE(out->tokens.size(), 64u);
  if (out->stop == hfs::GenerationResult::Stop::kMaxTokens) {
    EXPECT_EQ(out->tokens.size(), 64u);
  }
}

TEST(UsageExamples, Constraint) {
  HFS_REQUIRE_FIXTURE(::hfs::test::stories_dir());
  const std::string& path = stories_program();
  ASSERT_FALSE(path.empty());
  auto r = hfs::Runner::load(path);
  ASSERT_TRUE(r) << r.error().to_string();
  hfs::GenerationResult out;
  ASSERT_EQ(constraint_example(r->get(), {1}, &out), 0);
  ASSERT_EQ(out.stop, hfs::GenerationResult::Stop::kStopToken);
  auto tok = hfs::Tokenizer::from_dir(stories_dir());
  ASSERT_TRUE(tok);
  std::string text;
  for (size_t i = 0; i + 1 < out.tokens.size(); ++i) text += (*tok)->token_bytes(out.tokens[i]).value_or("?");
  EXPECT_TRUE(text == "yes" || text == "no") << text;
  EXPECT_EQ(out.tokens.back(), (*tok)->eos_ids().at(0));
}

TEST(UsageExamples, Engine) {
  HFS_REQUIRE_FIXTURE(::hfs::test::stories_dir());
  const std::string dir = stories_dir();
  ASSERT_FALSE(dir.empty()) << hfs::test::missing(hfs::test::stories_dir());
  hfs::ExportOptions opt;
  opt.context = 128;
  opt.sequences = 4;
  opt.progress = false;
  const std::string path = hfs::test::temp_path("usage_engine") + ".hfs";
  ASSERT_TRUE(hfs::export_checkpoint(dir, path, opt));
  ::testing::internal::CaptureStdout();
  std::unique_ptr<hfs::Engine> e;
  hfs::Status st = engine_example(path, &e);
  const std::string printed = ::testing::internal::GetCapturedStdout();
  ASSERT_TRUE(st) << st.error().to_string();
  // Each sequence generated what the single-sequence Runner generates for its prompt alone.
  const std::vector<std::vector<int32_t>> prompts = {{1, 15, 43}, {1, 99}};
  std::string expected_lines;
  for (hfs::SequenceId id : {0, 1}) {
    auto info = e->sequence(id);
    ASSERT_TRUE(info.ok());
    auto r = hfs::Runner::load(path);
    ASSERT_TRUE(r.ok());
    hfs::GenerationConfig g;
    g.max_new_tokens = 32;
    auto solo = (*r)->generate(prompts[static_cast<size_t>(id)], g);
    ASSERT_TRUE(solo.ok());
    EXPECT_EQ(info->generated, solo->tokens) << "sequence " << id;
    for (int32_t t : info->generated) EXPECT_NE(printed.find("seq " + std::to_string(id) + ": " + std::to_string(t) + "\n"), std::string::npos);
  }
}

TEST(UsageExamples, Ops) {
  EXPECT_TRUE(kRegistered);
  const hfs::OpSchema* op = hfs::find_op("test.example_silu");
  ASSERT_NE(op, nullptr);
  float x[3] = {-1, 0, 2}, y[3] = {};
  hfs::TensorView in(x, hfs::DType::kF32, {3}), out(y, hfs::DType::kF32, {3});
  hfs::Attrs attrs;
  ASSERT_TRUE(op->reference({std::span(&in, 1), std::span(&out, 1), attrs}));
  for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(y[i], silu(x[i])) << i;
}

TEST(UsageExamples, Safetensors) {
  hfs::testing::CheckpointWriter writer(hfs::testing::temp_dir("usage_safetensors"));
  writer.add("model.embed_tokens.weight", hfs::DType::kF32, {2, 3}, {1, 2, 3, 4, 5, 6});
  writer.write();
  auto example = [&]() -> hfs::Status {
    auto ck = hfs::Checkpoint::open(writer.dir());            // model.safetensors or the sharded index
    if (!ck) return ck.error();
    const hfs::SafetensorInfo* t = (*ck)->find("model.embed_tokens.weight");   // nullptr when absent
    hfs::Result<std::span<const std::byte>> bytes = (*ck)->data("model.embed_tokens.weight");
    EXPECT_NE(t, nullptr);
    if (t) {
      EXPECT_EQ(t->shape, hfs::Shape({2, 3}));
    }
    EXPECT_TRUE(bytes);
    if (bytes) {
      EXPECT_EQ(bytes->size(), 6 * sizeof(float));
      float last;
      std::memcpy(&last, bytes->data() + 5 * sizeof(float), sizeof(float));
      EXPECT_EQ(last, 6.0f);
    }
    return hfs::Ok{};
  };
  hfs::Status st = example();
  EXPECT_TRUE(st) << st.error().to_string();
}

TEST(UsageExamples, Sampler) {
  const int64_t vocab_size = 8;
  std::vector<float> logits(vocab_size, 0.0f);
  logits[5] = 20.0f;  // probability ≈ 1: top-p 0.95 keeps this token alone
  std::vector<int32_t> recent_tokens;
  hfs::SamplingConfig sc; sc.temperature = 0.8f; sc.top_p = 0.95f; sc.seed = 42;
  hfs::Sampler s(sc, vocab_size);
  int32_t next = s.sample(logits, recent_tokens);
  EXPECT_EQ(next, 5);
}

TEST(UsageExamples, Tensor) {
  float buf[6];
  hfs::TensorView v(buf, hfs::DType::kF32, {2, 3});   // [2, 3] f32
  float* p = v.data<float>();
  EXPECT_EQ(p, buf);
  EXPECT_EQ(v.numel(), 6);
  EXPECT_EQ(v.shape, hfs::Shape({2, 3}));
}

TEST(UsageExamples, Tokenizer) {
  HFS_REQUIRE_FIXTURE(::hfs::test::stories_dir());
  const std::string dir = stories_dir();
  ASSERT_FALSE(dir.empty()) << hfs::test::missing(hfs::test::stories_dir());
  auto tok = hfs::Tokenizer::from_dir(dir);
  ASSERT_TRUE(tok);
  auto generated = (*tok)->encode("there was", /*add_special=*/false);
  ASSERT_TRUE(generated);
  ::testing::internal::CaptureStdout();
  const int rc = tokenizer_example(dir, *generated);
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), " there was");  // continues "Hello world"
  EXPECT_EQ(rc, 0);
}

TEST(UsageExamples, Value) {
  hfs::Value v = hfs::Value::object();
  v.set("n_layers", hfs::Value(int64_t{5}));
  int64_t n = v.get("n_layers")->as_int();
  std::string s = v.to_json();                  // {"n_layers":5}
  hfs::Result<hfs::Value> back = hfs::Value::parse_json(s);
  EXPECT_EQ(n, 5);
  EXPECT_EQ(s, R"({"n_layers":5})");
  ASSERT_TRUE(back);
  EXPECT_EQ(back->get("n_layers")->as_int(), 5);
}

// README's snippet streams the same text as decoding the same greedy generation at once.
TEST(UsageExamples, Readme) {
  HFS_REQUIRE_FIXTURE(::hfs::test::stories_dir());
  const std::string& path = stories_program();
  ASSERT_FALSE(path.empty());
  ::testing::internal::CaptureStdout();
  hfs::Status st = readme_example(path);
  const std::string streamed = ::testing::internal::GetCapturedStdout();
  ASSERT_TRUE(st) << st.error().to_string();

  auto program = hfs::Program::load(path);
  ASSERT_TRUE(program);
  auto tok = hfs::Tokenizer::from_program(**program);
  ASSERT_TRUE(tok);
  auto prompt = (*tok)->encode("Once upon a time");
  auto runner = hfs::Runner::create(*program);
  ASSERT_TRUE(prompt && runner);
  hfs::GenerationConfig g; g.max_new_tokens = 64;
  auto out = (*runner)->generate(*prompt, g);
  ASSERT_TRUE(out);
  std::vector<int32_t> all = *prompt;
  all.insert(all.end(), out->tokens.begin(), out->tokens.end());
  auto whole = (*tok)->decode(all, /*skip_special=*/true);
  auto head = (*tok)->decode(*prompt, /*skip_special=*/true);
  ASSERT_TRUE(whole && head);
  ASSERT_EQ(whole->compare(0, head->size(), *head), 0);
  EXPECT_EQ(streamed, whole->substr(head->size()));
  EXPECT_FALSE(streamed.empty());
}

}  // namespace
