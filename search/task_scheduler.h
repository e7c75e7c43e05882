// Sharing one measurement budget across the workloads of a batch, after TVM
// MetaSchedule's task scheduler: every workload first gets a small share (enough to
// measure its default and a few candidates), and the rest goes where the expected gain
// is largest. The expected gain of a workload is its weight (e.g. how often a model
// calls it) times the log of its predicted headroom: the cost model's prediction of
// the default config over the best prediction in a sample of its space.
//
// Unlike MetaSchedule this allocation is made once, before any tuning, from the
// model's prior: search::tune() runs a workload to the end of its budget and a second
// call would start its search over (re-measuring the default and the first proposals),
// so the budget is split up front and each workload is tuned in one call.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/target.h"
#include "core/workload.h"
#include "cost_model/coefficients.h"

namespace pto::search {

// The predicted speedup left over the default config: predicted(default) / the best
// prediction among `sample` drawn candidates (>= 1; 1 when nothing is predicted faster).
double predicted_headroom(const Workload& w, const Target& target, const std::optional<Coefficients>& coefficients,
                          size_t sample = 256, uint64_t seed = 1);

// Budgets (measurements) per workload summing to `total`: each gets min(initial,
// total / n) first, the rest in proportion to gains[i] (>= 0; all zero: evenly),
// rounded by largest remainder. A budget of 1 is raised to 2 where the total allows
// (the tuner needs the default plus one). Usage Error when total < 2 * n.
std::vector<int64_t> share_budget(const std::vector<double>& gains, int64_t total, int64_t initial);

// gains[i] = weight[i] * log(headroom[i]).
double expected_gain(double weight, double headroom);

}  // namespace pto::search
