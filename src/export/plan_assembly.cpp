// Plan assembly: options, geometry, RoPE and tokenizer constants, methods and metadata around the weight
// plan (weight_plan.cpp) and the method builder (method_builder.cpp). Each step is a function of its own
// so assemble_plan reads as the order the checks run in: cheap checks first, the pass over the weight
// data last.
#include "export/plan_assembly.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "export/method_builder.h"
#include "export/weight_plan.h"
#include "export/weight_values.h"
#include "hfstatic/ext/metadata_keys.h"
#include "hfstatic/tokenizer.h"

namespace hfs {
namespace {

// Options that need no tensor, and the spec's own consistency: checked first so a bad flag fails before
// any tensor is looked at.
Status check_options(const ModelSpec& spec, const HfConfig& cfg, const ExportOptions& opt) {
  if (opt.cache_dtype != DType::kF32 && opt.cache_dtype != DType::kF16 && opt.cache_dtype != DType::kI8)
    return make_error(ErrorCode::kInvalidArgument, "cache dtype must be f32, f16 or i8 (int8), got " + std::string(dtype_name(opt.cache_dtype)));
  if (opt.context < 0) return make_error(ErrorCode::kInvalidArgument, "context must be positive, got " + std::to_string(opt.context));
  if (opt.prefill_chunk < 0)
    return make_error(ErrorCode::kInvalidArgument, "prefill chunk must be positive, got " + std::to_string(opt.prefill_chunk));
  // Positions past max_position_embeddings are outside what the model was built for: asking for more is an
  // error, not a silent cap.
  if (opt.context > spec.max_positions)
    return make_error(ErrorCode::kInvalidArgument, "context " + std::to_string(opt.context) +
                                                       " exceeds the model's max_position_embeddings " +
                                                       std::to_string(spec.max_positions));
  if (spec.layers.empty()) return cfg.bad_value("num_hidden_layers", "must be positive");
  const size_t rot = spec.inv_freq_global.size();
  if (rot == 0 || static_cast<int64_t>(rot) * 2 > spec.head_dim ||
      (!spec.inv_freq_sliding.empty() && spec.inv_freq_sliding.size() != rot))
    return make_error(ErrorCode::kInternal, spec.arch + ": rotary frequencies do not fit head_dim " + std::to_string(spec.head_dim));
  return Ok{};
}

// Step sizes of the multi-row step_<T> methods: the caller's list checked (distinct, each in
// [2, min(kMaxStepTokens, context)]), or 2, 4, 8, 16 (those within the context) when several sequences share
// the program and none otherwise.
Result<std::vector<int64_t>> step_sizes(const ExportOptions& opt, int64_t context) {
  const int64_t hi = std::min(keys::kMaxStepTokens, context);
  std::vector<int64_t> steps;
  if (!opt.step_sizes) {
    if (opt.sequences > 1)
      for (int64_t t : {2, 4, 8, 16})
        if (t <= hi) steps.push_back(t);
    return steps;
  }
  steps = *opt.step_sizes;
  if (steps.size() > keys::kMaxStepMethods)
    return make_error(ErrorCode::kInvalidArgument, "at most " + std::to_string(keys::kMaxStepMethods) +
                                                       " step sizes, got " + std::to_string(steps.size()));
  std::sort(steps.begin(), steps.end());
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i] < 2 || steps[i] > hi)
      return make_error(ErrorCode::kInvalidArgument, "step size " + std::to_string(steps[i]) + " must be in [2, " +
                                                         std::to_string(hi) + "] (" +
                                                         (hi == context ? "the context length" : "the runtime's limit") + ")");
    if (i > 0 && steps[i] == steps[i - 1])
      return make_error(ErrorCode::kInvalidArgument, "step size " + std::to_string(steps[i]) + " is listed twice");
  }
  return steps;
}

