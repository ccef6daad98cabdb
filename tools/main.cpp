// hfstatic CLI entry point; subcommands live in tools/cmd_<name>.cpp.
#include <cstdio>
int main(int argc, char** argv) {
  (void)argc;
  (void)argv;
  std::puts("hfstatic");
  return 0;
}
