// hfstatic.hub_download(): a checkpoint by Hub name into huggingface_hub's cache (hfs::hub).
#include <optional>
#include <string>

#include "common.h"
#include "hfstatic/hub.h"

namespace hfs::py_bind {

void bind_hub(py::module_& m) {
  m.def(
      "hub_download",
      [](const std::string& name, std::optional<std::string> revision, std::optional<std::string> cache_dir,
         std::optional<std::string> token, bool offline) {
        auto ref = hub::parse_repo_ref(name);
        if (!ref) raise(ref.error());
        if (revision) ref->revision = *revision;
        hub::HubOptions opt = hub::HubOptions::from_env();  // no progress: a library call stays quiet
        if (cache_dir) opt.cache_dir = *cache_dir;
        if (token) opt.token = *token;
        opt.offline = opt.offline || offline;
        Result<std::string> dir = [&] {
          py::gil_scoped_release nogil;
          return hub::download_checkpoint(*ref, opt);
        }();
        if (!dir) raise(dir.error());
        return *dir;
      },
      py::arg("name"), py::arg("revision") = py::none(), py::arg("cache_dir") = py::none(), py::arg("token") = py::none(),
      py::arg("offline") = false,
      R"(Downloads (or finds in the cache) the checkpoint "ORG/NAME[@REVISION]" and returns its snapshot
directory, an ordinary checkpoint directory for hfstatic.export().

The cache is huggingface_hub's ($HF_HUB_CACHE, default $HF_HOME/hub), shared with Python tools; HF_ENDPOINT,
HF_TOKEN (or $HF_HOME/token) and HF_HUB_OFFLINE=1 are read as huggingface_hub reads them. revision overrides
the name's @REVISION; cache_dir and token override the environment; offline=True resolves from the cache only.
Raises hfstatic.Error: not_found (repository, revision or file), permission_denied (gated or private: set
HF_TOKEN), network, checksum_mismatch. See docs/hub.md.)");
}

}  // namespace hfs::py_bind
