#include "server/scheduler.h"

#include <pthread.h>

#include <cstdio>
#include <optional>

namespace hfs::server {

bool Job::wait(size_t seen, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> l(mu);
  cv.wait_for(l, timeout, [&] { return done || tokens.size() > seen; });
  return !(done && tokens.size() <= seen);
}

Scheduler::Scheduler(std::unique_ptr<Engine> engine, const Options& options, Metrics& metrics)
    : engine_(std::move(engine)), options_(options), metrics_(metrics) {
  const ModelInfo& info = engine_->info();
  options_.parallel = static_cast<int>(std::min<int64_t>(options_.parallel, info.max_sequences));
  const int64_t blocks = engine_->io().free_blocks();  // all of them: nothing runs yet
  if (blocks > 0 && info.pool_slots < info.max_sequences * info.context_length) {
    const int64_t block = std::max<int64_t>(1, info.pool_slots / blocks);
    blocks_per_sequence_step_ = (info.prefill_tokens + block - 1) / block + 1;
  }
  publish_gauges();
  thread_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() {
  {
    std::lock_guard<std::mutex> l(mu_);
    shutdown_ = stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Scheduler::Admission Scheduler::submit(std::shared_ptr<Job> job) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (draining_) return Admission::kDraining;
    if (static_cast<int>(queue_.size()) >= options_.max_queue) return Admission::kQueueFull;
    queue_.push_back(std::move(job));
    ++active_;
  }
  cv_.notify_all();
  return Admission::kQueued;
}

Scheduler::Admission Scheduler::submit(const std::vector<std::shared_ptr<Job>>& jobs) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (draining_) return Admission::kDraining;
    if (queue_.size() + jobs.size() > static_cast<size_t>(options_.max_queue)) return Admission::kQueueFull;
    for (const auto& j : jobs) queue_.push_back(j), ++active_;
  }
  cv_.notify_all();
  return Admission::kQueued;
}

// A sibling choice waits while its first choice is queued or prefilling: forking it then shares the
// prompt's cache blocks. Once the first has a token (its prompt is in the caches) or has ended, it goes.
bool Scheduler::waits_for_parent(const Job& job) {
  if (!job.fork_of) return false;
  std::lock_guard<std::mutex> l(job.fork_of->mu);
  return !job.fork_of->done && job.fork_of->tokens.empty();
}

struct Scheduler::AloneTask {
  std::function<Result<std::string>(Engine&)> f;
  std::mutex mu;
  std::condition_variable cv;
  std::optional<Result<std::string>> result;
};

Result<std::string> Scheduler::run_alone(const std::function<Result<std::string>(Engine&)>& f) {
  std::lock_guard<std::mutex> one(alone_callers_);
  auto task = std::make_shared<AloneTask>();
  task->f = f;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (draining_ || stop_) return make_error(ErrorCode::kCancelled, "the server is shutting down");
    alone_ = task;
  }
  cv_.notify_all();
  std::unique_lock<std::mutex> l(task->mu);
  task->cv.wait(l, [&] { return task->result.has_value(); });
  return std::move(*task->result);
}

void Scheduler::finish_alone(AloneTask& task, Result<std::string> result) {
  {
    std::lock_guard<std::mutex> l(task.mu);
    task.result = std::move(result);
  }
  task.cv.notify_all();
}

