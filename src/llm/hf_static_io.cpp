// The hf_static v1 IO manager: the host's half of the contract (docs/io-contract-v1.md).
//
// Owns every I/O buffer (allocated once at load through the caller's or the backend's allocator), keeps
// the absolute position counter and, per cache group, which absolute position each slot holds. A step of n ≤ T
// tokens: ids padded with pad_token_id; positions p0.. (pads repeat the last valid position); slots
// (global: p, sliding: p mod R; pads: -1 = not written); masks from the post-write slot table (a key is
// visible iff it holds a position ≤ the query's and, for sliding layers, within the window; pad rows copy
// the last valid row). The counters commit only after the method succeeded. A program with prefill variants
// (smaller prefill methods) runs each prefill step through the smallest method that holds its tokens.
#include <algorithm>
#include <cstring>

#include "hfstatic/io_contract.h"
#include "hfstatic/metadata_keys.h"
#include "llm/hf_static_spec.h"

namespace hfs {
namespace {

using hf_static::CacheGroup;
using hf_static::Spec;

// The caller's or backend's allocator, held to its contract: a short or misaligned buffer would be
// written past or read with unaligned vector loads by the kernels, so it is an error naming the allocator.
class CheckedAllocator final : public Allocator {
 public:
  explicit CheckedAllocator(Allocator& inner) : inner_(inner) {}
  std::string_view name() const override { return inner_.name(); }
  Result<Buffer> allocate(size_t bytes) override {
    auto b = inner_.allocate(bytes);
    if (!b || bytes == 0) return b;
    const std::string who = "allocator '" + std::string(inner_.name()) + "'";
    if (!b->data() || b->size() < bytes)
      return make_error(ErrorCode::kResourceExhausted, who + ": asked for " + std::to_string(bytes) + " bytes, got " +
                                                           std::to_string(b->data() ? b->size() : 0));
    if (reinterpret_cast<uintptr_t>(b->data()) % kBufferAlignment != 0)
      return make_error(ErrorCode::kInvalidArgument, who + ": buffer not aligned to " +
                                                         std::to_string(kBufferAlignment) + " bytes");
    return b;
  }

 private:
  Allocator& inner_;
};

// The program's contract facts, checked against its method signatures: what both the factory and the
// allocation-free validator (inspect) must establish, so the two can never disagree.
Result<Spec> checked_spec(const Program& program) {
  HFS_ASSIGN_OR_RETURN(Spec spec, hf_static::read_spec(program));
  HFS_TRY(hf_static::validate_methods(program, spec));
  return spec;
}

// One method with its own (non-cache) input buffers; caches are shared between methods.
struct StepMethod {
  std::unique_ptr<Method> method;
  int64_t tokens = 0;
  std::vector<Buffer> owned;            // buffers for non-state inputs and logits
  std::vector<TensorView> inputs;       // program input order
  std::vector<TensorView> outputs;      // program output order
  int32_t* ids = nullptr;               // [T]
  int32_t* positions = nullptr;         // [T]
  int32_t* logits_index = nullptr;      // [1] or nullptr
  std::vector<int32_t*> slots;          // per group: [T]
  std::vector<float*> masks;            // per group: [T, S_g]
  const float* logits = nullptr;        // [1|T, V]
  size_t logits_output = 0;             // its index in outputs
};

class HfStaticIO final : public IOManager {
 public:
  static Result<std::unique_ptr<IOManager>> make(std::shared_ptr<const Program> program, const IOManagerOptions& opt) {
    HFS_ASSIGN_OR_RETURN(Spec spec, checked_spec(*program));
    std::unique_ptr<HfStaticIO> io(new HfStaticIO(std::move(program), std::move(spec)));
    HFS_TRY(io->init(opt));
    return std::unique_ptr<IOManager>(std::move(io));
  }

  const ModelInfo& info() const override { return info_; }
  int64_t position() const override { return position_; }
  bool can_accept(int64_t n) const override { return n >= 0 && position_ + n <= spec_.context_length; }

