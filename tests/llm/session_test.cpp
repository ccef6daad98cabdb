// Persistent prompt caches (docs/sessions.md): a restored session continues exactly as recomputing its
// tokens would, and every bad file is refused by name with the runner untouched. Tiny exported programs
// (2 layers, context 24); about 1 s in all on 2 cores.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "hfstatic/engine.h"
#include "hfstatic/llm_runner.h"
#include "llm/session_file.h"
#include "support/engine_trace.h"
#include "support/hf_static_fixture.h"

namespace hfs {
namespace {

using test::TinyModel;

std::vector<float> copy(std::span<const float> s) { return {s.begin(), s.end()}; }

std::vector<char> read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}
void write_all(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

struct Case {
  std::string backend;
  TinyModel model;
  std::string name;
};

class SessionRestore : public testing::TestWithParam<Case> {};

// Save after a prompt fed in uneven pieces, restore in a fresh runner, decode one token: its logits and
// the caches are bit for bit those of prefilling prompt + token in one go (chunking invariance makes the
// recomputation exact, docs/determinism.md). Sliding layers (mistral: a ring of the window) with a prompt
// longer than the ring, so it has wrapped.
TEST_P(SessionRestore, NextStepEqualsRecomputation) {
  const Case& c = GetParam();
  const std::string prog = test::tiny_program(c.model);
  const std::string path = test::temp_dir() + "/s.session";
  const std::vector<int32_t> prompt = test::random_tokens(17, 512, 3);
  const int32_t next = 42;

  auto a = test::runner_on(prog, c.backend);
  ASSERT_TRUE(a);
  ASSERT_TRUE(a->prefill(std::span(prompt).first(5)).ok());
  ASSERT_TRUE(a->prefill(std::span(prompt).subspan(5)).ok());
  const Status saved = a->save_session(path);
  ASSERT_TRUE(saved.ok()) << saved.error().to_string();
  for (const auto& e : std::filesystem::directory_iterator(test::temp_dir()))
    EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << "a temporary stayed: " << e.path();

  auto b = test::runner_on(prog, c.backend);
  ASSERT_TRUE(b);
  ASSERT_TRUE(b->prefill(std::span(prompt).first(3)).ok());  // restoring replaces whatever it held
  const Status restored = b->restore_session(path);
  ASSERT_TRUE(restored.ok()) << restored.error().to_string();
  EXPECT_EQ(b->position(), 17);
  EXPECT_EQ(std::vector<int32_t>(b->tokens().begin(), b->tokens().end()), prompt);
  EXPECT_TRUE(b->logits().empty());
  auto got = b->decode_step(next);
  ASSERT_TRUE(got.ok()) << got.error().to_string();
  const std::vector<float> restored_logits = copy(*got);

  auto r = test::runner_on(prog, c.backend);
  ASSERT_TRUE(r);
  std::vector<int32_t> all = prompt;
  all.push_back(next);
  ASSERT_TRUE(r->prefill(all).ok());
  const std::vector<float> want = copy(r->logits());
  ASSERT_EQ(restored_logits.size(), want.size());
  EXPECT_EQ(std::memcmp(restored_logits.data(), want.data(), want.size() * sizeof(float)), 0)
      << "logits differ by up to " << test::max_abs_diff(restored_logits, want);
  // A restored runner saves what it holds: the second file is the first plus one position.
  ASSERT_TRUE(b->save_session(path).ok());
  auto d = test::runner_on(prog, c.backend);
  ASSERT_TRUE(d->restore_session(path).ok());
  EXPECT_EQ(d->position(), 18);
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const char* backend : {"cpu_ref", "cpu_fast"}) {
    out.push_back({backend, TinyModel{}, std::string(backend) + "_llama"});
    TinyModel m;
    m.arch = "mistral", m.sliding_window = 6;
    out.push_back({backend, m, std::string(backend) + "_mistral_ring"});
  }
  return out;
}
INSTANTIATE_TEST_SUITE_P(Backends, SessionRestore, testing::ValuesIn(cases()),
                         [](const testing::TestParamInfo<Case>& i) { return i.param.name; });

// The engine's sequences save and restore the same files: a Runner's session restored into a 2-sequence
// engine (another slot layout) and continued gives the logits of prefilling everything; saved again from
// the engine, it restores into a Runner.
TEST(SessionEngine, RunnerAndEngineShareFiles) {
  TinyModel m;
  m.sequences = 2;
  const std::string prog = test::tiny_program(m);
  const std::string dir = test::temp_dir();
  const std::vector<int32_t> prompt = test::random_tokens(11, 512, 9);
  auto a = test::runner_on(prog, "cpu_ref");
  ASSERT_TRUE(a);
  ASSERT_TRUE(a->prefill(prompt).ok());
  ASSERT_TRUE(a->save_session(dir + "/r.session").ok());

  EngineOptions o;
  o.io.method.backends.backends = {"cpu_ref"};
  auto e = Engine::load(prog, o);
  ASSERT_TRUE(e.ok()) << e.error().to_string();
  GenerationConfig feed;
  feed.max_new_tokens = 0;
  auto other = (*e)->add(std::vector<int32_t>{5, 6, 7}, feed);  // occupies sequence index 0
  ASSERT_TRUE(other.ok());
  auto id = (*e)->restore_session(dir + "/r.session");
  ASSERT_TRUE(id.ok()) << id.error().to_string();
  EXPECT_EQ((*e)->sequence(*id)->length, 11);
  ASSERT_TRUE((*e)->append(*id, std::vector<int32_t>{42}, feed).ok());
  while (!(*e)->idle()) ASSERT_TRUE((*e)->step().ok());
  const std::vector<float> got = copy((*e)->logits(*id));

  auto r = test::runner_on(prog, "cpu_ref");
  std::vector<int32_t> all = prompt;
  all.push_back(42);
  ASSERT_TRUE(r->prefill(all).ok());
  const std::vector<float> want = copy(r->logits());
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0)
      << "logits differ by up to " << test::max_abs_diff(got, want);

