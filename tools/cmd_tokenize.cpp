// `hfstatic tokenize -m MODEL_DIR_OR_PROGRAM [--json] [--no-special] TEXT` → ids (the text may instead come
// from `-f FILE`, or from stdin: TEXT `-`, or no TEXT with stdin not a terminal);
// `hfstatic tokenize -m ... --decode 1,2,3` → text.
// MODEL may be a directory holding tokenizer.json (+ tokenizer_config.json) or a program file whose
// constants "file:tokenizer.json" / "file:tokenizer_config.json" (u8) carry the same files.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "cli.h"
#include "common.h"
#include "core/regular_file.h"
#include "io_util.h"
#include "hfstatic/program.h"
#include "hfstatic/tokenizer.h"
#include "option_checks.h"

namespace {

struct Opts {
  std::string model;
  std::string text;
  bool text_given = false;
  std::string file;
  std::string decode;
  bool json = false;
  bool no_special = false;
  bool skip_special = false;
};

hfs::Result<std::shared_ptr<const hfs::Tokenizer>> load(const std::string& model) {
  std::error_code ec;
  if (hfs::cli::is_hub_name(model)) {
    HFS_ASSIGN_OR_RETURN(const std::string dir, hfs::cli::hub_checkpoint(model));
    return hfs::Tokenizer::from_dir(dir);
  }
  if (std::filesystem::is_directory(model, ec)) return hfs::Tokenizer::from_dir(model);
  HFS_ASSIGN_OR_RETURN(std::shared_ptr<const hfs::Program> prog, hfs::Program::load(model));
  return hfs::Tokenizer::from_program(*prog);
}

int failed(const std::string& what) {
  std::cerr << "hfstatic tokenize: " << what << "\n";
  return 1;
}

// The text to encode: the argument, the file, or stdin (all bytes, as given).
std::optional<std::string> input_text(const Opts& o, std::string* error) {
  if (o.text_given && o.text != "-") return o.text;
  if (!o.file.empty()) {  // a regular file only: a FIFO or device would block or never end
    auto text = hfs::io::read_regular_file(o.file, hfs::cli::kMaxTextFileBytes);
    if (!text) {
      *error = text.error().to_string();
      return std::nullopt;
    }
    return std::move(*text);
  }
  // Bounded like a file: an endless pipe (yes | hfstatic tokenize) ends with an error naming the limit.
  std::string text;
  char buf[1 << 16];
  while (std::cin.read(buf, sizeof buf) || std::cin.gcount() > 0) {
    text.append(buf, static_cast<size_t>(std::cin.gcount()));
    if (text.size() > hfs::cli::kMaxTextFileBytes) {
      *error = "stdin: more than the limit of " + std::to_string(hfs::cli::kMaxTextFileBytes) + " bytes";
      return std::nullopt;
    }
  }
  if (std::cin.bad()) {
    *error = "cannot read stdin";
    return std::nullopt;
  }
  return text;
}

int run(const Opts& o) {
  if (o.decode.empty() && !o.text_given && o.file.empty() && isatty(STDIN_FILENO))
    return hfs::cli::usage_error("tokenize", "nothing to encode: give TEXT, -f FILE, or - (or pipe the text in)");
  auto tok = load(o.model);
  if (!tok) return failed(tok.error().to_string());
  if (!o.decode.empty()) {
    std::vector<int32_t> ids;
    size_t pos = 0;
    while (pos <= o.decode.size()) {
      size_t comma = o.decode.find(',', pos);
      std::string item = o.decode.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      size_t used = 0;
      long long v = 0;
      bool ok = !item.empty();
      try {
        v = std::stoll(item, &used);
      } catch (...) {
        ok = false;
      }
      if (!ok || used != item.size() || v < INT32_MIN || v > INT32_MAX) {
        std::cerr << "hfstatic tokenize: --decode: expected comma-separated integer ids, got '" << item << "'\n";
        return hfs::cli::kUsageError;
      }
      // An id past the vocabulary decodes to nothing real: refused rather than printed as <unk>.
      if (v < 0 || v >= (*tok)->vocab_size())
        return failed("--decode: id " + std::to_string(v) + " is outside the vocabulary of " +
                      std::to_string((*tok)->vocab_size()) + " tokens (ids 0.." + std::to_string((*tok)->vocab_size() - 1) + ")");
      ids.push_back(static_cast<int32_t>(v));
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
    auto text = (*tok)->decode(ids, o.skip_special);
    if (!text) return failed(text.error().to_string());
    if (o.json) hfs::cli::out(nlohmann::json{{"text", *text}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
    else hfs::cli::out(*text + "\n");
    return 0;  // a failed stdout write is reported by main
  }
  std::string error;
  const std::optional<std::string> text = input_text(o, &error);
  if (!text) return failed(error);
  auto ids = (*tok)->encode(*text, !o.no_special);
  if (!ids) return failed(ids.error().to_string());
  std::string line;
  if (o.json) {
    line = nlohmann::json{{"ids", *ids}}.dump();
  } else {
    for (size_t i = 0; i < ids->size(); ++i) line += (i ? " " : "") + std::to_string((*ids)[i]);
  }
  hfs::cli::out(line + "\n");
  return 0;  // a failed stdout write is reported by main
}

hfs::cli::RunFn setup(CLI::App& sub) {
  auto o = std::make_shared<Opts>();
  sub.add_option("-m,--model", o->model, "model directory (tokenizer.json [+ tokenizer_config.json]), program file or Hub name ORG/NAME[@REVISION]")
      ->required();
  CLI::Option* text =
      sub.add_option("text", o->text, "text to encode; - reads stdin (as does no TEXT when stdin is not a terminal)");
  hfs::cli::excludes_each_other(
      {text, sub.add_option("-f,--file", o->file, "encode the text of this file"),
       sub.add_option("--decode", o->decode, "comma-separated ids to decode instead of encoding (each in [0, vocabulary size); another is an error)")});
  sub.add_flag("--json", o->json, "print {\"ids\": [...]} (or {\"text\": ...} with --decode)");
  sub.add_flag("--no-special", o->no_special, "encode without the special tokens the post-processor adds");
  sub.add_flag("--skip-special", o->skip_special, "with --decode: drop special tokens");
  return [o, text] {
    o->text_given = text->count() > 0;
    return run(*o);
  };
}

const bool kReg = hfs::cli::register_command(
    {"tokenize", "Encode text to token ids (or --decode ids to text) with a model's tokenizer", &setup});

}  // namespace