  // The smallest prefill method that holds the tokens (too many: the C-token one, whose step() names the limit).
  Status run_prefill(std::span<const int32_t> tokens, StepLogits logits) override {
    const size_t i = prefill_size_index(info_.prefill_step_sizes, static_cast<int64_t>(tokens.size()));
    return step(prefills_[i], tokens, logits);
  }
  Status run_decode(int32_t token) override { return step(decode_, std::span<const int32_t>(&token, 1), StepLogits::kKeep); }

  std::span<const float> last_logits() const override {
    if (!last_) return {};
    const float* base = last_->logits;
    int64_t row = spec_.logits_all ? last_n_ - 1 : 0;
    return {base + row * spec_.vocab_size, static_cast<size_t>(spec_.vocab_size)};
  }
  std::span<const float> last_step_logits() const override {
    if (!last_) return {};
    if (!spec_.logits_all) return last_logits();
    return {last_->logits, static_cast<size_t>(last_n_ * spec_.vocab_size)};
  }

  void reset() override {
    position_ = 0;
    for (auto& table : slot_pos_) std::fill(table.begin(), table.end(), -1);
    // Zeroed caches make the next run bit-identical to a fresh load (fresh buffers are zero-filled);
    // the masks already make stale rows unreachable.
    for (Buffer& b : caches_) std::memset(b.data(), 0, b.size());
    needs_reset_ = false;
    last_ = nullptr;
    last_n_ = 0;
    last_tokens_ = 0;
  }
  bool needs_reset() const override { return needs_reset_; }
  int64_t last_step_tokens() const override { return last_tokens_; }

  std::vector<TensorView> cache_views() const override { return cache_views_; }

 private:
  HfStaticIO(std::shared_ptr<const Program> p, Spec s) : program_(std::move(p)), spec_(std::move(s)) {
    info_.contract = std::string(keys::kContractHfStatic);
    info_.contract_version = spec_.version;
    info_.prefill_tokens = spec_.prefill_tokens;
    for (const hf_static::PrefillVariant& v : spec_.prefill_variants) info_.prefill_step_sizes.push_back(v.tokens);
    info_.prefill_step_sizes.push_back(spec_.prefill_tokens);
    info_.context_length = spec_.context_length;
    info_.vocab_size = spec_.vocab_size;
    info_.bos_token_id = spec_.bos_token_id;
    info_.eos_token_ids = spec_.eos_token_ids;
    info_.logits_all = spec_.logits_all;
  }

  Status init(const IOManagerOptions& opt) {
    if (opt.io_allocator && opt.shared_memory_io)
      return make_error(ErrorCode::kInvalidArgument,
                        "hf_static: both io_allocator ('" + std::string(opt.io_allocator->name()) +
                            "') and shared_memory_io are set; give one");
    auto pm = Method::load(program_, spec_.prefill_method, opt.method);
    if (!pm) return pm.error();
    auto dm = Method::load(program_, spec_.decode_method, opt.method);
    if (!dm) return dm.error();
    std::vector<std::unique_ptr<Method>> variants;
    for (const hf_static::PrefillVariant& v : spec_.prefill_variants) {
      auto vm = Method::load(program_, v.method, opt.method);
      if (!vm) return vm.error();
      variants.push_back(std::move(*vm));
    }
    std::shared_ptr<Allocator> alloc = opt.io_allocator        ? opt.io_allocator
                                       : opt.shared_memory_io ? shared_memory_allocator()
                                                              : (*pm)->io_allocator();
    if (!alloc) alloc = heap_allocator();
    CheckedAllocator checked(*alloc);

    // Caches: one buffer per layer and K/V, shared by both methods.
    for (int64_t i = 0; i < spec_.n_layers; ++i) {
      TensorType t{spec_.cache_dtype,
                   {1, spec_.n_kv_heads, spec_.layer_cache_lengths[static_cast<size_t>(i)], spec_.head_dim}};
      for (int kv = 0; kv < 2; ++kv) {
        auto b = checked.allocate(t.nbytes());
        if (!b) return b.error().with_context("hf_static: allocating cache for layer " + std::to_string(i));
        cache_views_.emplace_back(b->data(), t.dtype, t.shape);
        caches_.push_back(std::move(*b));
      }
    }
    for (const CacheGroup& g : spec_.groups) slot_pos_.emplace_back(static_cast<size_t>(g.length), -1);
    scratch_pos_ = slot_pos_;

    // Fixed size from here on: last_ points into it.
    prefills_.resize(variants.size() + 1);
    for (size_t i = 0; i < variants.size(); ++i)
      HFS_TRY(bind(prefills_[i], std::move(variants[i]), spec_.prefill_variants[i].tokens, checked));
    HFS_TRY(bind(prefills_.back(), std::move(*pm), spec_.prefill_tokens, checked));
    HFS_TRY(bind(decode_, std::move(*dm), spec_.decode_tokens, checked));
    return Ok{};
  }

