// Test helper: the sources of the JIT's predictors (cost_model/target_predictors.h)
// without a calibration, and with one saved for the test.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "cost_model/calibration_store.h"
#include "cost_model/target_predictors.h"

namespace pto::testing {

// No calibration is read, whatever the default folder holds: the datasheet coefficients.
inline PredictorSources uncalibrated() {
  PredictorSources sources;
  sources.calibration_dir = "";
  return sources;
}

// `fit` saved as the calibration of (t, backend) in `dir`, and sources that read it.
inline PredictorSources calibrated(const std::string& dir, const Target& t, const std::string& backend, Coefficients fit) {
  fit.samples = 50;
  EXPECT_TRUE(save_calibration(dir, t, backend, fit).saved);
  PredictorSources sources;
  sources.calibration_dir = dir;
  return sources;
}

}  // namespace pto::testing
