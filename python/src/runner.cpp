// hfstatic.Runner / hfstatic.Stream over hfs::Runner.
//
// Threading: every call that computes releases the GIL, then takes the runner's mutex — so a runner is
// used by one thread at a time while other Python threads keep running. Streams borrow their runner;
// any other state-changing call on the runner ends them (the epoch check), as hfs::Generation requires.
//
// Sequence semantics: the runner's sequence is everything prefilled plus everything generated. hfs::Runner
// leaves the last generated token unfed ("committed by the next call's prompt"); the binding keeps it as
// `pending` and commits it at the start of the next prefill / decode_step / generate / stream, so
// `generate(a)` then `generate(b)` continues the text exactly, and `position` counts fed tokens only.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "common.h"
#include "hfstatic/chat_template.h"
#include "hfstatic/llm_runner.h"
#include "io_allocator.h"
#include "stepper.h"

namespace hfs::py_bind {

DraftConfig draft_config(const std::optional<std::string>& draft, int32_t draft_max, const std::string& who) {
  // Anything but "none" / "ngram" names a draft program.
  std::error_code ec;
  if (draft && *draft != "ngram" && *draft != "none" && !std::filesystem::is_regular_file(*draft, ec))
    raise(ErrorCode::kInvalidArgument, who + ": draft must be None, 'none', 'ngram' or the path of a draft program (.hfs), got '" +
                                           *draft + "': no such file");
  if (draft_max < 1 || draft_max > 1024)
    raise(ErrorCode::kInvalidArgument, who + ": draft_max must be in [1, 1024], got " + std::to_string(draft_max));
  DraftConfig d;
  d.kind = !draft || *draft == "none" ? DraftKind::kNone : *draft == "ngram" ? DraftKind::kNgram : DraftKind::kProgram;
  if (d.kind == DraftKind::kProgram) d.program_path = *draft;
  d.max_tokens = draft_max;
  return d;
}
namespace {

// Ids kept to prime detokenizers, so that a piece's leading space is right after earlier text.
constexpr size_t kContextIds = 16;

struct PyRunner {
  std::shared_ptr<const Program> program;
  std::unique_ptr<Runner> runner;
  std::shared_ptr<PyTokenizer> tokenizer;  // loaded on first use (programs without one still run ids)
  std::mutex mu;
  uint64_t epoch = 0;                  // bumped by every call that changes state; a stream holds its value
  std::optional<int32_t> pending;      // generated, not yet fed
  std::vector<int32_t> context;        // last ≤ kContextIds ids of the sequence (fed + pending)

