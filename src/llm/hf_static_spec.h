// hf_static v1: the contract facts read from a program's metadata, and the exact method signature
// they imply. Shared by validation and the IO manager so both derive shapes from one place.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hfstatic/dtype.h"
#include "hfstatic/error.h"
#include "hfstatic/graph.h"
#include "hfstatic/program.h"

namespace hfs::hf_static {

inline constexpr int64_t kSupportedVersion = 1;

// Layers of one kind share a cache length, a slot rule and one mask/slot input pair.
struct CacheGroup {
  std::string kind;     // keys::kLayerGlobal | keys::kLayerSliding
  bool sliding = false;
  int64_t length = 0;   // S_g: global = context_length; sliding = ring length R
};

// One more prefill method with fewer tokens per step (optional keys; same signature rules at T tokens).
struct PrefillVariant {
  std::string method;
  int64_t tokens = 0;
};

struct Spec {
  int64_t version = 0;
  std::string prefill_method, decode_method;
  int64_t prefill_tokens = 0, decode_tokens = 0;
  std::vector<PrefillVariant> prefill_variants;  // tokens strictly ascending, each < prefill_tokens
  int64_t context_length = 0;
  int64_t n_layers = 0, n_kv_heads = 0, head_dim = 0;
  int64_t sliding_window = 0;
  int64_t vocab_size = 0;
  int64_t bos_token_id = -1, pad_token_id = 0;
  std::vector<int64_t> eos_token_ids;
  std::vector<int> layer_group;        // per layer: index into groups
  std::vector<int64_t> layer_cache_lengths;
  std::vector<CacheGroup> groups;      // "global" first, then "sliding"; only kinds that occur
  DType cache_dtype = DType::kF32;
  bool logits_all = false;
};

// Reads and range-checks every required key. Each failure names the key, expected and got.
[[nodiscard]] Result<Spec> read_spec(const Program& program);
// The signature a method with T tokens per step must have, in contract order.
std::vector<IOSpec> expected_inputs(const Spec& spec, int64_t tokens);
std::vector<IOSpec> expected_outputs(const Spec& spec, int64_t tokens);
// Methods exist, step sizes match input_ids, every input/output matches the expected signature.
[[nodiscard]] Status validate_methods(const Program& program, const Spec& spec);

}  // namespace hfs::hf_static
