// Session files: one sequence's tokens and state rows on disk (docs/sessions.md has the byte layout).
//
// Written whole to a temporary file beside the target and renamed over it, so a reader never sees a half
// file under the name. Read back with every check done before anything is handed out: magic, format
// version, the declared sizes against the file's, the checksum, the program it belongs to, the capacity.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hfstatic/error.h"
#include "hfstatic/ext/io_contract.h"
#include "hfstatic/program.h"

namespace hfs {

inline constexpr uint32_t kSessionFormatVersion = 1;

struct SessionFile {
  uint64_t program_id = 0;       // program_identity() of the program that wrote it
  std::vector<int32_t> tokens;   // the sequence's tokens, one per position (state.length of them)
  SequenceState state;
};

// What a session file is checked against when read.
struct SessionExpect {
  uint64_t program_id = 0;
  std::string program_name;      // for messages: the program's path
  int64_t context_length = 0;    // more positions → kCapacityExceeded
  uint64_t max_bytes = 0;        // a larger file is refused before it is read (no unbounded allocation)
};

// The program's identity: the content hash of its file (core/content_hash.h), computed by reading the file
// once; a program loaded from bytes has none (kUnsupported).
[[nodiscard]] Result<uint64_t> program_identity(const Program& program);

[[nodiscard]] Status write_session_file(const std::string& path, const SessionFile& session);
[[nodiscard]] Result<SessionFile> read_session_file(const std::string& path, const SessionExpect& expect);
// Only the tokens, after the same checks (the server's disk tier indexes its files by them).
[[nodiscard]] Result<std::vector<int32_t>> read_session_tokens(const std::string& path, const SessionExpect& expect);

// The checks for a program's session files, its identity computed once into `*id`.
[[nodiscard]] Result<SessionExpect> session_expect(const Program* program, const IOManager& io, std::optional<uint64_t>* id);

// The file's tokens checked against the vocabulary (kOutOfRange naming the file, index and id).
[[nodiscard]] Status check_session_tokens(const std::string& path, std::span<const int32_t> tokens, int64_t vocab_size);

// The most bytes a session of `views` (an IO manager's state buffers) over `context` positions can take.
uint64_t max_session_bytes(const std::vector<TensorView>& views, int64_t context);

}  // namespace hfs
