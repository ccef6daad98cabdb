// `hfstatic export MODEL_DIR -o OUT.hfs`: HuggingFace checkpoint (a directory or a Hub name) → hf_static program.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli.h"
#include "common.h"
#include "hfstatic/export.h"
#include "hfstatic/ext/program_writer.h"
#include "option_checks.h"

namespace {

struct ExportArgs {
  std::string model_dir, out;
  int64_t chunk = 0, context = 0;
  std::string variants = "default", steps = "default";
  int64_t sequences = 1, pool_slots = 0;
  std::string cache_dtype = "f32", weights = "keep", logits = "last";
  bool verbose = false;
};

// A list option of step sizes: "default" leaves *out unset, "none" makes it empty, else positive integers
// separated by commas. False (after naming the flag) on anything else.
bool parse_size_list(const char* flag, const std::string& text, std::optional<std::vector<int64_t>>* out) {
  if (text == "default") return true;
  if (text == "none") {
    out->emplace();
    return true;
  }
  auto list = hfs::cli::parse_count_list(text);
  if (!list) {
    std::fprintf(stderr, "hfstatic export: %s: expected positive integers separated by commas, 'none' or 'default', got '%s'\n",
                 flag, text.c_str());
    return false;
  }
  out->emplace(list->begin(), list->end());
  return true;
}

int run_export(const ExportArgs& a) {
  // A bad -o (empty, a directory, a device) fails before minutes of conversion, not after.
  if (hfs::Status st = hfs::ProgramWriter::check_destination(a.out); !st) {
    std::fprintf(stderr, "hfstatic export: -o: %s\n", st.error().to_string().c_str());
    return 1;
  }
  hfs::ExportOptions opt;
  opt.prefill_chunk = a.chunk;
  if (!parse_size_list("--prefill-variants", a.variants, &opt.prefill_variants) ||
      !parse_size_list("--step-sizes", a.steps, &opt.step_sizes))
    return hfs::cli::kUsageError;
  opt.sequences = a.sequences;
  opt.pool_slots = a.pool_slots;
  opt.context = a.context;
  opt.cache_dtype = a.cache_dtype == "f16" ? hfs::DType::kF16 : a.cache_dtype == "int8" ? hfs::DType::kI8 : hfs::DType::kF32;
  opt.logits_all = a.logits == "all";
  auto w = hfs::weights_mode_from_name(a.weights);
  if (!w) {
    std::fprintf(stderr, "hfstatic export: %s\n", w.error().to_string().c_str());
    return hfs::cli::kUsageError;
  }
  opt.weights = *w;
  // Quantization report: every quantized tensor's relative RMS error, and the worst one.
  double worst = 0;
  std::string worst_name;
  size_t quantized = 0;
  opt.on_quantized = [&](const std::string& name, hfs::DType dt, double err) {
    ++quantized;
    if (a.verbose)
      std::fprintf(stderr, "quantized %-48s %-5s rel. RMS error %.4f\n", name.c_str(), std::string(hfs::dtype_name(dt)).c_str(), err);
    if (err > worst) worst = err, worst_name = name;
  };
  std::string dir = a.model_dir;
  if (hfs::cli::is_hub_name(dir)) {
    auto snapshot = hfs::cli::hub_checkpoint(dir);
    if (!snapshot) {
      std::fprintf(stderr, "hfstatic export: %s\n", snapshot.error().to_string().c_str());
      return 1;
    }
    dir = *snapshot;
  }
  // Ctrl-C or SIGTERM while the program is written: the handler removes the temp file, then exits 130/143.
  hfs::cli::remove_on_interrupt(hfs::ProgramWriter::temp_path(a.out));
  hfs::Status st = hfs::export_checkpoint(dir, a.out, opt);
  if (st && quantized)
    std::fprintf(stderr, "quantized %zu tensors; worst relative RMS error %.4f (%s)%s\n", quantized, worst,
                 worst_name.c_str(), a.verbose ? "" : "; --verbose lists every tensor");
  if (!st) {
    std::fprintf(stderr, "hfstatic export: %s\n", st.error().to_string().c_str());
    return 1;
  }
  return 0;
}

hfs::cli::RunFn setup_export(CLI::App& sub) {
  auto a = std::make_shared<ExportArgs>();
  sub.add_flag("-v,--verbose", a->verbose, "print each quantized tensor's relative RMS error");
  sub.add_option("model_dir", a->model_dir, "HuggingFace checkpoint directory (config.json + safetensors, tokenizer.json optional), or a Hub name "
                 "ORG/NAME[@REVISION] downloaded into the Hugging Face cache (HF_TOKEN for gated models); its config, "
                 "tokenizer, tensor names and weight values are checked before anything is written")->required();
  sub.add_option("-o,--output", a->out,
                 "output program file (.hfs): written to a temp file beside it, then renamed over it, so a failed "
                 "export leaves the old file (or none); a symbolic link there is replaced, its target never written; "
                 "a directory, FIFO or device is refused")
      ->required();
  sub.add_option("--prefill-chunk", a->chunk,
                 "tokens per prefill call C, an integer >= 1 (default min(128, context)); more than the context is "
                 "an error")
      ->transform(hfs::cli::integer_in(1, INT64_MAX, "an integer >= 1"));
  sub.add_option("--prefill-variants", a->variants,
                 "smaller prefill methods for short prompts and tails: step sizes below C, comma-separated "
                 "(e.g. 4,16), 'none', or 'default' (C/16, C/4 and C/2)");
  sub.add_option("--sequences", a->sequences,
                 "sequences the program serves at once (the engine, serve), an integer in [1, 4096]: global layers "
                 "share a pool of cache slots, sliding layers get one ring per sequence; more than 1 writes contract "
                 "version 2 and step methods")
      ->capture_default_str()
      ->transform(hfs::cli::integer_in(1, 4096, "an integer in [1, 4096]"));
  sub.add_option("--pool-slots", a->pool_slots,
                 "global cache slots shared by the sequences, an integer >= the context (default sequences x context); "
                 "fewer let sequences of different lengths share less memory")
      ->transform(hfs::cli::integer_in(1, INT64_MAX, "an integer >= 1"));
  sub.add_option("--step-sizes", a->steps,
                 "multi-row methods step_<T> returning logits for every row (several sequences, or draft tokens, per "
                 "weight pass): comma-separated T in [2, min(1024, context)], 'none', or 'default' (2,4,8,16 with "
                 "--sequences > 1, none with one)");
  sub.add_option("--context", a->context,
                 "context capacity, an integer in [1, max_position_embeddings] (default min(max_position_embeddings, "
                 "4096)); more than the model's maximum is an error")
      ->transform(hfs::cli::integer_in(1, INT64_MAX, "an integer >= 1"));
  sub.add_option("--cache-dtype", a->cache_dtype,
                 "KV cache dtype: f32, f16, or int8 (one f32 scale per cached row and head: a quarter of f32's "
                 "bytes plus 4 per row and head; needs a runtime that implements contract minor 1)")
      ->capture_default_str()
      ->check(hfs::cli::one_of({"f32", "f16", "int8"}));
  sub.add_option("--weights", a->weights,
                 "linear/embedding weight format: keep (checkpoint dtype), f32, f16, bf16, int8 (per-channel), int4 "
                 "(q4_0 layers; embedding and LM head int8)")
      ->capture_default_str()
      ->check(hfs::cli::one_of({"keep", "f32", "f16", "bf16", "int8", "int4"}));
  sub.add_option("--logits", a->logits, "logits of the last valid row only, or of every row: last or all")
      ->capture_default_str()
      ->check(hfs::cli::one_of({"last", "all"}));
  return [a] { return run_export(*a); };
}

const bool kRegistered = hfs::cli::register_command(
    {"export", "Export a HuggingFace checkpoint to an hf_static program", &setup_export});

}  // namespace
