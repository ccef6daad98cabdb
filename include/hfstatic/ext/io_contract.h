// hfstatic/ext/io_contract.h — I/O contracts: who does what on the host side of a fixed-shape program.
//
// A program's metadata names its contract (`io.contract`, `io.contract_version`). An IOManager
// implements one contract: it validates the program against it, owns the I/O buffers (allocated once,
// through the selected backend's allocator), and turns "run these n tokens" into a fixed-shape method
// call — ids, positions, cache slots, masks, padding — keeping the absolute counters. The LLM runner
// (llm_runner.h) only talks to this interface and never knows a backend or an architecture.
//
// IO managers register themselves from their own implementation file:
//
//   const bool kReg = hfs::register_io_manager("my_contract", &MyContractIO::make);  // src/llm/hf_static_io.cpp
//
//   auto io = hfs::create_io_manager(program, opts);     // picks by the program's io.contract
//   if (!io) puts(io.error().to_string().c_str());       // unknown contract → lists the known ones
//   (compiled and run by tests/api/usage_examples_test.cpp: keep the two in step)
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hfstatic/dtype.h"
#include "hfstatic/error.h"
#include "hfstatic/export_macro.h"
#include "hfstatic/ext/allocator.h"
#include "hfstatic/ext/method.h"
#include "hfstatic/program.h"

namespace hfs {

struct HFS_API IOManagerOptions {
  MethodOptions method;            // backends, caller passes
  // Where every I/O buffer (K/V caches, each method's inputs and outputs) is allocated, once, at load.
  // Null: the highest-priority backend's allocator (Method::io_allocator), or shared memory when
  // shared_memory_io is set. Giving both is an error.
  std::shared_ptr<Allocator> io_allocator;
  bool shared_memory_io = false;   // shorthand for io_allocator = shared_memory_allocator() (memfd)
  // Sequence 0 exists from the start and again after reset(): the single-sequence calls (position,
  // run_prefill, run_decode, last_logits) act on it. The Engine sets false and adds every sequence itself.
  bool default_sequence = true;
  // Global cache slots per pool block (paged sequences); 0 = the largest power of two ≤ 16 dividing the pool.
  int64_t block_slots = 0;
};

// Rows of one sequence in a step: its next tokens, at its next positions.
struct HFS_API SequenceTokens {
  int32_t seq = 0;
  std::span<const int32_t> tokens;
};

// Static facts of a loaded program under its contract.
struct HFS_API ModelInfo {
  std::string contract;
  int64_t contract_version = 0;
  int64_t prefill_tokens = 0;   // C: tokens per prefill call (the largest prefill method)
  // Every prefill method's tokens per call, ascending; the last is C. More than one when the program has
  // prefill variants: run_prefill then uses the smallest that holds its tokens, so a short prompt or
  // tail pads to that size instead of C.
  std::vector<int64_t> prefill_step_sizes;
  int64_t context_length = 0;   // capacity in tokens
  int64_t vocab_size = 0;
  int32_t bos_token_id = -1;          // token ids are int32 across the API (Tokenizer, Runner, Engine)
  std::vector<int32_t> eos_token_ids;
  bool logits_all = false;      // prefill/decode return logits for every row (else: last valid row only)
  // Multi-row methods returning logits for every row, tokens per call ascending (empty: none).
  std::vector<int64_t> step_sizes;
  int64_t max_sequences = 1;    // sequences that can share the caches at once
  int64_t pool_slots = 0;       // global cache slots shared by them (context_length with one sequence)
  int64_t block_slots = 0;      // pool slots per block
};

// The index in `sizes` (ModelInfo::prefill_step_sizes: ascending) of the smallest prefill method that holds
// n tokens, or the last when none does: the one rule for which method IOManager::run_prefill uses.
inline size_t prefill_size_index(std::span<const int64_t> sizes, int64_t n) {
  size_t i = 0;
  while (i + 1 < sizes.size() && sizes[i] < n) ++i;
  return i;
}

// One sequence's rows of every state tensor the contract declares (K/V caches and whatever else holds
// per-position state, e.g. quantization scales), position-major: what a persistent prompt cache saves
// (Runner::save_session, docs/sessions.md). Independent of which slots the rows occupy, so a state saved
// from one sequence index restores into another.
struct HFS_API StateRows {
  std::string name;            // the program's state input (e.g. "k_cache_0")
  DType dtype = DType::kF32;
  int64_t outer = 0;           // rows per position: the dims before the slot axis (1 × n_kv_heads)
  int64_t row_bytes = 0;       // bytes of one row: the dims after the slot axis
  int64_t first = 0;           // the first position held (a sliding layer keeps only its window)
  std::vector<std::byte> bytes;  // [length − first, outer, row_bytes]
};
struct HFS_API SequenceState {
  int64_t length = 0;            // positions of the sequence
  std::vector<StateRows> tensors;  // program state-input order
};

// Whether the caller reads a step's logits.
enum class StepLogits : uint8_t {
  kKeep,  // last_logits() / last_step_logits() return this step's logits
  kSkip,  // nobody reads them (a prompt chunk with more tokens after it): the logits output is left
          // unbound, so the method skips whatever partitions only compute it (the LM head, where it is
          // a partition of its own) and last_logits() is empty until the next kKeep step
  kAllRows,  // every row's (verifying draft tokens): run_step picks a method whose logits cover every row,
             // and last_step_logits() holds them, [rows, vocab] in part order
};

class HFS_API IOManager {
 public:
  virtual ~IOManager() = default;
  virtual const ModelInfo& info() const = 0;