  // Back to position 0 (generate() without continue_, reset()).
  void restart() {
    runner->reset();
    pending.reset();
    context.clear();
    ++epoch;
  }
  void note(std::span<const int32_t> ids) {
    context.insert(context.end(), ids.begin(), ids.end());
    if (context.size() > kContextIds) context.erase(context.begin(), context.end() - kContextIds);
  }
  // ids with the pending token in front (what the next feed must run).
  std::vector<int32_t> with_pending(std::span<const int32_t> ids) const {
    std::vector<int32_t> all;
    all.reserve(ids.size() + 1);
    if (pending) all.push_back(*pending);
    all.insert(all.end(), ids.begin(), ids.end());
    return all;
  }
};

// Runs f() without the GIL, holding the runner's mutex.
template <typename F>
auto nogil_locked(PyRunner& r, F&& f) {
  py::gil_scoped_release nogil;
  std::lock_guard<std::mutex> lock(r.mu);
  return f();
}

PyRunner& runner_of(py::handle self) { return self.cast<PyRunner&>(); }

py::array logits_view(py::handle owner, std::span<const float> logits) {
  // [vocab] f32, a view of the runner's output buffer: the owner keeps the buffer alive, the next step
  // overwrites it. Read-only, because writing into it would corrupt nothing useful but surprise everyone.
  py::array_t<float> a({static_cast<py::ssize_t>(logits.size())}, {static_cast<py::ssize_t>(sizeof(float))},
                       logits.data(), py::reinterpret_borrow<py::object>(owner));
  a.attr("setflags")(py::arg("write") = false);
  return a;
}

std::shared_ptr<PyTokenizer> tokenizer_of(PyRunner& r) {
  if (!r.tokenizer) {
    Result<std::shared_ptr<const Tokenizer>> t = [&] {
      py::gil_scoped_release nogil;
      return Tokenizer::from_program(*r.program);
    }();
    r.tokenizer = std::make_shared<PyTokenizer>(PyTokenizer{unwrap(std::move(t))});
  }
  return r.tokenizer;
}

TailPolicy parse_tail(const std::string& s) {
  if (s == "auto") return TailPolicy::kAuto;
  if (s == "pad") return TailPolicy::kPad;
  if (s == "decode") return TailPolicy::kDecode;
  raise(ErrorCode::kInvalidArgument, "Runner: tail must be 'auto', 'pad' or 'decode', got '" + s + "'");
}

std::vector<int32_t> token_list(py::handle obj, const char* what) {
  try {
    return obj.cast<std::vector<int32_t>>();
  } catch (const py::cast_error&) {
    raise(ErrorCode::kInvalidArgument, std::string(what) + " must be a sequence of int token ids (int32), got " +
                                           std::string(py::str(py::type::of(obj).attr("__name__"))));
  }
}

struct GenerateArgs {
  GenerationConfig config;
  std::vector<std::string> stop_strings;
  bool continue_ = false;  // continue the runner's sequence instead of starting from the prompt
};

GenerateArgs generate_args(int32_t max_new_tokens, float temperature, int32_t top_k, float top_p, float min_p,
                           float repetition_penalty, uint64_t seed, const py::object& stop, bool ignore_eos,
                           const std::optional<std::string>& draft, int32_t draft_max, const py::object& grammar,
                           const py::object& json_schema, const py::object& regex, bool json_object,
                           const py::object& logit_bias) {
  auto bad = [](const std::string& msg) { raise(ErrorCode::kInvalidArgument, "generate: " + msg); };
  if (max_new_tokens < 0) bad("max_new_tokens must be >= 0, got " + std::to_string(max_new_tokens));
  GenerateArgs a;
  a.config.max_new_tokens = max_new_tokens;
  a.config.ignore_eos = ignore_eos;
  a.config.sampling = {temperature, top_k, top_p, min_p, repetition_penalty, seed};
  a.config.sampling.logit_bias = logit_bias_of(logit_bias, "generate");
  // The library's ranges (Runner::start checks them too), before anything is encoded or run.
  if (Status st = validate(a.config.sampling); !st) raise(st.error().with_context("generate"));
  // A draft program is loaded, and its tokenizer checked, by the first generate() that uses it; the runner
  // keeps it for the next ones.
  a.config.draft = draft_config(draft, draft_max, "generate");
  a.config.constraint = constraint_of(grammar, json_schema, regex, json_object, "generate");
  if (stop.is_none()) return a;
  auto add = [&](py::handle item) {
    if (py::isinstance<py::str>(item)) {
      std::string s = item.cast<std::string>();
      if (s.empty()) bad("stop strings must not be empty");
      a.stop_strings.push_back(std::move(s));
    } else if (py::isinstance<py::int_>(item) && !py::isinstance<py::bool_>(item)) {
      a.config.stop_tokens.push_back(item.cast<int32_t>());
    } else {
      bad("stop items must be str (stop strings) or int (stop token ids), got " +
          std::string(py::str(py::type::of(item).attr("__name__"))));
    }
  };
  if (py::isinstance<py::str>(stop) || py::isinstance<py::int_>(stop)) {
    add(stop);
  } else if (py::isinstance<py::iterable>(stop)) {
    for (py::handle item : stop) add(item);
  } else {
    bad("stop must be None, a str, an int or a list of them, got " +
        std::string(py::str(py::type::of(stop).attr("__name__"))));
  }
  return a;
}

// One generation over a runner: what stream() returns and generate() drains.
struct PyStream {
  std::shared_ptr<PyRunner> runner;
  std::unique_ptr<Stepper> stepper;
  uint64_t epoch = 0;
  bool text = false;
  size_t noted = 0;  // stepper tokens already recorded in runner->context

