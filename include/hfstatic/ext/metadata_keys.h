// hfstatic/ext/metadata_keys.h — every metadata key and contract tensor name, in one place.
//
// Writers (the exporter) and readers (the hf_static IO manager, inspect) use these constants; no key is
// spelled as a literal anywhere else. The meaning of each hf_static key is specified in
// docs/io-contract-v1.md; this header only names them.
//
//   prog->meta(hfs::keys::kContract)->as_string() == hfs::keys::kContractHfStatic
//   (compiled and run by tests/api/usage_examples_test.cpp: keep the two in step)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace hfs::keys {

// --- general (any program) ---------------------------------------------------------------------------
inline constexpr std::string_view kGeneralArchitecture = "general.architecture";  // "llama", "gemma2", ...
inline constexpr std::string_view kGeneralName = "general.name";
inline constexpr std::string_view kGeneralSource = "general.source";              // checkpoint dir exported
inline constexpr std::string_view kGeneralWeights = "general.weights";            // "f32", "f16", "int4", ...
inline constexpr std::string_view kGeneralExporter = "general.exporter";          // "hfstatic <version>"

// --- I/O contract selection (any contract) ----------------------------------------------------------
inline constexpr std::string_view kContract = "io.contract";           // string: "hf_static"
inline constexpr std::string_view kContractVersion = "io.contract_version";  // int: 1, or 2 (several sequences)
// Optional, default 0: features added within a version that an older runtime must refuse rather than
// misread (1: quantized caches, cache_dtype "int8" with per-(slot, head) scale tensors).
inline constexpr std::string_view kContractMinor = "io.contract_minor";  // int ≥ 0

inline constexpr std::string_view kContractHfStatic = "hf_static";

// --- hf_static v1 ------------------------------------------------------------------------------------
inline constexpr std::string_view kPrefillMethod = "hf_static.prefill_method";  // string, e.g. "prefill"
inline constexpr std::string_view kPrefillTokens = "hf_static.prefill_tokens";  // int C ≥ 1
// Optional: smaller prefill methods for short prompts and tails, both lists or neither, tokens strictly
// ascending and < prefill_tokens (a runtime that ignores them runs every chunk through prefill_method).
inline constexpr std::string_view kPrefillVariantMethods = "hf_static.prefill_variant_methods";  // [string]
inline constexpr std::string_view kPrefillVariantTokens = "hf_static.prefill_variant_tokens";    // [int]
inline constexpr size_t kMaxPrefillVariants = 16;  // each is a loaded method with its own I/O buffers
inline constexpr std::string_view kDecodeMethod = "hf_static.decode_method";    // string, e.g. "decode"
inline constexpr std::string_view kDecodeTokens = "hf_static.decode_tokens";    // int, must be 1
inline constexpr std::string_view kContextLength = "hf_static.context_length";  // int: capacity in tokens
inline constexpr std::string_view kNumLayers = "hf_static.n_layers";
inline constexpr std::string_view kNumKvHeads = "hf_static.n_kv_heads";
inline constexpr std::string_view kHeadDim = "hf_static.head_dim";
inline constexpr std::string_view kLayerKinds = "hf_static.layer_kinds";          // ["global"|"sliding", ...]
inline constexpr std::string_view kLayerCacheLengths = "hf_static.layer_cache_lengths";  // [int, ...]
inline constexpr std::string_view kSlidingWindow = "hf_static.sliding_window";    // int, 0 = none
inline constexpr std::string_view kCacheDType = "hf_static.cache_dtype";          // "f32" | "f16" | "int8" (minor 1)
inline constexpr std::string_view kCacheLayout = "hf_static.cache_layout";        // "bhsd"
inline constexpr std::string_view kVocabSize = "hf_static.vocab_size";
inline constexpr std::string_view kBosTokenId = "hf_static.bos_token_id";         // int, -1 = none
inline constexpr std::string_view kEosTokenIds = "hf_static.eos_token_ids";       // [int, ...]
inline constexpr std::string_view kPadTokenId = "hf_static.pad_token_id";         // int ≥ 0
inline constexpr std::string_view kLogitsMode = "hf_static.logits_mode";          // "last" | "all" (prefill, decode)
// Optional: multi-row methods whose logits cover every row ([1, T, V], no logits_index), both lists or
// neither, tokens strictly ascending in [2, kMaxStepTokens] (a runtime that ignores them stays correct).
inline constexpr std::string_view kStepMethods = "hf_static.step_methods";  // [string], e.g. ["step_2", ...]
inline constexpr std::string_view kStepTokens = "hf_static.step_tokens";    // [int]
inline constexpr size_t kMaxStepMethods = 16;
inline constexpr int64_t kMaxStepTokens = 1024;
// Version 2 (required there, absent in version 1): caches shared by several sequences. Global layers hold
// a pool of global_pool_slots slots; sliding layers one ring of R slots per sequence (max_sequences × R).
inline constexpr std::string_view kMaxSequences = "hf_static.max_sequences";        // int in [2, kMaxSequencesLimit]
inline constexpr std::string_view kGlobalPoolSlots = "hf_static.global_pool_slots";  // int ≥ context_length
inline constexpr int64_t kMaxSequencesLimit = 4096;
inline constexpr int64_t kMaxPoolSlots = int64_t{1} << 24;
// Upper bounds the runner accepts for the values above (they keep a hostile program from asking for
// absurd buffers); the exporter refuses a checkpoint that would exceed them.
inline constexpr int64_t kMaxContextLength = int64_t{1} << 22;  // context_length, sliding_window
inline constexpr int64_t kMaxLayers = 4096;
inline constexpr int64_t kMaxKvHeads = 4096;
inline constexpr int64_t kMaxHeadDim = 4096;
inline constexpr int64_t kMaxVocabSize = int64_t{1} << 24;

