// The cost model's fingerprint: the other half of a tuning record's freshness key
// (core/compiler_fingerprint.h has the compiler's). A record ranked by a model that
// predicts differently today is reported as stale; the fingerprint hashes the model's
// predictions, with each target's default coefficients, on the compiler's probe set, so
// it changes when a prediction changes and not otherwise. Predictions enter rounded to
// six significant digits, so that builds whose floating point differs in the last bits
// (another -march, contracted multiply-adds) agree. How it can miss: as the compiler's
// fingerprint, a change outside the probe set; and one smaller than the rounding.
#pragma once

#include <span>
#include <string>

#include "core/compiler_fingerprint.h"

namespace pto {

// "m" and 12 hex digits: a hash of every case's feasibility and rounded prediction.
std::string cost_model_fingerprint(std::span<const ProbeCase> cases);

}  // namespace pto
