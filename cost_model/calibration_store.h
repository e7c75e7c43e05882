// The calibration store: where calibrated coefficients live, and the one way to read
// and replace them, so that `pto-tune calibrate` writes where every prediction (the
// runners' predicted_ns, the `model` backend, `explain`, the tuner's prior) looks.
//
// Folder: $PTO_TUNE_HOME/calibration, else ~/.cache/pto-tune/calibration. One file per
// (target, backend), keyed by the target's fingerprint — a user's target file that
// reuses a built-in name with other figures gets a file of its own — with the name
// kept for people to read: `ascend910b1.1a2b3c4d5e6f7a8b.sim.coefficients.json`. Names
// are reduced to [A-Za-z0-9_-] before they reach a path, so no name leaves the folder.
// Files are replaced atomically (core/atomic_file.h), and never by a fit made on fewer
// samples unless the caller insists.
#pragma once

#include <optional>
#include <string>

#include "core/target.h"
#include "cost_model/coefficients.h"

namespace pto {

// Empty when neither PTO_TUNE_HOME nor HOME is set.
std::string default_calibration_dir();

std::string calibration_path(const std::string& dir, const Target& target, const std::string& backend);

// The fit saved under `dir` for this target (by fingerprint) and backend, or nothing
// when there is none. A file that cannot be read or parsed is an Error naming it.
std::optional<Coefficients> load_calibrated(const std::string& dir, const Target& target,
                                            const std::string& backend);

// load_calibrated(), but a file that cannot be used (corrupt, fitted for another
// target) is a warning naming it and why, and nothing: a calibration sharpens
// predictions, so a bad one must not stop tune, run or explain. The file is left as it is.
std::optional<Coefficients> usable_calibration(const std::string& dir, const Target& target,
                                               const std::string& backend);

// What predictions for (target, backend) should use: the usable fit saved in `dir`
// (the default folder when not given), else the datasheet defaults.
Coefficients calibrated_coefficients(const Target& target, const std::string& backend);
Coefficients calibrated_coefficients(const Target& target, const std::string& backend, const std::string& dir);

struct SaveOutcome {
  bool saved = false;
  std::string path;
  std::string kept_because;  // why the saved fit was kept, when !saved
};

// Saves `fit` as the calibration of (target, backend) in `dir`. A saved fit made on
// more samples is better conditioned: it is kept (and the outcome says why) unless
// `replace_better` is set.
SaveOutcome save_calibration(const std::string& dir, const Target& target, const std::string& backend,
                             const Coefficients& fit, bool replace_better = false);

}  // namespace pto
