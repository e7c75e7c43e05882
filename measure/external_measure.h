// External measurement: candidates timed outside pto-tune — by a user's command (the
// `command` and `npu` backends, measure/command_runner.cpp, docs/measure_protocol.md)
// or by a Python function (pto_tune.tune(measure=fn)) — which answers per candidate
// the seconds of each repeat, or why it failed. This is the contract between the
// runner all of them share (measure/external_runner.cpp) and a transport, which only
// carries a batch out and the answers back: the runner screens out with the cost model
// what cannot run (infeasible configs never leave pto-tune), checks each answer's
// times and summarises them, and stamps what measured them (`detail.measured_by`).
// Finalists go out as one batch marked `interleaved`, so that the measurer can time
// them round-robin (measure/interleave.h says why).
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/tile_config.h"
#include "core/workload.h"
#include "measure/measurement.h"

namespace pto::measure {

struct ExternalCandidate {
  std::string id;  // "c0", "c1", ...: unique in its batch
  TileConfig config;
};

// One batch to measure: the feasible candidates of one runner call.
struct ExternalBatch {
  Workload workload;
  std::vector<ExternalCandidate> candidates;
  int warmup = 1;            // untimed runs wanted before the timed ones
  int repeats = 1;           // timed runs wanted per candidate
  bool interleaved = false;  // finalists: time them in rounds A B C A B C ...
};

// What the measurer said of one candidate.
struct ExternalAnswer {
  Status status = Status::OK;  // OK, RUNTIME_ERROR (failed), WRONG_RESULT or TIMEOUT
  std::vector<double> times_s;  // OK: one per repeat
  std::string message;          // why, for any other status
  bool verified = false;        // OK: the output was checked against a reference
  double max_abs_err = 0;       // with verified: the largest deviation it saw
  std::string device;           // where it ran, if the measurer said ("npu:0"); stored in the detail
};

// An answer that says the candidate could not be measured: `status` and why.
inline ExternalAnswer failed_answer(Status status, std::string message) {
  ExternalAnswer a;
  a.status = status;
  a.message = std::move(message);
  return a;
}

// Answers one batch, one answer per candidate in order. A transport that cannot answer
// at all (its command died) throws; the runner gives every candidate of the batch
// that failure as RUNTIME_ERROR, or TIMEOUT for an ExternalTimeout.
using ExternalMeasure = std::function<std::vector<ExternalAnswer>(const ExternalBatch&)>;

struct ExternalTimeout : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The answer's verdict on `m` (whose other fields stay): its status and message, or
// for OK the statistics of its times (measure/stats.h), verified and max_abs_err. A time
// that is no time (none at all, NaN, infinite, <= 0) makes it RUNTIME_ERROR naming the
// value, never a winner.
void apply_answer(const ExternalAnswer& answer, Measurement& m);

// A transport with what it is, for the records: "command: python3 bench.py",
// "python function bench".
struct ExternalMeasurer {
  std::string measured_by;
  ExternalMeasure measure;
};

}  // namespace pto::measure
