#include "llm/hf_static_spec.h"

#include <algorithm>

#include "hfstatic/ext/metadata_keys.h"

namespace hfs::hf_static {
namespace {

// Upper bounds that keep a hostile program from asking for absurd buffers before anything is allocated
// (shared with the exporter, which refuses checkpoints beyond them).
constexpr int64_t kMaxContext = keys::kMaxContextLength;
constexpr int64_t kMaxLayers = keys::kMaxLayers;
constexpr int64_t kMaxHeads = keys::kMaxKvHeads;
constexpr int64_t kMaxHeadDim = keys::kMaxHeadDim;
constexpr int64_t kMaxVocab = keys::kMaxVocabSize;

class Reader {
 public:
  explicit Reader(const Program& p) : p_(p) {}

  Result<const Value*> get(std::string_view key) {
    const Value* v = p_.meta(key);
    if (!v) return make_error(ErrorCode::kMissingMetadata, where() + "required metadata key '" + std::string(key) + "' is missing");
    return v;
  }
  Result<int64_t> integer(std::string_view key, int64_t lo, int64_t hi) {
    HFS_ASSIGN_OR_RETURN(const Value* v, get(key));
    if (!v->is_int()) return bad(key, "an integer", v->to_json());
    int64_t x = v->as_int();
    if (x < lo || x > hi)
      return bad(key, "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]", std::to_string(x));
    return x;
  }
  Result<std::string> string(std::string_view key, std::vector<std::string_view> allowed = {}) {
    HFS_ASSIGN_OR_RETURN(const Value* v, get(key));
    if (!v->is_string() || v->as_string().empty()) return bad(key, "a non-empty string", v->to_json());
    const std::string& s = v->as_string();
    if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), s) == allowed.end()) {
      std::string list;
      for (auto a : allowed) list += (list.empty() ? "\"" : ", \"") + std::string(a) + "\"";
      return bad(key, "one of " + list, v->to_json());
    }
    return s;
  }
  Result<std::vector<int64_t>> int_list(std::string_view key, int64_t lo, int64_t hi) {
    HFS_ASSIGN_OR_RETURN(const Value* v, get(key));
    if (!v->is_array()) return bad(key, "an array of integers", v->to_json());
    std::vector<int64_t> out;
    for (const Value& e : v->as_array()) {
      if (!e.is_int() || e.as_int() < lo || e.as_int() > hi)
        return bad(key, "integers in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]", v->to_json());
      out.push_back(e.as_int());
    }
    return out;
  }
  Result<std::vector<std::string>> string_list(std::string_view key) {
    HFS_ASSIGN_OR_RETURN(const Value* v, get(key));
    if (!v->is_array()) return bad(key, "an array of method names", v->to_json());
    std::vector<std::string> out;
    for (const Value& e : v->as_array()) {
      if (!e.is_string() || e.as_string().empty()) return bad(key, "non-empty strings", v->to_json());
      out.push_back(e.as_string());
    }
    return out;
  }
  bool has(std::string_view key) const { return p_.meta(key) != nullptr; }
  Error bad(std::string_view key, const std::string& expected, const std::string& got) {
    return make_error(ErrorCode::kBadMetadata,
                      where() + "metadata '" + std::string(key) + "': expected " + expected + ", got " + got);
  }
  std::string where() const { return p_.path() + ": hf_static: "; }

 private:
  const Program& p_;
};

std::string signature_string(const IOSpec& s) {
  std::string out = "'" + s.name + "' " + s.type.to_string() + " " + std::string(io_role_name(s.role));
  if (!s.alias_of.empty()) out += " alias_of '" + s.alias_of + "'";
  return out;
}

