// server/routes.h — the HTTP endpoints of `hfstatic serve` on a cpp-httplib server (docs/server.md):
// POST /v1/chat/completions, /v1/completions, /tokenize, /detokenize; GET /v1/models, /health, /metrics
// and the chat page at /. Authentication (--api-key), error bodies and the one log line per request are
// installed here too.
#pragma once

namespace httplib {
class Server;
}

namespace hfs::server {

struct State;
void install_routes(httplib::Server& http, State& state);

}  // namespace hfs::server
