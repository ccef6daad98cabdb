// hf_static (versions 1 and 2): the contract facts read from a program's metadata, and the exact method signature
// they imply. Shared by validation and the IO manager so both derive shapes from one place.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "hfstatic/dtype.h"
#include "hfstatic/error.h"
#include "hfstatic/ext/graph.h"
#include "hfstatic/program.h"

namespace hfs::hf_static {

// Version 1: one sequence. Version 2 adds caches shared by several sequences (max_sequences, a global slot
// pool, one sliding ring per sequence); every version-1 rule holds in it unchanged.
inline constexpr int64_t kMinVersion = 1;
inline constexpr int64_t kMaxVersion = 2;
// Minor versions (io.contract_minor, absent = 0) add features within a version that an older runtime must
// refuse: 1 = int8 caches with per-(slot, head) scale tensors. A program may only use what its minor declares.
inline constexpr int64_t kMaxMinor = 1;
inline constexpr int64_t kMinorInt8Cache = 1;

// Layers of one kind share a cache length, a slot rule and one mask/slot input pair.
struct CacheGroup {
  std::string kind;     // keys::kLayerGlobal | keys::kLayerSliding
  bool sliding = false;
  int64_t length = 0;   // S_g: global = the slot pool (context_length with one sequence); sliding = sequences × R
  int64_t ring = 0;     // sliding: R, one sequence's ring (length / max_sequences); global: 0
};

// One more prefill method with fewer tokens per step (optional keys; same signature rules at T tokens).
struct PrefillVariant {
  std::string method;
  int64_t tokens = 0;
};

// A multi-row method: the same graph at T tokens, returning logits for every row ([1, T, V]) whatever
// logits_mode says (that key describes the prefill and decode methods).
struct StepVariant {
  std::string method;
  int64_t tokens = 0;
};

struct Spec {
  int64_t version = 0;
  int64_t minor = 0;
  std::string prefill_method, decode_method;
  int64_t prefill_tokens = 0, decode_tokens = 0;
  std::vector<PrefillVariant> prefill_variants;  // tokens strictly ascending, each < prefill_tokens
  std::vector<StepVariant> step_methods;         // tokens strictly ascending, each in [2, kMaxStepTokens]
  int64_t max_sequences = 1;                     // version 2: ≥ 2
  int64_t global_pool_slots = 0;                 // global layers' cache length (context_length in version 1)
  int64_t context_length = 0;
  int64_t n_layers = 0, n_kv_heads = 0, head_dim = 0;
  int64_t sliding_window = 0;
  int64_t vocab_size = 0;
  int64_t bos_token_id = -1, pad_token_id = 0;
  std::vector<int64_t> eos_token_ids;
  std::vector<int> layer_group;        // per layer: index into groups
  std::vector<int64_t> layer_cache_lengths;
  std::vector<CacheGroup> groups;      // "global" first, then "sliding"; only kinds that occur
  DType cache_dtype = DType::kF32;    // f32 | f16 | i8 (then every K/V cache has a scale state tensor)
  bool quantized_cache() const { return cache_dtype == DType::kI8; }
  bool logits_all = false;             // prefill and decode methods return every row
  // The most rows any method takes: the sliding ring must cover a window plus one such step.
  int64_t max_step_tokens() const {
    return std::max(prefill_tokens, step_methods.empty() ? int64_t{1} : step_methods.back().tokens);
  }
};

// Reads and range-checks every required key. Each failure names the key, expected and got.
[[nodiscard]] Result<Spec> read_spec(const Program& program);
// The signature a method with T tokens per step must have, in contract order; all_rows: logits for every
// row (step methods, or logits_mode "all"), else the logits_index row only.
std::vector<IOSpec> expected_inputs(const Spec& spec, int64_t tokens, bool all_rows);
std::vector<IOSpec> expected_outputs(const Spec& spec, int64_t tokens, bool all_rows);
// Methods exist, step sizes match input_ids, every input/output matches the expected signature.
[[nodiscard]] Status validate_methods(const Program& program, const Spec& spec);

}  // namespace hfs::hf_static