Status compare_signature(const Program& p, const std::string& method, const char* what,
                         const std::vector<IOSpec>& got, const std::vector<IOSpec>& want) {
  const std::string where = p.path() + ": hf_static: method '" + method + "' " + what;
  for (size_t i = 0; i < std::max(got.size(), want.size()); ++i) {
    if (i >= got.size())
      return make_error(ErrorCode::kContractViolation, where + " " + std::to_string(i) + ": expected " +
                                                           signature_string(want[i]) + ", got nothing (method has " +
                                                           std::to_string(got.size()) + ")");
    if (i >= want.size())
      return make_error(ErrorCode::kContractViolation, where + " " + std::to_string(i) + ": unexpected extra " +
                                                           signature_string(got[i]) + " (contract has " +
                                                           std::to_string(want.size()) + ")");
    const IOSpec& g = got[i];
    const IOSpec& w = want[i];
    if (g.name != w.name || !(g.type == w.type) || g.role != w.role || g.alias_of != w.alias_of)
      return make_error(ErrorCode::kContractViolation, where + " " + std::to_string(i) + ": expected " +
                                                           signature_string(w) + ", got " + signature_string(g));
  }
  return Ok{};
}

// Both keys of a list pair or neither: the one present names the one missing.
Status both_or_neither(Reader& r, std::string_view a, std::string_view b) {
  const bool has_a = r.has(a), has_b = r.has(b);
  if (has_a == has_b) return Ok{};
  std::string_view present = has_a ? a : b, absent = has_a ? b : a;
  return make_error(ErrorCode::kMissingMetadata, r.where() + "metadata '" + std::string(present) + "' needs '" +
                                                     std::string(absent) + "', which is missing");
}

// Optional multi-row methods (logits for every row): both lists or neither, equally long, tokens strictly
// ascending in [2, min(kMaxStepTokens, context_length)].
Status read_step_methods(Reader& r, const Program& program, Spec& s) {
  HFS_TRY(both_or_neither(r, keys::kStepMethods, keys::kStepTokens));
  if (!r.has(keys::kStepMethods)) return Ok{};
  HFS_ASSIGN_OR_RETURN(auto names, r.string_list(keys::kStepMethods));
  HFS_ASSIGN_OR_RETURN(auto tokens, r.int_list(keys::kStepTokens, 2, std::min(keys::kMaxStepTokens, s.context_length)));
  if (names.size() > keys::kMaxStepMethods)
    return r.bad(keys::kStepMethods, "at most " + std::to_string(keys::kMaxStepMethods) + " methods", std::to_string(names.size()));
  if (names.size() != tokens.size())
    return r.bad(keys::kStepTokens, std::to_string(names.size()) + " step sizes (one per method in '" +
                                        std::string(keys::kStepMethods) + "')",
                 std::to_string(tokens.size()));
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0 && tokens[i] <= tokens[i - 1])
      return r.bad(keys::kStepTokens, "strictly ascending step sizes", program.meta(keys::kStepTokens)->to_json());
    s.step_methods.push_back({names[i], tokens[i]});
  }
  return Ok{};
}

// Version 2's sequence pool keys: required there, refused in version 1 (a version-1 runtime would read
// the pool as a wrong cache length, so a program that needs them must say version 2).
Status read_sequences(Reader& r, Spec& s) {
  s.global_pool_slots = s.context_length;
  if (s.version < 2) {
    for (std::string_view k : {keys::kMaxSequences, keys::kGlobalPoolSlots})
      if (r.has(k))
        return r.bad(k, "absent in contract version 1 (several sequences need io.contract_version 2)", "a value");
    return Ok{};
  }
  HFS_ASSIGN_OR_RETURN(auto n, r.integer(keys::kMaxSequences, 2, keys::kMaxSequencesLimit));
  HFS_ASSIGN_OR_RETURN(auto pool, r.integer(keys::kGlobalPoolSlots, s.context_length, keys::kMaxPoolSlots));
  s.max_sequences = n;
  s.global_pool_slots = pool;
  return Ok{};
}

}  // namespace

// "; program cache_dtype "x"": what a newer minor most likely adds, so a refusal names it.
static std::string cache_dtype_note(const Program& program) {
  const Value* v = program.meta(keys::kCacheDType);
  return v != nullptr && v->is_string() ? "; its " + std::string(keys::kCacheDType) + " is \"" + v->as_string() + "\"" : "";
}

