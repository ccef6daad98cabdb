// tools/common.h — helpers shared by CLI subcommands: error reporting, parsing, stats output.
#pragma once

#include <atomic>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "hfstatic/error.h"
#include "hfstatic/export.h"
#include "hfstatic/llm_runner.h"

namespace hfs::cli {

// The largest text file the CLI reads whole (prompt, grammar, schema, tokenize input): far beyond any
// context's worth of text, and small enough that reading it can never exhaust memory. A larger file is an
// error naming the limit (io::read_regular_file(path, max)).
inline constexpr uint64_t kMaxTextFileBytes = uint64_t{64} << 20;

// Prints "hfstatic: <error>" to stderr and returns the exit code 1.
int fail(const Error& e);
Result<std::vector<int32_t>> parse_token_list(const std::string& s);
// One or more positive integers separated by commas ("1,4,8": counts and sizes on the command line); nullopt
// for anything else (empty, a 0, a sign, an empty part, a trailing comma). Callers name their flag in the error.
std::optional<std::vector<int32_t>> parse_count_list(const std::string& s);
Result<TailPolicy> parse_tail_policy(const std::string& s);
const char* stop_reason_name(GenerationResult::Stop s);
nlohmann::json stats_json(const RunnerStats& s);
// The stats on stderr; with `seed`, the line ends "| seed N" (sampled output repeats with --seed N).
void print_stats_line(const RunnerStats& s, std::optional<uint64_t> seed = std::nullopt);
// A prefill progress bar on stderr when it is a terminal and the prompt spans several chunks; else none.
std::function<void(int64_t, int64_t)> prefill_progress_bar();
// Until a command installs its own handling (install_interrupt_flag, the server's drain), SIGINT (Ctrl-C)
// and SIGTERM end the process at once — exit 130 and 143 — after removing the file remove_on_interrupt
// named: loading, downloading and exporting stop promptly and leave no temp file. main installs it.
void exit_on_interrupt();
// The file the handler above removes (one; "" for none): an export's temp file, set before it is written.
void remove_on_interrupt(const std::string& path);
// A flag set by SIGINT (Ctrl-C): generation stops between steps; a second Ctrl-C exits at once.
const std::atomic<bool>* install_interrupt_flag();
// Clears the flag (chat: the next reply is not cancelled by a Ctrl-C pressed for the previous one).
void reset_interrupt_flag();

}  // namespace hfs::cli

namespace hfs::cli {
// A program path as given, or for an HF checkpoint directory (or a Hub name, downloaded first) the path of its cached export (exported on
// first use into $XDG_CACHE_HOME/hfstatic or ~/.cache/hfstatic, keyed by directory, file times and, when
// options.sequences > 1, the sequence count).
Result<std::string> resolve_model(const std::string& model, const ExportOptions& options = {});
// Whether `model` names a Hub repository ("ORG/NAME[@REVISION]", not ending in .hfs) rather than a path:
// only when nothing exists at that path.
bool is_hub_name(const std::string& model);
// Downloads (or finds in the cache) the checkpoint `name` ("ORG/NAME[@REVISION]") and returns its snapshot
// directory; progress and notes on stderr. The environment as huggingface_hub reads it (include/hfstatic/hub.h).
Result<std::string> hub_checkpoint(const std::string& name);
}  // namespace hfs::cli