  ASSERT_TRUE((*e)->save_session(*id, dir + "/e.session").ok());
  auto b = test::runner_on(prog, "cpu_ref");
  ASSERT_TRUE(b->restore_session(dir + "/e.session").ok());
  EXPECT_EQ(std::vector<int32_t>(b->tokens().begin(), b->tokens().end()), all);
  EXPECT_FALSE((*e)->restore_session(dir + "/missing").ok());
  EXPECT_EQ((*e)->sequences().size(), 2u);  // the refused restore added no sequence
}

// --- refusals: each names the file, says expected vs got, and leaves the runner as it was ------------------

class SessionRefusal : public testing::Test {
 protected:
  void SetUp() override {
    prog_ = test::tiny_program(TinyModel{});
    dir_ = test::temp_dir();
    good_ = dir_ + "/good.session";
    auto a = test::runner_on(prog_, "cpu_ref");
    ASSERT_TRUE(a);
    ASSERT_TRUE(a->prefill(test::random_tokens(9, 512, 5)).ok());
    ASSERT_TRUE(a->save_session(good_).ok());
    runner_ = test::runner_on(prog_, "cpu_ref");
    ASSERT_TRUE(runner_);
    before_tokens_ = test::random_tokens(6, 512, 11);
    ASSERT_TRUE(runner_->prefill(before_tokens_).ok());
    before_logits_ = copy(runner_->logits());
  }

  // Restoring `path` fails with `code` and a message holding each of `words`; the runner is unchanged.
  void expect_refused(const std::string& path, ErrorCode code, std::initializer_list<std::string> words) {
    const Status st = runner_->restore_session(path);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().code(), code) << st.error().to_string();
    EXPECT_NE(st.error().to_string().find(path), std::string::npos) << st.error().to_string();
    for (const std::string& w : words) EXPECT_NE(st.error().to_string().find(w), std::string::npos) << st.error().to_string();
    EXPECT_EQ(runner_->position(), 6);
    EXPECT_EQ(std::vector<int32_t>(runner_->tokens().begin(), runner_->tokens().end()), before_tokens_);
    EXPECT_EQ(copy(runner_->logits()), before_logits_);
  }

  std::string prog_, dir_, good_;
  std::unique_ptr<Runner> runner_;
  std::vector<int32_t> before_tokens_;
  std::vector<float> before_logits_;
};

TEST_F(SessionRefusal, TruncatedFile) {
  std::vector<char> b = read_all(good_);
  for (size_t keep : {b.size() - 1, b.size() / 2, size_t{20}, size_t{3}}) {
    const std::string p = dir_ + "/cut" + std::to_string(keep);
    write_all(p, std::vector<char>(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(keep)));
    expect_refused(p, ErrorCode::kTruncated, {"truncated"});
  }
}

