// hfstatic CLI entry point: builds one CLI11 app from the registered subcommands (tools/cmd_*.cpp).
#include <cstdio>
#include <map>

#include "cli.h"
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
  std::map<CLI::App*, hfs::cli::RunFn> runs;
  for (auto& c : hfs::cli::commands()) {
    CLI::App* sub = app.add_subcommand(c.name, c.help);
    runs[sub] = c.setup(*sub);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  for (auto& [sub, run] : runs)
    if (sub->parsed()) return run();
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  hfs::cli::ignore_write_signals();
  // Every subcommand's stdout, help text included, is flushed and checked here: a write error exits non-zero.
  return hfs::cli::finish_stdout(run_cli(argc, argv));
}
