// Streams a greedy continuation of a prompt from an exported program, as text, through the installed
// package alone (examples/CMakeLists.txt: find_package(hfstatic)).  stream_tokens PROGRAM.hfs PROMPT [N]
#include <cstdio>
#include <cstdlib>

#include "hfstatic/llm_runner.h"
#include "hfstatic/tokenizer.h"

static int fail(const hfs::Error& e) {
  std::fprintf(stderr, "%s\n", e.to_string().c_str());
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s PROGRAM.hfs PROMPT [MAX_NEW_TOKENS]\n", argv[0]);
    return 2;
  }
  auto program = hfs::Program::load(argv[1]);
  if (!program) return fail(program.error());
  auto tok = hfs::Tokenizer::from_program(**program);  // the tokenizer the exporter embedded
  if (!tok) return fail(tok.error());
  auto prompt = (*tok)->encode(argv[2]);
  if (!prompt) return fail(prompt.error());
  hfs::RunnerOptions opts;
  opts.io.method.backends.backends = {"cpu_fast"};
  auto runner = hfs::Runner::create(*program, opts);
  if (!runner) return fail(runner.error());
  hfs::StreamDecoder stream(**tok, /*skip_special=*/true);
  if (hfs::Status st = stream.prime(*prompt); !st) return fail(st.error());  // text continues the prompt's
  hfs::GenerationConfig g;  // sampling.temperature 0: greedy
  g.max_new_tokens = argc > 3 ? std::atoi(argv[3]) : 64;
  std::fputs(argv[2], stdout);
  auto out = (*runner)->generate(*prompt, g, [&](int32_t id) {
    if (auto piece = stream.feed(id)) std::fputs(piece->c_str(), stdout);
    std::fflush(stdout);
    return true;
  });
  if (!out) return fail(out.error());
  if (auto rest = stream.flush()) std::fputs(rest->c_str(), stdout);
  std::fputs("\n", stdout);
  return 0;
}
