// tools/session_options.h — `--session FILE` for run and chat: restore a prompt cache, reuse its prefix.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hfstatic/error.h"
#include "hfstatic/llm_runner.h"
#include "hfstatic/program.h"

namespace hfs::cli {

// Whether the program has sliding-window layers (their rings limit how far back a restored session can be cut).
bool has_sliding_layers(const Program& program);

// Restores `path` into `r` when the file exists (a missing file: nothing restored, 0) and keeps the longest
// prefix of its tokens that `prompt` begins with — llama.cpp's --prompt-cache rule: at most prompt.size() − 1,
// so the last prompt token is fed and its logits computed. Returns how many prompt tokens the runner now holds
// (feed prompt[returned..]). Sliding-window programs keep the restored tokens only when they are a prefix
// of the prompt (or all but the last), since cutting a ring further back loses rows. A refused file is the
// error (naming the file, expected vs got).
[[nodiscard]] Result<int64_t> reuse_session(Runner& r, const std::string& path, const std::vector<int32_t>& prompt, bool sliding);

}  // namespace hfs::cli
