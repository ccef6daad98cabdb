// Backend registry: factories registered from each backend's own file at static-initialization time.
#include <map>
#include <mutex>

#include "hfstatic/ext/backend.h"
#include "hfstatic/ext/backend_kernels.h"

namespace hfs {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, BackendFactory, std::less<>> factories;
  std::map<std::string, KernelsDescriber, std::less<>> kernels;
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

bool register_backend(std::string name, BackendFactory factory) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  // The first registration wins: a duplicate (e.g. a test registering twice) must not swap a live backend.
  return r.factories.emplace(std::move(name), std::move(factory)).second;
}

bool register_backend_kernels(std::string name, KernelsDescriber describe) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.kernels.emplace(std::move(name), std::move(describe)).second;
}

std::string backend_kernels(std::string_view name) {
  KernelsDescriber describe;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.kernels.find(name);
    if (it == r.kernels.end()) return {};
    describe = it->second;
  }
  return describe();
}

std::vector<std::string> registered_backends() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> out;
  for (const auto& [name, f] : r.factories) out.push_back(name);
  return out;
}

namespace detail {
// Looks up a factory (used by Partitioner::from_options).
BackendFactory find_backend_factory(std::string_view name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.factories.find(name);
  return it == r.factories.end() ? BackendFactory() : it->second;
}
}  // namespace detail

std::vector<int> Delegate::output_order() const { return {}; }

}  // namespace hfs
