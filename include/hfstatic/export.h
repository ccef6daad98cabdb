// hfstatic/export.h — HuggingFace checkpoint → hf_static v1 program.
//
// Reads config.json (+ generation_config.json), the safetensors weights and the tokenizer files of a
// HuggingFace decoder checkpoint and writes one program file with the methods "prefill" (C tokens) and
// "decode" (1 token) plus the smaller prefill variants "prefill_<T>" (ExportOptions::prefill_variants) and
// the multi-row "step_<T>" methods (ExportOptions::step_sizes), following the hf_static I/O contract
// (docs/io-contract-v1.md; version 2 when ExportOptions::sequences > 1). Tokenizer files are embedded as u8
// constants named keys::kFilePrefix + file name, so the program runs on its own.
//
//   hfs::ExportOptions opt;
//   opt.context = 512;                       // capacity in tokens; at most max_position_embeddings
//   opt.weights = hfs::WeightsMode::kF16;    // linear/embedding weights; norms stay f32
//   hfs::Status st = hfs::export_checkpoint("/models/Llama-3.2-1B", "llama.hfs", opt);
//   if (!st) std::fprintf(stderr, "%s\n", st.error().to_string().c_str());
//   (compiled and run by tests/api/usage_examples_test.cpp: keep the two in step)
//
// Everything is validated before the output file is touched: config values (ranges, and against the
// tensors' shapes), every tensor's presence/dtype/shape, unique tensor names, the tokenizer files (loaded
// as the runtime loads them; absent = a token-id-only program) and every weight's values (NaN/±inf, or a
// value the stored dtype cannot hold). Errors name the file and the key, tensor or element
// (kUnsupportedModel, kMissingTensor, kBadCheckpoint; kInvalidArgument for options, e.g. a weight beyond
// f16's range under WeightsMode::kF16).
//
// Supported model_type: llama, qwen2, qwen3, mistral, gemma2, gemma3_text, gemma3 (text part), phi3.
// build_export_plan() is the pure part (no output written): tests inspect its methods and metadata.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "hfstatic/error.h"
#include "hfstatic/export_macro.h"
#include "hfstatic/ext/graph.h"
#include "hfstatic/ext/program_writer.h"
#include "hfstatic/value.h"

namespace hfs {

enum class WeightsMode : uint8_t {
  kKeep,  // the checkpoint's dtype (f32/f16/bf16)
  kF32,
  kF16,
  kBF16,
  kInt8,  // every matrix int8 per output row (+ f32 scale [N]), the embedding table included
  kInt4,  // layer weights q4_0 (groups of 32; i8 where K % 32 != 0); embedding table and LM head i8
};
// "keep" | "f32" | "f16" | "bf16" | "int8" | "int4"
HFS_API Result<WeightsMode> weights_mode_from_name(std::string_view s);

struct HFS_API ExportOptions {
  int64_t prefill_chunk = 0;  // C; 0 = min(128, context); more than the context: kInvalidArgument
  // Step sizes of the smaller prefill methods ("prefill_<T>", each 1 ≤ T < C, distinct) that spare short
  // prompts and tails a padded C-row chunk. nullopt = C/16, C/4 and C/2 (those ≥ 2); empty = none.
  std::optional<std::vector<int64_t>> prefill_variants;
  int64_t context = 0;  // 0 = min(max_position_embeddings, 4096); more than max_position_embeddings: kInvalidArgument
  DType cache_dtype = DType::kF32;  // f32 | f16 | i8 (int8 with per-(slot, head) scales: contract minor 1)
  WeightsMode weights = WeightsMode::kKeep;
  bool logits_all = false;    // prefill/decode: false = logits of the row named by logits_index only ("last")
  // Several sequences sharing the caches (contract version 2): global layers get a pool of pool_slots
  // slots (0 = sequences × context), sliding layers one ring per sequence. 1 = today's single-sequence
  // program, byte-identical when no step_sizes are given.
  int64_t sequences = 1;
  int64_t pool_slots = 0;
  // Multi-row methods "step_<T>" (logits for every row: several sequences' rows, or draft tokens, in one
  // weight pass), each 2 ≤ T ≤ min(1024, context), distinct. nullopt = 2, 4, 8, 16 (those ≤ the context)
  // with sequences > 1, none with one sequence; empty = none.
  std::optional<std::vector<int64_t>> step_sizes;
  bool progress = true;       // progress bar on stderr, only when stderr is a terminal
  // Called once per quantized weight while the file is written (kInt8/kInt4): relative RMS error of the
  // dequantized weight vs the original, ‖w − ŵ‖ / ‖w‖.
  std::function<void(const std::string& name, DType dtype, double rel_rms_error)> on_quantized;
};

// One constant of the program: bytes are produced (converted) only when the file is written.
struct HFS_API PlannedConstant {
  std::string name;
  TensorType type;
  std::string content_key;
  ProgramWriter::Producer produce;
  // When the stored bytes are exactly a byte range of a checkpoint file (weight kept in its own dtype),
  // the writer copies that range in-kernel instead of calling `produce` (which still works, for tests).
  std::string source_file;
  uint64_t source_offset = 0;
};

struct HFS_API ExportPlan {
  Metadata metadata;
  std::vector<PlannedConstant> constants;  // one content per name; methods refer to these names
  std::vector<MethodDef> methods;          // prefill, decode, the prefill_<T> variants, then step_<T>
  int64_t n_params = 0;                    // weights counted once (tied embeddings once)
};

// Reads and validates the checkpoint and builds the complete program description. Writes nothing; reads
// every weight once (the value check).
[[nodiscard]] HFS_API Result<ExportPlan> build_export_plan(const std::string& model_dir, const ExportOptions& options);

// Writes a plan through ProgramWriter (which verifies the methods, then writes atomically). Two constants
// under one name with different types or content keys are kInvalidArgument naming the constant, before
// anything is written: no method could say which of them it reads.
[[nodiscard]] HFS_API Status write_export_plan(ExportPlan plan, const std::string& out_path, bool progress);

// build_export_plan + write_export_plan.
[[nodiscard]] HFS_API Status export_checkpoint(const std::string& model_dir, const std::string& out_path,
                                               const ExportOptions& options = {});

}  // namespace hfs
