// The cost model's version: bump it when predictions change for the same (graph,
// config, target, coefficients). Tuning records carry it (search/tuning_record.h), so a
// record ranked by an older model is reported as stale rather than served as fresh.
#pragma once

namespace pto {

inline constexpr const char* kCostModelVersion = "0.4.0";

}  // namespace pto
