// Plan assembly: a ModelSpec and the export options → the complete ExportPlan (weight, RoPE and tokenizer
// constants, the prefill/decode methods and their variants, the hf_static v1 metadata). Every check runs
// before anything is produced; build_export_plan (exporter.cpp) calls it after the architecture's builder.
//
//   auto spec = hfs::find_arch(cfg.model_type)(cfg, *ckpt);
//   auto plan = hfs::assemble_plan(*spec, cfg, ckpt, options);   // Result<ExportPlan>
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "export/hf_config.h"
#include "export/model_spec.h"
#include "hfstatic/export.h"
#include "hfstatic/ext/safetensors.h"

namespace hfs {

// Default prefill chunk C (clamped to the context). 128 for every size: on the SmolLM2-135M and
// Qwen2.5-0.5B shapes 512-token prefills ran 4–10 % faster than with 64 on 1 thread and 6–19 % on 2,
// prompts of 100–300 tokens gained as well, and 256 was no faster (bench/results/log/cpu-fast-design.md,
// "Prefill chunk"; 64 had been 1.1–1.5× faster than 32 on the Xeon). Shorter prompts run through the C/16, C/4,
// C/2 variants and the runner's tail plan.
inline constexpr int64_t kDefaultPrefillChunk = 128;

// Validates the options, every weight against the checkpoint (presence, shape, float dtype), the tokenizer
// and the token ids, then every weight's values; picks C and the context; builds constants, metadata and
// the methods.
[[nodiscard]] Result<ExportPlan> assemble_plan(const ModelSpec& spec, const HfConfig& cfg,
                                               std::shared_ptr<const Checkpoint> ckpt, const ExportOptions& options);

// Methods name their constants, so a plan must give each name one content: two constants under one name
// with different types or content keys are kInvalidArgument naming the constant and both contents (no
// method could say which it means). The same name with the same content is one constant, stored once.
[[nodiscard]] Status check_constant_names(const std::vector<PlannedConstant>& constants);

}  // namespace hfs
