// tools/option_checks.h — exact parsing and range checks for the CLI's option values.
//
// CLI11's own conversions are lenient: integers go through strtoll/strtoull in base 0 ("010" is octal,
// "0x10" hex; for an unsigned target "-1" wraps to 2^64 − 1 and an overflow saturates), floats through
// strtold ("nan", "inf", leading blanks), and its Range checks print raw limits ("Value 0 not in range
// 0.000000 to 1797…"). Every numeric option of hfstatic carries one of these validators instead: they accept
// plain decimal text only, rewrite it to the form CLI11 then converts back exactly, and reject anything else
// with "expected <range>, got '<text>'", which CLI11 prefixes with the option's name ("--temp: ...").
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>

namespace hfs::cli {

// Exit status of a usage error (a bad option value, conflicting options, an unknown command), as
// getopt-style tools use it; a failure while running is 1.
inline constexpr int kUsageError = 2;
// The --help footer line that says so.
inline constexpr const char* kExitStatusHelp =
    "Exit status: 0 success, 1 a failure while running, 2 a usage error (a bad option value, conflicting options, "
    "an unknown command).";

// A decimal integer ([-]digits) in [lo, hi]; `expected` words the range ("an integer >= 1").
CLI::Validator integer_in(int64_t lo, int64_t hi, std::string expected);
// Any unsigned 64-bit integer in decimal digits (seeds): no sign, no wrap, no saturation.
CLI::Validator any_uint64();
// A decimal number whose float value `accepts`; NaN and infinities never pass (nor do values that overflow
// a float). `expected` words what passes.
CLI::Validator float_where(std::function<bool(float)> accepts, std::string expected);
// One of `names` exactly.
CLI::Validator one_of(std::initializer_list<const char*> names);
// The name of a registered backend.
CLI::Validator backend_name();

// A usage error found after parsing (it needs the program, e.g. a size against its context): prints
// "hfstatic <command>: <what>" on stderr and returns kUsageError.
int usage_error(const std::string& command, const std::string& what);

// At most one of `opts` may be given: two together are a usage error naming both.
void excludes_each_other(std::initializer_list<CLI::Option*> opts);

// llama-cli's -c/--ctx-size and -ngl/--n-gpu-layers on `sub` (run, chat, serve): options that do not apply to
// a fixed-shape program, refused with why and what to do instead (re-export with --context N; --backend).
void add_llama_cli_refusals(CLI::App& sub);

// Parses argv with `app` (subcommands registered): usage errors print "hfstatic <command>: <what>" and a
// pointer to --help on stderr and yield kUsageError; --help and --version print to stdout and yield 0.
// An unknown command is named with the list of commands. llama-cli's multi-letter single-dash names are
// read as their long forms first (-sys → --system, -ngl → --n-gpu-layers: CLI11 would read "-ngl 99" as
// "-n gl 99"). Returns nullopt when parsing succeeded.
std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv);

}  // namespace hfs::cli
