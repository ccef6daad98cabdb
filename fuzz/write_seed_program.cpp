// Writes the tiny fixture program (tests/support/program_fixtures.h) to argv[1]: the program target's seed.
#include <cstdio>

#include "support/program_fixtures.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: write_seed_program OUT.hfs\n");
    return 2;
  }
  hfs::Status s = hfs::test::write_tiny_program(argv[1]);
  if (!s) {
    std::fprintf(stderr, "%s\n", s.error().to_string().c_str());
    return 1;
  }
  return 0;
}