  Status bind(StepMethod& m, std::unique_ptr<Method> method, int64_t T, Allocator& alloc) {
    m.method = std::move(method);
    m.tokens = T;
    const MethodDef& def = m.method->def();
    size_t cache_i = 0;
    m.slots.assign(spec_.groups.size(), nullptr);
    m.masks.assign(spec_.groups.size(), nullptr);
    for (const IOSpec& in : def.inputs) {
      if (in.role == IORole::kState) {
        m.inputs.push_back(cache_views_[cache_i++]);
        continue;
      }
      auto b = alloc.allocate(in.type.nbytes());
      if (!b) return b.error().with_context("hf_static: allocating input '" + in.name + "'");
      m.inputs.emplace_back(b->data(), in.type.dtype, in.type.shape);
      void* p = b->data();
      m.owned.push_back(std::move(*b));
      if (in.name == keys::kInputIds) m.ids = static_cast<int32_t*>(p);
      else if (in.name == keys::kPositionIds) m.positions = static_cast<int32_t*>(p);
      else if (in.name == keys::kLogitsIndex) m.logits_index = static_cast<int32_t*>(p);
      for (size_t g = 0; g < spec_.groups.size(); ++g) {
        if (in.name == keys::cache_slots_name(spec_.groups[g].kind)) m.slots[g] = static_cast<int32_t*>(p);
        if (in.name == keys::attn_mask_name(spec_.groups[g].kind)) m.masks[g] = static_cast<float*>(p);
      }
    }
    for (const IOSpec& out : def.outputs) {
      if (out.role == IORole::kState) {
        m.outputs.emplace_back();  // the Method fills in the aliased input's view
        continue;
      }
      auto b = alloc.allocate(out.type.nbytes());
      if (!b) return b.error().with_context("hf_static: allocating output '" + out.name + "'");
      m.outputs.emplace_back(b->data(), out.type.dtype, out.type.shape);
      if (out.name == keys::kLogits) {
        m.logits = static_cast<const float*>(b->data());
        m.logits_output = m.outputs.size() - 1;
      }
      m.owned.push_back(std::move(*b));
    }
    return Ok{};
  }

