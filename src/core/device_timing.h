// Where an accelerator step's time goes: process-wide totals that accelerator delegates add to after
// each submission, so a benchmark can split a step into device time and host overhead.
//
// A delegate that runs a recorded step adds one submission: the host wall time of its execute (input
// checks, binding, staging copies, the submit and the wait), the part of it from the submit until the
// wait returned, and — where the device times its queue (timestamp queries) — the device's own time
// between the first and the last command of the step. Whatever a caller's step costs beyond the device
// time (the runner's input writes, reading the logits, sampling) is host overhead:
//
//   const hfs::DeviceTiming before = hfs::device_timing();
//   runner.generate(...);
//   const hfs::DeviceTiming d = hfs::device_timing() - before;   // d.device_ms vs the step's wall time
//
// Backends that run on the CPU add nothing (their "device time" is the host's).
#pragma once

#include <cstdint>

namespace hfs {

struct DeviceTiming {
  uint64_t submits = 0;        // recorded steps submitted to a device queue
  uint64_t timed_submits = 0;  // of which the device timed (device_ms covers only these)
  double execute_ms = 0;       // host wall time inside the delegates' execute
  double submit_wait_ms = 0;   // of which from the submit until the wait for the device returned
  double device_ms = 0;        // device time of the timed submissions, first to last command of each

  DeviceTiming operator+(const DeviceTiming& o) const {
    return {submits + o.submits, timed_submits + o.timed_submits, execute_ms + o.execute_ms,
            submit_wait_ms + o.submit_wait_ms, device_ms + o.device_ms};
  }
  DeviceTiming operator-(const DeviceTiming& o) const {
    return {submits - o.submits, timed_submits - o.timed_submits, execute_ms - o.execute_ms,
            submit_wait_ms - o.submit_wait_ms, device_ms - o.device_ms};
  }
};

// The totals since the process started (thread-safe; relaxed snapshot of each field).
DeviceTiming device_timing();
// One submission; device_ms < 0 when the device did not time it.
void add_device_timing(double execute_ms, double submit_wait_ms, double device_ms);

}  // namespace hfs