void Scheduler::drain(double seconds) {
  {
    std::lock_guard<std::mutex> l(mu_);
    draining_ = true;
  }
  const Clock::time_point until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  while (active_.load() > 0 && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  {
    std::lock_guard<std::mutex> l(mu_);
    shutdown_ = stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Scheduler::end_job(Job& job, Job::End end, const std::string& error) {
  {
    std::lock_guard<std::mutex> l(job.mu);
    job.done = true;
    job.end = end;
    job.error = error;
  }
  job.cv.notify_all();
  if (end == Job::End::kCancelled || end == Job::End::kTimeout || end == Job::End::kShutdown) metrics_.count_cancelled();
  --active_;
}

void Scheduler::publish_gauges() {
  size_t queued;
  {
    std::lock_guard<std::mutex> l(mu_);
    queued = queue_.size();
  }
  metrics_.set_gauges(static_cast<int64_t>(queued), static_cast<int64_t>(running_.size()),
                      static_cast<int64_t>(cache_.size()), options_.parallel);
  metrics_.set_drafts(engine_->stats().draft_tokens, engine_->stats().draft_accepted);
}

// A new sequence for the job: forked from the kept sequence sharing the longest prefix, else added. Kept
// sequences give up their index (least recently used first) when running + kept would pass max_sequences.
void Scheduler::admit(const std::shared_ptr<Job>& job) {
  const int64_t total = engine_->info().max_sequences;
  auto room = [&] { return static_cast<int64_t>(running_.size() + cache_.size()) < total; };
  auto drop = [&](SequenceId id) { (void)engine_->remove(id); };
  std::optional<PromptCache::Match> m = cache_.best(job->prompt);
  while (!room()) {
    std::optional<SequenceId> victim = cache_.evict(m ? m->id : -1);
    if (!victim) break;
    drop(*victim);
  }
  if (m && !room()) {  // the match itself must go to make room: no reuse
    cache_.forget(m->id);
    drop(m->id);
    m.reset();
  }
  Result<SequenceId> id = make_error(ErrorCode::kInternal, "unset");
  int64_t cached = 0;
  const Job* parent = job->fork_of.get();
  if (parent && parent->sequence >= 0 && running_.count(parent->sequence) && room()) {
    // n > 1: the first choice's prompt, all but its last token shared (that token is fed again to give
    // this choice its own logits and sampler).
    const int64_t prefix = static_cast<int64_t>(job->prompt.size()) - 1;
    if (prefix > 0) {
      id = engine_->fork(parent->sequence, prefix, std::span<const int32_t>(job->prompt).subspan(static_cast<size_t>(prefix)),
                         job->config);
      if (id) cached = prefix;
    }
  }
  if (!id && options_.disk && room()) {
    // The disk tier: a saved conversation this prompt continues, longer than any kept in memory, restored
    // into the job's own sequence (no fork: it works with one sequence too).
    std::optional<DiskPromptCache::Match> d = options_.disk->best(job->prompt);
    if (d && (!m || d->length > m->length)) {
      Result<SequenceId> rid = engine_->restore_session(d->path);
      if (!rid) {
        options_.disk->forget(d->path);
      } else if (Status st = engine_->append(*rid, std::span<const int32_t>(job->prompt).subspan(static_cast<size_t>(d->length)), job->config); !st) {
        drop(*rid);
      } else {
        options_.disk->touch(d->path);
        id = *rid;
        cached = d->length;
      }
    }
  }
  if (!id && m) {
    const std::span<const int32_t> rest = std::span<const int32_t>(job->prompt).subspan(static_cast<size_t>(m->length));
    id = engine_->fork(m->id, m->length, rest, job->config);
    if (id) {
      cached = m->length;
      // A sequence wholly contained in the new one is of no further use.
      if (m->length == m->held) cache_.forget(m->id), drop(m->id);
      else cache_.touch(m->id);
    }
  } else if (!id) {
    id = engine_->add(job->prompt, job->config);
  }
  if (!id) {
    end_job(*job, Job::End::kError, id.error().to_string());
    return;
  }
  {
    std::lock_guard<std::mutex> l(job->mu);
    job->started = true;
    job->cached_tokens = cached;
  }
  job->sequence = *id;
  if (job->top_logprobs >= 0 && job->config.constraint)
    job->logprob_constraint = std::make_unique<TokenConstraint>(job->config.constraint, job->config.constraint_vocab);
  running_[*id] = Running{job, Clock::now()};
}

void Scheduler::free_pool_for_running() {
  if (blocks_per_sequence_step_ == 0) return;
  const int64_t want = static_cast<int64_t>(running_.size()) * blocks_per_sequence_step_;
  while (engine_->io().free_blocks() < want) {
    std::optional<SequenceId> victim = cache_.evict();
    if (!victim) return;
    (void)engine_->remove(*victim);
  }
}

void Scheduler::drop_cancelled() {
  const Clock::time_point now = Clock::now();
  for (auto it = running_.begin(); it != running_.end();) {
    Job& job = *it->second.job;
    const bool timed_out = now >= job.deadline;
    if (job.cancel.load() || timed_out) {
      (void)engine_->remove(it->first);
      end_job(job, timed_out ? Job::End::kTimeout : Job::End::kCancelled);
      it = running_.erase(it);
    } else {
      ++it;
    }
  }
}

void Scheduler::on_event(const StepEvent& ev, Clock::time_point now) {
  auto it = running_.find(ev.sequence);
  if (it == running_.end()) return;
  Job& job = *it->second.job;
  if (ev.token >= 0 && job.top_logprobs >= 0) record_logprobs(job, ev.sequence, ev.token);
  if (ev.token >= 0) {
    bool first;
    {
      std::lock_guard<std::mutex> l(job.mu);
      first = job.tokens.empty();
      job.tokens.push_back(ev.token);
    }
    job.cv.notify_all();
    const double since = std::chrono::duration<double>(now - (first ? job.arrived : it->second.last_token)).count();
    first ? metrics_.observe_ttft(since) : metrics_.observe_token_gap(since);
    it->second.last_token = now;
  }
  if (!ev.finished) return;
  Result<SequenceInfo> info = engine_->sequence(ev.sequence);
  const SequenceStop why = info ? info->stop : SequenceStop::kError;
  if (why == SequenceStop::kError) {
    (void)engine_->remove(ev.sequence);
    end_job(job, Job::End::kError, info ? info->error : info.error().to_string());
  } else {
    // Kept for the prompt cache: the tokens its caches hold (the prompt, then every generated token fed).
    std::vector<int32_t> held = job.prompt;
    {
      std::lock_guard<std::mutex> l(job.mu);
      held.insert(held.end(), job.tokens.begin(), job.tokens.end());
    }
    held.resize(static_cast<size_t>(std::min<int64_t>(info->length, static_cast<int64_t>(held.size()))));
    if (options_.disk) options_.disk->store(*engine_, ev.sequence, held);
    cache_.keep(ev.sequence, std::move(held));
    end_job(job, why == SequenceStop::kStopToken ? Job::End::kStop : Job::End::kLength);
  }
  running_.erase(it);
}

// The token's log probabilities from the logits it was sampled from (the job runs without drafts, so
// this step's logits for its sequence are those). Before the token is published: a reader sees both at once.
void Scheduler::record_logprobs(Job& job, SequenceId id, int32_t token) {
  const std::span<const float> logits = engine_->logits(id);
  std::vector<int32_t> history = job.prompt;
  {
    std::lock_guard<std::mutex> l(job.mu);
    history.insert(history.end(), job.tokens.begin(), job.tokens.end());
  }
  std::span<const uint8_t> allowed;
  if (job.logprob_constraint) {
    job.logprob_mask.resize(logits.size());
    (void)job.logprob_constraint->compute_mask(job.logprob_mask);
    allowed = job.logprob_mask;
    (void)job.logprob_constraint->accept(token);  // the engine's own matcher took it: it was allowed
  }
  TokenLogprobs lp = logits.empty() ? TokenLogprobs{token, 0.0f, {}}
                                    : token_logprobs(logits, history, job.config.sampling, allowed, token, job.top_logprobs,
                                                     job.logprob_scratch);
  std::lock_guard<std::mutex> l(job.mu);
  job.logprobs.push_back(std::move(lp));
}

void Scheduler::loop() {
  // The thread that runs the engine's steps (with the backend's pool workers, "hfs-pool"): bench/serve
  // counts the server's other threads — HTTP, JSON, SSE — by their CPU time.
  pthread_setname_np(pthread_self(), "hfs-step");
  for (;;) {
    std::vector<std::shared_ptr<Job>> admit_now, expired, shut;
    std::shared_ptr<AloneTask> alone;
    bool shutting;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [&] { return stop_ || alone_ || !queue_.empty() || !running_.empty(); });
      shutting = shutdown_;
      if (shutting) {
        shut.assign(queue_.begin(), queue_.end());
        queue_.clear();
        alone = std::move(alone_);
      } else {
        alone = alone_;
      }
      const Clock::time_point now = Clock::now();
      for (auto it = queue_.begin(); it != queue_.end();) {
        if ((*it)->cancel.load() || now >= (*it)->deadline) {
          expired.push_back(*it);
          it = queue_.erase(it);
        } else {
          ++it;
        }
      }
      // A run_alone call waits for the running requests; nothing new starts meanwhile.
      for (auto it = queue_.begin();
           !alone && it != queue_.end() && static_cast<int>(running_.size() + admit_now.size()) < options_.parallel;) {
        if (waits_for_parent(**it)) {
          ++it;
          continue;
        }
        admit_now.push_back(*it);
        it = queue_.erase(it);
      }
      if (stop_ && !alone && queue_.empty() && running_.empty() && admit_now.empty() && expired.empty() && shut.empty())
        break;
    }
    if (alone && shutting) finish_alone(*alone, make_error(ErrorCode::kCancelled, "the server is shutting down"));
    for (auto& j : shut) end_job(*j, Job::End::kShutdown);
    for (auto& j : expired) end_job(*j, j->cancel.load() ? Job::End::kCancelled : Job::End::kTimeout);
    if (shutting) {
      for (auto& [id, r] : running_) {
        (void)engine_->remove(id);
        end_job(*r.job, Job::End::kShutdown);
      }
      running_.clear();
      for (auto& j : admit_now) end_job(*j, Job::End::kShutdown);
      publish_gauges();
      continue;
    }
    for (auto& j : admit_now) admit(j);
    drop_cancelled();
    free_pool_for_running();
    publish_gauges();
    if (alone && running_.empty()) {
      while (std::optional<SequenceId> kept = cache_.evict()) (void)engine_->remove(*kept);
      Result<std::string> result = alone->f(*engine_);
      {
        std::lock_guard<std::mutex> l(mu_);
        alone_.reset();
      }
      finish_alone(*alone, std::move(result));
      publish_gauges();
      continue;
    }
    if (running_.empty()) continue;
    if (engine_->idle()) {  // cannot happen (every running sequence has work); never spin on it
      for (auto& [id, r] : running_) (void)engine_->remove(id), end_job(*r.job, Job::End::kError, "the engine had no work for it");
      running_.clear();
      continue;
    }
    Result<std::span<const StepEvent>> events = engine_->step();
    if (!events) {
      // The program itself failed: every running request ends with the error; later steps would fail too.
      std::fprintf(stderr, "hfstatic serve: step failed: %s\n", events.error().to_string().c_str());
      for (auto& [id, r] : running_) end_job(*r.job, Job::End::kError, events.error().to_string());
      running_.clear();
      continue;
    }
    const Clock::time_point now = Clock::now();
    for (const StepEvent& ev : *events) on_event(ev, now);
    publish_gauges();
    if (options_.step_delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(options_.step_delay_ms));
  }
}

}  // namespace hfs::server
