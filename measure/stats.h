// Statistics over repeated timings: the median and 10th/90th percentiles that a
// Measurement reports, and the relative spread that says how noisy they were.
//
// Percentiles interpolate linearly between the closest ranks (numpy's default), so
// the median of an even count is the mean of the middle two samples.
#pragma once

#include <vector>

#include "measure/measurement.h"

namespace pto::measure {

// q in [0, 1]; usage Error for an empty sample list or q outside [0, 1].
double percentile(std::vector<double> samples, double q);

// Median, p10, p90 and count of the samples (in ns); usage Error when empty.
Stats summarize(const std::vector<double>& samples_ns);

// (p90 - p10) / median: 0.05 means the middle 80% of the runs lie within 5% of the
// median. 0 when the median is 0 (nothing was timed).
double relative_spread(const Stats& s);

}  // namespace pto::measure
