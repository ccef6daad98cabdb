#include "server/routes.h"

#include <httplib.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

#include "server/api_error.h"
#include "server/generation.h"
#include "server/sse.h"
#include "server/state.h"
#include "server/web_page.h"

namespace hfs::server {
namespace {

using nlohmann::json;

// One log line per request: what the handler learned (tokens, finish) is kept here for the logger, which
// httplib calls on the same thread once the response (a stream included) has been written.
struct RequestLog {
  Clock::time_point start;
  std::string detail;
};
thread_local RequestLog t_log;

void reply_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

void reply_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(e.body(), "application/json");
  t_log.detail = "error: " + e.message;
}

// Request bodies that are not JSON objects, or lack the field, give an ApiError naming it.
std::optional<json> json_body(const httplib::Request& req, httplib::Response& res) {
  json j = json::parse(req.body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    reply_error(res, invalid_param("", "the request body must be a JSON object"));
    return std::nullopt;
  }
  return j;
}

bool ready(State& s, httplib::Response& res) {
  const Phase p = s.phase.load();
  if (p == Phase::kReady) return true;
  res.set_header("Retry-After", "1");
  reply_error(res, server_error(503, "server_error", p == Phase::kLoading ? "loading" : "draining",
                                p == Phase::kLoading ? "the model is still loading" : "the server is shutting down"));
  return false;
}

void handle_tokenize(State& s, const httplib::Request& req, httplib::Response& res) {
  if (!ready(s, res)) return;
  auto j = json_body(req, res);
  if (!j) return;
  auto it = j->find("content");
  if (it == j->end() || !it->is_string()) return reply_error(res, invalid_param("content", "'content' must be a string"));
  bool add_special = true;
  if (auto a = j->find("add_special"); a != j->end()) {
    if (!a->is_boolean()) return reply_error(res, invalid_param("add_special", "'add_special' must be a boolean"));
    add_special = a->get<bool>();
  }
  auto ids = s.tokenizer->encode(it->get<std::string>(), add_special);
  if (!ids) return reply_error(res, invalid_param("content", ids.error().message()));
  reply_json(res, 200, {{"tokens", *ids}});
}

void handle_detokenize(State& s, const httplib::Request& req, httplib::Response& res) {
  if (!ready(s, res)) return;
  auto j = json_body(req, res);
  if (!j) return;
  auto it = j->find("tokens");
  if (it == j->end() || !it->is_array()) return reply_error(res, invalid_param("tokens", "'tokens' must be an array of token ids"));
  std::vector<int32_t> ids;
  for (const json& t : *it) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= s.tokenizer->vocab_size())
      return reply_error(res, invalid_param("tokens", "'tokens' must hold token ids in [0, " +
                                                          std::to_string(s.tokenizer->vocab_size()) + "), got " + t.dump()));
    ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  auto text = s.tokenizer->decode(ids, false);
  if (!text) return reply_error(res, invalid_param("tokens", text.error().message()));
  reply_json(res, 200, {{"content", *text}});
}

void handle_generate(State& s, const httplib::Request& req, httplib::Response& res, bool chat) {
  if (!ready(s, res)) return;
  Generation g;
  if (std::optional<ApiError> e = prepare_generation(s, req.body, chat, g)) return reply_error(res, *e);
  switch (s.scheduler->submit(g.job)) {
    case Scheduler::Admission::kQueued: break;
    case Scheduler::Admission::kQueueFull:
      res.set_header("Retry-After", "1");
      return reply_error(res, server_error(429, "rate_limit_exceeded", "queue_full",
                                           "the server is busy: " + std::to_string(s.options.max_queue) +
                                               " requests are already waiting (--max-queue); retry later"));
    case Scheduler::Admission::kDraining:
      res.set_header("Retry-After", "1");
      return reply_error(res, server_error(503, "server_error", "draining", "the server is shutting down"));
  }
  if (!g.request.stream) {
    json out;
    std::optional<ApiError> e = run_to_end(s, g, out);
    t_log.detail = g.summary();
    if (e) return reply_error(res, *e);
    return reply_json(res, 200, out);
  }
  auto gen = std::make_shared<Generation>(std::move(g));
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");  // nginx in front: pass events through at once
  res.set_chunked_content_provider(
      "text/event-stream",
      [&s, gen](size_t, httplib::DataSink& sink) {
        const bool more = stream_some(s, *gen, [&](const std::string& data) { return sink.write(data.data(), data.size()); });
        t_log.detail = gen->summary();
        if (!more) sink.done();
        return !gen->client_gone;
      },
      [gen](bool success) {
        if (!success) gen->job->cancel = true;  // the client went away: free its sequence
      });
}

