#include "session_options.h"

#include <cstdio>
#include <filesystem>

#include "hfstatic/ext/metadata_keys.h"

namespace hfs::cli {

bool has_sliding_layers(const Program& program) {
  const Value* w = program.meta(keys::kSlidingWindow);
  return w && w->as_int() > 0;
}

Result<int64_t> reuse_session(Runner& r, const std::string& path, const std::vector<int32_t>& prompt, bool sliding) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return int64_t{0};
  HFS_TRY(r.restore_session(path));
  const std::span<const int32_t> saved = r.tokens();
  const size_t held = saved.size();
  size_t k = 0;
  while (k < saved.size() && k < prompt.size() && saved[k] == prompt[k]) ++k;
  if (k == prompt.size() && k > 0) --k;  // the last prompt token is fed again: its logits start generation
  if (sliding && k + 1 < held) k = 0;
  if (k == 0) {
    r.reset();
  } else {
    HFS_TRY(r.truncate(static_cast<int64_t>(k)));
  }
  std::fprintf(stderr, "hfstatic: session '%s': %zu of %zu prompt tokens restored (the file held %zu)\n", path.c_str(), k,
               prompt.size(), held);
  return static_cast<int64_t>(k);
}

}  // namespace hfs::cli