  // One step; the caller holds the runner's mutex (and not the GIL). Sets `piece` or `token`, neither at
  // the end.
  Status step_locked(std::optional<std::string>& piece, std::optional<int32_t>& token) {
    PyRunner& r = *runner;
    if (r.epoch != epoch) {
      if (stepper->done()) return Ok{};
      return make_error(ErrorCode::kInvalidArgument,
                        "stream: the runner was used by another call since this stream started; start a new one");
    }
    if (text) {
      HFS_ASSIGN_OR_RETURN(auto s, stepper->step_text());
      piece = std::move(s);
    } else {
      HFS_ASSIGN_OR_RETURN(auto t, stepper->step_token());
      token = t;
    }
    // Generation holds the last returned token unfed; the runner commits it if the stream is abandoned.
    const auto& toks = stepper->tokens();
    if (noted < toks.size()) {
      r.note(std::span<const int32_t>(toks).subspan(noted));
      noted = toks.size();
      r.pending = toks.back();
    }
    return Ok{};
  }

  py::object next() {
    std::optional<std::string> piece;
    std::optional<int32_t> token;
    check(nogil_locked(*runner, [&] { return step_locked(piece, token); }));
    if (piece) return py::str(*piece);
    if (token) return py::int_(*token);
    return py::none();
  }
};

// What a prompt turns into before the runner is touched (tokenizing needs no lock).
struct Prepared {
  bool text = false;
  std::vector<int32_t> ids;
  std::shared_ptr<const Tokenizer> tokenizer;  // text mode
};

Prepared prepare(PyRunner& r, const py::object& prompt, const GenerateArgs& args, std::optional<bool> add_special) {
  Prepared p;
  p.text = py::isinstance<py::str>(prompt);
  if (!p.text) {
    p.ids = token_list(prompt, "prompt (when not a str)");
    if (!args.stop_strings.empty())
      raise(ErrorCode::kInvalidArgument, "generate: stop strings need a str prompt (token prompts return ids)");
    return p;
  }
  p.tokenizer = tokenizer_of(r)->tokenizer;
  const std::string s = prompt.cast<std::string>();
  // BOS (the post-processor's specials) only at the very start of the sequence.
  const bool specials = add_special ? *add_special
                        : !args.continue_ ? true
                                          : nogil_locked(r, [&] { return r.runner->position() == 0 && !r.pending; });
  Result<std::vector<int32_t>> enc = [&] {
    py::gil_scoped_release nogil;
    return p.tokenizer->encode(s, specials);
  }();
  p.ids = unwrap(std::move(enc));
  return p;
}

// Prefills (pending token + prompt) and sets up the stepper; the caller holds the runner's mutex.
Status start_locked(PyStream& stream, const Prepared& p, const GenerateArgs& args) {
  PyRunner& r = *stream.runner;
  if (!args.continue_) {
    if (p.ids.empty())
      return make_error(ErrorCode::kInvalidArgument,
                        "generate: empty prompt: each call starts from its prompt; pass continue_=True to continue the "
                        "runner's sequence");
    r.restart();
  }
  std::vector<int32_t> feed = r.with_pending(p.ids);
  HFS_ASSIGN_OR_RETURN(auto gen, r.runner->start(feed, args.config));
  ++r.epoch;
  r.pending.reset();
  r.note(p.ids);
  stream.epoch = r.epoch;
  stream.text = p.text;
  stream.stepper = std::make_unique<Stepper>(std::move(gen), p.text ? p.tokenizer : nullptr,
                                             r.runner->info().eos_token_ids, args.config, args.stop_strings,
                                             r.context);
  return Ok{};
}

std::shared_ptr<PyStream> new_stream(const py::object& self) {
  auto stream = std::make_shared<PyStream>();
  stream->runner = self.cast<std::shared_ptr<PyRunner>>();
  return stream;
}

std::shared_ptr<PyStream> stream(const py::object& self, const py::object& prompt, const GenerateArgs& args,
                                 std::optional<bool> add_special) {
  PyRunner& r = runner_of(self);
  Prepared p = prepare(r, prompt, args, add_special);
  std::shared_ptr<PyStream> s = new_stream(self);
  check(nogil_locked(r, [&] { return start_locked(*s, p, args); }));
  return s;
}

py::object generate(const py::object& self, const py::object& prompt, const GenerateArgs& args,
                    std::optional<bool> add_special) {
  PyRunner& r = runner_of(self);
  Prepared p = prepare(r, prompt, args, add_special);
  std::shared_ptr<PyStream> s = new_stream(self);
  std::string text;
  std::vector<int32_t> ids;
  bool interrupted = false;
  // One locked region for the whole call, so generate() calls from several threads never interleave.
  Status st = nogil_locked(r, [&]() -> Status {
    HFS_TRY(start_locked(*s, p, args));
    auto last_check = std::chrono::steady_clock::now();
    for (;;) {
      std::optional<std::string> piece;
      std::optional<int32_t> token;
      HFS_TRY(s->step_locked(piece, token));
      if (piece) {
        text += *piece;
      } else if (token) {
        ids.push_back(*token);
      } else {
        return Ok{};
      }
      // Ctrl-C: look at pending signals every 100 ms (taking the GIL every step would wait on busy threads).
      if (std::chrono::steady_clock::now() - last_check > std::chrono::milliseconds(100)) {
        last_check = std::chrono::steady_clock::now();
        py::gil_scoped_acquire gil;
        if (PyErr_CheckSignals() != 0) {
          interrupted = true;
          return Ok{};
        }
      }
    }
  });
  if (interrupted) throw py::error_already_set();
  check(st);
  if (p.text) return py::str(text);
  return py::cast(ids);
}

py::dict stats_dict(const RunnerStats& s) {
  py::dict d;
  d["load_ms"] = s.load_ms;
  d["prompt_tokens"] = s.prompt_tokens;
  d["prefill_ms"] = s.prefill_ms;
  d["generated_tokens"] = s.generated_tokens;
  d["decode_steps"] = s.decode_steps;
  d["verify_steps"] = s.verify_steps;
  d["draft_tokens"] = s.draft_tokens;
  d["draft_accepted"] = s.draft_accepted;
  d["draft_program_steps"] = s.draft_program_steps;
  d["draft_program_ms"] = s.draft_program_ms;
  d["constraint_steps"] = s.constraint_steps;
  d["constraint_ms"] = s.constraint_ms;
  d["decode_ms"] = s.decode_ms;
  d["ttft_ms"] = s.ttft_ms;
  d["peak_rss_bytes"] = s.peak_rss_bytes;
  d["prefill_tok_s"] = s.prefill_tok_s();
  d["decode_tok_s"] = s.decode_tok_s();
  return d;
}

py::dict info_dict(const ModelInfo& i) {
  py::dict d;
  d["contract"] = i.contract;
  d["contract_version"] = i.contract_version;
  d["prefill_tokens"] = i.prefill_tokens;
  d["prefill_step_sizes"] = i.prefill_step_sizes;
  d["context_length"] = i.context_length;
  d["vocab_size"] = i.vocab_size;
  d["bos_token_id"] = i.bos_token_id;
  d["eos_token_ids"] = i.eos_token_ids;
  d["logits_all"] = i.logits_all;
  return d;
}

std::shared_ptr<PyRunner> make_runner(const py::object& program, const std::optional<std::vector<std::string>>& backends,
                                      const std::string& tail, bool shared_memory_io, const py::object& io_allocator,
                                      std::optional<int> device, bool deterministic) {
  auto r = std::make_shared<PyRunner>();
  if (py::isinstance<PyProgram>(program)) {
    r->program = program.cast<PyProgram&>().program;
  } else {
    std::string path = fspath(program);
    Result<std::shared_ptr<const Program>> p = [&] {
      py::gil_scoped_release nogil;
      return Program::load(path);
    }();
    r->program = unwrap(std::move(p));
  }
  RunnerOptions ro;
  ro.tail = parse_tail(tail);
  ro.io.shared_memory_io = shared_memory_io;
  ro.io.io_allocator = io_allocator_from(io_allocator);
  if (backends) ro.io.method.backends.backends = *backends;
  if (device) {
    if (std::find(ro.io.method.backends.backends.begin(), ro.io.method.backends.backends.end(), "vulkan") ==
        ro.io.method.backends.backends.end())
      throw py::value_error("device selects the vulkan backend's device: pass backends=[\"vulkan\"]");
    if (*device < 0) throw py::value_error("device must be >= 0, got " + std::to_string(*device));
    ro.io.method.backends.settings["vulkan"].set("device", Value(*device));
  }
  if (!deterministic) ro.io.method.backends.settings["cpu_fast"].set("deterministic", Value(false));
  Result<std::unique_ptr<Runner>> made = [&] {
    py::gil_scoped_release nogil;
    return Runner::create(r->program, ro);
  }();
  r->runner = unwrap(std::move(made));
  return r;
}

Result<std::span<const float>> decode_step_locked(PyRunner& r, int32_t token) {
  if (r.pending) {
    // Commit the pending token first; check room for both so that a failure changes nothing.
    if (!r.runner->can_accept(2))
      return make_error(ErrorCode::kCapacityExceeded,
                        "decode_step: the pending generated token and token " + std::to_string(token) +
                            " do not fit: position " + std::to_string(r.runner->position()) + " + 2 > context length " +
                            std::to_string(r.runner->info().context_length) + " (state unchanged; reset())");
    const int32_t p = *r.pending;
    HFS_TRY(r.runner->prefill(std::span<const int32_t>(&p, 1)));
    r.pending.reset();
    ++r.epoch;
  }
  HFS_ASSIGN_OR_RETURN(auto l, r.runner->decode_step(token));
  ++r.epoch;
  r.note(std::span<const int32_t>(&token, 1));
  return l;
}

}  // namespace

std::vector<std::pair<int32_t, float>> logit_bias_of(const py::object& bias, const std::string& who) {
  std::vector<std::pair<int32_t, float>> out;
  if (bias.is_none()) return out;
  if (!py::isinstance<py::dict>(bias))
    raise(ErrorCode::kInvalidArgument, who + ": logit_bias must be a dict {token id: bias}, got " +
                                           std::string(py::str(py::type::of(bias).attr("__name__"))));
  for (auto [id, b] : bias.cast<py::dict>()) {
    if (!py::isinstance<py::int_>(id) || py::isinstance<py::bool_>(id))
      raise(ErrorCode::kInvalidArgument, who + ": logit_bias keys must be int token ids, got " +
                                             std::string(py::str(py::type::of(id).attr("__name__"))));
    out.emplace_back(id.cast<int32_t>(), b.cast<float>());
  }
  return out;
}

void bind_runner(py::module_& m) {
  py::class_<PyStream, std::shared_ptr<PyStream>>(m, "Stream", R"(One generation, step by step (Runner.stream()).

Iterating yields text pieces (str prompt) or token ids (token prompt); each step releases the GIL. Any
other state-changing call on the runner ends the stream (its next step raises hfstatic.Error
"invalid_argument"); an abandoned stream leaves the runner ready for the next call.)")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__",
           [](PyStream& s) {
             py::object v = s.next();
             if (v.is_none()) throw py::stop_iteration();
             return v;
           })
      .def_property_readonly(
          "tokens", [](const PyStream& s) { return s.stepper->tokens(); },
          "Ids generated so far (the token that ended generation included).")
      .def_property_readonly(
          "stop_reason",
          [](const PyStream& s) -> py::object {
            std::string why = s.stepper->stop_reason();
            return why.empty() ? py::none() : py::object(py::str(why));
          },
          "None while running, then 'max_tokens' | 'stop_token' | 'stop_string' | 'context_full' | 'cancelled'.");

