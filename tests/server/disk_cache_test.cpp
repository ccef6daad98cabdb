// The prompt cache's disk tier (serve --cache-dir): files saved from finished sequences, found by prefix,
// kept within the byte budget least recently used first, and indexed again by a new process. A tiny
// 2-sequence program; well under a second.
#include <gtest/gtest.h>

#include <filesystem>

#include "hfstatic/engine.h"
#include "server/disk_cache.h"
#include "support/hf_static_fixture.h"

namespace hfs::server {
namespace {

std::unique_ptr<Engine> engine_for(const std::string& prog) {
  EngineOptions o;
  o.io.method.backends.backends = {"cpu_ref"};
  auto e = Engine::load(prog, o);
  EXPECT_TRUE(e.ok()) << e.error().to_string();
  return e ? std::move(*e) : nullptr;
}

SequenceId fed(Engine& e, const std::vector<int32_t>& prompt) {
  GenerationConfig g;
  g.max_new_tokens = 0;
  auto id = e.add(prompt, g);
  EXPECT_TRUE(id.ok());
  while (!e.idle()) EXPECT_TRUE(e.step().ok());
  return *id;
}

TEST(DiskPromptCache, StoresFindsEvictsAndSurvivesARestart) {
  test::TinyModel m;
  m.sequences = 2;
  const std::string prog = test::tiny_program(m);
  const std::string dir = test::temp_dir() + "/cache";
  auto e = engine_for(prog);
  ASSERT_TRUE(e);
  const std::vector<int32_t> a = test::random_tokens(10, 512, 1), b = test::random_tokens(10, 512, 2);

  auto c = DiskPromptCache::open(*e, dir, 1 << 20);
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  const SequenceId ia = fed(*e, a);
  c->store(*e, ia, a);
  ASSERT_EQ(c->size(), 1u);
  const uint64_t one = c->bytes();
  std::vector<int32_t> longer = a;
  longer.push_back(7);
  ASSERT_TRUE(c->best(longer));
  EXPECT_EQ(c->best(longer)->length, 10);
  EXPECT_FALSE(c->best(a));  // one token must be left to feed
  EXPECT_FALSE(c->best(b));

  // A restart indexes the same file; restored and continued, it equals prefilling everything.
  auto again = DiskPromptCache::open(*e, dir, 1 << 20);
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->size(), 1u);
  auto id = e->restore_session(again->best(longer)->path);
  ASSERT_TRUE(id.ok()) << id.error().to_string();
  GenerationConfig g;
  g.max_new_tokens = 0;
  ASSERT_TRUE(e->append(*id, std::vector<int32_t>{7}, g).ok());
  while (!e->idle()) ASSERT_TRUE(e->step().ok());
  const std::vector<float> got(e->logits(*id).begin(), e->logits(*id).end());
  auto r = test::runner_on(prog, "cpu_ref");
  ASSERT_TRUE(r->prefill(longer).ok());
  ASSERT_EQ(got.size(), r->logits().size());
  EXPECT_TRUE(std::equal(got.begin(), got.end(), r->logits().begin()));
  ASSERT_TRUE(e->remove(*id).ok());
  ASSERT_TRUE(e->remove(ia).ok());

  // A budget of one file: storing a second removes the least recently used.
  auto small = DiskPromptCache::open(*e, dir, one + one / 2);
  ASSERT_TRUE(small.ok());
  const SequenceId ib = fed(*e, b);
  small->store(*e, ib, b);
  EXPECT_EQ(small->size(), 1u);
  EXPECT_FALSE(small->best(longer));
  std::vector<int32_t> b_more = b;
  b_more.push_back(3);
  EXPECT_TRUE(small->best(b_more));
  EXPECT_LE(small->bytes(), one + one / 2);

  // Another program's files are neither indexed nor removed.
  test::TinyModel other = m;
  other.seed = 9;
  auto eo = engine_for(test::tiny_program(other));
  auto co = DiskPromptCache::open(*eo, dir, 1);
  ASSERT_TRUE(co.ok());
  EXPECT_EQ(co->size(), 0u);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()), 1);
}

}  // namespace
}  // namespace hfs::server
