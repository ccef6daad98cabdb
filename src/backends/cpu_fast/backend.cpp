#include "backends/cpu_fast/backend.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "backends/cpu_fast/compile_steps.h"
#include "backends/cpu_fast/cpu_features.h"
#include "backends/cpu_fast/huge_slab.h"
#include "backends/cpu_fast/thread_pool.h"
#include "hfstatic/ext/backend_kernels.h"
#include "hfstatic/ext/method.h"

namespace hfs::cpu_fast {

namespace {

// The pool every cpu_fast backend of `threads` threads in this process uses (backend.h says why one).
// Held weakly here: it lives as long as a backend or a compiled method holds it.
std::shared_ptr<ThreadPool> shared_pool(int threads) {
  if (threads <= 0) threads = ThreadPool::default_threads();
  static std::mutex mu;
  static std::map<int, std::weak_ptr<ThreadPool>> pools;
  std::lock_guard<std::mutex> lock(mu);
  std::weak_ptr<ThreadPool>& slot = pools[threads];
  std::shared_ptr<ThreadPool> pool = slot.lock();
  if (!pool) {
    pool = std::make_shared<ThreadPool>(threads);
    slot = pool;
  }
  return pool;
}

}  // namespace

CpuFastBackend::CpuFastBackend(int threads, bool deterministic)
    : pool_(shared_pool(threads)), deterministic_(deterministic) {}
CpuFastBackend::~CpuFastBackend() = default;
int CpuFastBackend::threads() const { return pool_->size(); }
std::shared_ptr<Allocator> CpuFastBackend::allocator() const { return huge_page_allocator(); }

bool CpuFastBackend::supports(const NodeDef& node, std::span<const TensorType* const> types) const {
  return supports_node(node, types);
}

// The steps, what each decides and why they run in this order: compile_steps.h.
Result<std::unique_ptr<Delegate>> CpuFastBackend::compile(const Subgraph& sg) {
  auto d = std::make_unique<FastDelegate>();
  d->pool = pool_;
  d->float_rows = deterministic_ ? FloatRows::kRowInvariant : FloatRows::kPanelGemm;
  CompileState c{sg, *d, pool_.get(), sg.constants != nullptr && sg.constants->releases_pages(), {}};
  HFS_TRY(resolve_steps(c));
  HFS_TRY(pack_embedding_tables(c));
  batch_linears(*d);
  HFS_TRY(bind_outputs(c));
  const std::vector<bool> dead = fuse_silu_mul(*d);
  fuse_glu(*d, dead);
  fuse_norms_into_linears(*d);
  group_rope_kv_writes(*d);
  HFS_TRY(plan_lifetimes(*d));
  HFS_TRY(size_scratch(*d, pool_->size()));
  HFS_TRY(tune_linears(*d));
  d->live_scanned.assign(d->live_lists.size(), 0);
  d->ptr.assign(d->vals.size(), nullptr);
  if (StepProfile::requested()) d->enable_profile(*pool_);
  return std::unique_ptr<Delegate>(std::move(d));
}

Result<std::unique_ptr<Backend>> make_cpu_fast_backend(const Value& settings) {
  int threads = 0;
  bool deterministic = true;
  if (settings.is_object()) {
    for (const auto& [key, v] : settings.as_object()) {
      if (key == "deterministic") {
        if (!v.is_bool())
          return make_error(ErrorCode::kInvalidArgument,
                            "cpu_fast: setting 'deterministic' must be true or false, got " + v.to_json());
        deterministic = v.as_bool();
        continue;
      }
      if (key != "threads")
        return make_error(ErrorCode::kInvalidArgument,
                          "cpu_fast: unknown setting '" + key + "' (known: threads, deterministic)");
      if (!v.is_int() || v.as_int() < 0 || v.as_int() > 1024)
        return make_error(ErrorCode::kInvalidArgument,
                          "cpu_fast: setting 'threads' must be an integer in [0, 1024] (0 = one per CPU), got " + v.to_json());
      threads = static_cast<int>(v.as_int());
    }
  } else if (!settings.is_null()) {
    return make_error(ErrorCode::kInvalidArgument, "cpu_fast: settings must be an object, got " + settings.to_json());
  }
  return std::unique_ptr<Backend>(std::make_unique<CpuFastBackend>(threads, deterministic));
}

namespace {
const bool kRegistered = register_backend("cpu_fast", [](const Value& s) { return make_cpu_fast_backend(s); });
// The dispatch level: results are bit-identical run to run on one level, not across levels.
const bool kKernelsRegistered = register_backend_kernels("cpu_fast", [] { return std::string(isa_name(active_isa())); });
}  // namespace

}  // namespace hfs::cpu_fast
