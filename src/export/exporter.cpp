// Export entry points: checkpoint → plan (pure) → program file (ProgramWriter).
#include <unistd.h>

#include <cstdio>

#include "export/model_spec.h"
#include "export/plan_assembly.h"
#include "hfstatic/export.h"

namespace hfs {

Result<WeightsMode> weights_mode_from_name(std::string_view s) {
  if (s == "keep") return WeightsMode::kKeep;
  if (s == "f32") return WeightsMode::kF32;
  if (s == "f16") return WeightsMode::kF16;
  if (s == "bf16") return WeightsMode::kBF16;
  if (s == "int8") return WeightsMode::kInt8;
  if (s == "int4") return WeightsMode::kInt4;
  return make_error(ErrorCode::kInvalidArgument,
                    "weights mode '" + std::string(s) + "' (expected keep, f32, f16, bf16, int8 or int4)");
}

Result<ExportPlan> build_export_plan(const std::string& model_dir, const ExportOptions& options) {
  HFS_ASSIGN_OR_RETURN(HfConfig cfg, read_hf_config(model_dir));
  ArchBuilder arch = find_arch(cfg.model_type);
  if (!arch) {
    std::string list;
    for (const auto& a : supported_archs()) list += (list.empty() ? "" : ", ") + a;
    return make_error(ErrorCode::kUnsupportedModel, model_dir + "/config.json: model_type '" + cfg.model_type +
                                                        "' is not supported (supported: " + list + ")");
  }
  HFS_ASSIGN_OR_RETURN(std::shared_ptr<const Checkpoint> ckpt, Checkpoint::open(model_dir));
  HFS_ASSIGN_OR_RETURN(ModelSpec spec, arch(cfg, *ckpt));
  return assemble_plan(spec, cfg, ckpt, options);
}

namespace {

void draw_progress(size_t index, size_t count, const std::string& name) {
  const int width = 30;
  const size_t done = index + 1;
  const int filled = count ? static_cast<int>(width * done / count) : width;
  std::fprintf(stderr, "\r[%.*s%*s] %zu/%zu %-40.40s", filled, "##############################", width - filled, "", done,
               count, name.c_str());
  if (done == count) std::fputc('\n', stderr);
  std::fflush(stderr);
}

}  // namespace

Status write_export_plan(ExportPlan plan, const std::string& out_path, bool progress) {
  ProgramWriter w;
  for (auto& [k, v] : plan.metadata) w.set_metadata(k, v);
  // One name, one content: then the writer stores each name as given (equal content once) and the methods'
  // constant names stay valid. Renaming instead could only guess which content a method meant.
  HFS_TRY(check_constant_names(plan.constants));
  for (PlannedConstant& c : plan.constants) {
    HFS_ASSIGN_OR_RETURN(std::string name,
                         c.source_file.empty()
                             ? w.add_constant_lazy(c.name, c.type, c.content_key, std::move(c.produce))
                             : w.add_constant_from_file(c.name, c.type, c.content_key, c.source_file, c.source_offset));
    if (name != c.name)
      return make_error(ErrorCode::kInternal, "export: constant '" + c.name + "' was stored as '" + name + "'");
  }
  for (MethodDef& m : plan.methods) HFS_TRY(w.add_method(std::move(m)));
  if (progress && isatty(STDERR_FILENO)) w.set_progress(&draw_progress);
  return w.write(out_path);
}

Status export_checkpoint(const std::string& model_dir, const std::string& out_path, const ExportOptions& options) {
  HFS_ASSIGN_OR_RETURN(ExportPlan plan, build_export_plan(model_dir, options));
  return write_export_plan(std::move(plan), out_path, options.progress);
}

}  // namespace hfs
