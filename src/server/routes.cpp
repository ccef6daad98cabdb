#include "server/routes.h"

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

#include "hfstatic/ext/backend_kernels.h"
#include "server/api_error.h"
#include "server/generation.h"
#include "server/sse.h"
#include "server/state.h"
#include "server/web_page.h"

namespace hfs::server {
namespace {

using nlohmann::json;

// One log line per request: what the handler learned (tokens, finish) is kept here for the logger, which
// the HTTP layer calls on the same thread once the response (a stream included) has been written.
struct RequestLog {
  Clock::time_point start;
  std::string detail;
};
thread_local RequestLog t_log;

void reply_json(HttpResponse& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

void reply_error(HttpResponse& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(e.body(), "application/json");
  t_log.detail = "error: " + e.message;
}

// Request bodies that are not JSON objects, or lack the field, give an ApiError naming it.
std::optional<json> json_body(const HttpRequest& req, HttpResponse& res) {
  if (std::optional<ApiError> e = json_depth_error(req.body)) {
    reply_error(res, *e);
    return std::nullopt;
  }
  json j = json::parse(req.body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    reply_error(res, invalid_param("", "the request body must be a JSON object"));
    return std::nullopt;
  }
  return j;
}

bool ready(State& s, HttpResponse& res) {
  const Phase p = s.phase.load();
  if (p == Phase::kReady) return true;
  res.set_header("Retry-After", "1");
  reply_error(res, server_error(503, "server_error", p == Phase::kLoading ? "loading" : "draining",
                                p == Phase::kLoading ? "the model is still loading" : "the server is shutting down"));
  return false;
}

void handle_tokenize(State& s, const HttpRequest& req, HttpResponse& res) {
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

void handle_detokenize(State& s, const HttpRequest& req, HttpResponse& res) {
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

void handle_generate(State& s, const HttpRequest& req, HttpResponse& res, bool chat) {
  if (!ready(s, res)) return;
  Generation g;
  if (std::optional<ApiError> e = prepare_generation(s, req.body, chat, g)) return reply_error(res, *e);
  switch (s.scheduler->submit(g.jobs())) {
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
    std::optional<ApiError> e = run_to_end(s, g, out, req.client_gone);
    t_log.detail = g.summary();
    if (e) return reply_error(res, *e);
    return reply_json(res, 200, out);
  }
  auto gen = std::make_shared<Generation>(std::move(g));
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");  // nginx in front: pass events through at once
  res.content_type = "text/event-stream";
  res.stream = [&s, gen](StreamSink& sink) {
    const bool more = stream_some(s, *gen, [&](const std::string& data) { return sink.write(data); });
    t_log.detail = gen->summary();
    if (!more) sink.done = true;
    return !gen->client_gone;
  };
  res.on_end = [gen](bool success) {
    if (!success) gen->cancel();  // the client went away: free its sequences
  };
}

// POST /bench/engine (serve --bench-endpoint): the engine timed in-process between requests.
void handle_bench_engine(State& s, const HttpRequest& req, HttpResponse& res) {
  if (!ready(s, res)) return;
  if (std::optional<ApiError> e = json_depth_error(req.body)) return reply_error(res, *e);
  Result<std::string> out = s.scheduler->run_alone([&](Engine& e) { return s.options.bench_engine(e, req.body); });
  if (!out) {
    t_log.detail = "error: " + out.error().to_string();
    return reply_error(res, ApiError{400, out.error().to_string(), "invalid_request_error", "", ""});
  }
  res.set_content(*out, "application/json");
}

}  // namespace

void handle_request(State& s, const HttpRequest& req, HttpResponse& res) {
  t_log = RequestLog{Clock::now(), {}};
  const std::string& path = req.path;
  if (!s.options.api_key.empty() && path != "/" && path != "/health") {
    const std::string auth = req.header("authorization");
    if (auth != "Bearer " + s.options.api_key)
      return reply_error(res, ApiError{401,
                                       auth.empty() ? "missing API key: send the header 'Authorization: Bearer <key>'"
                                                    : "invalid API key",
                                       "invalid_request_error", "", "invalid_api_key"});
  }
  const bool get = req.method == "GET" || req.method == "HEAD", post = req.method == "POST";
  try {
    if (get && path == "/") return res.set_content(std::string(kWebPage), "text/html; charset=utf-8");
    if (get && path == "/health") {
      const Phase p = s.phase.load();
      if (p != Phase::kReady) res.set_header("Retry-After", "1");
      return reply_json(res, p == Phase::kReady ? 200 : 503,
                        {{"status", p == Phase::kReady ? "ok" : p == Phase::kLoading ? "loading" : "draining"}});
    }
    if (get && path == "/metrics") return res.set_content(s.metrics.render(), "text/plain; version=0.0.4");
    if (get && path == "/v1/models") {
      json model = {{"id", s.model_id}, {"object", "model"}, {"created", 0}, {"owned_by", "hfstatic"}};
      if (s.phase.load() != Phase::kLoading) {
        const ModelInfo& info = s.scheduler->info();
        // The backends and their kernel levels: results are bit-identical within one level and may differ
        // between levels (docs/determinism.md), so a client comparing answers can see which one ran.
        json kernels = json::object();
        for (const auto& b : s.options.backends)
          if (std::string k = backend_kernels(b); !k.empty()) kernels[b] = k;
        model["meta"] = {{"context_length", info.context_length}, {"vocab_size", info.vocab_size},
                         {"parallel", s.scheduler->parallel()}, {"backends", s.options.backends},
                         {"kernels", kernels}};
      }
      return reply_json(res, 200, {{"object", "list"}, {"data", json::array({model})}});
    }
    if (post && path == "/v1/chat/completions") return handle_generate(s, req, res, true);
    if (post && path == "/v1/completions") return handle_generate(s, req, res, false);
    if (post && path == "/bench/engine" && s.options.bench_engine) return handle_bench_engine(s, req, res);
    if (post && path == "/tokenize") return handle_tokenize(s, req, res);
    if (post && path == "/detokenize") return handle_detokenize(s, req, res);
  } catch (const std::exception&) {
    res = HttpResponse{};
    return reply_error(res, server_error(500, "server_error", "internal", "internal error"));
  }
  reply_error(res, ApiError{404, "no endpoint " + req.method + " " + path, "invalid_request_error", "", "not_found"});
}

void error_response(State& s, int status, const std::string& message, HttpResponse& res) {
  ApiError e{status, message, "invalid_request_error", "", ""};
  if (status == 413) e.code = "body_too_large";
  else if (status == 408) e.code = "request_timeout";
  else if (status == 503) e.type = "server_error", e.code = "too_many_connections";
  if (status == 503) res.set_header("Retry-After", "1");
  (void)s;
  reply_error(res, e);
}

void log_request(State& s, const HttpRequest& req, const HttpResponse& res) {
  s.metrics.count_request(res.status);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t_log.start).count();
  // Every field a client chose is escaped: no request can write a line of its own into the log.
  std::fprintf(stderr, "hfstatic serve: %s %s %s %d %.1f ms%s%s\n", log_escape(req.remote_addr).c_str(),
               req.method.empty() ? "-" : log_escape(req.method).c_str(), req.target.empty() ? "-" : log_escape(req.target).c_str(),
               res.status, ms, t_log.detail.empty() ? "" : " ", log_escape(t_log.detail).c_str());
  t_log = RequestLog{Clock::now(), {}};
}

}  // namespace hfs::server
