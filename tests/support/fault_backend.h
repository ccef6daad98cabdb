// Test backend "test_fault": makes a step of a real program fail part-way through, on demand.
//
// Settings {"node": "<output name>"} make it claim the one node whose first output has that name; it
// compiles the node with the reference backend and forwards every call, except the one the test armed,
// which returns kExecution naming the node *without* running it. Everything scheduled before that node
// (other partitions: embeddings, earlier layers and their kv_cache_write) has already run by then, so
// a failure at "l1.attn_norm" leaves layer 0's cache rows written and layer 1's untouched.
//
//   hfs::test::FaultSwitch::arm(2);   // the 2nd execute of any test_fault delegate from now fails
//   mo.backends.backends = {"test_fault", "cpu_fast"};
//   mo.backends.settings["test_fault"] = settings_with_node("l1.attn_norm");
//
// The switch is process-global (gtest runs tests one at a time); disarm() in the test's SetUp.
// Settings {"output_order": [...]} make the delegate report that output order instead of its own: how
// the runtime's check of a malformed order is tested.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hfstatic/value.h"

namespace hfs::test {

struct FaultSwitch {
  // The n-th execute (n ≥ 1) of a test_fault delegate from now fails; later ones succeed again.
  static void arm(int64_t n);
  static void disarm();
  // Executes of test_fault delegates so far (failed one included): proves whether a method ran at all.
  static int64_t calls();
};

inline constexpr const char* kFaultBackend = "test_fault";
Value fault_settings(const std::string& node_output);
Value fault_settings(const std::string& node_output, const std::vector<int64_t>& output_order);

}  // namespace hfs::test
