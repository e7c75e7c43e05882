// The expected cost of tuning one workload of a batch, and the longest-first order in
// which `pto-tune batch` hands its workloads to its workers (batch/batch_task.h).
//
// Longest first is the classic rule for spreading independent jobs over workers (LPT):
// the long ones start at once, and the short ones fill the gaps at the end, so the
// batch ends when its longest workload could, not a long workload's time after the
// rest. The order needs only to rank workloads, not to time them: a tune's cost is
// dominated by measuring its candidates, and a candidate's simulation (and on the cpu
// backend its run) grows with the kernel's time, so the cost model's predicted time of
// the op's default config times the measurements is the proxy. The prediction uses the
// datasheet coefficients, never a calibration, so that every worker of a batch, each
// its own process, derives the same order from the same file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/target.h"
#include "core/workload.h"

namespace pto::batch {

// Measurements a workload whose budget the strategy decides (budget 0) is counted at.
inline constexpr int64_t kStrategyBudget = 64;

// Predicted time of the default config (ns) times the measurements; 0 when the model
// cannot predict the workload (its tune then fails early, and it goes last).
double predicted_tune_cost(const Workload& w, const Target& t, int64_t budget);

// Indexes of `costs`, the largest first; equal costs keep their order.
std::vector<size_t> longest_first(const std::vector<double>& costs);

}  // namespace pto::batch
