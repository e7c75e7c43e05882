// Pipe overlap: the time of stages (pipes, or core types) that run concurrently, as
// TimeTerms so that calibration keeps its linear form, or as a TimeValue where only the
// time is wanted (cost_model/time_terms.h).
#pragma once

#include <algorithm>
#include <iterator>
#include <type_traits>

#include "cost_model/time_terms.h"

namespace pto {

// Stages running concurrently over `steps` equal steps: the slowest stage bounds the
// steady state; the others add their share of one step (pipeline fill and drain).
template <typename Stages>
auto overlapped(const Stages& stages, double steps) {
  using T = std::decay_t<decltype(*std::begin(stages))>;
  T sum, slowest;
  for (const T& s : stages) {
    sum += s;
    slowest = max(slowest, s);
  }
  return slowest + (sum - slowest) * (1.0 / std::max(steps, 1.0));
}

// `waves` vector tasks on one core that holds `nbuffer` of them at once (n-slot UB
// buffers): the next task's loads run while the previous one computes, and a GM
// transfer's latency hides behind the transfer before it on its pipe, so the latency
// shows once, not per transfer. Two bounds, the larger wins: the busiest pipe plus one
// fill and drain (the first load's latency, one task's share of the other pipes, the
// last store's latency); and each task's chain (load latency, loads, compute, store
// latency, store), of which nbuffer run side by side.
template <typename Stages, typename T>
T tasks_in_flight(const Stages& work, const T& latency, double waves, int nbuffer) {
  const T pipe_bound = overlapped(work, waves) + latency * (1.0 / std::max(waves, 1.0));
  T chain = latency;
  for (const T& w : work) chain += w;
  return max(pipe_bound, chain * (1.0 / nbuffer));
}

}  // namespace pto