  Status step(StepMethod& m, std::span<const int32_t> tokens, StepLogits logits) {
    const std::string where = "hf_static: method '" + m.method->def().name + "'";
    if (needs_reset_)
      return make_error(ErrorCode::kNeedsReset, where + ": a previous step failed; call reset() before running again");
    const int64_t n = static_cast<int64_t>(tokens.size());
    const int64_t T = m.tokens;
    if (n < 1 || n > T)
      return make_error(ErrorCode::kInvalidArgument,
                        where + ": expected 1.." + std::to_string(T) + " tokens per step, got " + std::to_string(n));
    if (!can_accept(n))
      return make_error(ErrorCode::kCapacityExceeded, where + ": " + std::to_string(n) + " tokens at position " +
                                                          std::to_string(position_) + " exceed the context of " +
                                                          std::to_string(spec_.context_length));
    for (int64_t i = 0; i < n; ++i)
      if (tokens[static_cast<size_t>(i)] < 0 || tokens[static_cast<size_t>(i)] >= spec_.vocab_size)
        return make_error(ErrorCode::kOutOfRange, where + ": token " + std::to_string(tokens[static_cast<size_t>(i)]) +
                                                      " at index " + std::to_string(i) + " is outside the vocabulary [0, " +
                                                      std::to_string(spec_.vocab_size) + ")");
    const int64_t p0 = position_;
    const int32_t last_pos = static_cast<int32_t>(p0 + n - 1);
    for (int64_t t = 0; t < T; ++t) {
      bool valid = t < n;
      m.ids[t] = valid ? tokens[static_cast<size_t>(t)] : static_cast<int32_t>(spec_.pad_token_id);
      m.positions[t] = valid ? static_cast<int32_t>(p0 + t) : last_pos;
    }
    if (m.logits_index) m.logits_index[0] = static_cast<int32_t>(n - 1);

    for (size_t g = 0; g < spec_.groups.size(); ++g) {
      const CacheGroup& grp = spec_.groups[g];
      const int64_t S = grp.length;
      std::vector<int32_t>& table = scratch_pos_[g];  // post-write slot → position, committed on success
      std::copy(slot_pos_[g].begin(), slot_pos_[g].end(), table.begin());
      for (int64_t t = 0; t < T; ++t) {
        if (t >= n) {
          m.slots[g][t] = -1;  // pad rows are never written: no live ring entry can be overwritten
          continue;
        }
        int64_t pos = p0 + t;
        int64_t slot = grp.sliding ? pos % S : pos;
        m.slots[g][t] = static_cast<int32_t>(slot);
        table[static_cast<size_t>(slot)] = static_cast<int32_t>(pos);
      }
      float* mask = m.masks[g];  // [T, S]
      for (int64_t t = 0; t < n; ++t) {
        const int64_t q = p0 + t;
        float* row = mask + t * S;
        for (int64_t j = 0; j < S; ++j) {
          const int64_t kp = table[static_cast<size_t>(j)];
          bool visible = kp >= 0 && kp <= q && (!grp.sliding || q - kp < spec_.sliding_window);
          row[j] = visible ? 0.0f : keys::kMaskHidden;
        }
      }
      for (int64_t t = n; t < T; ++t) std::copy(mask + (n - 1) * S, mask + n * S, mask + t * S);
    }

    // Unwanted logits: the output stays unbound for this call only, where the Method then skips what only
    // feeds it (a single-partition method computes them anyway).
    TensorView& lv = m.outputs[m.logits_output];
    const TensorView bound = lv;
    if (logits == StepLogits::kSkip && m.method->can_skip_output(m.logits_output)) lv.ptr = nullptr;
    Status st = m.method->execute(m.inputs, m.outputs);
    lv = bound;
    if (!st.ok()) {
      // Rows may have been written into the caches: the state is no longer trustworthy.
      needs_reset_ = true;
      last_ = nullptr;
      return st.error().with_context(where);
    }
    std::swap(slot_pos_, scratch_pos_);
    position_ += n;
    last_tokens_ = T;
    last_ = logits == StepLogits::kKeep ? &m : nullptr;
    last_n_ = logits == StepLogits::kKeep ? n : 0;
    return Ok{};
  }

  std::shared_ptr<const Program> program_;
  Spec spec_;
  ModelInfo info_;
  std::vector<Buffer> caches_;
  std::vector<TensorView> cache_views_;
  std::vector<std::vector<int32_t>> slot_pos_;     // per group: slot → absolute position, -1 empty
  std::vector<std::vector<int32_t>> scratch_pos_;  // same shape; the table being built for a step
  std::vector<StepMethod> prefills_;  // in info_.prefill_step_sizes order: the variants, then the C-token method
  StepMethod decode_;
  int64_t position_ = 0;
  bool needs_reset_ = false;
  const StepMethod* last_ = nullptr;
  int64_t last_n_ = 0;
  int64_t last_tokens_ = 0;
};

Status validate_hf_static(const Program& program) {
  auto spec = checked_spec(program);
  if (!spec) return spec.error();
  return Ok{};
}

[[maybe_unused]] const bool kRegistered =
    register_io_manager(std::string(keys::kContractHfStatic), &HfStaticIO::make, &validate_hf_static);

}  // namespace
}  // namespace hfs
