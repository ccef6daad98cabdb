// hfstatic CLI entry point: builds one CLI11 app from the registered subcommands (tools/cmd_*.cpp).
#include <cstdio>
#include <map>
#include <optional>

#include "cli.h"
#include "common.h"
#include "option_checks.h"
#include "io_util.h"

namespace hfs::cli {

std::vector<Command>& commands() {
  static std::vector<Command> all;
  return all;
}

bool register_command(Command c) {
  commands().push_back(std::move(c));
  return true;
}

}  // namespace hfs::cli

namespace {

int run_cli(int argc, char** argv) {
  CLI::App app{"hfstatic — run HuggingFace decoder LLMs as fixed-shape programs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "hfstatic " HFS_VERSION);
  app.footer(hfs::cli::kExitStatusHelp);  // subcommands inherit it
  std::map<CLI::App*, hfs::cli::RunFn> runs;
  for (auto& c : hfs::cli::commands()) {
    CLI::App* sub = app.add_subcommand(c.name, c.help);
    runs[sub] = c.setup(*sub);
  }
  if (std::optional<int> done = hfs::cli::parse_command_line(app, argc, argv)) return *done;
  for (auto& [sub, run] : runs)
    if (sub->parsed()) return run();
  return hfs::cli::kUsageError;
}

}  // namespace

int main(int argc, char** argv) {
  hfs::cli::ignore_write_signals();
  hfs::cli::exit_on_interrupt();  // Ctrl-C while loading or exporting: exit 130 at once, no temp file left
  // Every subcommand's stdout, help text included, is flushed and checked here: a write error exits non-zero.
  return hfs::cli::finish_stdout(run_cli(argc, argv));
}