Result<Spec> read_spec(const Program& program) {
  Reader r(program);
  Spec s;
  HFS_ASSIGN_OR_RETURN(auto contract, r.string(keys::kContract));
  if (contract != keys::kContractHfStatic)
    return r.bad(keys::kContract, "\"hf_static\"", "\"" + contract + "\"");
  {
    HFS_ASSIGN_OR_RETURN(const Value* v, r.get(keys::kContractVersion));
    if (!v->is_int()) return r.bad(keys::kContractVersion, "an integer", v->to_json());
    if (v->as_int() < kMinVersion || v->as_int() > kMaxVersion)
      return make_error(ErrorCode::kBadMetadata, r.where() + "contract version " + std::to_string(v->as_int()) +
                                                     " is not supported (this runtime implements versions " +
                                                     std::to_string(kMinVersion) + " to " + std::to_string(kMaxVersion) + ")");
    s.version = v->as_int();
  }
  if (r.has(keys::kContractMinor)) {
    HFS_ASSIGN_OR_RETURN(const Value* v, r.get(keys::kContractMinor));
    if (!v->is_int() || v->as_int() < 0) return r.bad(keys::kContractMinor, "an integer ≥ 0", v->to_json());
    if (v->as_int() > kMaxMinor)
      return make_error(ErrorCode::kBadMetadata, r.where() + "contract version " + std::to_string(s.version) +
                                                     " minor " + std::to_string(v->as_int()) +
                                                     " is not supported (this runtime implements minor versions 0 to " +
                                                     std::to_string(kMaxMinor) + ")" + cache_dtype_note(program));
    s.minor = v->as_int();
  }
  HFS_ASSIGN_OR_RETURN(auto pm, r.string(keys::kPrefillMethod));
  HFS_ASSIGN_OR_RETURN(auto dm, r.string(keys::kDecodeMethod));
  s.prefill_method = pm;
  s.decode_method = dm;
  HFS_ASSIGN_OR_RETURN(auto ctx, r.integer(keys::kContextLength, 1, kMaxContext));
  s.context_length = ctx;
  HFS_ASSIGN_OR_RETURN(auto pt, r.integer(keys::kPrefillTokens, 1, s.context_length));
  s.prefill_tokens = pt;
  // Optional smaller prefill methods: both lists or neither, equally long, tokens strictly ascending.
  HFS_TRY(both_or_neither(r, keys::kPrefillVariantMethods, keys::kPrefillVariantTokens));
  if (r.has(keys::kPrefillVariantMethods)) {
    HFS_ASSIGN_OR_RETURN(auto vm, r.string_list(keys::kPrefillVariantMethods));
    HFS_ASSIGN_OR_RETURN(auto vt, r.int_list(keys::kPrefillVariantTokens, 1, s.prefill_tokens - 1));
    if (vm.size() > keys::kMaxPrefillVariants)
      return r.bad(keys::kPrefillVariantMethods, "at most " + std::to_string(keys::kMaxPrefillVariants) + " methods",
                   std::to_string(vm.size()));
    if (vm.size() != vt.size())
      return r.bad(keys::kPrefillVariantTokens, std::to_string(vm.size()) + " step sizes (one per method in '" +
                                                    std::string(keys::kPrefillVariantMethods) + "')",
                   std::to_string(vt.size()));
    for (size_t i = 0; i < vm.size(); ++i) {
      if (i > 0 && vt[i] <= vt[i - 1])
        return r.bad(keys::kPrefillVariantTokens, "strictly ascending step sizes",
                     program.meta(keys::kPrefillVariantTokens)->to_json());
      s.prefill_variants.push_back({vm[i], vt[i]});
    }
  }
  HFS_TRY(read_step_methods(r, program, s));
  HFS_TRY(read_sequences(r, s));
  HFS_ASSIGN_OR_RETURN(auto dt, r.integer(keys::kDecodeTokens, 1, 1));
  s.decode_tokens = dt;
  HFS_ASSIGN_OR_RETURN(auto nl, r.integer(keys::kNumLayers, 1, kMaxLayers));
  s.n_layers = nl;
  HFS_ASSIGN_OR_RETURN(auto kvh, r.integer(keys::kNumKvHeads, 1, kMaxHeads));
  s.n_kv_heads = kvh;
  HFS_ASSIGN_OR_RETURN(auto hd, r.integer(keys::kHeadDim, 1, kMaxHeadDim));
  s.head_dim = hd;
  HFS_ASSIGN_OR_RETURN(auto sw, r.integer(keys::kSlidingWindow, 0, kMaxContext));
  s.sliding_window = sw;
  HFS_ASSIGN_OR_RETURN(auto vs, r.integer(keys::kVocabSize, 1, kMaxVocab));
  s.vocab_size = vs;
  HFS_ASSIGN_OR_RETURN(auto bos, r.integer(keys::kBosTokenId, -1, s.vocab_size - 1));
  s.bos_token_id = bos;
  HFS_ASSIGN_OR_RETURN(auto pad, r.integer(keys::kPadTokenId, 0, s.vocab_size - 1));
  s.pad_token_id = pad;
  HFS_ASSIGN_OR_RETURN(auto eos, r.int_list(keys::kEosTokenIds, 0, s.vocab_size - 1));
  s.eos_token_ids = eos;
  HFS_ASSIGN_OR_RETURN(auto cd, r.string(keys::kCacheDType, {"f32", "f16", keys::kCacheInt8}));
  s.cache_dtype = cd == "f16" ? DType::kF16 : cd == keys::kCacheInt8 ? DType::kI8 : DType::kF32;
  if (s.quantized_cache() && s.minor < kMinorInt8Cache)
    return r.bad(keys::kContractMinor, "≥ " + std::to_string(kMinorInt8Cache) + " (cache_dtype \"int8\" is minor " +
                                           std::to_string(kMinorInt8Cache) + ")",
                 std::to_string(s.minor));
  HFS_TRY(r.string(keys::kCacheLayout, {keys::kLayoutBHSD}));
  HFS_ASSIGN_OR_RETURN(auto lm, r.string(keys::kLogitsMode, {keys::kLogitsLast, keys::kLogitsAll}));
  s.logits_all = lm == keys::kLogitsAll;

  // Per-layer kinds and cache lengths.
  HFS_ASSIGN_OR_RETURN(const Value* kinds, r.get(keys::kLayerKinds));
  if (!kinds->is_array() || static_cast<int64_t>(kinds->size()) != s.n_layers)
    return r.bad(keys::kLayerKinds, "an array of " + std::to_string(s.n_layers) + " strings (one per layer)",
                 kinds->to_json());
  HFS_ASSIGN_OR_RETURN(auto lens, r.int_list(keys::kLayerCacheLengths, 1, std::max(s.global_pool_slots, s.context_length * s.max_sequences)));
  if (static_cast<int64_t>(lens.size()) != s.n_layers)
    return r.bad(keys::kLayerCacheLengths, std::to_string(s.n_layers) + " lengths (one per layer)",
                 std::to_string(lens.size()) + " lengths");
  s.layer_cache_lengths = lens;
  int global_group = -1, sliding_group = -1;
  bool any_sliding = false;
  for (const Value& k : kinds->as_array()) any_sliding |= k.as_string() == keys::kLayerSliding;
  if (any_sliding) {
    if (s.sliding_window < 1)
      return r.bad(keys::kSlidingWindow, "≥ 1 (the program has sliding layers)", std::to_string(s.sliding_window));
  }
  // Groups in contract order: global first, then sliding.
  for (int pass = 0; pass < 2; ++pass) {
    for (int64_t i = 0; i < s.n_layers; ++i) {
      const Value& k = kinds->as_array()[static_cast<size_t>(i)];
      bool sliding = k.as_string() == keys::kLayerSliding;
      if (!k.is_string() || (!sliding && k.as_string() != keys::kLayerGlobal))
        return r.bad(keys::kLayerKinds, "\"global\" or \"sliding\" for layer " + std::to_string(i), k.to_json());
      if (sliding != (pass == 1)) continue;
      int& g = sliding ? sliding_group : global_group;
      int64_t len = s.layer_cache_lengths[static_cast<size_t>(i)];
      if (g < 0) {
        g = static_cast<int>(s.groups.size());
        s.groups.push_back({std::string(sliding ? keys::kLayerSliding : keys::kLayerGlobal), sliding, len,
                            sliding ? len / s.max_sequences : 0});
      }
      const CacheGroup& grp = s.groups[static_cast<size_t>(g)];
      std::string layer = "layer " + std::to_string(i) + " (" + grp.kind + ")";
      if (!sliding && len != s.global_pool_slots)
        return r.bad(keys::kLayerCacheLengths,
                     layer + " cache length = " +
                         (s.max_sequences > 1 ? std::string(keys::kGlobalPoolSlots) : std::string("context_length")) +
                         " " + std::to_string(s.global_pool_slots),
                     std::to_string(len));
      if (sliding) {
        // One ring of R slots per sequence. A ring shorter than W + T − 1 (T: the largest step) would let a
        // step evict rows its own earlier tokens still need.
        const int64_t need = std::min(s.sliding_window + s.max_step_tokens() - 1, s.context_length);
        const std::string per_seq = s.max_sequences > 1 ? "max_sequences " + std::to_string(s.max_sequences) + " × " : "";
        if (len % s.max_sequences != 0 || len / s.max_sequences < need || len / s.max_sequences > s.context_length)
          return r.bad(keys::kLayerCacheLengths,
                       layer + " cache length " + per_seq + "a ring length ≥ min(sliding_window + " +
                           (s.max_step_tokens() > s.prefill_tokens ? "the largest step_tokens" : "prefill_tokens") +
                           " − 1, context_length) = " + std::to_string(need) + " and ≤ context_length " +
                           std::to_string(s.context_length),
                       std::to_string(len));
      }
      if (len != grp.length)
        return r.bad(keys::kLayerCacheLengths,
                     layer + " cache length equal to the other " + grp.kind + " layers' " + std::to_string(grp.length),
                     std::to_string(len));
    }
  }
  s.layer_group.resize(static_cast<size_t>(s.n_layers));
  for (int64_t i = 0; i < s.n_layers; ++i)
    s.layer_group[static_cast<size_t>(i)] =
        kinds->as_array()[static_cast<size_t>(i)].as_string() == keys::kLayerSliding ? sliding_group : global_group;
  return s;
}

