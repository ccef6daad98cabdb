// Hub names: "ORG/NAME[@REVISION]" and the Hub's rules for repository ids.
#include <cctype>

#include "hfstatic/hub.h"

namespace hfs::hub {
namespace {

// One part of a repository id: the characters the Hub accepts, no leading/trailing '-' or '.', no "--"
// (the cache folder uses "--" as the separator) and no "..".
bool valid_part(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) return false;
  if (s.front() == '-' || s.front() == '.' || s.back() == '-' || s.back() == '.') return false;
  return s.find("--") == std::string_view::npos && s.find("..") == std::string_view::npos;
}

}  // namespace

Result<RepoRef> parse_repo_ref(std::string_view text) {
  const std::string shown = "'" + std::string(text) + "'";
  RepoRef ref;
  std::string_view id = text;
  if (const size_t at = text.find('@'); at != std::string_view::npos) {
    id = text.substr(0, at);
    const std::string_view rev = text.substr(at + 1);
    if (rev.empty()) return make_error(ErrorCode::kInvalidArgument, "Hub name " + shown + ": empty revision after '@'");
    for (char c : rev)
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == ' ')
        return make_error(ErrorCode::kInvalidArgument, "Hub name " + shown + ": the revision contains a control character or space");
    // The revision names a file under refs/ in the cache: no way out of that folder.
    const std::string r(rev);
    if (r.front() == '/' || r == ".." || r.starts_with("../") || r.ends_with("/..") || r.find("/../") != std::string::npos ||
        r.find("//") != std::string::npos || r.back() == '/')
      return make_error(ErrorCode::kInvalidArgument, "Hub name " + shown + ": revision '" + r + "' is not a branch, tag or commit name");
    ref.revision = r;
  }
  const size_t slash = id.find('/');
  if (slash == std::string_view::npos || id.find('/', slash + 1) != std::string_view::npos)
    return make_error(ErrorCode::kInvalidArgument, "Hub name " + shown + ": expected ORG/NAME[@REVISION] (one '/')");
  if (!valid_part(id.substr(0, slash)) || !valid_part(id.substr(slash + 1)))
    return make_error(ErrorCode::kInvalidArgument,
                      "Hub name " + shown + ": ORG and NAME take letters, digits, '-', '_' and '.', not at either end, no '--' or '..'");
  if (id.size() > 96) return make_error(ErrorCode::kInvalidArgument, "Hub name " + shown + ": longer than 96 characters");
  ref.repo_id = std::string(id);
  return ref;
}

bool looks_like_repo_ref(std::string_view text) {
  return !text.ends_with(".hfs") && parse_repo_ref(text).ok();
}

}  // namespace hfs::hub