// Sequences sharing the caches and the global slot pool: at least one sequence's full context, at most
// the runtime's limit.
Status plan_sequences(const ExportOptions& opt, Geometry* g) {
  if (opt.sequences < 1 || opt.sequences > keys::kMaxSequencesLimit)
    return make_error(ErrorCode::kInvalidArgument, "sequences must be in [1, " + std::to_string(keys::kMaxSequencesLimit) +
                                                       "], got " + std::to_string(opt.sequences));
  g->sequences = opt.sequences;
  if (opt.sequences == 1) {
    if (opt.pool_slots != 0 && opt.pool_slots != g->context)
      return make_error(ErrorCode::kInvalidArgument, "pool slots " + std::to_string(opt.pool_slots) +
                                                         " need sequences > 1 (one sequence's pool is its context " +
                                                         std::to_string(g->context) + ")");
    g->pool = g->context;
    return Ok{};
  }
  g->pool = opt.pool_slots > 0 ? opt.pool_slots : opt.sequences * g->context;
  if (g->pool < g->context || g->pool > keys::kMaxPoolSlots)
    return make_error(ErrorCode::kInvalidArgument, "pool slots " + std::to_string(g->pool) + " must be in [context " +
                                                       std::to_string(g->context) + ", " +
                                                       std::to_string(keys::kMaxPoolSlots) + "]");
  return Ok{};
}

// C, the context, the window and the ring length: every method and the metadata use the same values.
Result<Geometry> plan_geometry(const ModelSpec& spec, const HfConfig& cfg, const ExportOptions& opt) {
  Geometry g;
  const int64_t max_ctx = spec.max_positions;
  g.context = opt.context > 0 ? opt.context : std::min<int64_t>(max_ctx, 4096);
  if (opt.prefill_chunk > 0) {
    if (opt.prefill_chunk > g.context)
      return make_error(ErrorCode::kInvalidArgument,
                        "prefill chunk " + std::to_string(opt.prefill_chunk) + " exceeds the context length " +
                            std::to_string(g.context) +
                            (opt.context > 0 ? "" : " (the default context: min(max_position_embeddings, 4096))"));
    g.chunk = opt.prefill_chunk;
  } else {
    g.chunk = std::min(kDefaultPrefillChunk, g.context);
  }
  if (g.context > keys::kMaxContextLength)
    return make_error(ErrorCode::kInvalidArgument, "context " + std::to_string(g.context) + " exceeds the runtime's limit " +
                                                       std::to_string(keys::kMaxContextLength));
  for (const LayerSpec& L : spec.layers) (L.kind == LayerKind::kSliding ? g.has_sliding : g.has_global) = true;
  // A window at least as long as the context hides nothing: clamping it keeps W + C − 1 from overflowing and
  // the metadata within the runtime's range, with the same masks.
  g.window = g.has_sliding ? std::min(spec.sliding_window, g.context) : 0;
  if (g.has_sliding && g.window <= 0) return cfg.bad_value("sliding_window", "sliding layers need a positive sliding_window");
  HFS_ASSIGN_OR_RETURN(g.steps, step_sizes(opt, g.context));
  HFS_TRY(plan_sequences(opt, &g));
  // The ring covers a window plus the largest step of any method (prefill chunk or step_<T>).
  const int64_t t_max = std::max(g.chunk, g.steps.empty() ? int64_t{1} : g.steps.back());
  g.ring = g.has_sliding ? std::min(g.window + t_max - 1, g.context) : 0;
  return g;
}

// A constant whose bytes are already in memory (RoPE tables, tokenizer files), keyed by `key` so equal
// content is stored once.
PlannedConstant bytes_constant(std::string name, TensorType type, std::string key, std::shared_ptr<const std::string> bytes) {
  PlannedConstant c;
  c.name = std::move(name);
  c.type = type;
  c.content_key = std::move(key);
  c.produce = [bytes = std::move(bytes), name = c.name](std::span<std::byte> dst) -> Status {
    if (dst.size() != bytes->size())
      return make_error(ErrorCode::kInternal, "constant '" + name + "': " + std::to_string(bytes->size()) +
                                                  " bytes for a " + std::to_string(dst.size()) + "-byte slot");
    std::memcpy(dst.data(), bytes->data(), bytes->size());
    return Ok{};
  };
  return c;
}

