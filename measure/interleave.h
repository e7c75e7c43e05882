// Interleaved timing of a few finalists: rounds of A B C A B C ... instead of all of A,
// then all of B. Frequency scaling, a neighbour's load or a thermal drift then hit every
// finalist alike, so the winner is chosen under one machine state rather than by when
// it happened to run.
#pragma once

#include <functional>
#include <vector>

#include "measure/cpu/timing.h"

namespace pto::measure {

// Runs `policy.warmup` untimed rounds, then timed rounds until every finalist has at
// least `policy.min_repetitions` samples and the timed runs add up to
// `policy.min_time_ms` per finalist. Returns each finalist's samples (ns), in order.
// `before_each` runs before every timed run, outside the timed interval.
std::vector<std::vector<double>> time_interleaved(const std::vector<std::function<void()>>& runs,
                                                  const TimingPolicy& policy,
                                                  const std::function<void()>& before_each = {});

}  // namespace pto::measure
