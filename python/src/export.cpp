// hfstatic.export(): HuggingFace checkpoint directory → program file (hfs::export_checkpoint).
#include <optional>
#include <string>
#include <vector>

#include "common.h"
#include "hfstatic/dtype.h"
#include "hfstatic/export.h"

namespace hfs::py_bind {

void bind_export(py::module_& m) {
  m.def(
      "export",
      [](const py::object& model_dir, const py::object& out, std::optional<int64_t> prefill_chunk,
         std::optional<int64_t> context, std::optional<std::string> cache_dtype, std::optional<std::string> weights,
         bool logits_all, std::optional<std::vector<int64_t>> prefill_variants, int64_t sequences,
         std::optional<std::vector<int64_t>> step_sizes, int64_t pool_slots) {
        ExportOptions opt;
        opt.progress = false;  // a library call: no progress bar on the caller's terminal
        opt.logits_all = logits_all;
        if (prefill_chunk) {
          if (*prefill_chunk < 1)
            raise(ErrorCode::kInvalidArgument,
                  "export: prefill_chunk must be >= 1 (None = by model size), got " + std::to_string(*prefill_chunk));
          opt.prefill_chunk = *prefill_chunk;
        }
        if (context) {
          if (*context < 1)
            raise(ErrorCode::kInvalidArgument,
                  "export: context must be >= 1 (None = min(max_position_embeddings, 4096)), got " +
                      std::to_string(*context));
          opt.context = *context;
        }
        if (cache_dtype) {
          auto d = *cache_dtype == "int8" ? Result<DType>(DType::kI8) : dtype_from_name(*cache_dtype);
          if (!d || (*d != DType::kF32 && *d != DType::kF16 && *d != DType::kI8))
            raise(ErrorCode::kInvalidArgument,
                  "export: cache_dtype must be 'f32', 'f16' or 'int8', got '" + *cache_dtype + "'");
          opt.cache_dtype = *d;
        }
        if (weights) opt.weights = unwrap(weights_mode_from_name(*weights));
        opt.prefill_variants = std::move(prefill_variants);
        opt.sequences = sequences;  // ranges checked by the exporter, which names the option
        opt.step_sizes = std::move(step_sizes);
        opt.pool_slots = pool_slots;
        const std::string dir = fspath(model_dir), path = fspath(out);
        Status st = [&] {
          py::gil_scoped_release nogil;
          return export_checkpoint(dir, path, opt);
        }();
        check(st);
        return path;
      },
      py::arg("model_dir"), py::arg("out"), py::arg("prefill_chunk") = py::none(), py::arg("context") = py::none(),
      py::arg("cache_dtype") = py::none(), py::arg("weights") = py::none(), py::arg("logits_all") = false,
      py::arg("prefill_variants") = py::none(), py::arg("sequences") = 1, py::arg("step_sizes") = py::none(),
      py::arg("pool_slots") = 0,
      R"(Exports a HuggingFace checkpoint directory to a program file; returns `out` as a str.

prefill_chunk: tokens per prefill call (None: 128, at most the context); context: capacity in tokens (None:
min(max_position_embeddings, 4096)); cache_dtype: "f32" | "f16" | "int8"; weights: "keep" | "f32" | "f16" | "bf16" |
"int8" | "int4"; prefill_variants: step sizes (each < prefill_chunk) of smaller prefill methods for short prompts
and tails (None: C/16, C/4 and C/2; []: none); sequences: how many sequences an hfstatic.Engine serves at once
(> 1: contract version 2); step_sizes: multi-row step_<T> methods returning every row's logits (None: 2, 4, 8,
16 with sequences > 1, none with one; []: none); pool_slots: global cache slots the sequences share (0:
sequences x context).
The GIL is released while exporting. Errors: hfstatic.Error ("unsupported_model", "missing_tensor", ...).)");
}

}  // namespace hfs::py_bind
