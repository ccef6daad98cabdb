// tools/cli.h — subcommand registry for the `hfstatic` CLI. Each subcommand lives in
// tools/cmd_<name>.cpp and registers itself:
//
//   namespace { const bool kReg = hfs::cli::register_command({"inspect", "Show a program's metadata...",
//                                                             &setup_inspect}); }
//
// `setup` adds a CLI11 subcommand to the app and returns the function to run when it is selected.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace hfs::cli {

using RunFn = std::function<int()>;
struct Command {
  std::string name;
  std::string help;
  // Adds options to `sub`; returns what to run. Parsed option values live in captures (shared_ptr).
  std::function<RunFn(CLI::App& sub)> setup;
};

bool register_command(Command c);
std::vector<Command>& commands();

}  // namespace hfs::cli
