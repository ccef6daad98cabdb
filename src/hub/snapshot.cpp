// download_checkpoint: which files make a checkpoint, one commit for all of them, and the cache as the
// answer when offline or when the network is down.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "hfstatic/hub.h"
#include "hub/cache_layout.h"
#include "hub/file_download.h"

namespace hfs::hub {
namespace fs = std::filesystem;
namespace {

constexpr const char* kConfig = "config.json";
constexpr const char* kWeights = "model.safetensors";
constexpr const char* kIndex = "model.safetensors.index.json";
constexpr const char* kOptional[] = {"tokenizer.json", "tokenizer_config.json", "generation_config.json"};

std::string shown(const RepoRef& ref) { return "'" + ref.repo_id + "@" + ref.revision + "'"; }

// The shard files a model.safetensors.index.json names: each a relative path inside the repository.
Result<std::vector<std::string>> shards_of(const fs::path& index, const RepoRef& ref) {
  const std::string where = "Hub repository '" + ref.repo_id + "', " + kIndex;
  std::ifstream f(index);
  if (!f) return make_error(ErrorCode::kIo, "cannot read '" + index.string() + "'");
  nlohmann::json j = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    return make_error(ErrorCode::kBadCheckpoint, where + ": not a JSON object with a \"weight_map\" object");
  std::set<std::string> files;
  for (const auto& [tensor, file] : j["weight_map"].items()) {
    if (!file.is_string()) return make_error(ErrorCode::kBadCheckpoint, where + ": weight_map[\"" + tensor + "\"] is not a string");
    const std::string name = file.get<std::string>();
    const fs::path p(name);
    bool safe = !name.empty() && p.is_relative() && name.ends_with(".safetensors");
    for (const auto& part : p) safe = safe && part != ".." && part != ".";
    if (!safe)
      return make_error(ErrorCode::kBadCheckpoint, where + ": weight_map[\"" + tensor + "\"] = '" + name +
                                                       "' is not a .safetensors file inside the repository");
    files.insert(name);
  }
  if (files.empty()) return make_error(ErrorCode::kBadCheckpoint, where + ": weight_map is empty");
  return std::vector<std::string>(files.begin(), files.end());
}

// The snapshot of `commit` if it holds a whole checkpoint (config and every weight file), else the first
// file missing.
Result<std::string> complete_snapshot(const CacheLayout& L, const RepoRef& ref, const std::string& commit) {
  const fs::path dir = L.snapshot(commit);
  std::error_code ec;
  auto missing = [&](const std::string& file) {
    return make_error(ErrorCode::kNotFound, "the cached snapshot '" + dir.string() + "' of " + shown(ref) + " lacks '" + file + "'");
  };
  if (!fs::exists(dir / kConfig, ec)) return missing(kConfig);
  if (fs::exists(dir / kWeights, ec)) return dir.string();
  if (!fs::exists(dir / kIndex, ec)) return missing(kWeights);
  HFS_ASSIGN_OR_RETURN(std::vector<std::string> shards, shards_of(dir / kIndex, ref));
  for (const std::string& s : shards)
    if (!fs::exists(dir / s, ec)) return missing(s);
  return dir.string();
}

Result<std::string> from_cache(const CacheLayout& L, const RepoRef& ref) {
  const std::optional<std::string> commit = L.cached_commit(ref.revision);
  if (!commit)
    return make_error(ErrorCode::kNotFound, shown(ref) + " is not in the cache '" + L.root().string() + "' (no refs/" + ref.revision +
                                                (is_commit_hash(ref.revision) ? " or snapshots/" + ref.revision : std::string()) + ")");
  return complete_snapshot(L, ref, *commit);
}

// HEAD then fetch; an optional file's 404 is remembered in .no_exist/ and is no error (false).
Result<bool> fetch(const HubContext& ctx, const std::string& commit, const std::string& file, bool optional) {
  auto meta = head_file(ctx, commit, file);
  if (!meta) {
    if (optional && meta.error().code() == ErrorCode::kNotFound) {
      ctx.layout.mark_missing(commit, file);
      return false;
    }
    return meta.error();
  }
  HFS_TRY(fetch_file(ctx, *meta, file));
  return true;
}

}  // namespace

Result<std::string> download_checkpoint(const RepoRef& ref, const HubOptions& options) {
  HubContext ctx{ref, &options, CacheLayout(options.cache_dir, ref.repo_id)};
  const CacheLayout& L = ctx.layout;
  if (options.offline) {
    auto dir = from_cache(L, ref);
    if (!dir) return Error(dir.error().code(), "offline mode (HF_HUB_OFFLINE=1): " + dir.error().message());
    return dir;
  }
  // A commit hash names content that never changes: a complete snapshot needs no request.
  if (is_commit_hash(ref.revision))
    if (auto dir = complete_snapshot(L, ref, ref.revision)) return dir;

  auto config = head_file(ctx, ref.revision, kConfig);
  if (!config) {
    if (config.error().code() != ErrorCode::kNetwork) return config.error();
    // No network (or no Hub behind HF_ENDPOINT): what huggingface_hub does, use the cached snapshot.
    auto dir = from_cache(L, ref);
    if (!dir) return Error(ErrorCode::kNetwork, config.error().message() + "; and " + dir.error().message());
    if (options.on_note) options.on_note("cannot reach the Hub (" + config.error().message() + "); using the cached snapshot " + *dir);
    return dir;
  }
  const std::string commit = config->commit;
  HFS_TRY(fetch_file(ctx, *config, kConfig));
  for (const char* file : kOptional) HFS_TRY(fetch(ctx, commit, file, /*optional=*/true));
  HFS_ASSIGN_OR_RETURN(bool single, fetch(ctx, commit, kWeights, /*optional=*/true));
  if (!single) {
    auto index = fetch(ctx, commit, kIndex, /*optional=*/true);
    if (!index) return index.error();
    if (!*index)
      return make_error(ErrorCode::kNotFound, "Hub repository '" + ref.repo_id + "' at revision '" + ref.revision + "' (commit " + commit +
                                                  ") has neither " + kWeights + " nor " + kIndex + " (hfstatic reads safetensors weights only)");
    HFS_ASSIGN_OR_RETURN(std::vector<std::string> shards, shards_of(L.snapshot(commit) / kIndex, ref));
    for (const std::string& s : shards) HFS_TRY(fetch(ctx, commit, s, /*optional=*/false));
  }
  if (ref.revision != commit) HFS_TRY(L.write_ref(ref.revision, commit));
  return L.snapshot(commit).string();
}

}  // namespace hfs::hub
