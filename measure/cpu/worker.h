// The cpu backend's work for one isolated child, and the pto-tune-worker that does it
// in a spawned process (measure/isolation.h, run_in_worker).
//
// A CpuJob is what one child measures: one candidate (with its test-only fault), or a
// set of finalists interleaved. A forked child runs it on the fixture the parent built;
// a spawned worker gets a WorkerRequest on stdin — the workload, the host target as
// the parent sees it, the timing options, the job — rebuilds the fixture from the seed
// (inputs and reference are deterministic in it) and prints the measurements as JSON.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/target.h"
#include "core/tile_config.h"
#include "core/workload.h"
#include "measure/cpu/candidate.h"
#include "measure/measurement.h"
#include "measure/runner.h"

namespace pto::measure {

struct CpuJob {
  std::vector<TileConfig> configs;
  bool interleaved = false;         // finalists timed in interleaved rounds
  std::optional<Fault> fault;       // test only; for a single candidate
};

// One Measurement per config of the job, in order.
std::vector<Measurement> run_job(const WorkloadFixture& fixture, const CpuJob& job, const Target& host,
                                 const RunnerOptions& options);

struct WorkerRequest {
  Workload workload;
  Target host;
  RunnerOptions options;  // the timing, thread, cache and seed options; not faults or isolation
  CpuJob job;

  nlohmann::json to_json() const;
  // Parent and worker come from one build: a malformed request is a bug, reported by
  // the worker (an nlohmann::json or pto::Error exception) and not recovered from.
  static WorkerRequest from_json(const nlohmann::json& j);
};

// The measurements' wire form between a child and the runner: a JSON array.
std::string measurements_to_text(const std::vector<Measurement>& list);
std::vector<Measurement> measurements_from_text(const std::string& text);

// The request's measurements, as text; what the worker prints.
std::string serve_worker_request(const std::string& request_text);

// pto-tune-worker's main: `pto-tune-worker [--parent PID]`, request on stdin, the
// measurements on stdout. With --parent it dies with that process (and exits at once
// if that process is already gone). Exit code 0, or kWorkThrewExitCode with the
// error on stderr.
int worker_main(int argc, char** argv);

}  // namespace pto::measure
