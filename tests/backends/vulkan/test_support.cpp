#include "test_support.h"

#include <map>

#include "support/fixtures.h"
#include "support/hf_static_fixture.h"
#include "support/require_fixture.h"

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


void StoriesTest::SetUp() { HFS_REQUIRE_FIXTURE(hfs::test::stories_dir() + "/config.json"); }

}  // namespace hfs::vulkan