std::vector<IOSpec> expected_inputs(const Spec& s, int64_t T, bool all_rows) {
  std::vector<IOSpec> in;
  in.push_back({std::string(keys::kInputIds), {DType::kI32, {1, T}}, IORole::kInput, ""});
  in.push_back({std::string(keys::kPositionIds), {DType::kI32, {1, T}}, IORole::kInput, ""});
  if (!all_rows) in.push_back({std::string(keys::kLogitsIndex), {DType::kI32, {1}}, IORole::kInput, ""});
  for (const CacheGroup& g : s.groups) {
    in.push_back({keys::cache_slots_name(g.kind), {DType::kI32, {T}}, IORole::kInput, ""});
    in.push_back({keys::attn_mask_name(g.kind), {DType::kF32, {1, 1, T, g.length}}, IORole::kInput, ""});
  }
  for (int64_t i = 0; i < s.n_layers; ++i) {
    int64_t S = s.layer_cache_lengths[static_cast<size_t>(i)];
    TensorType t{s.cache_dtype, {1, s.n_kv_heads, S, s.head_dim}};
    in.push_back({keys::k_cache_name(static_cast<int>(i)), t, IORole::kState, ""});
    in.push_back({keys::v_cache_name(static_cast<int>(i)), t, IORole::kState, ""});
  }
  if (s.quantized_cache())  // after every cache: the scales, in the same layer order
    for (int64_t i = 0; i < s.n_layers; ++i) {
      TensorType t{DType::kF32, {1, s.n_kv_heads, s.layer_cache_lengths[static_cast<size_t>(i)]}};
      in.push_back({keys::k_scale_name(static_cast<int>(i)), t, IORole::kState, ""});
      in.push_back({keys::v_scale_name(static_cast<int>(i)), t, IORole::kState, ""});
    }
  return in;
}