// A RoPE table as its constant's bytes, held by the producer until the file is written.
std::shared_ptr<const std::string> float_bytes(const std::vector<float>& v) {
  return std::make_shared<const std::string>(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

// Adds the RoPE frequency tables and returns the constant each layer kind reads: one constant when both
// kinds share frequencies, so a model without distinct local/global bases stores one table.
RopeTables add_rope_constants(const ModelSpec& spec, const Geometry& g, std::vector<PlannedConstant>* constants) {
  auto add_floats = [&](const std::string& name, const std::vector<float>& v) {
    constants->push_back(bytes_constant(name, {DType::kF32, {static_cast<int64_t>(v.size())}}, "floats:" + name, float_bytes(v)));
  };
  RopeTables rope;
  const bool distinct = !spec.inv_freq_sliding.empty() && spec.inv_freq_sliding != spec.inv_freq_global && g.has_sliding;
  if (distinct) {
    rope.global = "rope.inv_freq.global";
    rope.sliding = "rope.inv_freq.sliding";
    if (g.has_global) add_floats(rope.global, spec.inv_freq_global);
    add_floats(rope.sliding, spec.inv_freq_sliding);
  } else {
    add_floats(rope.global, spec.inv_freq_global);
  }
  return rope;
}

// The tokenizer a program embeds is loaded at run time by Tokenizer::from_program; loading it here with the
// same code turns a file the runtime cannot use into an export error, and the ids it can produce must have
// rows in the embedding. Without tokenizer.json the program still runs on token ids (run --tokens).
Status check_tokenizer(const std::vector<EmbeddedFile>& files, const HfConfig& cfg, int64_t vocab) {
  std::shared_ptr<const std::string> tj, tc;
  for (const EmbeddedFile& f : files) {
    if (f.file_name == "tokenizer.json") tj = f.bytes;
    if (f.file_name == "tokenizer_config.json") tc = f.bytes;
  }
  if (!tj) return Ok{};
  const std::string path = cfg.dir + "/tokenizer.json", config_path = cfg.dir + "/tokenizer_config.json";
  auto fail = [&](ErrorCode code, const std::string& file, const std::string& msg) {
    return make_error(code, msg.find(file) == std::string::npos ? file + ": " + msg : msg);
  };
  auto tok = Tokenizer::from_json(*tj, tc ? std::string_view(*tc) : std::string_view(), path);
  if (!tok) {
    const std::string& m = tok.error().message();
    // The loader names tokenizer_config.json in its own messages; everything else is about tokenizer.json.
    const std::string& file = m.find("tokenizer_config.json") != std::string::npos ? config_path : path;
    if (tok.error().code() == ErrorCode::kUnsupported)
      return fail(ErrorCode::kUnsupportedModel, file,
                  m + " (without tokenizer.json the export is a program that runs on token ids only)");
    return fail(ErrorCode::kBadCheckpoint, file, m);
  }
  const Tokenizer& t = **tok;
  if (t.vocab_size() == 0) return fail(ErrorCode::kBadCheckpoint, path, "the vocabulary is empty (model.vocab and added_tokens)");
  if (t.vocab_size() > vocab) {
    const int32_t id = t.vocab_size() - 1;
    return fail(ErrorCode::kBadCheckpoint, path,
                "token '" + t.id_to_token(id).value_or("?") + "' has id " + std::to_string(id) + ", but " + cfg.where +
                    " has vocab_size " + std::to_string(vocab) + ": ids from " + std::to_string(vocab) +
                    " on have no embedding row");
  }
  // Ordinary text must become tokens: a vocabulary that matches nothing (emptied model.vocab beside a few
  // added tokens) would make every prompt empty at run time.
  auto probe = t.encode("Hello world", /*add_special=*/false);
  if (!probe) return fail(ErrorCode::kBadCheckpoint, path, "cannot encode 'Hello world': " + probe.error().message());
  if (probe->empty()) return fail(ErrorCode::kBadCheckpoint, path, "encodes 'Hello world' to no tokens (an unusable vocabulary)");
  return Ok{};
}

// Embeds the checkpoint's tokenizer files (checked first) as "file:<name>" constants, so a program carries
// everything the runner needs to turn text into ids.
Status add_tokenizer_constants(const HfConfig& cfg, int64_t vocab, std::vector<PlannedConstant>* constants) {
  HFS_ASSIGN_OR_RETURN(auto files, read_tokenizer_files(cfg.dir));
  HFS_TRY(check_tokenizer(files, cfg, vocab));
  for (const EmbeddedFile& f : files) {
    if (f.bytes->empty()) continue;  // a zero-length constant carries nothing
    constants->push_back(bytes_constant(std::string(keys::kFilePrefix) + f.file_name,
                                        {DType::kU8, {static_cast<int64_t>(f.bytes->size())}}, std::string(keys::kFilePrefix) + f.file_name, f.bytes));
  }
  return Ok{};
}

// Step sizes of the smaller prefill methods: the caller's list checked against C (ascending, distinct, each
// below C, so the runner can pick the smallest that fits), or the defaults C/16, C/4, C/2.
Result<std::vector<int64_t>> prefill_variants(const ExportOptions& opt, int64_t chunk) {
  std::vector<int64_t> variants;
  if (opt.prefill_variants) {
    variants = *opt.prefill_variants;
    if (variants.size() > keys::kMaxPrefillVariants)
      return make_error(ErrorCode::kInvalidArgument, "at most " + std::to_string(keys::kMaxPrefillVariants) +
                                                         " prefill variants, got " + std::to_string(variants.size()));
    std::sort(variants.begin(), variants.end());
    for (size_t i = 0; i < variants.size(); ++i) {
      if (variants[i] < 1 || variants[i] >= chunk)
        return make_error(ErrorCode::kInvalidArgument, "prefill variant " + std::to_string(variants[i]) +
                                                           " must be in [1, " + std::to_string(chunk - 1) +
                                                           "] (below the prefill chunk " + std::to_string(chunk) + ")");
      if (i > 0 && variants[i] == variants[i - 1])
        return make_error(ErrorCode::kInvalidArgument, "prefill variant " + std::to_string(variants[i]) + " is listed twice");
    }
  } else {
    for (int64_t t : {chunk / 16, chunk / 4, chunk / 2})  // strictly ascending once ≥ 2
      if (t >= 2) variants.push_back(t);
  }
  return variants;
}

// Token ids index the embedding: [0, vocab_size), and -1 where HF configs use it for "none". An id outside
// would make the runner read past the table, so it is an export error naming the file the id came from.
Status check_token_ids(const HfConfig& cfg, int64_t vocab) {
  auto bad_id = [&](const std::string& where, std::string_view key, int64_t id, int64_t lo) {
    return make_error(ErrorCode::kBadCheckpoint,
                      where + ": key '" + std::string(key) + "': id " + std::to_string(id) + " outside [" + std::to_string(lo) +
                          ", " + std::to_string(vocab - 1) + "] (vocab_size " + std::to_string(vocab) +
                          (lo < 0 ? "; -1 = none)" : ")"));
  };
  for (int64_t id : cfg.eos_token_ids)
    if (id < 0 || id >= vocab) return bad_id(cfg.eos_where, "eos_token_id", id, 0);
  if (cfg.bos_token_id < -1 || cfg.bos_token_id >= vocab) return bad_id(cfg.bos_where, "bos_token_id", cfg.bos_token_id, -1);
  if (cfg.pad_token_id < -1 || cfg.pad_token_id >= vocab) return bad_id(cfg.pad_where, "pad_token_id", cfg.pad_token_id, -1);
  return Ok{};
}

// Metadata stores string lists (method names, layer kinds) as arrays of string Values.
Value string_array(const std::vector<std::string>& v) {
  Value::Array a;
  for (const auto& s : v) a.emplace_back(s);
  return Value(std::move(a));
}

// general.name when config.json has no _name_or_path: the checkpoint directory's own name.
std::string base_name(const std::string& dir) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  auto pos = d.find_last_of('/');
  return pos == std::string::npos ? d : d.substr(pos + 1);
}

// The hf_static metadata (version 2 when several sequences share the caches): what the runner needs to drive the methods (method names and sizes, cache
// geometry, token ids) and where the program came from.
Metadata program_metadata(const ModelSpec& spec, const HfConfig& cfg, const ExportOptions& opt, const Geometry& g,
                          DType embed_dtype, const std::vector<int64_t>& variants,
                          const std::vector<std::string>& variant_names, const std::vector<std::string>& step_names) {
  Metadata md;
  auto set = [&](std::string_view k, Value v) { md[std::string(k)] = std::move(v); };
  set(keys::kGeneralArchitecture, Value(spec.arch));
  const Value* name_or_path = cfg.root.get("_name_or_path");
  set(keys::kGeneralName, Value(name_or_path && name_or_path->is_string() && !name_or_path->as_string().empty()
                                    ? name_or_path->as_string() : base_name(cfg.dir)));
  set(keys::kGeneralSource, Value(cfg.dir));
  set(keys::kGeneralWeights, Value(opt.weights == WeightsMode::kInt8   ? std::string("int8")
                                   : opt.weights == WeightsMode::kInt4 ? std::string("int4")
                                                                       : std::string(dtype_name(embed_dtype))));
  set(keys::kGeneralExporter, Value("hfstatic 0.1.0"));
  set(keys::kContract, Value(std::string(keys::kContractHfStatic)));
  set(keys::kContractVersion, Value(g.sequences > 1 ? 2 : 1));
  set(keys::kPrefillMethod, Value("prefill"));
  set(keys::kPrefillTokens, Value(g.chunk));
  if (!variants.empty()) {
    set(keys::kPrefillVariantMethods, string_array(variant_names));
    set(keys::kPrefillVariantTokens, Value::int_array(variants));
  }
  if (!g.steps.empty()) {
    set(keys::kStepMethods, string_array(step_names));
    set(keys::kStepTokens, Value::int_array(g.steps));
  }
  if (g.sequences > 1) {
    set(keys::kMaxSequences, Value(g.sequences));
    set(keys::kGlobalPoolSlots, Value(g.pool));
  }
  set(keys::kDecodeMethod, Value("decode"));
  set(keys::kDecodeTokens, Value(1));
  set(keys::kContextLength, Value(g.context));
  set(keys::kNumLayers, Value(static_cast<int64_t>(spec.layers.size())));
  set(keys::kNumKvHeads, Value(spec.n_kv_heads));
  set(keys::kHeadDim, Value(spec.head_dim));
  std::vector<std::string> kinds;
  std::vector<int64_t> lens;
  for (const LayerSpec& L : spec.layers) {
    kinds.emplace_back(layer_kind_name(L.kind));
    lens.push_back(g.cache_len(L.kind));
  }
  set(keys::kLayerKinds, string_array(kinds));
  set(keys::kLayerCacheLengths, Value::int_array(lens));
  set(keys::kSlidingWindow, Value(g.window));
  // int8 caches are contract minor 1: a runtime that predates them refuses the program instead of misreading it.
  if (opt.cache_dtype == DType::kI8) {
    set(keys::kCacheDType, Value(std::string(keys::kCacheInt8)));
    set(keys::kContractMinor, Value(int64_t{1}));
  } else {
    set(keys::kCacheDType, Value(std::string(dtype_name(opt.cache_dtype))));
  }
  set(keys::kCacheLayout, Value(std::string(keys::kLayoutBHSD)));
  set(keys::kVocabSize, Value(spec.vocab));
  set(keys::kBosTokenId, Value(cfg.bos_token_id));
  set(keys::kEosTokenIds, Value::int_array(cfg.eos_token_ids));
  // pad must be a real id: the checkpoint's pad, else its first eos, else 0 (pad rows are masked anyway).
  const int64_t pad = cfg.pad_token_id >= 0 ? cfg.pad_token_id : !cfg.eos_token_ids.empty() ? cfg.eos_token_ids[0] : 0;
  set(keys::kPadTokenId, Value(pad));
  set(keys::kLogitsMode, Value(std::string(opt.logits_all ? keys::kLogitsAll : keys::kLogitsLast)));
  return md;
}

}  // namespace

