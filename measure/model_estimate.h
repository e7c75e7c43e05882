// The model backend's typed detail on a Measurement it made: the cost model's Estimate
// (the bound, the breakdown per pipe), carried opaquely in Measurement::backend_detail
// (measure/measurement.h) for the caller that just measured, so that the Measurement
// itself does not depend on the cost model's types.
#pragma once

#include <any>
#include <utility>

#include "cost_model/estimate.h"
#include "measure/measurement.h"

namespace pto::measure {

inline void attach_model_estimate(Measurement& m, Estimate estimate) { m.backend_detail = std::move(estimate); }

// Null for a measurement the model backend did not make (or one read back from
// storage: the typed detail is not stored).
inline const Estimate* model_estimate(const Measurement& m) { return std::any_cast<Estimate>(&m.backend_detail); }

}  // namespace pto::measure
