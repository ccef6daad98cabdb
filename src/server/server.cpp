#include "server/server.h"

#include <httplib.h>
#include <pthread.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include "hfstatic/engine.h"
#include "hfstatic/metadata_keys.h"
#include "hfstatic/program.h"
#include "server/routes.h"
#include "server/state.h"

namespace hfs::server {
namespace {

Status load(State& s, const std::string& path) {
  HFS_ASSIGN_OR_RETURN(std::shared_ptr<const Program> program, Program::load(path));
  HFS_ASSIGN_OR_RETURN(s.tokenizer, Tokenizer::from_program(*program));
  const std::string config = program->embedded_file("tokenizer_config.json");
  if (config.find("\"chat_template\"") != std::string::npos) {
    auto t = ChatTemplate::from_tokenizer_config(config);
    if (!t) return t.error().with_context(path + ": chat template");
    s.chat_template = std::move(*t);
  }
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
  s.scheduler = std::make_unique<Scheduler>(std::move(engine), so, s.metrics);
  return Ok{};
}

// httplib's stop() does nothing before the listener's loop has started: wait for it first.
void stop_listener(httplib::Server& http, std::thread& listener) {
  for (int i = 0; i < 5000 && !http.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  http.stop();
  listener.join();
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
  s.grammars.set_capacity(static_cast<size_t>(options.grammar_cache));
  s.model_id = model_id;
  httplib::Server http;
  // Enough threads for every running and queued request plus a few for /health and /metrics; a request
  // beyond the queue is answered 429 at once rather than waiting for a thread.
  const size_t threads = static_cast<size_t>(options.parallel + options.max_queue + 8);
  http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http.set_payload_max_length(options.max_body_bytes);
  http.set_keep_alive_max_count(1000);
  install_routes(http, s);

  int port = options.port;
  if (port == 0) port = http.bind_to_any_port(options.host);
  else if (!http.bind_to_port(options.host, port)) port = -1;
  if (port <= 0) {
    std::fprintf(stderr, "hfstatic serve: cannot listen on %s:%d (in use, or not an address of this machine)\n",
                 options.host.c_str(), options.port);
    return 1;
  }
  std::fprintf(stderr, "hfstatic serve: listening on http://%s:%d\n", options.host.c_str(), port);
  std::thread listener([&] { http.listen_after_bind(); });

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
