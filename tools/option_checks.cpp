#include "option_checks.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <string_view>
#include <system_error>

#include "hfstatic/ext/backend.h"

namespace hfs::cli {
namespace {

std::string rejected(const std::string& expected, const std::string& text) {
  return "expected " + expected + ", got '" + text + "'";
}

// The whole of `s` as a T in decimal, or false: no blanks, no '+', no base prefix, no overflow.
template <typename T>
bool parse_exact(const std::string& s, T& out) {
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, out);
  return !s.empty() && ec == std::errc() && p == end;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

CLI::Validator integer_in(int64_t lo, int64_t hi, std::string expected) {
  return CLI::Validator(
      [lo, hi, expected](std::string& s) -> std::string {
        int64_t v = 0;
        if (!parse_exact(s, v) || v < lo || v > hi) return rejected(expected, s);
        s = std::to_string(v);  // "007" → "7": CLI11's base-0 conversion would read a leading 0 as octal
        return {};
      },
      "");
}

CLI::Validator any_uint64() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        uint64_t v = 0;
        if (!parse_exact(s, v)) return rejected("an integer in [0, 18446744073709551615]", s);
        s = std::to_string(v);
        return {};
      },
      "");
}

CLI::Validator float_where(std::function<bool(float)> accepts, std::string expected) {
  return CLI::Validator(
      [accepts = std::move(accepts), expected](std::string& s) -> std::string {
        double d = 0;
        if (!parse_exact(s, d)) return rejected(expected, s);
        const float f = static_cast<float>(d);
        if (!std::isfinite(f) || !accepts(f)) return rejected(expected, s);
        // The float's value as the shortest double text: CLI11's strtold → float reads back exactly f.
        char buf[64];
        s.assign(buf, std::to_chars(buf, buf + sizeof buf, static_cast<double>(f)).ptr);
        return {};
      },
      "");
}

CLI::Validator one_of(std::initializer_list<const char*> names) {
  std::vector<std::string> list(names.begin(), names.end());
  return CLI::Validator(
      [list](std::string& s) -> std::string {
        for (const std::string& n : list)
          if (s == n) return {};
        return rejected("one of " + joined(list), s);
      },
      "");
}

CLI::Validator backend_name() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        const std::vector<std::string> known = registered_backends();
        for (const std::string& n : known)
          if (s == n) return {};
        return rejected("a backend name (" + joined(known) + ")", s);
      },
      "");
}

int usage_error(const std::string& command, const std::string& what) {
  std::fprintf(stderr, "hfstatic %s: %s\n", command.c_str(), what.c_str());
  return kUsageError;
}

void excludes_each_other(std::initializer_list<CLI::Option*> opts) {
  for (CLI::Option* a : opts)
    for (CLI::Option* b : opts)
      if (a != b) a->excludes(b);
}

void add_llama_cli_refusals(CLI::App& sub) {
  auto refuse = [](std::string why) {
    return CLI::Validator([why](std::string&) { return why; }, "");
  };
  sub.add_option("-c,--ctx-size",
                 "Not an option here: a program's context is fixed when it is exported (`hfstatic inspect` shows it); "
                 "re-export with `hfstatic export --context N`")
      ->type_name("N")
      ->check(refuse("the context is fixed when the program is exported (`hfstatic inspect` shows it): re-export "
                     "with `hfstatic export CHECKPOINT -o MODEL.hfs --context N` and run that program"));
  sub.add_option("--n-gpu-layers",
                 "(-ngl) Not an option here: a program runs whole on the backends of --backend (vulkan for a GPU), "
                 "no layer offload")
      ->type_name("N")
      ->check(refuse("hfstatic does not offload layers: the whole program runs on the backends --backend names "
                     "(--backend vulkan for a GPU, cpu_fast for the CPU); leave -ngl out"));
}

std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv) {
  // CLI11 takes single-dash names of one letter only: llama-cli's longer ones become the long forms.
  std::vector<std::string> rewritten(argv, argv + argc);
  std::vector<char*> args;
  for (std::string& a : rewritten) {
    if (a == "-sys") a = "--system";
    else if (a == "-ngl") a = "--n-gpu-layers";
    args.push_back(a.data());
  }
  argv = args.data();
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) names.push_back(sub->get_name());
  const std::string first = argc > 1 ? argv[1] : "";
  bool known = false;
  for (const std::string& n : names) known = known || n == first;
  const bool top_level_flag = first == "-h" || first == "--help" || first == "--version";
  if (argc < 2 || (!known && !top_level_flag)) {
    if (argc < 2)
      std::fprintf(stderr, "hfstatic: no command given; commands: %s\n", joined(names).c_str());
    else if (first.rfind('-', 0) == 0)
      std::fprintf(stderr,
                   "hfstatic: unknown option '%s' before the command (there: --help, --version); commands: %s\n",
                   first.c_str(), joined(names).c_str());
    else
      std::fprintf(stderr, "hfstatic: unknown command '%s'; commands: %s\n", first.c_str(), joined(names).c_str());
    std::fprintf(stderr, "Run 'hfstatic --help' for more.\n");
    return kUsageError;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::string what = e.what();
    // CLI11 words a conflict as "--prompt excludes --file".
    if (e.get_name() == "ExcludesError") {
      const size_t at = what.find(" excludes ");
      if (at != std::string::npos)
        what = what.substr(0, at) + " and " + what.substr(at + 10) + " cannot be used together";
    }
    const std::string cmd = known ? "hfstatic " + first : "hfstatic";
    std::fprintf(stderr, "%s: %s\nRun '%s --help' for the options.\n", cmd.c_str(), what.c_str(), cmd.c_str());
    return kUsageError;
  }
  return std::nullopt;
}

}  // namespace hfs::cli