std::vector<IOSpec> expected_outputs(const Spec& s, int64_t T, bool all_rows) {
  std::vector<IOSpec> out;
  out.push_back({std::string(keys::kLogits), {DType::kF32, {1, all_rows ? T : 1, s.vocab_size}}, IORole::kOutput, ""});
  for (int64_t i = 0; i < s.n_layers; ++i) {
    int64_t S = s.layer_cache_lengths[static_cast<size_t>(i)];
    TensorType t{s.cache_dtype, {1, s.n_kv_heads, S, s.head_dim}};
    int li = static_cast<int>(i);
    out.push_back({keys::k_cache_out_name(li), t, IORole::kState, keys::k_cache_name(li)});
    out.push_back({keys::v_cache_out_name(li), t, IORole::kState, keys::v_cache_name(li)});
  }
  if (s.quantized_cache())
    for (int64_t i = 0; i < s.n_layers; ++i) {
      TensorType t{DType::kF32, {1, s.n_kv_heads, s.layer_cache_lengths[static_cast<size_t>(i)]}};
      int li = static_cast<int>(i);
      out.push_back({keys::k_scale_out_name(li), t, IORole::kState, keys::k_scale_name(li)});
      out.push_back({keys::v_scale_out_name(li), t, IORole::kState, keys::v_scale_name(li)});
    }
  return out;
}

