// The sim backend's typed report on a Measurement it made: the simulator's SimResult
// (cycles, the bound, how busy each pipe was), carried opaquely in
// Measurement::backend_detail (measure/measurement.h) for the caller that just
// measured, so that the Measurement itself does not depend on the simulator's types.
#pragma once

#include <any>
#include <utility>

#include "measure/measurement.h"
#include "measure/sim/simulator.h"

namespace pto::sim {

inline void attach_sim_report(measure::Measurement& m, SimResult report) { m.backend_detail = std::move(report); }

// Null for a measurement the sim backend did not simulate (or one read back from
// storage: the typed detail is not stored).
inline const SimResult* sim_report(const measure::Measurement& m) { return std::any_cast<SimResult>(&m.backend_detail); }

}  // namespace pto::sim
