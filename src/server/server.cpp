#include "server/server.h"

#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include "hfstatic/engine.h"
#include "hfstatic/ext/metadata_keys.h"
#include "hfstatic/program.h"
#include "server/http_server.h"
#include "server/routes.h"
#include "server/state.h"

namespace hfs::server {
namespace {

Status load(State& s, const std::string& path) {
  HFS_ASSIGN_OR_RETURN(std::shared_ptr<const Program> program, Program::load(path));
  HFS_ASSIGN_OR_RETURN(s.tokenizer, Tokenizer::from_program(*program));
  const std::string config = program->embedded_file("tokenizer_config.json");
  // The format chat and Python use too (ChatFormat::select); "plain" leaves chat_template empty.
  auto format = ChatFormat::select(config, s.options.chat_template);
  if (!format) return format.error().with_context(path);
  if (format->chat_template()) s.chat_template = *format->chat_template();
  s.bos_token = s.tokenizer->bos_token();
  s.eos_token = s.tokenizer->eos_token();
  EngineOptions eo;
  eo.io.method.backends.backends = s.options.backends;
  for (const std::string& b : s.options.backends) {
    if (b == "vulkan") {  // a device index rather than threads
      if (s.options.device >= 0) eo.io.method.backends.settings[b].set("device", Value(s.options.device));
    } else if (s.options.threads > 0) {
      eo.io.method.backends.settings[b].set("threads", Value(s.options.threads));
    }
  }
  HFS_ASSIGN_OR_RETURN(auto engine, Engine::create(program, eo));
  HFS_TRY_CTX(check_draft_support(engine->info(), s.options.draft), "--draft");
  if (engine->info().max_sequences < s.options.parallel)
    std::fprintf(stderr,
                 "hfstatic serve: %s serves at most %lld sequences at once (exported with --sequences %lld); "
                 "--parallel %d becomes %lld\n",
                 path.c_str(), static_cast<long long>(engine->info().max_sequences),
                 static_cast<long long>(engine->info().max_sequences), s.options.parallel,
                 static_cast<long long>(engine->info().max_sequences));
  if (s.options.before_serving) HFS_TRY(s.options.before_serving(*engine));
  Scheduler::Options so;
  so.parallel = s.options.parallel;
  so.max_queue = s.options.max_queue;
  so.step_delay_ms = s.options.step_delay_ms;
  if (!s.options.cache_dir.empty()) {
    HFS_ASSIGN_OR_RETURN(DiskPromptCache disk, DiskPromptCache::open(*engine, s.options.cache_dir, s.options.cache_size));
    std::fprintf(stderr, "hfstatic serve: prompt cache on disk: %s, %zu conversations, %llu of %llu bytes\n",
                 s.options.cache_dir.c_str(), disk.size(), static_cast<unsigned long long>(disk.bytes()),
                 static_cast<unsigned long long>(s.options.cache_size));
    so.disk = std::make_shared<DiskPromptCache>(std::move(disk));
  }
  s.scheduler = std::make_unique<Scheduler>(std::move(engine), so, s.metrics);
  return Ok{};
}

// Stops the HTTP layer: new connections end, open ones are woken and get kHttpGrace to end. A thread still
// inside a handler past it (it cannot be: every job has ended by now) would outlive State, so the process
// ends here rather than return under it.
constexpr double kHttpGrace = 2.0;
void stop_listener(HttpServer& http, std::thread& listener) {
  const int left = http.stop(kHttpGrace);
  listener.join();
  if (left > 0) {
    std::fprintf(stderr, "hfstatic serve: %d connections did not end within %.0f s; exiting anyway\n", left, kHttpGrace);
    std::fflush(stderr);
    ::_exit(0);
  }
}

}  // namespace

int run_server(const ServerOptions& options, const std::string& program, const std::string& model_id) {
  // Signals go to a sigwait() below, never to a handler thread: block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  State s;
  s.options = options;
  s.grammars.set_capacity(static_cast<size_t>(options.grammar_cache), options.grammar_cache_bytes);
  s.model_id = model_id;
  HttpServerOptions ho;
  ho.limits.max_body_bytes = options.max_body_bytes;
  ho.read_timeout_s = options.read_timeout_s;
  ho.max_connections = options.max_connections;
  HttpServer http(
      ho, [&s](const HttpRequest& req, HttpResponse& res) { handle_request(s, req, res); },
      [&s](const HttpRequest& req, const HttpResponse& res) { log_request(s, req, res); },
      [&s](int status, const std::string& message, HttpResponse& res) { error_response(s, status, message, res); });
  Result<int> bound = http.bind(options.host, options.port);
  if (!bound) {
    std::fprintf(stderr, "hfstatic serve: %s (in use, or not an address of this machine)\n", bound.error().message().c_str());
    return 1;
  }
  const int port = *bound;
  std::fprintf(stderr, "hfstatic serve: listening on http://%s:%d\n", options.host.c_str(), port);
  std::thread listener([&] { http.run(); });

  if (Status st = load(s, program); !st) {
    std::fprintf(stderr, "hfstatic serve: %s\n", st.error().to_string().c_str());
    stop_listener(http, listener);
    return 1;
  }
  s.phase = Phase::kReady;
  std::fprintf(stderr, "hfstatic serve: ready: %s, %d sequences at once, context %lld\n", model_id.c_str(),
               s.scheduler->parallel(), static_cast<long long>(s.scheduler->info().context_length));

  int sig = 0;
  sigwait(&signals, &sig);
  std::fprintf(stderr, "hfstatic serve: %s: draining (in-flight requests get %.0f s)\n",
               sig == SIGTERM ? "SIGTERM" : "SIGINT", options.drain_s);
  s.phase = Phase::kDraining;
  s.scheduler->drain(options.drain_s);
  stop_listener(http, listener);
  std::fprintf(stderr, "hfstatic serve: stopped\n");
  return 0;
}

}  // namespace hfs::server
