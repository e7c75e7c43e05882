// BatchSummary: how a batch run went — each workload's outcome and the run's totals —
// kept as the numbers the run's summary prints and as JSON, the form in which each
// `--jobs` worker process hands its own to the parent, which adds them up.
//
// A workload ends a run in one of these: tuned, skipped (a fresh record was there),
// failed (its tune raised an error), interrupted (stopped while tuning), not_started
// (stopped before it began), bad_entry (its entry was left out of the run); the parent
// of the workers adds worker_lost for a worker that left no summary.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pto::batch {

struct BatchSummary {
  std::map<std::string, int64_t> workloads;            // status -> workloads
  std::map<std::string, int64_t> failed_measurements;  // status -> count, over all tuned workloads
  int64_t measurements = 0;
  double log_speedup_sum = 0;  // over the tuned workloads that have a feasible default
  int64_t speedups = 0;        // how many those are
  double elapsed_s = 0;
  double busy_s = 0;                  // spent tuning workloads, summed over the workers
  std::vector<double> worker_busy_s;  // each worker's
  nlohmann::json results = nlohmann::json::array();  // a line per workload, in the order given

  // How many workloads ended with `status`.
  int64_t count(const std::string& status) const;
  double geomean_speedup() const;
  nlohmann::json to_json() const;
  // Adds a worker's to_json().
  void add(const nlohmann::json& worker);
};

// How busy the batch kept its `jobs` workers: each one's seconds spent tuning and their
// sum over jobs x the wall time; the critical path, the workload that took longest on its
// own (the batch cannot end before it); the CPU time of this process and its children
// (the workers), against the machine's cores.
nlohmann::json utilisation(const BatchSummary& summary, int jobs);

}  // namespace pto::batch
