// server/server.h — `hfstatic serve`: an OpenAI-compatible HTTP server over the multi-sequence Engine
// (docs/server.md). Listens first (GET /health answers 503 "loading"), loads the program, then serves
// until SIGTERM or SIGINT: /health turns 503 "draining", new requests get 503, in-flight ones get
// ServerOptions::drain_s to finish before they are cancelled, and it returns 0.
//
//   hfs::server::ServerOptions o; o.model = "model.hfs"; o.port = 0;   // any free port
//   return hfs::server::run_server(o, "model");                         // the exit status
#pragma once

#include <string>

#include "server/options.h"

namespace hfs::server {

// `program`: a program file (exported with --sequences ≥ options.parallel for full concurrency);
// `model_id`: the name /v1/models lists. Prints "hfstatic serve: listening on http://HOST:PORT" to stderr
// once bound. Returns the process exit status: 0 after a signal, 1 when the port or program cannot be used.
int run_server(const ServerOptions& options, const std::string& program, const std::string& model_id);

}  // namespace hfs::server