  // Tokens committed so far (the absolute position of the next token).
  virtual int64_t position() const = 0;
  // Side-effect free: true iff n more tokens fit.
  virtual bool can_accept(int64_t n) const = 0;

  // Runs 1..prefill_tokens tokens through the smallest prefill method that holds them (padding the rest
  // of its chunk).
  // On success the counters advance by tokens.size() and, with kKeep, last_logits() holds the logits of
  // the last token. The caches are updated the same either way.
  [[nodiscard]] virtual Status run_prefill(std::span<const int32_t> tokens, StepLogits logits) = 0;
  // Runs exactly one token through the decode method.
  [[nodiscard]] virtual Status run_decode(int32_t token) = 0;
  // Logits of the last token run, [vocab]. Valid until the next run.
  virtual std::span<const float> last_logits() const = 0;
  // Logits of every valid row of the last run ([n, vocab] row-major), when the program returns all rows;
  // otherwise just the last row.
  virtual std::span<const float> last_step_logits() const = 0;

  // Tokens per call (T) of the method the last successful run used: which prefill size a step padded to
  // (diagnostics, tests). 0 before any run, or where the IO manager does not say.
  virtual int64_t last_step_tokens() const { return 0; }

  // Forgets everything: position 0, caches cleared. The next run is bit-identical to a fresh load.
  virtual void reset() = 0;
  // True after a failed step left state that cannot be trusted; every run then fails with kNeedsReset.
  virtual bool needs_reset() const = 0;

  // The K/V cache buffers in program input order (tests compare bytes across steps).
  virtual std::vector<TensorView> cache_views() const = 0;

