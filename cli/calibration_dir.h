// Where calibrated cost-model coefficients live by default, so that `pto-tune calibrate`
// writes them where `pto-tune explain` (and later the tuner) looks without being told:
// $PTO_TUNE_HOME/calibration, else ~/.cache/pto-tune/calibration.
#pragma once

#include <string>

namespace pto::cli {

// Empty when neither PTO_TUNE_HOME nor HOME is set.
std::string default_calibration_dir();

}  // namespace pto::cli
