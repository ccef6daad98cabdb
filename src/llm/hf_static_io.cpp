// The hf_static IO manager: the host's half of the contract (docs/io-contract-v1.md), for one sequence
// (version 1) or several sharing the caches (version 2). There is one step implementation for both.
//
// Owns every I/O buffer (allocated once at load through the caller's or the backend's allocator) and a
// SequencePool saying which slots hold each sequence's positions. A step packs rows of one or more
// sequences, each at its next positions, into a method of T ≥ rows tokens: ids (pads: pad_token_id);
// positions (pads repeat the last valid row's); slots (global: the sequence's block slot of p, sliding: its
// ring slot of p; pads: -1 = not written); mask rows showing a row exactly its own sequence's positions ≤
// its own (and, for sliding layers, within the window; pad rows copy the last valid row). Lengths commit
// only after the method succeeded. Prefill steps of one sequence run through the smallest prefill method
// that holds them; steps whose logits are kept for several sequences through a step method.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "hfstatic/ext/io_contract.h"
#include "hfstatic/ext/metadata_keys.h"
#include "llm/hf_static_spec.h"
#include "llm/sequence_pool.h"

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
  bool all_rows = false;                // logits for every row (else the logits_index row only)
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
    std::unique_ptr<HfStaticIO> io(new HfStaticIO(std::move(program), std::move(spec), opt));
    HFS_TRY(io->init(opt));
    return std::unique_ptr<IOManager>(std::move(io));
  }

  const ModelInfo& info() const override { return info_; }

  // --- the single-sequence calls act on the default sequence (index 0) ---------------------------------
  int64_t position() const override { return default_seq_ ? pool_.length(0) : 0; }
  bool can_accept(int64_t n) const override {
    return default_seq_ && n >= 0 && pool_.length(0) + n <= spec_.context_length &&
           pool_.blocks_needed(0, n) <= pool_.free_blocks();
  }

  // The smallest prefill method that holds the tokens (too many: the C-token one, whose step() names the limit).
  Status run_prefill(std::span<const int32_t> tokens, StepLogits logits) override {
    HFS_TRY(check_default("run_prefill"));
    const size_t i = prefill_size_index(info_.prefill_step_sizes, static_cast<int64_t>(tokens.size()));
    const SequenceTokens part{0, tokens};
    return step(prefills_[i], std::span<const SequenceTokens>(&part, 1), logits);
  }
  Status run_decode(int32_t token) override {
    HFS_TRY(check_default("run_decode"));
    const SequenceTokens part{0, std::span<const int32_t>(&token, 1)};
    return step(decode_, std::span<const SequenceTokens>(&part, 1), StepLogits::kKeep);
  }

  // The last part's last row: the last token run.
  std::span<const float> last_logits() const override {
    return last_parts_ == 0 ? std::span<const float>() : step_logits(last_parts_ - 1);
  }
  std::span<const float> last_step_logits() const override {
    if (!last_) return {};
    if (!last_->all_rows) return last_logits();
    return {last_->logits, static_cast<size_t>(last_n_ * spec_.vocab_size)};
  }

  void reset() override {
    pool_.clear();
    if (default_seq_) (void)pool_.add();  // index 0: the pool is empty
    // Zeroed caches make the next run bit-identical to a fresh load (fresh buffers are zero-filled);
    // the masks already make stale rows unreachable.
    for (Buffer& b : caches_) std::memset(b.data(), 0, b.size());
    needs_reset_ = false;
    forget_last();
  }
  bool needs_reset() const override { return needs_reset_; }
  int64_t last_step_tokens() const override { return last_tokens_; }

  std::vector<TensorView> cache_views() const override { return cache_views_; }

  // --- several sequences ------------------------------------------------------------------------------
  Result<int32_t> add_sequence() override {
    HFS_ASSIGN_OR_RETURN_CTX(int32_t s, pool_.add(), "hf_static: add_sequence");
    return s;
  }

  Result<int32_t> fork_sequence(int32_t parent, int64_t tokens) override {
    const std::string where = "hf_static: fork_sequence(" + std::to_string(parent) + ", " + std::to_string(tokens) + ")";
    if (!pool_.active(parent)) return make_error(ErrorCode::kInvalidArgument, where + ": sequence " + std::to_string(parent) + " is not active");
    // The child's window of the prefix must still be in the parent's ring: it holds positions ≥ L − R.
    const int64_t L = pool_.length(parent), R = sliding_ring();
    if (R > 0 && tokens >= 0 && tokens <= L && L > R && tokens - spec_.sliding_window < L - R)
      return make_error(ErrorCode::kInvalidArgument,
                        where + ": the sliding layers' ring (" + std::to_string(R) + " slots) no longer holds the last " +
                            std::to_string(spec_.sliding_window) + " positions before " + std::to_string(tokens) +
                            " (the parent is at " + std::to_string(L) + ")");
    HFS_ASSIGN_OR_RETURN_CTX(int32_t child, pool_.fork(parent, tokens), where);
    if (R > 0) copy_ring(parent, child);
    return child;
  }

  Status remove_sequence(int32_t seq) override {
    if (!pool_.active(seq))
      return make_error(ErrorCode::kInvalidArgument, "hf_static: remove_sequence: sequence " + std::to_string(seq) + " is not active");
    pool_.remove(seq);
    return Ok{};
  }

  int64_t sequence_length(int32_t seq) const override { return pool_.active(seq) ? pool_.length(seq) : -1; }

  // Why forgetting is enough: a global slot of a forgotten position is in the sequence's own block and is
  // written again before any row can see it (masks show positions < length and this step's own rows); a
  // ring slot written by a forgotten row at q ≤ L + T_max − 1 evicted q − R ≤ L − W, outside the window of
  // every later row (R ≥ W + T_max − 1).
  Status truncate_sequence(int32_t seq, int64_t length) override {
    if (!pool_.active(seq) || length < 0 || length > pool_.length(seq))
      return make_error(ErrorCode::kInvalidArgument, "hf_static: truncate_sequence(" + std::to_string(seq) + ", " +
                                                         std::to_string(length) + "): " +
                                                         (pool_.active(seq) ? "the sequence holds " + std::to_string(pool_.length(seq)) + " positions"
                                                                            : std::string("not an active sequence")));
    pool_.truncate(seq, length);  // the last step's logits stay readable: the other parts' verification reads them
    return Ok{};
  }
  Status advance_unwritten(int32_t seq, int64_t n) override {
    const std::string where = "hf_static: advance_unwritten(" + std::to_string(seq) + ", " + std::to_string(n) + ")";
    if (needs_reset_)
      return make_error(ErrorCode::kNeedsReset, where + ": a previous step failed; call reset() before running again");
    if (!pool_.active(seq)) return make_error(ErrorCode::kInvalidArgument, where + ": not an active sequence");
    if (n < 0) return make_error(ErrorCode::kInvalidArgument, where + ": a negative count");
    if (pool_.length(seq) + n > spec_.context_length)
      return make_error(ErrorCode::kCapacityExceeded, where + ": " + std::to_string(n) + " positions at position " +
                                                          std::to_string(pool_.length(seq)) + " exceed the context of " +
                                                          std::to_string(spec_.context_length));
    if (pool_.blocks_needed(seq, n) > pool_.free_blocks())
      return make_error(ErrorCode::kCapacityExceeded, where + ": needs " + std::to_string(pool_.blocks_needed(seq, n)) +
                                                          " cache blocks, the pool has " + std::to_string(pool_.free_blocks()) + " free");
    copies_.clear();
    pool_.reserve(seq, n, &copies_);
    for (const BlockCopy& c : copies_) copy_block(c);  // a block shared with a fork gets its own copy, as a step's would
    pool_.commit(seq, n);
    forget_last();
    return Ok{};
  }
  int64_t blocks_needed(int32_t seq, int64_t n) const override { return pool_.active(seq) ? pool_.blocks_needed(seq, n) : 0; }
  int64_t free_blocks() const override { return pool_.free_blocks(); }

  Status run_step(std::span<const SequenceTokens> parts, StepLogits logits) override {
    int64_t n = 0;
    for (const SequenceTokens& p : parts) n += static_cast<int64_t>(p.tokens.size());
    StepMethod* m = pick_method(n, logits == StepLogits::kAllRows || (logits == StepLogits::kKeep && parts.size() > 1));
    if (!m) {
      const int64_t largest = steps_.empty() ? 0 : steps_.back().tokens;
      return make_error(ErrorCode::kInvalidArgument,
                        "hf_static: run_step: " + std::to_string(n) + " rows of " + std::to_string(parts.size()) +
                            " sequences: no method holds them with logits for every sequence (largest step method: " +
                            (largest ? "step_" + std::to_string(largest) : std::string("none; export --step-sizes")) + ")");
    }
    return step(*m, parts, logits);
  }

  std::vector<int32_t> sequence_slots(int32_t seq, size_t group) const override {
    if (!pool_.active(seq) || group >= spec_.groups.size()) return {};
    const CacheGroup& g = spec_.groups[group];
    const int64_t len = pool_.length(seq);
    std::vector<int32_t> slots(static_cast<size_t>(len), -1);
    for (int64_t p = g.sliding ? std::max<int64_t>(0, len - g.ring) : 0; p < len; ++p)
      slots[static_cast<size_t>(p)] = g.sliding ? pool_.ring_slot(seq, p) : pool_.global_slot(seq, p);
    return slots;
  }

  // Rows by position, not slot (docs/sessions.md): every state tensor is [outer..., S, row...] with its slot
  // axis at 2 (the bhsd layout), whatever its dtype and row size, so caches and any per-row state the
  // contract adds travel the same way.
  Result<SequenceState> save_sequence(int32_t seq) const override {
    if (!pool_.active(seq))
      return make_error(ErrorCode::kInvalidArgument, "hf_static: save_sequence: sequence " + std::to_string(seq) + " is not active");
    SequenceState st;
    st.length = pool_.length(seq);
    for (size_t t = 0; t < states_.size(); ++t) {
      const StateTensor& s = states_[t];
      StateRows rows{s.name, cache_views_[t].dtype, s.outer, s.row_bytes, first_kept(s, st.length), {}};
      rows.bytes.resize(static_cast<size_t>((st.length - rows.first) * s.outer * s.row_bytes));
      std::byte* out = rows.bytes.data();
      const auto* base = static_cast<const std::byte*>(caches_[t].data());
      for (int64_t p = rows.first; p < st.length; ++p) {
        const int64_t slot = slot_of(s, seq, p);
        for (int64_t o = 0; o < s.outer; ++o, out += s.row_bytes)
          std::memcpy(out, base + (o * s.slots + slot) * s.row_bytes, static_cast<size_t>(s.row_bytes));
      }
      st.tensors.push_back(std::move(rows));
    }
    return st;
  }

  Status restore_sequence(int32_t seq, const SequenceState& st) override {
    HFS_TRY(check_state(seq, st));
    pool_.truncate(seq, 0);
    copies_.clear();
    pool_.reserve(seq, st.length, &copies_);  // a sequence at length 0 shares no block: no copies
    pool_.commit(seq, st.length);
    for (size_t t = 0; t < states_.size(); ++t) {
      const StateTensor& s = states_[t];
      const StateRows& rows = st.tensors[t];
      const std::byte* in = rows.bytes.data();
      auto* base = static_cast<std::byte*>(caches_[t].data());
      for (int64_t p = rows.first; p < st.length; ++p) {
        const int64_t slot = slot_of(s, seq, p);
        for (int64_t o = 0; o < s.outer; ++o, in += s.row_bytes)
          std::memcpy(base + (o * s.slots + slot) * s.row_bytes, in, static_cast<size_t>(s.row_bytes));
      }
    }
    if (last_parts_ > 0 && seq == 0 && default_seq_) forget_last();  // the old logits are not this sequence's
    return Ok{};
  }

  std::span<const float> step_logits(size_t part) const override {
    if (!last_ || part >= last_parts_ || part_row_[part] < 0) return {};
    return {last_->logits + part_row_[part] * spec_.vocab_size, static_cast<size_t>(spec_.vocab_size)};
  }

 private:
  HfStaticIO(std::shared_ptr<const Program> p, Spec s, const IOManagerOptions& opt)
      : program_(std::move(p)),
        spec_(std::move(s)),
        pool_(SequencePool::Config{spec_.max_sequences, spec_.global_pool_slots, opt.block_slots, ring_of(spec_),
                                   spec_.context_length}),
        default_seq_(opt.default_sequence) {
    info_.contract = std::string(keys::kContractHfStatic);
    info_.contract_version = spec_.version;
    info_.prefill_tokens = spec_.prefill_tokens;
    for (const hf_static::PrefillVariant& v : spec_.prefill_variants) info_.prefill_step_sizes.push_back(v.tokens);
    info_.prefill_step_sizes.push_back(spec_.prefill_tokens);
    info_.context_length = spec_.context_length;
    info_.vocab_size = spec_.vocab_size;
    // The spec checked every id against [-1, vocab_size), vocab_size against kMaxVocab (hf_static_spec.cpp).
    info_.bos_token_id = static_cast<int32_t>(spec_.bos_token_id);
    info_.eos_token_ids.assign(spec_.eos_token_ids.begin(), spec_.eos_token_ids.end());
    info_.logits_all = spec_.logits_all;
    for (const hf_static::StepVariant& v : spec_.step_methods) info_.step_sizes.push_back(v.tokens);
    info_.max_sequences = spec_.max_sequences;
    info_.pool_slots = spec_.global_pool_slots;
    info_.block_slots = pool_.block_slots();
  }

  // A state tensor as sessions see it: its slots (axis 2), rows per slot and bytes per row, and its group.
  struct StateTensor {
    std::string name;
    int64_t outer = 0, slots = 0, row_bytes = 0;
    size_t group = 0;
  };

  // Its layer is the first number in its name (k_cache_3, and names the contract adds beside it); its group
  // that layer's, else the one whose length is its slot count.
  Result<StateTensor> state_tensor(const IOSpec& in) const {
    const Shape& sh = in.type.shape;
    const std::string where = "hf_static: state input '" + in.name + "'";
    if (sh.rank() < 3) return make_error(ErrorCode::kContractViolation, where + ": expected rank ≥ 3 (slots at axis 2), got rank " + std::to_string(sh.rank()));
    StateTensor s{in.name, sh[0] * sh[1], sh[2], 0, 0};
    int64_t row = 1;
    for (int i = 3; i < sh.rank(); ++i) row *= sh[i];
    const auto bytes = dtype_bytes(in.type.dtype, static_cast<uint64_t>(row));
    if (!bytes) return make_error(ErrorCode::kContractViolation, where + ": a row of " + std::to_string(row) + " elements is not whole blocks of its dtype");
    s.row_bytes = static_cast<int64_t>(*bytes);
    const size_t digit = in.name.find_first_of("0123456789");
    if (digit != std::string::npos) {
      const size_t layer = static_cast<size_t>(std::strtoll(in.name.c_str() + digit, nullptr, 10));
      if (layer < spec_.layer_group.size() && spec_.groups[static_cast<size_t>(spec_.layer_group[layer])].length == s.slots) {
        s.group = static_cast<size_t>(spec_.layer_group[layer]);
        return s;
      }
    }
    for (size_t g = 0; g < spec_.groups.size(); ++g)
      if (spec_.groups[g].length == s.slots) {
        s.group = g;
        return s;
      }
    return make_error(ErrorCode::kContractViolation, where + ": " + std::to_string(s.slots) + " slots match no cache group");
  }

  // The first position a sequence of `length` keeps rows of: a sliding layer only its window's (the next
  // row at `length` sees positions > length − W; one more, as fork_sequence checks).
  int64_t first_kept(const StateTensor& s, int64_t length) const {
    return spec_.groups[s.group].sliding ? std::max<int64_t>(0, length - spec_.sliding_window) : 0;
  }
  int64_t slot_of(const StateTensor& s, int32_t seq, int64_t p) const {
    return spec_.groups[s.group].sliding ? pool_.ring_slot(seq, p) : pool_.global_slot(seq, p);
  }

  Status check_state(int32_t seq, const SequenceState& st) const {
    const std::string where = "hf_static: restore_sequence(" + std::to_string(seq) + ")";
    if (!pool_.active(seq)) return make_error(ErrorCode::kInvalidArgument, where + ": sequence " + std::to_string(seq) + " is not active");
    if (st.length < 0 || st.length > spec_.context_length)
      return make_error(ErrorCode::kCapacityExceeded, where + ": " + std::to_string(st.length) + " positions exceed the context of " +
                                                          std::to_string(spec_.context_length));
    if (st.tensors.size() != states_.size())
      return make_error(ErrorCode::kInvalidArgument, where + ": expected " + std::to_string(states_.size()) + " state tensors, got " +
                                                         std::to_string(st.tensors.size()));
    for (size_t t = 0; t < states_.size(); ++t) {
      const StateTensor& s = states_[t];
      const StateRows& r = st.tensors[t];
      const std::string tw = where + ": state tensor " + std::to_string(t) + " ('" + s.name + "')";
      if (r.name != s.name || r.dtype != cache_views_[t].dtype || r.outer != s.outer || r.row_bytes != s.row_bytes)
        return make_error(ErrorCode::kInvalidArgument,
                          tw + ": expected " + s.name + " " + std::string(dtype_name(cache_views_[t].dtype)) + " " + std::to_string(s.outer) +
                              " rows of " + std::to_string(s.row_bytes) + " bytes, got '" + r.name + "' " + std::string(dtype_name(r.dtype)) +
                              " " + std::to_string(r.outer) + " rows of " + std::to_string(r.row_bytes) + " bytes");
      const int64_t first = first_kept(s, st.length);
      const uint64_t want = static_cast<uint64_t>((st.length - first) * s.outer * s.row_bytes);
      if (r.first != first || r.bytes.size() != want)
        return make_error(ErrorCode::kInvalidArgument, tw + ": expected positions " + std::to_string(first) + ".." +
                                                           std::to_string(st.length) + " (" + std::to_string(want) + " bytes), got from " +
                                                           std::to_string(r.first) + " (" + std::to_string(r.bytes.size()) + " bytes)");
    }
    // The blocks it needs once emptied (a trial pool: restoring is not a step, the copy is allowed).
    SequencePool trial = pool_;
    trial.truncate(seq, 0);
    if (trial.blocks_needed(seq, st.length) > trial.free_blocks())
      return make_error(ErrorCode::kCapacityExceeded, where + ": " + std::to_string(st.length) + " positions need " +
                                                          std::to_string(trial.blocks_needed(seq, st.length)) + " cache blocks of " +
                                                          std::to_string(pool_.block_slots()) + " slots, the pool has " +
                                                          std::to_string(trial.free_blocks()) + " free");
    return Ok{};
  }

  static int64_t ring_of(const Spec& s) {
    for (const CacheGroup& g : s.groups)
      if (g.sliding) return g.ring;
    return 0;
  }
  int64_t sliding_ring() const { return ring_of(spec_); }

  Status check_default(const char* what) const {
    if (default_seq_) return Ok{};
    return make_error(ErrorCode::kInvalidArgument, std::string("hf_static: ") + what +
                                                       ": this IO manager has no default sequence (IOManagerOptions::"
                                                       "default_sequence = false); use run_step");
  }

  void forget_last() {
    last_ = nullptr;
    last_n_ = 0;
    last_parts_ = 0;
    last_tokens_ = 0;
  }

  Status init(const IOManagerOptions& opt) {
    if (opt.io_allocator && opt.shared_memory_io)
      return make_error(ErrorCode::kInvalidArgument,
                        "hf_static: both io_allocator ('" + std::string(opt.io_allocator->name()) +
                            "') and shared_memory_io are set; give one");
    if (opt.block_slots < 0 || (opt.block_slots > 0 && spec_.global_pool_slots % opt.block_slots != 0))
      return make_error(ErrorCode::kInvalidArgument, "hf_static: block_slots " + std::to_string(opt.block_slots) +
                                                         " must divide the pool of " +
                                                         std::to_string(spec_.global_pool_slots) + " slots");
    HFS_ASSIGN_OR_RETURN(auto pm, Method::load(program_, spec_.prefill_method, opt.method));
    HFS_ASSIGN_OR_RETURN(auto dm, Method::load(program_, spec_.decode_method, opt.method));
    std::vector<std::unique_ptr<Method>> variants, steps;
    for (const hf_static::PrefillVariant& v : spec_.prefill_variants) {
      HFS_ASSIGN_OR_RETURN(auto vm, Method::load(program_, v.method, opt.method));
      variants.push_back(std::move(vm));
    }
    for (const hf_static::StepVariant& v : spec_.step_methods) {
      HFS_ASSIGN_OR_RETURN(auto sm, Method::load(program_, v.method, opt.method));
      steps.push_back(std::move(sm));
    }
    std::shared_ptr<Allocator> alloc = opt.io_allocator        ? opt.io_allocator
                                       : opt.shared_memory_io ? shared_memory_allocator()
                                                              : pm->io_allocator();
    if (!alloc) alloc = heap_allocator();
    CheckedAllocator checked(*alloc);

    // Caches: one buffer per layer and K/V, shared by every method.
    for (int64_t i = 0; i < spec_.n_layers; ++i) {
      TensorType t{spec_.cache_dtype,
                   {1, spec_.n_kv_heads, spec_.layer_cache_lengths[static_cast<size_t>(i)], spec_.head_dim}};
      for (int kv = 0; kv < 2; ++kv) {
        HFS_ASSIGN_OR_RETURN_CTX(Buffer b, checked.allocate(t.nbytes()), "hf_static: allocating cache for layer " + std::to_string(i));
        cache_views_.emplace_back(b.data(), t.dtype, t.shape);
        caches_.push_back(std::move(b));
      }
    }
    // int8 caches: then one scale per (head, slot) for every K and V cache, in the contract's state order.
    for (int64_t i = 0; spec_.quantized_cache() && i < spec_.n_layers; ++i) {
      TensorType t{DType::kF32, {1, spec_.n_kv_heads, spec_.layer_cache_lengths[static_cast<size_t>(i)]}};
      for (int kv = 0; kv < 2; ++kv) {
        HFS_ASSIGN_OR_RETURN_CTX(Buffer b, checked.allocate(t.nbytes()), "hf_static: allocating cache scales for layer " + std::to_string(i));
        cache_views_.emplace_back(b.data(), t.dtype, t.shape);
        caches_.push_back(std::move(b));
      }
    }

    for (const IOSpec& in : pm->def().inputs)
      if (in.role == IORole::kState) {
        HFS_ASSIGN_OR_RETURN(StateTensor st, state_tensor(in));
        states_.push_back(std::move(st));
      }
    if (states_.size() != caches_.size())
      return make_error(ErrorCode::kContractViolation, "hf_static: method '" + pm->def().name + "' has " + std::to_string(states_.size()) +
                                                           " state inputs, the contract " + std::to_string(caches_.size()));

    // Fixed size from here on: last_ points into them.
    prefills_.resize(variants.size() + 1);
    for (size_t i = 0; i < variants.size(); ++i)
      HFS_TRY(bind(prefills_[i], std::move(variants[i]), spec_.prefill_variants[i].tokens, spec_.logits_all, checked));
    HFS_TRY(bind(prefills_.back(), std::move(pm), spec_.prefill_tokens, spec_.logits_all, checked));
    HFS_TRY(bind(decode_, std::move(dm), spec_.decode_tokens, spec_.logits_all, checked));
    steps_.resize(steps.size());
    for (size_t i = 0; i < steps.size(); ++i)
      HFS_TRY(bind(steps_[i], std::move(steps[i]), spec_.step_methods[i].tokens, true, checked));

    // Step scratch, sized for the largest step: no step allocates.
    const size_t max_rows = static_cast<size_t>(spec_.max_step_tokens());
    part_row_.assign(max_rows, -1);
    seen_.assign(static_cast<size_t>(spec_.max_sequences), 0);
    copies_.reserve(max_rows + 1);
    if (default_seq_) (void)pool_.add();  // index 0
    return Ok{};
  }

  Status bind(StepMethod& m, std::unique_ptr<Method> method, int64_t T, bool all_rows, Allocator& alloc) {
    m.method = std::move(method);
    m.tokens = T;
    m.all_rows = all_rows;
    const MethodDef& def = m.method->def();
    size_t cache_i = 0;
    m.slots.assign(spec_.groups.size(), nullptr);
    m.masks.assign(spec_.groups.size(), nullptr);
    for (const IOSpec& in : def.inputs) {
      if (in.role == IORole::kState) {
        m.inputs.push_back(cache_views_[cache_i++]);
        continue;
      }
      HFS_ASSIGN_OR_RETURN_CTX(Buffer b, alloc.allocate(in.type.nbytes()), "hf_static: allocating input '" + in.name + "'");
      m.inputs.emplace_back(b.data(), in.type.dtype, in.type.shape);
      void* p = b.data();
      m.owned.push_back(std::move(b));
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
      HFS_ASSIGN_OR_RETURN_CTX(Buffer b, alloc.allocate(out.type.nbytes()), "hf_static: allocating output '" + out.name + "'");
      m.outputs.emplace_back(b.data(), out.type.dtype, out.type.shape);
      if (out.name == keys::kLogits) {
        m.logits = static_cast<const float*>(b.data());
        m.logits_output = m.outputs.size() - 1;
      }
      m.owned.push_back(std::move(b));
    }
    return Ok{};
  }

  // The smallest method holding n rows; all_rows: it must return logits for every row. Among equal sizes
  // the one with the single logits row (a cheaper LM head).
  StepMethod* pick_method(int64_t n, bool all_rows) {
    StepMethod* best = nullptr;
    auto consider = [&](StepMethod& m) {
      if (m.tokens < n || (all_rows && !m.all_rows)) return;
      if (!best || m.tokens < best->tokens || (m.tokens == best->tokens && best->all_rows && !m.all_rows)) best = &m;
    };
    consider(decode_);
    for (StepMethod& m : prefills_) consider(m);
    for (StepMethod& m : steps_) consider(m);
    return best;
  }

  // Everything a step needs, checked before anything changes: each failure names the sequence.
  Status check_parts(const std::string& where, std::span<const SequenceTokens> parts, int64_t T) {
    int64_t n = 0, blocks = 0;
    std::fill(seen_.begin(), seen_.end(), 0);
    for (const SequenceTokens& p : parts) {
      const std::string seq = "sequence " + std::to_string(p.seq);
      if (!pool_.active(p.seq)) return make_error(ErrorCode::kInvalidArgument, where + ": " + seq + " is not active");
      if (seen_[static_cast<size_t>(p.seq)]++)
        return make_error(ErrorCode::kInvalidArgument, where + ": " + seq + " appears twice in one step");
      const int64_t k = static_cast<int64_t>(p.tokens.size());
      if (k < 1) return make_error(ErrorCode::kInvalidArgument, where + ": " + seq + " has no tokens");
      if (pool_.length(p.seq) + k > spec_.context_length)
        return make_error(ErrorCode::kCapacityExceeded, where + ": " + std::to_string(k) + " tokens at position " +
                                                            std::to_string(pool_.length(p.seq)) + " exceed the context of " +
                                                            std::to_string(spec_.context_length) +
                                                            (spec_.max_sequences > 1 ? " (" + seq + ")" : ""));
      for (size_t i = 0; i < p.tokens.size(); ++i)
        if (p.tokens[i] < 0 || p.tokens[i] >= spec_.vocab_size)
          return make_error(ErrorCode::kOutOfRange, where + ": token " + std::to_string(p.tokens[i]) + " at index " +
                                                        std::to_string(i) + (spec_.max_sequences > 1 ? " of " + seq : "") +
                                                        " is outside the vocabulary [0, " + std::to_string(spec_.vocab_size) + ")");
      n += k;
      blocks += pool_.blocks_needed(p.seq, k);
    }
    if (n < 1 || n > T)
      return make_error(ErrorCode::kInvalidArgument,
                        where + ": expected 1.." + std::to_string(T) + " tokens per step, got " + std::to_string(n));
    if (blocks > pool_.free_blocks())
      return make_error(ErrorCode::kCapacityExceeded, where + ": the step needs " + std::to_string(blocks) +
                                                          " cache blocks of " + std::to_string(pool_.block_slots()) +
                                                          " slots, the pool has " + std::to_string(pool_.free_blocks()) + " free");
    return Ok{};
  }

  Status step(StepMethod& m, std::span<const SequenceTokens> parts, StepLogits logits) {
    const std::string where = "hf_static: method '" + m.method->def().name + "'";
    if (needs_reset_)
      return make_error(ErrorCode::kNeedsReset, where + ": a previous step failed; call reset() before running again");
    HFS_TRY(check_parts(where, parts, m.tokens));

    // From here on the step changes state: pool blocks, then (on failure) needs_reset.
    copies_.clear();
    for (const SequenceTokens& p : parts) pool_.reserve(p.seq, static_cast<int64_t>(p.tokens.size()), &copies_);
    for (const BlockCopy& c : copies_) copy_block(c);
    const int64_t n = fill_rows(m, parts);

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
      forget_last();
      return st.error().with_context(where);
    }
    for (const SequenceTokens& p : parts) pool_.commit(p.seq, static_cast<int64_t>(p.tokens.size()));
    if (logits == StepLogits::kSkip) {
      forget_last();
    } else {
      last_ = &m;
      last_n_ = n;
      last_parts_ = parts.size();
      // part_row_ holds each part's last row; a single-row method only has the last part's, as row 0.
      if (!m.all_rows) {
        std::fill(part_row_.begin(), part_row_.begin() + static_cast<std::ptrdiff_t>(parts.size()) - 1, -1);
        part_row_[parts.size() - 1] = 0;
      }
    }
    last_tokens_ = m.tokens;
    return Ok{};
  }

  // Ids, positions, slots and masks for the parts' rows, padded to the method's T; returns the valid rows.
  int64_t fill_rows(StepMethod& m, std::span<const SequenceTokens> parts) {
    const int64_t T = m.tokens;
    int64_t r = 0;
    for (size_t i = 0; i < parts.size(); ++i) {
      const SequenceTokens& p = parts[i];
      const int64_t p0 = pool_.length(p.seq);
      for (size_t j = 0; j < p.tokens.size(); ++j, ++r) {
        const int64_t pos = p0 + static_cast<int64_t>(j);
        m.ids[r] = p.tokens[j];
        m.positions[r] = static_cast<int32_t>(pos);
        for (size_t g = 0; g < spec_.groups.size(); ++g) {
          const CacheGroup& grp = spec_.groups[g];
          m.slots[g][r] = grp.sliding ? pool_.ring_slot(p.seq, pos) : pool_.global_slot(p.seq, pos);
          mask_row(grp, p.seq, pos, m.masks[g] + r * grp.length);
        }
      }
      part_row_[i] = r - 1;
    }
    const int64_t n = r;
    if (m.logits_index) m.logits_index[0] = static_cast<int32_t>(n - 1);
    // Pad rows: never written (slot -1, so no live ring entry can be overwritten), a legal position, and
    // the last valid row's mask (finite: never fully hidden).
    for (; r < T; ++r) {
      m.ids[r] = static_cast<int32_t>(spec_.pad_token_id);
      m.positions[r] = m.positions[n - 1];
      for (size_t g = 0; g < spec_.groups.size(); ++g) {
        const int64_t S = spec_.groups[g].length;
        m.slots[g][r] = -1;
        std::memcpy(m.masks[g] + r * S, m.masks[g] + (n - 1) * S, static_cast<size_t>(S) * sizeof(float));
      }
    }
    return n;
  }

  // Row of query position q of sequence seq: its own positions k ≤ q (sliding: q − k < W) visible, every
  // other slot — other sequences', stale, empty — hidden. Written after this step's rows were reserved, so
  // the row's own chunk-mates at k ≤ q are visible (write-first).
  void mask_row(const CacheGroup& grp, int32_t seq, int64_t q, float* row) const {
    std::fill(row, row + grp.length, keys::kMaskHidden);
    if (grp.sliding) {
      for (int64_t k = std::max<int64_t>(0, q - spec_.sliding_window + 1); k <= q; ++k) row[pool_.ring_slot(seq, k)] = 0.0f;
      return;
    }
    const int64_t B = pool_.block_slots();
    for (int64_t k0 = 0; k0 <= q; k0 += B) {
      float* base = row + pool_.global_slot(seq, k0);
      std::fill(base, base + std::min(B, q + 1 - k0), 0.0f);
    }
  }

  // Copy-on-write of a shared pool block: the rows the writing sequence holds there, in every global
  // layer's K and V, per head (nothing else of the fresh block is touched).
  void copy_block(const BlockCopy& c) {
    const int64_t B = pool_.block_slots();
    for_each_cache(false, [&](char* base, int64_t S, int64_t row_bytes) {
      for (int64_t h = 0; h < spec_.n_kv_heads; ++h)
        std::memcpy(base + (h * S + c.to * B) * row_bytes, base + (h * S + c.from * B) * row_bytes,
                    static_cast<size_t>(c.slots * row_bytes));
    });
  }

  // A fork's sliding rings start as copies of the parent's.
  void copy_ring(int32_t from, int32_t to) {
    const int64_t R = sliding_ring();
    for_each_cache(true, [&](char* base, int64_t S, int64_t row_bytes) {
      for (int64_t h = 0; h < spec_.n_kv_heads; ++h)
        std::memcpy(base + (h * S + to * R) * row_bytes, base + (h * S + from * R) * row_bytes,
                    static_cast<size_t>(R * row_bytes));
    });
  }

  // f(cache base, its slot count S, bytes per slot row) for every K and V cache of the sliding or global
  // layers and, with int8 caches, every scale tensor ([1, Hkv, S] f32: a 4-byte row per slot and head), so
  // whatever moves cache rows moves their scales with them.
  template <typename F>
  void for_each_cache(bool sliding, F&& f) {
    const int64_t row_bytes = spec_.head_dim * static_cast<int64_t>(dtype_info(spec_.cache_dtype).block_bytes);
    const int64_t tensors = spec_.quantized_cache() ? 2 : 1;  // caches, then scales (init's order)
    for (int64_t part = 0; part < tensors; ++part)
      for (int64_t i = 0; i < spec_.n_layers; ++i) {
        const CacheGroup& grp = spec_.groups[static_cast<size_t>(spec_.layer_group[static_cast<size_t>(i)])];
        if (grp.sliding != sliding) continue;
        for (int kv = 0; kv < 2; ++kv)
          f(static_cast<char*>(caches_[static_cast<size_t>(part * 2 * spec_.n_layers + 2 * i + kv)].data()), grp.length,
            part == 0 ? row_bytes : int64_t{sizeof(float)});
      }
  }

  std::shared_ptr<const Program> program_;
  Spec spec_;
  ModelInfo info_;
  SequencePool pool_;
  bool default_seq_ = true;
  std::vector<Buffer> caches_;
  std::vector<TensorView> cache_views_;
  std::vector<StateTensor> states_;   // per cache buffer, program state-input order
  std::vector<StepMethod> prefills_;  // in info_.prefill_step_sizes order: the variants, then the C-token method
  StepMethod decode_;
  std::vector<StepMethod> steps_;     // the step_<T> methods, ascending
  bool needs_reset_ = false;
  // The last kept step: its method, valid rows, parts and each part's last row (-1: no logits for it).
  const StepMethod* last_ = nullptr;
  int64_t last_n_ = 0;
  size_t last_parts_ = 0;
  int64_t last_tokens_ = 0;
  std::vector<int64_t> part_row_;
  std::vector<uint8_t> seen_;         // per sequence index: already in this step's parts
  std::vector<BlockCopy> copies_;
};

Status validate_hf_static(const Program& program) {
  HFS_TRY(checked_spec(program));
  return Ok{};
}

[[maybe_unused]] const bool kRegistered =
    register_io_manager(std::string(keys::kContractHfStatic), &HfStaticIO::make, &validate_hf_static);

}  // namespace
}  // namespace hfs
