// server/routes.h — the HTTP endpoints of `hfstatic serve` (docs/server.md): POST /v1/chat/completions,
// /v1/completions, /tokenize, /detokenize; GET /v1/models, /health, /metrics and the chat page at /.
// Authentication (--api-key), error bodies and the one log line per request are here too; the HTTP layer
// (server/http_server.h) calls these on the connection's thread.
#pragma once

#include <string>

#include "server/http.h"

namespace hfs::server {

struct State;
// Answers one request (authentication, routing, the endpoint).
void handle_request(State& s, const HttpRequest& req, HttpResponse& res);
// The OpenAI-shaped error body of a request refused by the HTTP layer itself (framing, limits, timeouts).
void error_response(State& s, int status, const std::string& message, HttpResponse& res);
// One access-log line on stderr, every client-chosen field escaped; counts the request in /metrics.
void log_request(State& s, const HttpRequest& req, const HttpResponse& res);

}  // namespace hfs::server
