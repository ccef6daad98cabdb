// `hfstatic serve`: an OpenAI-compatible HTTP server with continuous batching, prompt caching and a web
// chat page (src/server/, docs/server.md).
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <thread>
#include <functional>
#include <nlohmann/json.hpp>

#include "backend_settings.h"
#include "bench_sequences.h"
#include "cli.h"
#include "common.h"
#include "hfstatic/export.h"
#include "option_checks.h"
#include "sampling_options.h"
#include "server/server.h"

namespace hfs::cli {
namespace {

// --self-bench: the engine's in-process figures, measured on the server's own engine before it serves.
struct SelfBench {
  std::string counts;  // "B1,B2,..." (empty: none)
  int prompt = 64, gen = 64, reps = 1;
  bool endpoint = false;  // --bench-endpoint: POST /bench/engine
};

// The before_serving hook that runs `bench --sequences` on the server's engine and prints its JSON object as
// one line {"self_bench": {...}} on stdout; a count over the program's sequences or a prompt + gen over its
// context stops the server before it listens, naming them.
std::function<Status(Engine&)> self_bench_hook(const SelfBench& sb, const std::vector<int32_t>& counts) {
  SequencesBench b;
  b.counts.assign(counts.begin(), counts.end());
  b.prompt = sb.prompt;
  b.gen = sb.gen;
  b.reps = sb.reps;
  return [b](Engine& e) -> Status {
    std::fprintf(stderr, "hfstatic serve: --self-bench: timing the engine in-process before serving\n");
    auto measured = measure_sequences(e, b);
    if (!measured) return measured.error().with_context("--self-bench");
    std::printf("%s\n", nlohmann::json({{"self_bench", *measured}}).dump().c_str());
    std::fflush(stdout);
    return Ok{};
  };
}

// POST /bench/engine's body {"sequences": [B1, ...], "prompt": N, "gen": M, "reps": R} (prompt and gen
// default to 64, reps to 1) → `bench --sequences`' JSON object, measured on the server's engine.
Result<std::string> bench_engine(Engine& e, const std::string& body) {
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return Error(ErrorCode::kInvalidArgument, "/bench/engine: the body must be a JSON object");
  auto count = [&](const char* key, int fallback, int most) -> Result<int> {
    if (!j.contains(key)) return fallback;
    const nlohmann::json& v = j[key];
    if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > most)
      return Error(ErrorCode::kInvalidArgument, std::string("/bench/engine: '") + key + "' must be an integer in [1, " +
                                                    std::to_string(most) + "], got " + v.dump());
    return static_cast<int>(v.get<int64_t>());
  };
  SequencesBench b;
  const auto it = j.find("sequences");
  if (it == j.end() || !it->is_array() || it->empty())
    return Error(ErrorCode::kInvalidArgument, "/bench/engine: 'sequences' must be a non-empty array of counts");
  for (const nlohmann::json& c : *it) {
    if (!c.is_number_integer() || c.get<int64_t>() < 1 || c.get<int64_t>() > INT32_MAX)
      return Error(ErrorCode::kInvalidArgument, "/bench/engine: 'sequences' must hold positive integers, got " + c.dump());
    b.counts.push_back(static_cast<int>(c.get<int64_t>()));
  }
  HFS_ASSIGN_OR_RETURN(b.prompt, count("prompt", 64, INT32_MAX));
  HFS_ASSIGN_OR_RETURN(b.gen, count("gen", 64, INT32_MAX));
  HFS_ASSIGN_OR_RETURN(b.reps, count("reps", 1, 100));
  HFS_ASSIGN_OR_RETURN(nlohmann::json measured, measure_sequences(e, b));
  return measured.dump();
}

int serve(server::ServerOptions o, const SelfBench& sb, bool api_key_given) {
  // An empty key would be no key at all: the server would run open while the operator meant it closed.
  if (api_key_given && o.api_key.empty())
    return usage_error("serve", "--api-key: the key is empty (leave the option out to serve without authentication)");
  o.threads = capped_threads("serve", o.threads);
  if (auto checked = backend_options(o.backends, o.threads, o.device); !checked)
    return usage_error("serve", checked.error().message());
  if (sb.endpoint) o.bench_engine = bench_engine;
  if (!sb.counts.empty()) {
    auto counts = parse_count_list(sb.counts);
    if (!counts)
      return usage_error("serve", "--self-bench: expected positive integers separated by commas (e.g. 1,4,8), got '" +
                                      sb.counts + "'");
    o.before_serving = self_bench_hook(sb, *counts);
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  // A checkpoint directory is exported (once, cached) with one sequence per --parallel slot.
  ExportOptions eo;
  eo.sequences = std::max(1, o.parallel);
  auto program = resolve_model(o.model, eo);
  if (!program) return fail(program.error());
  fs::path p(o.model);
  if (p.filename().empty()) p = p.parent_path();
  const std::string id = fs::is_directory(o.model, ec) ? p.filename().string() : p.stem().string();
  return server::run_server(o, *program, id);
}

RunFn setup(CLI::App& sub) {
  auto o = std::make_shared<server::ServerOptions>();
  sub.add_option("-m,--model", o->model,
                 "Program file (.hfs; exported with --sequences N to serve N requests at once), or an HF checkpoint "
                 "directory or Hub name ORG/NAME[@REVISION] (downloaded into the Hugging Face cache; exported once to a "
                 "cached program with --sequences = --parallel)")
      ->required();
  sub.add_option("--host", o->host, "Address to listen on (loopback by default; 0.0.0.0 for every interface)")
      ->capture_default_str();
  sub.add_option("--port", o->port, "TCP port, an integer in [0, 65535] (0: any free port, printed when listening)")
      ->capture_default_str()
      ->transform(integer_in(0, 65535, "an integer in [0, 65535]"));
  sub.add_option("--parallel", o->parallel,
                 "Requests generating at once, an integer in [1, 1024] (at most the program's --sequences)")
      ->capture_default_str()
      ->transform(integer_in(1, 1024, "an integer in [1, 1024]"));
  CLI::Option* api_key = sub.add_option("--api-key", o->api_key,
                                        "Require 'Authorization: Bearer KEY' on every endpoint but / and /health "
                                        "(default: none; an empty KEY is an error)");
  sub.add_option("--max-queue", o->max_queue,
                 "Requests waiting for a free sequence, an integer in [0, 100000]; one more is answered 429 with "
                 "Retry-After")
      ->capture_default_str()
      ->transform(integer_in(0, 100000, "an integer in [0, 100000]"));
  sub.add_option("--max-tokens-cap", o->max_tokens_cap,
                 "The most tokens one request generates, an integer >= 1 (a larger max_tokens is clamped; generation "
                 "also ends at the context's end)")
      ->capture_default_str()
      ->transform(integer_in(1, INT32_MAX, "an integer in [1, 2147483647]"));
  sub.add_option("--timeout", o->timeout_s,
                 "Seconds a request may take from arrival, a number > 0: still queued → 503, generating → ends with "
                 "finish_reason \"length\"")
      ->capture_default_str()
      ->transform(float_where([](float v) { return v > 0; }, "a number > 0"));
  sub.add_option("--max-body", o->max_body_bytes, "The largest request body in bytes; larger → 413")
      ->capture_default_str()
      ->transform(integer_in(1, INT32_MAX, "an integer in [1, 2147483647]"));
  sub.add_option("--read-timeout", o->read_timeout_s,
                 "Seconds a request's head and body may take to arrive whole (slower → 408 and the connection "
                 "closed); also how long an idle keep-alive connection is kept, a number > 0")
      ->capture_default_str()
      ->transform(float_where([](float v) { return v > 0 && v <= 86400; }, "a number in (0, 86400]"));
  sub.add_option("--max-connections", o->max_connections,
                 "Open connections at once (each one a thread), an integer in [1, 65536]; one more is answered 503 "
                 "with Retry-After and closed")
      ->capture_default_str()
      ->transform(integer_in(1, 65536, "an integer in [1, 65536]"));
  sub.add_option("--drain", o->drain_s,
                 "Seconds in-flight requests get to finish after SIGTERM/SIGINT before they are cancelled, a number >= 0; "
                 "every connection is then closed and the process exits within 2 s more, whatever its clients do")
      ->capture_default_str()
      ->transform(float_where([](float v) { return v >= 0; }, "a number >= 0"));
  sub.add_option("--step-delay-ms", o->step_delay_ms,
                 "A pause after every engine step in milliseconds (to try clients against a slow model), an integer "
                 "in [0, 10000]")
      ->capture_default_str()
      ->transform(integer_in(0, 10000, "an integer in [0, 10000]"));
  sub.add_option("--grammar-cache", o->grammar_cache,
                 "Compiled response_format grammars kept for later requests with the same schema (least recently "
                 "used dropped first), an integer in [0, 100000]; 0 compiles every request's")
      ->capture_default_str()
      ->transform(integer_in(0, 100000, "an integer in [0, 100000]"));
  sub.add_option("--grammar-cache-bytes", o->grammar_cache_bytes,
                 "The bytes the cached grammars may hold together (least recently used dropped first; a grammar "
                 "larger than this is compiled for its request and not kept), an integer >= 0")
      ->capture_default_str()
      ->transform(integer_in(0, INT64_MAX, "an integer >= 0"));
  sub.add_option("--cache-dir", o->cache_dir,
                 "Keep finished conversations' prompt caches on disk in this directory (session files, "
                 "docs/sessions.md): a later request continuing one, also after a restart, restores it instead of "
                 "prefilling; files of another program are left alone")
      ->type_name("DIR");
  sub.add_option("--cache-size", o->cache_size,
                 "The bytes the --cache-dir files may take together (least recently used removed first), an integer >= 0")
      ->capture_default_str()
      ->transform(integer_in(0, INT64_MAX, "an integer >= 0"));
  add_draft_options(sub, o->draft);
  sub.add_option("--chat-template", o->chat_template,
                 "The chat format of /v1/chat/completions: the program's template by default, or \"plain\" (the "
                 "messages' contents one per line) for a program without one; or plain, chatml, a name from the "
                 "program's list of templates (e.g. tool_use), or a file of Jinja source or a tokenizer_config.json "
                 "(as chat's)")
      ->type_name("NAME|FILE");
  add_llama_cli_refusals(sub);
  sub.add_option("--backend", o->backends, "Backends in priority order")->capture_default_str()->check(backend_name());
  add_threads_option(sub, o->threads);
  add_device_option(sub, o->device);
  sub.footer(
      "Endpoints: POST /v1/chat/completions, /v1/completions (OpenAI's, streaming with \"stream\": true), "
      "/tokenize, /detokenize (and /bench/engine with --bench-endpoint); GET /v1/models, /health (200 ready, 503 "
      "loading or draining), /metrics "
      "(Prometheus), and the chat page at /. SIGTERM or SIGINT: stop accepting, let in-flight requests finish "
      "(--drain), exit 0. docs/server.md has the details.\n" +
      std::string(kExitStatusHelp));
  auto sb = std::make_shared<SelfBench>();
  CLI::Option* self = sub.add_option(
      "--self-bench", sb->counts,
      "Before serving, time the engine in-process on this server's own engine, as `hfstatic bench --sequences` "
      "does: counts B separated by commas, each at most --parallel's program sequences; prints one JSON line "
      "{\"self_bench\": ...} on stdout, then serves");
  sub.add_option("--self-bench-prompt", sb->prompt, "--self-bench: prompt tokens per sequence, an integer >= 1")
      ->capture_default_str()
      ->needs(self)
      ->transform(integer_in(1, INT32_MAX, "an integer >= 1"));
  sub.add_option("--self-bench-gen", sb->gen, "--self-bench: tokens each sequence generates, an integer >= 1")
      ->capture_default_str()
      ->needs(self)
      ->transform(integer_in(1, INT32_MAX, "an integer >= 1"));
  sub.add_option("--self-bench-reps", sb->reps, "--self-bench: runs per B (the median is printed), an integer in [1, 100]")
      ->capture_default_str()
      ->needs(self)
      ->transform(integer_in(1, 100, "an integer in [1, 100]"));
  sub.add_flag("--bench-endpoint", sb->endpoint,
               "Add POST /bench/engine: body {\"sequences\": [B, ...], \"prompt\": N, \"gen\": M, \"reps\": R} "
               "times this server's engine in-process as --self-bench does, between requests (running ones finish "
               "first, new ones wait, the prompt cache is emptied), and answers that JSON; bench/serve times the "
               "engine right before and after each round of requests this way. Off by default: a request holds "
               "the engine for seconds");
  return [o, sb, api_key] { return serve(*o, *sb, api_key->count() > 0); };
}

[[maybe_unused]] const bool kReg = register_command(
    {"serve", "OpenAI-compatible HTTP server: continuous batching, prompt caching, a web chat page at /", &setup});

}  // namespace
}  // namespace hfs::cli