TEST_F(SessionRefusal, FlippedByte) {
  std::vector<char> b = read_all(good_);
  for (size_t at : {size_t{40}, b.size() / 2, b.size() - 9, b.size() - 1}) {  // a token, cache rows, the checksum
    std::vector<char> bad = b;
    bad[at] = static_cast<char>(bad[at] ^ 0x10);
    const std::string p = dir_ + "/flip" + std::to_string(at);
    write_all(p, bad);
    expect_refused(p, ErrorCode::kChecksumMismatch, {"checksum", "expected"});
  }
}

TEST_F(SessionRefusal, AnotherProgram) {
  TinyModel other;
  other.seed = 8;  // the same shapes, other weights: only the content hash tells them apart
  auto o = test::runner_on(test::tiny_program(other), "cpu_ref");
  ASSERT_TRUE(o);
  ASSERT_TRUE(o->prefill(test::random_tokens(4, 512, 1)).ok());
  const std::string p = dir_ + "/other.session";
  ASSERT_TRUE(o->save_session(p).ok());
  expect_refused(p, ErrorCode::kInvalidArgument, {"another program", "expected program id", prog_});
}

TEST_F(SessionRefusal, AnotherFormatVersionOrNoSessionAtAll) {
  std::vector<char> b = read_all(good_);
  b[8] = 9;  // the u32 version after the 8-byte magic
  write_all(dir_ + "/v9", b);
  expect_refused(dir_ + "/v9", ErrorCode::kBadVersion, {"expected session format version 1, got 9"});
  write_all(dir_ + "/text", std::vector<char>(64, 'x'));
  expect_refused(dir_ + "/text", ErrorCode::kBadMagic, {"not a session file"});
  expect_refused(dir_ + "/missing", ErrorCode::kIo, {"cannot read"});
}

// A well-formed file of this program holding more positions than its context (written directly: the runner
// never saves one).
TEST_F(SessionRefusal, LongerThanTheContext) {
  auto id = program_identity(**Program::load(prog_));
  ASSERT_TRUE(id.ok());
  SessionFile s;
  s.program_id = *id;
  s.tokens.assign(30, 5);
  s.state.length = 30;
  const std::string p = dir_ + "/long.session";
  ASSERT_TRUE(write_session_file(p, s).ok());
  expect_refused(p, ErrorCode::kCapacityExceeded, {"30 positions", "context of 24"});
}

// `hfstatic run --session`: the second run restores the first's file, prefills only the last prompt token,
// and generates what the first generated (greedy: restore equals recompute); a corrupted file is refused.
// Three CLI runs on the tiny program, well under a second.
std::string run_cli(const std::string& args, int* status) {
  const std::string cmd = std::string(HFS_CLI_PATH) + " run " + args + " 2>&1";
  std::string text;
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return text;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
  *status = WEXITSTATUS(pclose(f));
  return text;
}

long prompt_tokens(const std::string& out) {
  const size_t at = out.find("\"prompt_tokens\":");
  return at == std::string::npos ? -1 : std::atol(out.c_str() + at + 16);
}

TEST(SessionCli, SecondRunReusesTheSavedPrompt) {
  const std::string prog = test::tiny_program(TinyModel{});
  const std::string file = test::temp_dir() + "/cli.session";
  const std::string args = "-m " + prog + " --tokens 5,6,7,8,9,10,11,12,13,14 -n 4 --temp 0 --ignore-eos --backend cpu_ref --json --session " + file;
  int st = -1;
  const std::string first = run_cli(args, &st);
  ASSERT_EQ(st, 0) << first;
  EXPECT_EQ(prompt_tokens(first), 10) << first;
  ASSERT_TRUE(std::filesystem::exists(file));
  const std::string second = run_cli(args, &st);
  ASSERT_EQ(st, 0) << second;
  EXPECT_NE(second.find("9 of 10 prompt tokens restored (the file held 13)"), std::string::npos) << second;
  EXPECT_EQ(prompt_tokens(second), 1) << second;
  auto tokens_of = [](const std::string& out) { return out.substr(out.find("\"tokens\":"), out.find(']', out.find("\"tokens\":")) - out.find("\"tokens\":")); };
  EXPECT_EQ(tokens_of(second), tokens_of(first)) << first << "\n" << second;

  std::vector<char> b = read_all(file);
  b[b.size() / 2] = static_cast<char>(b[b.size() / 2] ^ 1);
  write_all(file, b);
  const std::string bad = run_cli(args, &st);
  EXPECT_EQ(st, 1) << bad;
  EXPECT_NE(bad.find("checksum"), std::string::npos) << bad;
}

}  // namespace
}  // namespace hfs
