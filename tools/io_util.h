// tools/io_util.h — checked output for the CLI: stdout, and files the CLI writes itself (--dump-logits).
//
// A write that fails (ENOSPC on a full disk, EPIPE when the reader of a pipe has gone, EFBIG past a file
// size limit) must end the command with a message and a non-zero exit, never be dropped. SIGPIPE and
// SIGXFSZ are ignored (ignore_write_signals) so those failures come back from write() as EPIPE / EFBIG
// instead of killing the process silently. Streaming commands stop generating at the first failed write
// (out() returns false); finish_stdout() at exit reports the stdout error once:
//   hfstatic: io: writing to stdout: No space left on device
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include "hfstatic/error.h"

namespace hfs::cli {

void ignore_write_signals();

// Writes `s` to stdout and flushes it (streamed text must appear as it is produced). False once any stdout
// write has failed; the failure is remembered for finish_stdout().
bool out(std::string_view s);
// printf-style out().
bool outf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// True while no stdout write has failed (including printf/iostream writes that set the stream's error).
bool stdout_ok();
// Flushes stdout; if a write failed at any point, prints the error to stderr and returns rc, or 1 if rc
// was 0. Called once, by main, after the subcommand.
int finish_stdout(int rc);

// A file the CLI streams into (--dump-logits). open() refuses a directory and does not wait on a FIFO
// without a reader; every write and the close are checked, and a failed file is removed (a regular file
// only) so no partial output is left behind. Errors name the file.
class OutputFile {
 public:
  ~OutputFile();
  [[nodiscard]] Status open(const std::string& path);
  [[nodiscard]] Status write(const void* data, size_t n);
  [[nodiscard]] Status close();  // reports a failed close; removes the file after any failure
  bool is_open() const { return fd_ >= 0; }

 private:
  Error fail(const std::string& what, int err);
  std::string path_;
  int fd_ = -1;
  bool regular_ = false;
};

}  // namespace hfs::cli
