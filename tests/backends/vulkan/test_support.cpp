#include "test_support.h"

#include <map>

#include "support/fixtures.h"
#include "support/hf_static_fixture.h"

namespace hfs::vulkan {

std::string stories_program(WeightsMode weights, DType cache, int context) {
  static std::map<std::string, std::string> exported;  // options → path
  const std::string key = "w" + std::to_string(static_cast<int>(weights)) + "_c" + std::string(dtype_name(cache)) +
                          "_n" + std::to_string(context);
  if (auto it = exported.find(key); it != exported.end()) return it->second;
  ExportOptions opt;
  opt.context = context;
  opt.prefill_chunk = 8;
  opt.weights = weights;
  opt.cache_dtype = cache;
  opt.progress = false;
  const std::string path = hfs::test::temp_dir() + "/stories260K_vulkan_" + key + ".hfs";
  const Status st = export_checkpoint(hfs::test::stories_dir(), path, opt);
  EXPECT_TRUE(st.ok()) << st.error().to_string();
  if (!st.ok()) return {};
  exported.emplace(key, path);
  return path;
}

std::unique_ptr<Runner> runner_on(const std::string& path, const std::string& backend) {
  RunnerOptions o;
  o.io.method.backends.backends = {backend};
  auto r = Runner::load(path, o);
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  return r.ok() ? std::move(*r) : nullptr;
}

void require_stories() {
  ASSERT_TRUE(hfs::test::fixture_exists(hfs::test::stories_dir() + "/config.json"))
      << hfs::test::missing(hfs::test::stories_dir());
}

void StoriesTest::SetUp() { ASSERT_NO_FATAL_FAILURE(require_stories()); }

}  // namespace hfs::vulkan
