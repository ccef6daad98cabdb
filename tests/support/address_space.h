// tests/support/address_space.h — caps a (forked child) process's address space a little above what it
// uses now, so a test can prove that no input drives a huge allocation: past the cap, allocation fails
// (bad_alloc / a null malloc) instead of succeeding on an overcommitting machine.
#pragma once

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>

namespace hfs::test {

// Sets RLIMIT_AS to the current virtual size + `extra` bytes; false when that fails.
inline bool cap_address_space_above_current(rlim_t extra) {
  long pages = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  const rlim_t cap = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE)) + extra;
  const struct rlimit lim {cap, cap};
  return ::setrlimit(RLIMIT_AS, &lim) == 0;
}

}  // namespace hfs::test
