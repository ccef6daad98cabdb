// hfstatic.Engine over hfs::Engine: many sequences sharing one program's weight passes.
//
// Threading as for Runner: every call releases the GIL and takes the engine's mutex. Logits returned by
// logits() are read-only views of the engine's output buffer, overwritten by the next step.
#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "common.h"
#include "hfstatic/engine.h"
#include "hfstatic/tokenizer.h"

namespace hfs::py_bind {
namespace {

// A sequence added with a text prompt: its generated text, decoded as it arrives, and its stop strings. When
// one completes, the text is cut before it and the sequence removed from the engine (its info kept here).
struct TextSequence {
  std::unique_ptr<StreamDecoder> decoder;
  std::vector<std::string> stops;
  std::vector<int32_t> end_ids;  // EOS and stop ids: ending tokens are not rendered
  std::string text;
  std::optional<SequenceInfo> stopped;  // set once a stop string ended it
};

struct PyEngine {
  std::shared_ptr<const Program> program;
  std::unique_ptr<Engine> engine;
  std::shared_ptr<const Tokenizer> tokenizer;  // loaded by the first text prompt
  std::map<SequenceId, TextSequence> text;
  std::mutex mu;
};

template <typename F>
auto nogil_locked(PyEngine& e, F&& f) {
  py::gil_scoped_release nogil;
  std::lock_guard<std::mutex> lock(e.mu);
  return f();
}

std::vector<int32_t> ids_of(py::handle obj, const char* what) {
  try {
    return obj.cast<std::vector<int32_t>>();
  } catch (const py::cast_error&) {
    raise(ErrorCode::kInvalidArgument, std::string("engine: ") + what + " must be a sequence of int token ids, got " +
                                           std::string(py::str(py::type::of(obj).attr("__name__"))));
  }
}

// The generation keywords add/fork/append take (all optional): max_new_tokens, temperature, top_k, top_p,
// min_p, repetition_penalty, logit_bias, seed, stop (int token ids: stop strings need detokenizing, which the engine
// leaves to its caller), ignore_eos, draft (None | "none" | "ngram" | the path of a draft program), draft_max, and one of grammar
// (GBNF text), json_schema (dict or JSON text), regex, json_object=True. An unknown keyword is an
// error naming it.
// `stop`: None, an int id, a str, or a list of them: ids go to the config, strings to `strings`.
void stops_of(const py::handle& value, GenerationConfig& g, std::vector<std::string>& strings) {
  auto add = [&](const py::handle& item) {
    if (py::isinstance<py::str>(item)) {
      std::string s = item.cast<std::string>();
      if (s.empty()) raise(ErrorCode::kInvalidArgument, "engine: stop strings must not be empty");
      strings.push_back(std::move(s));
    } else if (py::isinstance<py::int_>(item)) {
      g.stop_tokens.push_back(item.cast<int32_t>());
    } else {
      raise(ErrorCode::kInvalidArgument, "engine: stop items must be str (stop strings) or int (token ids), got " +
                                             std::string(py::str(py::type::of(item).attr("__name__"))));
    }
  };
  if (value.is_none()) return;
  if (py::isinstance<py::str>(value) || py::isinstance<py::int_>(value)) return add(value);
  for (py::handle item : value) add(item);
}

GenerationConfig config_of(const py::kwargs& kw, std::vector<std::string>* stop_strings = nullptr) {
  GenerationConfig g;
  g.sampling.temperature = kDefaultTemperature;  // every front end's default (llama.cpp's)
  std::optional<std::string> draft;
  int32_t draft_max = g.draft.max_tokens;
  py::object grammar = py::none(), json_schema = py::none(), regex = py::none();
  bool json_object = false;
  for (auto [key, value] : kw) {
    const std::string k = key.cast<std::string>();
    if (k == "max_new_tokens") g.max_new_tokens = value.cast<int32_t>();
    else if (k == "temperature") g.sampling.temperature = value.cast<float>();
    else if (k == "top_k") g.sampling.top_k = value.cast<int32_t>();
    else if (k == "top_p") g.sampling.top_p = value.cast<float>();
    else if (k == "min_p") g.sampling.min_p = value.cast<float>();
    else if (k == "repetition_penalty") g.sampling.repetition_penalty = value.cast<float>();
    else if (k == "logit_bias") g.sampling.logit_bias = logit_bias_of(py::reinterpret_borrow<py::object>(value), "engine");
    else if (k == "seed") g.sampling.seed = value.cast<uint64_t>();
    else if (k == "stop") {
      std::vector<std::string> strings;
      stops_of(value, g, strings);
      if (!strings.empty() && !stop_strings)
        raise(ErrorCode::kInvalidArgument, "engine: stop strings need a sequence added with a str prompt");
      if (stop_strings) *stop_strings = std::move(strings);
    }
    else if (k == "ignore_eos") g.ignore_eos = value.cast<bool>();
    else if (k == "draft") draft = value.is_none() ? std::nullopt : std::optional<std::string>(py::str(value));
    else if (k == "draft_max") draft_max = value.cast<int32_t>();
    else if (k == "grammar") grammar = py::reinterpret_borrow<py::object>(value);
    else if (k == "json_schema") json_schema = py::reinterpret_borrow<py::object>(value);
    else if (k == "regex") regex = py::reinterpret_borrow<py::object>(value);
    else if (k == "json_object") json_object = value.cast<bool>();
    else
      raise(ErrorCode::kInvalidArgument, "engine: unknown keyword '" + k + "' (max_new_tokens, temperature, top_k, top_p, "
                                         "min_p, repetition_penalty, logit_bias, seed, stop, ignore_eos, draft, draft_max, grammar, "
                                         "json_schema, regex, json_object)");
  }
  g.draft = draft_config(draft, draft_max, "engine");
  g.constraint = constraint_of(grammar, json_schema, regex, json_object, "engine");
  return g;
}

// Decodes a text sequence's new token; a completed stop string cuts the text, ends the sequence (removed
// from the engine, its info kept) and marks the event finished. The caller holds the engine's mutex.
Status follow_text(PyEngine& e, StepEvent& x) {
  auto it = e.text.find(x.sequence);
  if (it == e.text.end() || it->second.stopped || x.token < 0) return Ok{};
  TextSequence& t = it->second;
  const bool ending = x.finished && std::find(t.end_ids.begin(), t.end_ids.end(), x.token) != t.end_ids.end();
  if (!ending) {
    HFS_ASSIGN_OR_RETURN(std::string piece, t.decoder->feed(x.token));
    t.text += piece;
  }
  if (x.finished) {
    HFS_ASSIGN_OR_RETURN(std::string rest, t.decoder->flush());
    t.text += rest;
  }
  size_t cut = std::string::npos;
  for (const std::string& s : t.stops) cut = std::min(cut, t.text.find(s));
  if (cut == std::string::npos) return Ok{};
  t.text.resize(cut);
  HFS_ASSIGN_OR_RETURN(SequenceInfo info, e.engine->sequence(x.sequence));
  info.finished = true;
  HFS_TRY(e.engine->remove(x.sequence));
  t.stopped = std::move(info);
  x.finished = true;
  return Ok{};
}

const char* stop_name(SequenceStop s) {
  switch (s) {
    case SequenceStop::kNone: return nullptr;
    case SequenceStop::kMaxTokens: return "max_tokens";
    case SequenceStop::kStopToken: return "stop_token";
    case SequenceStop::kContextFull: return "context_full";
    case SequenceStop::kError: return "error";
  }
  return nullptr;
}

std::shared_ptr<PyEngine> make_engine(const py::object& program, const py::object& backends) {
  auto e = std::make_shared<PyEngine>();
  if (py::isinstance<PyProgram>(program)) {
    e->program = program.cast<PyProgram&>().program;
  } else {
    const std::string path = fspath(program);
    py::gil_scoped_release nogil;
    e->program = unwrap(Program::load(path));
  }
  EngineOptions opt;
  if (!backends.is_none()) opt.io.method.backends.backends = backends.cast<std::vector<std::string>>();
  py::gil_scoped_release nogil;
  e->engine = unwrap(Engine::create(e->program, opt));
  return e;
}

}  // namespace

void bind_engine(py::module_& m) {
  py::class_<PyEngine, std::shared_ptr<PyEngine>>(m, "Engine", R"(Many sequences sharing one program (hfs::Engine).

Engine(program, backends=None): `program` is a path or an hfstatic.Program exported with sequences=N (a
version-1 program serves one sequence at a time). add() starts a sequence, step() runs one weight pass over
every running sequence's next row (and prompt tokens in the rows left) and returns the tokens generated as
(sequence, token, finished) tuples; token is -1 when a sequence ended without one (see sequence()["error"]).
Generation keywords (add, fork, append): max_new_tokens (default 128; 0 = only feed the tokens, logits() then
holds the scores after them), temperature (default 0.8; 0 = greedy), top_k, top_p, min_p, repetition_penalty, logit_bias, seed, stop (int token
ids; stop strings too for a str prompt), ignore_eos. add() takes a str prompt too (sequence()["text"] is then the generated text).)")
      .def(py::init(&make_engine), py::arg("program"), py::arg("backends") = py::none())
      .def(
          "add",
          [](PyEngine& e, const py::object& prompt, const py::kwargs& kw) {
            std::vector<std::string> stop_strings;
            const bool is_text = py::isinstance<py::str>(prompt);
            const GenerationConfig g = config_of(kw, &stop_strings);
            if (!is_text && !stop_strings.empty())
              raise(ErrorCode::kInvalidArgument, "engine: stop strings need a str prompt (token prompts give ids)");
            if (!is_text) {
              const std::vector<int32_t> ids = ids_of(prompt, "prompt");
              return unwrap(nogil_locked(e, [&] { return e.engine->add(ids, g); }));
            }
            const std::string s = prompt.cast<std::string>();
            return unwrap(nogil_locked(e, [&]() -> Result<SequenceId> {
              if (!e.tokenizer) {
                HFS_ASSIGN_OR_RETURN_CTX(e.tokenizer, Tokenizer::from_program(*e.program), "engine");
              }
              HFS_ASSIGN_OR_RETURN(std::vector<int32_t> ids, e.tokenizer->encode(s, /*add_special=*/true));
              TextSequence t;
              t.decoder = std::make_unique<StreamDecoder>(*e.tokenizer, /*skip_special=*/true);
              HFS_TRY(t.decoder->prime(ids));
              t.stops = std::move(stop_strings);
              t.end_ids = g.stop_tokens;
              if (!g.ignore_eos)
                for (int64_t id : e.engine->info().eos_token_ids) t.end_ids.push_back(static_cast<int32_t>(id));
              HFS_ASSIGN_OR_RETURN(SequenceId id, e.engine->add(ids, g));
              e.text[id] = std::move(t);
              return id;
            }));
          },
          py::arg("prompt"),
          "Starts a sequence: feeds `prompt` (token ids, or a str encoded with the program's tokenizer: then "
          "sequence()[\"text\"] holds the generated text and `stop` may hold stop strings), then generates. "
          "Returns its id.")
      .def(
          "fork",
          [](PyEngine& e, SequenceId parent, int64_t prefix, const py::object& more, const py::kwargs& kw) {
            const std::vector<int32_t> ids = ids_of(more, "more");
            const GenerationConfig g = config_of(kw);
            return unwrap(nogil_locked(e, [&] { return e.engine->fork(parent, prefix, ids, g); }));
          },
          py::arg("parent"), py::arg("prefix"), py::arg("more"),
          "A new sequence continuing the first `prefix` tokens of `parent` (their cache blocks shared), then `more`.")
      .def(
          "append",
          [](PyEngine& e, SequenceId id, const py::object& tokens, const py::kwargs& kw) {
            const std::vector<int32_t> ids = ids_of(tokens, "tokens");
            const GenerationConfig g = config_of(kw);
            check(nogil_locked(e, [&] { return e.engine->append(id, ids, g); }));
          },
          py::arg("sequence"), py::arg("tokens"),
          "More input for a finished or feed-only sequence (its last generated token was not fed: include it).")
      .def("remove",
           [](PyEngine& e, SequenceId id) {
             check(nogil_locked(e, [&]() -> Status {
               auto it = e.text.find(id);
               if (it != e.text.end() && it->second.stopped) {  // already out of the engine
                 e.text.erase(it);
                 return Ok{};
               }
               HFS_TRY(e.engine->remove(id));
               e.text.erase(id);
               return Ok{};
             }));
           },
           py::arg("sequence"))
      .def(
          "save",
          [](PyEngine& e, SequenceId id, const py::object& path) {
            const std::string p = fspath(path);
            check(nogil_locked(e, [&] { return e.engine->save_session(id, p); }));
          },
          py::arg("sequence"), py::arg("path"),
          "Saves a sequence's committed tokens and cache rows to a session file (docs/sessions.md), between "
          "steps; a Runner restores it as well.")
      .def(
          "restore",
          [](PyEngine& e, const py::object& path) {
            const std::string p = fspath(path);
            return unwrap(nogil_locked(e, [&] { return e.engine->restore_session(p); }));
          },
          py::arg("path"),
          "A new feed-only sequence holding a session file's tokens and cache rows (a Runner's file too): "
          "append() continues it, its first logits bit for bit those of recomputing. Refused, nothing changed, "
          "for another program's, a corrupted or a too-long file, or with no free sequence.")
      .def_property_readonly("idle", [](PyEngine& e) { return nogil_locked(e, [&] { return e.engine->idle(); }); })
      .def(
          "step",
          [](PyEngine& e) {
            std::vector<StepEvent> events;
            check(nogil_locked(e, [&]() -> Status {
              HFS_ASSIGN_OR_RETURN(auto ev, e.engine->step());
              events.assign(ev.begin(), ev.end());
              for (StepEvent& x : events) HFS_TRY(follow_text(e, x));
              return Ok{};
            }));
            py::list out;
            for (const StepEvent& x : events) out.append(py::make_tuple(x.sequence, x.token, x.finished));
            return out;
          },
          "One step; the tokens it generated as (sequence, token, finished).")
      .def(
          "logits",
          [](py::object self, SequenceId id) -> py::object {
            PyEngine& e = self.cast<PyEngine&>();
            const std::span<const float> l = nogil_locked(e, [&] { return e.engine->logits(id); });
            if (l.empty()) return py::none();
            py::array_t<float> a({static_cast<py::ssize_t>(l.size())}, {static_cast<py::ssize_t>(sizeof(float))}, l.data(), self);
            a.attr("setflags")(py::arg("write") = false);
            return py::object(a);
          },
          py::arg("sequence"), "Scores after the sequence's last fed token if the last step computed them, else None.")
      .def(
          "sequence",
          [](PyEngine& e, SequenceId id) {
            std::optional<std::string> text;
            const SequenceInfo s = unwrap(nogil_locked(e, [&]() -> Result<SequenceInfo> {
              auto it = e.text.find(id);
              if (it != e.text.end()) text = it->second.text;
              if (it != e.text.end() && it->second.stopped) return *it->second.stopped;
              return e.engine->sequence(id);
            }));
            py::dict d;
            if (text) d["text"] = py::str(*text);
            d["id"] = s.id;
            d["length"] = s.length;
            d["pending"] = s.pending;
            d["generated"] = s.generated;
            d["finished"] = s.finished;
            const char* stop = stop_name(s.stop);
            const bool by_string = text && nogil_locked(e, [&] { return e.text.at(id).stopped.has_value(); });
            d["stop"] = by_string ? py::object(py::str("stop_string")) : stop ? py::object(py::str(stop)) : py::none();
            d["error"] = s.error.empty() ? py::none() : py::object(py::str(s.error));
            d["draft_error"] = s.draft_error.empty() ? py::none() : py::object(py::str(s.draft_error));
            d["ttft_ms"] = s.ttft_ms;
            d["max_gap_ms"] = s.max_gap_ms;
            return d;
          },
          py::arg("sequence"))
      .def("sequences", [](PyEngine& e) { return nogil_locked(e, [&] { return e.engine->sequences(); }); })
      .def_property_readonly("stats",
                             [](PyEngine& e) {
                               const EngineStats s = nogil_locked(e, [&] { return e.engine->stats(); });
                               py::dict d;
                               d["steps"] = s.steps;
                               d["rows"] = s.rows;
                               d["padded_rows"] = s.padded_rows;
                               d["decode_rows"] = s.decode_rows;
                               d["prompt_rows"] = s.prompt_rows;
                               d["draft_tokens"] = s.draft_tokens;
                               d["draft_accepted"] = s.draft_accepted;
                               d["step_ms"] = s.step_ms;
                               return d;
                             })
      .def_property_readonly("max_sequences", [](PyEngine& e) { return e.engine->info().max_sequences; })
      .def_property_readonly("step_sizes", [](PyEngine& e) { return e.engine->info().step_sizes; });
}

}  // namespace hfs::py_bind
