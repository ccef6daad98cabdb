// What the multi-sequence engine showed for each sequence, and the check that it equals the same sequence
// run alone through the single-sequence Runner (on a version-1 program of the same weights): the solo-vs-
// shared property of tests/llm/engine_test.cpp, used on any backend (tests/backends/vulkan/ too).
#pragma once

#include <map>
#include <span>
#include <string>
#include <vector>

#include "hfstatic/engine.h"
#include "support/hf_static_fixture.h"

namespace hfs::test {

// Every token fed (prompt and generated, in order) and the logits at each position where it sampled.
struct Trace {
  std::vector<int32_t> fed;
  std::map<int64_t, std::vector<float>> logits;  // position of the last fed token → logits after it
};

// The same weights as `m`, one sequence, contract version 1: the program a shared sequence's solo run uses.
TinyModel solo_of(TinyModel m);

float max_abs_diff(std::span<const float> a, std::span<const float> b);

// Logits after each token of `tokens`, fed one at a time through a Runner's decode on `backend` ("" = the
// default backends): the reference a shared sequence is held to.
std::vector<std::vector<float>> solo_logits(const std::string& program, std::span<const int32_t> tokens,
                                            const std::string& backend = "");

// One step, recording for each generated token the logits it was sampled from and the token (the engine
// feeds it next, unless it was the last).
void step_and_record(Engine& e, std::map<SequenceId, Trace>& traces);
// Steps until idle, recording as step_and_record does.
void run_to_idle(Engine& e, std::map<SequenceId, Trace>& traces, int max_steps = 10000);

// Each traced sequence's logits are within `tol` of the solo run's at the same positions.
void expect_matches_solo(const std::string& solo_program, const std::map<SequenceId, Trace>& traces,
                         float tol, const std::string& backend = "");

}  // namespace hfs::test