  // --- several sequences (ModelInfo::max_sequences; contracts without them answer kUnsupported) -----
  // A new, empty sequence: the lowest free index below max_sequences, or kResourceExhausted.
  [[nodiscard]] virtual Result<int32_t> add_sequence() { return unsupported("add_sequence"); }
  // A new sequence holding the first `tokens` positions of `parent`, sharing its cache blocks until one of
  // them writes into a shared block (copy-on-write). Sliding rings are copied; a prefix the parent's ring
  // no longer holds is kInvalidArgument.
  [[nodiscard]] virtual Result<int32_t> fork_sequence(int32_t parent, int64_t tokens) {
    (void)parent, (void)tokens;
    return unsupported("fork_sequence");
  }
  // Frees the sequence's slots; unknown or removed → kInvalidArgument, nothing changes.
  [[nodiscard]] virtual Status remove_sequence(int32_t seq) {
    (void)seq;
    return unsupported("remove_sequence");
  }
  // Positions the sequence holds, or -1 when it is not active.
  virtual int64_t sequence_length(int32_t seq) const { (void)seq; return -1; }
  // Forgets the sequence's positions from `length` on (draft rows the host rejected): their slots are
  // unreachable until later rows overwrite them, and pool blocks wholly past `length` go back to the pool
  // (below a fork point they stay the fork's, so later rows never copy-on-write a block they hold no
  // position of). length > the sequence's length, or an unknown sequence → kInvalidArgument, nothing changes.
  [[nodiscard]] virtual Status truncate_sequence(int32_t seq, int64_t length) {
    (void)seq, (void)length;
    return unsupported("truncate_sequence");
  }
  // Benchmarks only (bench --context-fill): advances the sequence by n positions without running a step, so
  // that the next steps run with that many live tokens. The skipped positions' cache rows keep whatever the
  // buffers hold (zeros after reset()), so later logits mean nothing; a step's cost is real, because
  // attention reads every live row whatever its values. Checked as a step of n rows would be (unknown
  // sequence, over its context, pool exhausted, after a failed step → its error, nothing changed).
  [[nodiscard]] virtual Status advance_unwritten(int32_t seq, int64_t n) {
    (void)seq, (void)n;
    return unsupported("advance_unwritten");
  }
  // Pool blocks a step would take (new blocks and copies of shared ones) if it appended n tokens to seq.
  virtual int64_t blocks_needed(int32_t seq, int64_t n) const { (void)seq, (void)n; return 0; }
  virtual int64_t free_blocks() const { return 0; }
  // One step over several sequences' rows (each sequence at most once, its tokens at its next positions),
  // through the smallest method that holds them all; with kAllRows, or kKeep and more than one part, a
  // method whose logits cover every row. Checked before anything runs (unknown sequence, over a sequence's context,
  // pool exhausted, too many rows for any method → its own error, nothing changed). On success each
  // sequence advances by its tokens; step_logits(i) then holds part i's last row's logits.
  [[nodiscard]] virtual Status run_step(std::span<const SequenceTokens> parts, StepLogits logits) {
    (void)parts, (void)logits;
    return unsupported("run_step");
  }
  // Logits after part i's last token of the last run_step ([vocab]), or empty when that step did not keep them.
  virtual std::span<const float> step_logits(size_t part) const { (void)part; return {}; }
  // --- persistent state (docs/sessions.md) ----------------------------------------------------------------
  // The sequence's rows of every state tensor (a copy). Unknown sequence → kInvalidArgument.
  [[nodiscard]] virtual Result<SequenceState> save_sequence(int32_t seq) const {
    (void)seq;
    return unsupported("save_sequence");
  }
  // Replaces the sequence's positions with `state`'s (the sequence then holds state.length positions; the
  // logits of its last step are gone). Checked first, nothing changed on error: an active sequence, the
  // tensors' names, dtypes and row sizes those of the program, length within the context and the pool's free
  // blocks, each tensor's rows exactly the positions this program keeps for that length.
  [[nodiscard]] virtual Status restore_sequence(int32_t seq, const SequenceState& state) {
    (void)seq, (void)state;
    return unsupported("restore_sequence");
  }
  // Diagnostics (tests): the cache slot holding each of the sequence's positions 0..length-1 in cache group g
  // (program order: global first, then sliding); -1 where a sliding ring no longer holds the position.
  virtual std::vector<int32_t> sequence_slots(int32_t seq, size_t group) const { (void)seq, (void)group; return {}; }

 private:
  Error unsupported(const char* what) const {
    return make_error(ErrorCode::kUnsupported, info().contract + ": " + what + " is not supported by this IO manager");
  }
};

using IOManagerFactory =
    std::function<Result<std::unique_ptr<IOManager>>(std::shared_ptr<const Program>, const IOManagerOptions&)>;

// Checks a program against its contract without allocating its I/O (inspect, tools): metadata and method
// signatures, with the errors the factory would return.
using ContractValidator = std::function<Status(const Program&)>;

HFS_API bool register_io_manager(std::string contract, IOManagerFactory factory, ContractValidator validate = {});
HFS_API std::vector<std::string> registered_contracts();
// The checks create_io_manager would make before allocating anything: the same errors, nothing allocated.
// A contract registered without a validator passes once it is known.
[[nodiscard]] HFS_API Status validate_contract(const Program& program);
// Picks the IO manager named by the program's `io.contract`. No contract metadata → kMissingMetadata;
// unknown → kUnknownContract listing the registered ones.
[[nodiscard]] HFS_API Result<std::unique_ptr<IOManager>> create_io_manager(std::shared_ptr<const Program> program,
                                                                           const IOManagerOptions& options = {});

}  // namespace hfs