Status validate_methods(const Program& p, const Spec& s) {
  struct M {
    const std::string& name;
    int64_t tokens;
    std::string_view key;
    bool all_rows;
  };
  std::vector<M> methods{M{s.prefill_method, s.prefill_tokens, keys::kPrefillTokens, s.logits_all},
                         M{s.decode_method, s.decode_tokens, keys::kDecodeTokens, s.logits_all}};
  for (const PrefillVariant& v : s.prefill_variants)
    methods.push_back(M{v.method, v.tokens, keys::kPrefillVariantTokens, s.logits_all});
  for (const StepVariant& v : s.step_methods) methods.push_back(M{v.method, v.tokens, keys::kStepTokens, true});
  for (const M& m : methods) {
    const MethodDef* def = p.method(m.name);
    if (!def) {
      std::string have;
      for (const MethodDef& d : p.methods()) have += (have.empty() ? "" : ", ") + d.name;
      return make_error(ErrorCode::kMissingMethod, p.path() + ": hf_static: metadata names method '" + m.name +
                                                       "' but the program has none (methods: " + have + ")");
    }
    // Step size first, so the most common mismatch gets the most direct message.
    if (def->inputs.empty() || def->inputs[0].name != keys::kInputIds || def->inputs[0].type.shape.rank() != 2 ||
        def->inputs[0].type.shape[1] != m.tokens) {
      std::string got = def->inputs.empty() ? "no inputs" : "'" + def->inputs[0].name + "' " + def->inputs[0].type.to_string();
      return make_error(ErrorCode::kContractViolation,
                        p.path() + ": hf_static: method '" + m.name + "': metadata '" + std::string(m.key) + "' = " +
                            std::to_string(m.tokens) + " requires input 0 'input_ids' i32[1, " +
                            std::to_string(m.tokens) + "], got " + got);
    }
    HFS_TRY(compare_signature(p, m.name, "input", def->inputs, expected_inputs(s, m.tokens, m.all_rows)));
    HFS_TRY(compare_signature(p, m.name, "output", def->outputs, expected_outputs(s, m.tokens, m.all_rows)));
  }
  return Ok{};
}

}  // namespace hfs::hf_static
