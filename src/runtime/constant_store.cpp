// Constant stores: zero-copy views over a Program's tensor table, plus constants that passes add (owned).
// std::map keeps element addresses stable, so find() pointers stay valid as constants are added.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>

#include "hfstatic/ext/method.h"

namespace hfs {
namespace {

struct OwnedConstant {
  Buffer buffer;
  TensorView view;
};

class OwningStore : public ConstantStore {
 public:
  const TensorView* find(std::string_view name) const override {
    auto it = owned_.find(name);
    return it == owned_.end() ? nullptr : &it->second.view;
  }

  Status add(const std::string& name, const TensorType& type, std::span<const std::byte> bytes) override {
    HFS_TRY(check_new(name, type));
    const uint64_t want = type.nbytes();
    if (bytes.size() != want)
      return make_error(ErrorCode::kTensorSizeMismatch, "constant store: constant '" + name + "' of type " +
                                                            type.to_string() + ": expected " + std::to_string(want) +
                                                            " bytes, got " + std::to_string(bytes.size()));
    HFS_ASSIGN_OR_RETURN_CTX(Buffer buf, heap_allocator()->allocate(bytes.size()),
                             "constant store: constant '" + name + "'");
    if (!bytes.empty()) std::memcpy(buf.data(), bytes.data(), bytes.size());
    keep(name, type, std::move(buf));
    return Ok{};
  }

  Status add_shared(const std::string& name, const TensorType& type, std::shared_ptr<const void> owner,
                    const void* data) override {
    HFS_TRY(check_new(name, type));
    if (!owner || (!data && type.nbytes() != 0))
      return make_error(ErrorCode::kInvalidArgument, "constant store: constant '" + name + "': no bytes to share");
    // Buffer's owner is non-const only because allocators hand out writable memory; nothing writes here.
    keep(name, type, Buffer(const_cast<void*>(data), type.nbytes(), std::const_pointer_cast<void>(owner)));
    return Ok{};
  }

 private:
  // What add and add_shared refuse before taking bytes: a name in use, a type with no byte size.
  Status check_new(const std::string& name, const TensorType& type) const {
    if (find(name))
      return make_error(ErrorCode::kDuplicateName, "constant store: constant '" + name + "' already exists");
    if (type.nbytes() == 0 && type.shape.numel() != 0)
      return make_error(ErrorCode::kTensorSizeMismatch,
                        "constant store: constant '" + name + "': type " + type.to_string() + " has no valid byte size");
    return Ok{};
  }

  void keep(const std::string& name, const TensorType& type, Buffer buf) {
    OwnedConstant c{std::move(buf), {}};
    c.view = TensorView(c.buffer.data(), type.dtype, type.shape);
    owned_.emplace(name, std::move(c));
  }

  std::map<std::string, OwnedConstant, std::less<>> owned_;
};

class ProgramStore final : public OwningStore {
 public:
  explicit ProgramStore(std::shared_ptr<const Program> program) : program_(std::move(program)) {
    for (const ConstantInfo& info : program_->constants()) {
      Result<TensorView> v = program_->constant(info.name);
      if (v) views_.emplace(info.name, *v);
    }
  }

  const TensorView* find(std::string_view name) const override {
    auto it = views_.find(name);
    return it != views_.end() ? &it->second : OwningStore::find(name);
  }

  bool releases_pages() const override { return program_->is_mmapped(); }

  // Only for a file mapping: MADV_DONTNEED on the read() path's heap copy would zero the constant.
  void release_pages(std::string_view name, uint64_t offset, uint64_t length) const override {
    if (!releases_pages()) return;
    auto it = views_.find(name);
    if (it == views_.end()) return;
    const uint64_t size = it->second.nbytes();
    if (offset >= size) return;
    length = std::min(length, size - offset);
    // Whole pages inside the range only: a page shared with a neighbouring constant may still be in use.
    const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const auto begin = reinterpret_cast<uintptr_t>(it->second.ptr) + offset;
    const uintptr_t lo = (begin + page - 1) / page * page, hi = (begin + length) / page * page;
    if (hi <= lo) return;
    // NOHUGEPAGE first: the page cache may hold these bytes as 2 MiB folios, and a later read of a few
    // bytes (a tied embedding's row gather) would map the whole folio again — 64 random token rows of
    // Qwen2.5-0.5B's int8 table brought back 78 MiB. With it, a refault maps small pages only.
    madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_NOHUGEPAGE);
    madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
  }

  Status add(const std::string& name, const TensorType& type, std::span<const std::byte> bytes) override {
    HFS_TRY(not_in_program(name));
    return OwningStore::add(name, type, bytes);
  }

  Status add_shared(const std::string& name, const TensorType& type, std::shared_ptr<const void> owner,
                    const void* data) override {
    HFS_TRY(not_in_program(name));
    return OwningStore::add_shared(name, type, std::move(owner), data);
  }

 private:
  Status not_in_program(const std::string& name) const {
    if (!views_.count(name)) return Ok{};
    return make_error(ErrorCode::kDuplicateName, "constant store: constant '" + name + "' already exists in program '" +
                                                     program_->path() + "'");
  }

  std::shared_ptr<const Program> program_;  // keeps the mapping the views point into alive
  std::map<std::string, TensorView, std::less<>> views_;
};

}  // namespace

std::shared_ptr<ConstantStore> program_constants(std::shared_ptr<const Program> program) {
  return std::make_shared<ProgramStore>(std::move(program));
}

std::shared_ptr<ConstantStore> owned_constants() { return std::make_shared<OwningStore>(); }

}  // namespace hfs