Status check_constant_names(const std::vector<PlannedConstant>& constants) {
  std::map<std::string_view, const PlannedConstant*> by_name;
  for (const PlannedConstant& c : constants) {
    auto [it, first] = by_name.emplace(c.name, &c);
    const PlannedConstant& seen = *it->second;
    if (first || (seen.type == c.type && seen.content_key == c.content_key)) continue;
    return make_error(ErrorCode::kInvalidArgument,
                      "export plan: constant '" + c.name + "' is planned twice with different contents (" +
                          seen.type.to_string() + " '" + seen.content_key + "' and " + c.type.to_string() + " '" +
                          c.content_key + "'): methods name constants, so they cannot tell the two apart");
  }
  return Ok{};
}

Result<ExportPlan> assemble_plan(const ModelSpec& spec, const HfConfig& cfg, std::shared_ptr<const Checkpoint> ck,
                                 const ExportOptions& opt) {
  HFS_TRY(check_options(spec, cfg, opt));
  // Every weight is checked before anything else is planned: nothing is produced before the whole
  // checkpoint checks out.
  HFS_ASSIGN_OR_RETURN(auto weights, plan_weights(spec, cfg, ck, opt));
  HFS_ASSIGN_OR_RETURN(const Geometry g, plan_geometry(spec, cfg, opt));

  ExportPlan plan;
  plan.n_params = weights.n_params;
  plan.constants = std::move(weights.constants);
  const RopeTables rope = add_rope_constants(spec, g, &plan.constants);
  HFS_TRY(add_tokenizer_constants(cfg, spec.vocab, &plan.constants));
  HFS_TRY(check_constant_names(plan.constants));
  HFS_ASSIGN_OR_RETURN(const auto variants, prefill_variants(opt, g.chunk));

  plan.methods.push_back(build_method("prefill", g.chunk, opt.logits_all, spec, g, opt, rope, weights.stored));
  plan.methods.push_back(build_method("decode", 1, opt.logits_all, spec, g, opt, rope, weights.stored));
  std::vector<std::string> variant_names, step_names;
  for (int64_t t : variants) {
    variant_names.push_back("prefill_" + std::to_string(t));
    plan.methods.push_back(build_method(variant_names.back(), t, opt.logits_all, spec, g, opt, rope, weights.stored));
  }
  for (int64_t t : g.steps) {
    step_names.push_back("step_" + std::to_string(t));
    plan.methods.push_back(build_method(step_names.back(), t, /*all_rows=*/true, spec, g, opt, rope, weights.stored));
  }

  HFS_TRY(check_token_ids(cfg, spec.vocab));
  plan.metadata = program_metadata(spec, cfg, opt, g, weights.embed_dtype, variants, variant_names, step_names);
  // Weight values last: the one pass over the data runs only once everything cheaper checked out.
  HFS_TRY(check_weight_values(*ck, weights.value_checks));
  return plan;
}

}  // namespace hfs
