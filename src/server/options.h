// server/options.h — what `hfstatic serve` is told on its command line (tools/cmd_serve.cpp fills it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hfstatic/engine.h"
#include "hfstatic/llm_runner.h"

namespace hfs::server {

struct ServerOptions {
  std::string model;                 // program file, or an HF checkpoint directory (exported with --sequences = parallel)
  std::string host = "127.0.0.1";    // loopback unless told otherwise
  int port = 8080;                   // 0: any free port (printed on the "listening" line)
  int parallel = 4;                  // sequences generating at once (capped by the program's max_sequences)
  std::string api_key;               // empty: no authentication
  int max_queue = 64;                // requests waiting for a sequence; one more → 429
  int32_t max_tokens_cap = 4096;     // per request; larger max_tokens are clamped to it
  double timeout_s = 600;            // per request, from arrival: queued past it → 503, generating → ends ("length")
  size_t max_body_bytes = 1 << 20;   // request bodies above it (any transfer coding, any type) → 413
  double read_timeout_s = 10;        // a request's head and body must arrive within it (else 408); keep-alive idle
  int max_connections = 256;         // open connections; one more → 503 and closed
  double drain_s = 10;               // SIGTERM: in-flight requests get this long to finish, then are cancelled
  int step_delay_ms = 0;             // a pause after every engine step (tests and demos of a slow model)
  int grammar_cache = 64;            // compiled response_format grammars kept (least recently used go); 0: none
  size_t grammar_cache_bytes = 64 << 20;  // and the bytes they may hold together
  // The prompt cache's disk tier (docs/server.md): finished conversations saved as session files in this
  // directory, at most cache_size bytes (least recently used removed first); "" = memory only.
  std::string cache_dir;
  uint64_t cache_size = uint64_t{1} << 30;
  DraftConfig draft;
  // The chat format (ChatFormat::select): "" the program's template, or plain without one; "plain", "chatml",
  // a name from the program's list of templates, or a file.
  std::string chat_template;
  std::vector<std::string> backends = {"cpu_fast"};
  int threads = 0;                   // threads of each selected backend (0: the backend's default)
  int device = -1;                   // the vulkan backend's device (-1: its default)
  // Run on the server's engine after it is created and before the first request can reach it (null: none).
  // `serve --self-bench` times the engine in-process here, before any request could share it. An error
  // stops the server before it listens.
  std::function<Status(Engine&)> before_serving;
  // Set (`serve --bench-endpoint`): POST /bench/engine calls it with the request body on the scheduler's
  // thread, the engine to itself between requests (Scheduler::run_alone), and answers its JSON text; an
  // error answers 400 with its message. bench/serve times the engine in-process this way right before and
  // after each round of requests. Null (the default): no such endpoint.
  std::function<Result<std::string>(Engine&, const std::string& body)> bench_engine;
};

}  // namespace hfs::server