  py::class_<PyRunner, std::shared_ptr<PyRunner>>(m, "Runner", R"(Runs an exported program (the hf_static contract).

Runner(program, backends=None, tail="auto", shared_memory_io=False, io_allocator=None, device=None,
deterministic=True): `program`
is a path or an hfstatic.Program. `backends` lists backends in priority order (e.g. ["cpu_fast"], or
["vulkan"] for a Vulkan GPU; "cpu_ref" always takes the rest; hfstatic.backends() lists those built in);
`device` picks the vulkan backend's device (default: the first discrete GPU, else device 0); `tail` routes a prompt's last partial chunk: "auto" | "pad" | "decode". `io_allocator` is
where every I/O buffer (K/V caches, inputs, logits) is allocated, once, here: None or "backend" (the
backend's choice), "heap", "shared_memory" (= shared_memory_io=True), or an object whose allocate(nbytes)
returns a writable C-contiguous buffer of at least nbytes, 64-byte aligned (zero-filled and kept alive by
the runner). `deterministic=False` trades bit-reproducibility for speed: cpu_fast runs f32/f16/bf16 prefill
chunks through its panel GEMM, so prompt rows round differently from decode rows (docs/determinism.md).

Each generate() / stream() starts from its prompt (position 0), so a loop of calls never fills the context.
With continue_=True a call continues the runner's sequence instead (everything prefilled plus everything
generated; the last generated token is committed first), and the prompt may be empty.)")
      .def(py::init(&make_runner), py::arg("program"), py::arg("backends") = py::none(), py::arg("tail") = "auto",
           py::arg("shared_memory_io") = false, py::arg("io_allocator") = py::none(), py::arg("device") = py::none(),
           py::arg("deterministic") = true)
      .def(
          "prefill",
          [](PyRunner& r, const py::object& tokens) {
            std::vector<int32_t> ids = token_list(tokens, "prefill: tokens");
            check(nogil_locked(r, [&]() -> Status {
              std::vector<int32_t> feed = r.with_pending(ids);
              HFS_TRY(r.runner->prefill(feed));
              ++r.epoch;
              r.pending.reset();
              r.note(ids);
              return Ok{};
            }));
          },
          py::arg("tokens"),
          "Feeds tokens (any count that fits); afterwards `logits` are those after the last one. Over capacity → "
          "hfstatic.Error 'capacity_exceeded', state unchanged.")
      .def(
          "decode_step",
          [](py::object self, int32_t token) {
            PyRunner& r = runner_of(self);
            auto out = nogil_locked(r, [&] { return decode_step_locked(r, token); });
            return logits_view(self, unwrap(std::move(out)));
          },
          py::arg("token"),
          "Feeds one token; returns the logits after it: a read-only float32 [vocab] view of the runner's buffer "
          "(no copy), overwritten by the next step — copy it to keep the values.")
      .def_property_readonly(
          "logits",
          [](py::object self) {
            PyRunner& r = runner_of(self);
            return logits_view(self, nogil_locked(r, [&] { return r.runner->logits(); }));
          },
          "The logits after the last fed token (read-only view, overwritten by the next step; shape (0,) when none).")
      .def(
          "generate",
          [](py::object self, const py::object& prompt, int32_t max_new_tokens, float temperature, int32_t top_k,
             float top_p, float min_p, float repetition_penalty, uint64_t seed, const py::object& stop,
             bool ignore_eos, std::optional<bool> add_special, const std::optional<std::string>& draft,
             int32_t draft_max, const py::object& grammar, const py::object& json_schema, const py::object& regex,
             bool json_object, const py::object& logit_bias, bool continue_) {
            GenerateArgs a = generate_args(max_new_tokens, temperature, top_k, top_p, min_p, repetition_penalty, seed,
                                           stop, ignore_eos, draft, draft_max, grammar, json_schema, regex, json_object,
                                           logit_bias);
            a.continue_ = continue_;
            return generate(self, prompt, a, add_special);
          },
          py::arg("prompt"), py::arg("max_new_tokens") = 128, py::arg("temperature") = kDefaultTemperature, py::arg("top_k") = 0,
          py::arg("top_p") = 1.0f, py::arg("min_p") = 0.0f, py::arg("repetition_penalty") = 1.0f,
          py::arg("seed") = 0, py::arg("stop") = py::none(), py::arg("ignore_eos") = false,
          py::arg("add_special") = py::none(), py::arg("draft") = py::none(), py::arg("draft_max") = 8,
          py::arg("grammar") = py::none(), py::arg("json_schema") = py::none(), py::arg("regex") = py::none(),
          py::arg("json_object") = false, py::arg("logit_bias") = py::none(), py::arg("continue_") = false,
          "str prompt → generated text; token-id prompt → generated ids. See the .pyi stub.")
      .def(
          "stream",
          [](py::object self, const py::object& prompt, int32_t max_new_tokens, float temperature, int32_t top_k,
             float top_p, float min_p, float repetition_penalty, uint64_t seed, const py::object& stop,
             bool ignore_eos, std::optional<bool> add_special, const std::optional<std::string>& draft,
             int32_t draft_max, const py::object& grammar, const py::object& json_schema, const py::object& regex,
             bool json_object, const py::object& logit_bias, bool continue_) {
            GenerateArgs a = generate_args(max_new_tokens, temperature, top_k, top_p, min_p, repetition_penalty, seed,
                                           stop, ignore_eos, draft, draft_max, grammar, json_schema, regex, json_object,
                                           logit_bias);
            a.continue_ = continue_;
            return stream(self, prompt, a, add_special);
          },
          py::arg("prompt"), py::arg("max_new_tokens") = 128, py::arg("temperature") = kDefaultTemperature, py::arg("top_k") = 0,
          py::arg("top_p") = 1.0f, py::arg("min_p") = 0.0f, py::arg("repetition_penalty") = 1.0f,
          py::arg("seed") = 0, py::arg("stop") = py::none(), py::arg("ignore_eos") = false,
          py::arg("add_special") = py::none(), py::arg("draft") = py::none(), py::arg("draft_max") = 8,
          py::arg("grammar") = py::none(), py::arg("json_schema") = py::none(), py::arg("regex") = py::none(),
          py::arg("json_object") = false, py::arg("logit_bias") = py::none(), py::arg("continue_") = false,
          "Like generate(), but returns a Stream yielding text pieces (str prompt) or ids (token prompt).")
      .def(
          "reset",
          [](PyRunner& r) {
            nogil_locked(r, [&] {
              r.restart();
              return 0;
            });
          },
          "Forgets the sequence: position 0, caches cleared (the next run equals a fresh load).")
      .def(
          "save",
          [](PyRunner& r, const py::object& path) {
            const std::string p = fspath(path);
            check(nogil_locked(r, [&] { return r.runner->save_session(p); }));
          },
          py::arg("path"),
          "Saves the fed tokens and their cache rows to a session file (docs/sessions.md); the pending token is "
          "not part of it.")
      .def(
          "restore",
          [](PyRunner& r, const py::object& path) {
            const std::string p = fspath(path);
            check(nogil_locked(r, [&]() -> Status {
              HFS_TRY(r.runner->restore_session(p));
              r.pending.reset();
              r.context.clear();
              r.note(r.runner->tokens());
              ++r.epoch;
              return Ok{};
            }));
          },
          py::arg("path"),
          "Replaces the sequence with a session file's tokens and cache rows (refused, the runner unchanged, "
          "for another program's or a corrupted file).")
      .def_property_readonly(
          "tokens",
          [](PyRunner& r) {
            return nogil_locked(r, [&] { return std::vector<int32_t>(r.runner->tokens().begin(), r.runner->tokens().end()); });
          },
          "The fed tokens (position of them).")
      .def(
          "_chat_prompt",
          [](PyRunner& r, const std::string& messages_json, const std::optional<std::string>& tools_json,
             bool add_generation_prompt, const std::optional<std::string>& chat_template) {
            // The format chat and serve use (ChatFormat::select): the program's template, a named or file one,
            // or plain for a program without one.
            auto format = ChatFormat::select(r.program->embedded_file("tokenizer_config.json"),
                                             chat_template.value_or(""));
            if (!format) raise(format.error().with_context("chat"));
            auto messages = Value::parse_json(messages_json);
            if (!messages) raise(messages.error().with_context("chat: messages"));
            Value::Object vars;
            vars.emplace("messages", std::move(*messages));
            vars.emplace("add_generation_prompt", Value(add_generation_prompt));
            vars.emplace("documents", Value());
            if (tools_json) {
              auto tools = Value::parse_json(*tools_json);
              if (!tools) raise(tools.error().with_context("chat: tools"));
              vars.emplace("tools", std::move(*tools));
            } else {
              vars.emplace("tools", Value());
            }
            if (auto t = tokenizer_of(r)->tokenizer) {
              if (!t->bos_token().empty()) vars.emplace("bos_token", Value(t->bos_token()));
              if (!t->eos_token().empty()) vars.emplace("eos_token", Value(t->eos_token()));
            }
            auto p = format->render_variables(vars);
            if (!p) raise(p.error().with_context("chat"));
            return py::make_tuple(p->text, p->add_special);
          },
          py::arg("messages_json"), py::arg("tools_json"), py::arg("add_generation_prompt"), py::arg("chat_template"))
      .def("can_accept", [](PyRunner& r, int64_t n) { return nogil_locked(r, [&] { return r.runner->can_accept(n); }); }, py::arg("n"))
      .def_property_readonly("position", [](PyRunner& r) { return nogil_locked(r, [&] { return r.runner->position(); }); },
                             "Tokens fed so far (the pending generated token not included).")
      .def_property_readonly("capacity_left", [](PyRunner& r) { return nogil_locked(r, [&] { return r.runner->capacity_left(); }); })
      .def_property_readonly(
          "pending_token", [](PyRunner& r) { return nogil_locked(r, [&] { return r.pending; }); },
          "The last generated token, not yet fed (committed by the next call), or None.")
      .def_property_readonly("stats", [](PyRunner& r) { return stats_dict(nogil_locked(r, [&] { return r.runner->stats(); })); })
      .def_property_readonly("info", [](PyRunner& r) { return info_dict(r.runner->info()); })
      .def_property_readonly("program",
                             [](PyRunner& r) { return std::make_shared<PyProgram>(PyProgram{r.program}); })
      .def_property_readonly(
          "tokenizer", [](PyRunner& r) { return tokenizer_of(r); },
          "The program's embedded tokenizer (hfstatic.Error 'not_found' when it was exported without one).")
      .def("__repr__", [](PyRunner& r) {
        const int64_t pos = nogil_locked(r, [&] { return r.runner->position(); });
        return "<hfstatic.Runner '" + r.program->path() + "' position=" + std::to_string(pos) + "/" +
               std::to_string(r.runner->info().context_length) + ">";
      });
}

}  // namespace hfs::py_bind