// POST /bench/engine (serve --bench-endpoint): the engine timed in-process between requests.
void handle_bench_engine(State& s, const httplib::Request& req, httplib::Response& res) {
  if (!ready(s, res)) return;
  Result<std::string> out = s.scheduler->run_alone([&](Engine& e) { return s.options.bench_engine(e, req.body); });
  if (!out) {
    t_log.detail = "error: " + out.error().to_string();
    return reply_error(res, ApiError{400, out.error().to_string(), "invalid_request_error", "", ""});
  }
  res.set_content(*out, "application/json");
}

}  // namespace

void install_routes(httplib::Server& http, State& s) {
  http.set_pre_routing_handler([&s](const httplib::Request& req, httplib::Response& res) {
    t_log = RequestLog{Clock::now(), {}};
    if (s.options.api_key.empty() || req.path == "/" || req.path == "/health") return httplib::Server::HandlerResponse::Unhandled;
    const std::string auth = req.get_header_value("Authorization");
    if (auth == "Bearer " + s.options.api_key) return httplib::Server::HandlerResponse::Unhandled;
    reply_error(res, ApiError{401,
                              auth.empty() ? "missing API key: send the header 'Authorization: Bearer <key>'"
                                           : "invalid API key",
                              "invalid_request_error", "", "invalid_api_key"});
    return httplib::Server::HandlerResponse::Handled;
  });
  http.set_error_handler([&s](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    ApiError e{res.status, "", "invalid_request_error", "", ""};
    if (res.status == 404) e.message = "no endpoint " + req.method + " " + req.path, e.code = "not_found";
    else if (res.status == 413)
      e.message = "the request body is larger than " + std::to_string(s.options.max_body_bytes) + " bytes", e.code = "body_too_large";
    else e.message = "HTTP status " + std::to_string(res.status);
    res.set_content(e.body(), "application/json");
    t_log.detail = "error: " + e.message;
  });
  http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    reply_error(res, server_error(500, "server_error", "internal", "internal error"));
  });
  http.set_logger([&s](const httplib::Request& req, const httplib::Response& res) {
    s.metrics.count_request(res.status);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t_log.start).count();
    std::fprintf(stderr, "hfstatic serve: %s %s %s %d %.1f ms%s%s\n", req.remote_addr.c_str(), req.method.c_str(),
                 req.path.c_str(), res.status, ms, t_log.detail.empty() ? "" : " ", t_log.detail.c_str());
  });

  http.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(kWebPage), "text/html; charset=utf-8");
  });
  http.Get("/health", [&s](const httplib::Request&, httplib::Response& res) {
    const Phase p = s.phase.load();
    if (p != Phase::kReady) res.set_header("Retry-After", "1");
    reply_json(res, p == Phase::kReady ? 200 : 503,
               {{"status", p == Phase::kReady ? "ok" : p == Phase::kLoading ? "loading" : "draining"}});
  });
  http.Get("/metrics", [&s](const httplib::Request&, httplib::Response& res) {
    res.set_content(s.metrics.render(), "text/plain; version=0.0.4");
  });
  http.Get("/v1/models", [&s](const httplib::Request&, httplib::Response& res) {
    json model = {{"id", s.model_id}, {"object", "model"}, {"created", 0}, {"owned_by", "hfstatic"}};
    if (s.phase.load() != Phase::kLoading) {
      const ModelInfo& info = s.scheduler->info();
      model["meta"] = {{"context_length", info.context_length}, {"vocab_size", info.vocab_size},
                       {"parallel", s.scheduler->parallel()}};
    }
    reply_json(res, 200, {{"object", "list"}, {"data", json::array({model})}});
  });
  http.Post("/v1/chat/completions",
            [&s](const httplib::Request& req, httplib::Response& res) { handle_generate(s, req, res, true); });
  http.Post("/v1/completions",
            [&s](const httplib::Request& req, httplib::Response& res) { handle_generate(s, req, res, false); });
  if (s.options.bench_engine)
    http.Post("/bench/engine", [&s](const httplib::Request& req, httplib::Response& res) { handle_bench_engine(s, req, res); });
  http.Post("/tokenize", [&s](const httplib::Request& req, httplib::Response& res) { handle_tokenize(s, req, res); });
  http.Post("/detokenize", [&s](const httplib::Request& req, httplib::Response& res) { handle_detokenize(s, req, res); });
}

}  // namespace hfs::server