// Values
inline constexpr std::string_view kLayerGlobal = "global";
inline constexpr std::string_view kLayerSliding = "sliding";
inline constexpr std::string_view kLayoutBHSD = "bhsd";  // [1, n_kv_heads, cache_len, head_dim]
inline constexpr std::string_view kLogitsLast = "last";
inline constexpr std::string_view kLogitsAll = "all";
inline constexpr std::string_view kCacheInt8 = "int8";  // hf_static.cache_dtype value of an i8 cache

// --- hf_static v1 tensor names (method inputs/outputs) ----------------------------------------------
inline constexpr std::string_view kInputIds = "input_ids";          // [1, T] i32
inline constexpr std::string_view kPositionIds = "position_ids";    // [1, T] i32
inline constexpr std::string_view kLogitsIndex = "logits_index";    // [1] i32 (logits_mode "last")
inline constexpr std::string_view kLogits = "logits";               // [1, 1|T, vocab] f32
inline std::string cache_slots_name(std::string_view kind) { return "cache_slots_" + std::string(kind); }  // [T] i32
inline std::string attn_mask_name(std::string_view kind) { return "attn_mask_" + std::string(kind); }      // [1,1,T,S] f32
inline std::string k_cache_name(int layer) { return "k_cache_" + std::to_string(layer); }  // [1,Hkv,S_i,D]
inline std::string v_cache_name(int layer) { return "v_cache_" + std::to_string(layer); }
inline std::string k_cache_out_name(int layer) { return "k_cache_" + std::to_string(layer) + "_out"; }
inline std::string v_cache_out_name(int layer) { return "v_cache_" + std::to_string(layer) + "_out"; }
// int8 caches (minor 1): each cache row's scale, x ≈ scale · q, slot-indexed like the cache.
inline std::string k_scale_name(int layer) { return "k_scale_" + std::to_string(layer); }  // [1,Hkv,S_i] f32
inline std::string v_scale_name(int layer) { return "v_scale_" + std::to_string(layer); }
inline std::string k_scale_out_name(int layer) { return "k_scale_" + std::to_string(layer) + "_out"; }
inline std::string v_scale_out_name(int layer) { return "v_scale_" + std::to_string(layer) + "_out"; }

// --- embedded files (u8 constants) --------------------------------------------------------------------
inline constexpr std::string_view kFilePrefix = "file:";  // "file:tokenizer.json", "file:tokenizer_config.json"

// Mask value for hidden entries: finite so that fully-masked rows (pad rows) stay finite after softmax.
inline constexpr float kMaskHidden = -1e30f;

}  // namespace hfs::keys
