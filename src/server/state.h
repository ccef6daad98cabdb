// server/state.h — what every route handler shares: options, metrics, the model (tokenizer, chat
// template, scheduler) once loaded, and the server's phase (what /health answers).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "hfstatic/chat_template.h"
#include "hfstatic/constraint.h"
#include "hfstatic/tokenizer.h"
#include "server/grammar_cache.h"
#include "server/metrics.h"
#include "server/options.h"
#include "server/scheduler.h"

namespace hfs::server {

enum class Phase : uint8_t { kLoading, kReady, kDraining };

struct State {
  ServerOptions options;
  std::string model_id;  // what /v1/models lists and responses name
  Metrics metrics;
  std::atomic<Phase> phase{Phase::kLoading};
  // Set once while loading, before phase becomes kReady; read-only afterwards.
  std::shared_ptr<const Tokenizer> tokenizer;
  std::optional<ChatTemplate> chat_template;  // nullopt: the program has none (messages are joined)
  std::string bos_token, eos_token;           // the template's variables
  std::unique_ptr<Scheduler> scheduler;
  std::atomic<uint64_t> next_id{1};
  GrammarCache grammars;  // sized from options.grammar_cache when the server starts
  // The program's vocabulary as constraints mask it, built by the first constrained request on its own
  // thread (not lazily by the engine on the step thread, where it would pause every running sequence).
  std::mutex constraint_vocab_mu;
  std::shared_ptr<const TokenVocabulary> constraint_vocab;
};

}  // namespace hfs::server
