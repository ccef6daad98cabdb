// Tokenizer benchmark (not a test): load time and single-thread encode throughput on the parity corpus.
//   tokenizer_bench CORPUS_JSONL DIR [DIR...]     (bench/tokenizer_bench/run compares with transformers.js)
// Prints one JSON line per tokenizer: {"dir", "load_s", "encode_mb_s", "strings_s", "tokens"}.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hfstatic/tokenizer.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: tokenizer_bench CORPUS_JSONL DIR [DIR...]\n";
    return 2;
  }
  std::vector<std::string> corpus;
  std::ifstream f(argv[1]);
  std::string line;
  size_t bytes = 0;
  while (std::getline(f, line))
    if (!line.empty()) {
      corpus.push_back(nlohmann::json::parse(line).get<std::string>());
      bytes += corpus.back().size();
    }
  using clk = std::chrono::steady_clock;
  for (int a = 2; a < argc; ++a) {
    auto t0 = clk::now();
    auto tok = hfs::Tokenizer::from_dir(argv[a]);
    double load_s = std::chrono::duration<double>(clk::now() - t0).count();
    if (!tok) {
      std::cerr << tok.error().to_string() << "\n";
      return 1;
    }
    size_t tokens = 0;
    for (const auto& s : corpus) tokens += (*tok)->encode(s)->size();  // warm-up pass (fills the BPE cache)
    int passes = 0;
    auto t1 = clk::now();
    double el = 0;
    while (el < 1.0 || passes < 3) {
      for (const auto& s : corpus) {
        auto ids = (*tok)->encode(s);
        if (!ids) return 1;
      }
      ++passes;
      el = std::chrono::duration<double>(clk::now() - t1).count();
    }
    std::printf("{\"dir\": \"%s\", \"load_s\": %.4f, \"encode_mb_s\": %.2f, \"strings_s\": %.0f, \"tokens\": %zu}\n", argv[a],
                load_s, static_cast<double>(bytes) * passes / el / 1e6, static_cast<double>(corpus.size()) * passes / el,
                tokens);
  }
  return 0;
}
