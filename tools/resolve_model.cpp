// `-m` accepts an HF checkpoint directory, or a Hub name ORG/NAME[@REVISION] downloaded into the Hub cache
// first: it is exported once into a cache and the program reused.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>

#include "common.h"
#include "hfstatic/export.h"
#include "hfstatic/ext/program_writer.h"

namespace hfs::cli {

Result<std::string> resolve_model(const std::string& name, const ExportOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string model = name;
  if (is_hub_name(name)) {
    HFS_ASSIGN_OR_RETURN(model, hub_checkpoint(name));
  }
  if (!fs::is_directory(model, ec)) return model;
  const fs::path dir = fs::absolute(model, ec);
  // A Hub snapshot (models--ORG--NAME/snapshots/<commit>) names its program after the repository.
  std::string stem = dir.filename().string();
  if (dir.parent_path().filename() == "snapshots") {
    stem = dir.parent_path().parent_path().filename().string();
    if (stem.starts_with("models--")) stem = stem.substr(8);
  }
  // The key covers the directory and every file's size and modification time: editing the checkpoint
  // re-exports, and two checkpoints never share a program.
  std::string key = dir.string();
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file(ec)) continue;
    key += "|" + e.path().filename().string() + ":" + std::to_string(e.file_size(ec)) + ":" +
           std::to_string(e.last_write_time(ec).time_since_epoch().count());
  }
  // Programs exported for several sequences are cached apart from single-sequence ones.
  if (options.sequences > 1) key += "|sequences=" + std::to_string(options.sequences);
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  fs::path cache = xdg && *xdg ? fs::path(xdg) / "hfstatic" : fs::path(home ? home : "/tmp") / ".cache" / "hfstatic";
  fs::create_directories(cache, ec);
  if (ec) return make_error(ErrorCode::kIo, "cannot create the program cache '" + cache.string() + "': " + ec.message());
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016zx", std::hash<std::string>{}(key));
  const fs::path out = cache / (stem + "-" + hex + ".hfs");
  if (fs::exists(out, ec)) return out.string();
  std::fprintf(stderr, "hfstatic: exporting %s → %s (once; later runs reuse it)\n", dir.c_str(), out.c_str());
  remove_on_interrupt(ProgramWriter::temp_path(out.string()));  // a Ctrl-C mid-export leaves no temp file
  HFS_TRY(export_checkpoint(dir.string(), out.string(), options));
  return out.string();
}

}  // namespace hfs::cli
