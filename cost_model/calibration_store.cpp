#include "cost_model/calibration_store.h"

#include <cstdlib>
#include <filesystem>

#include "core/error.h"
#include "core/warning.h"

namespace pto {

namespace {

// A name as it may appear in a file name: letters, digits, '_' and '-'; anything else
// (a '/', a '.', a space) becomes '_', so "../../x" is "______x", inside the folder.
std::string path_safe(const std::string& name) {
  std::string out = name.empty() ? "unnamed" : name;
  for (char& c : out) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!safe) c = '_';
  }
  return out;
}

}  // namespace

std::string default_calibration_dir() {
  namespace fs = std::filesystem;
  if (const char* home = std::getenv("PTO_TUNE_HOME"); home && *home) return (fs::path(home) / "calibration").string();
  if (const char* home = std::getenv("HOME"); home && *home)
    return (fs::path(home) / ".cache" / "pto-tune" / "calibration").string();
  return "";
}

std::string calibration_path(const std::string& dir, const Target& target, const std::string& backend) {
  const std::string file =
      path_safe(target.name) + "." + path_safe(target.fingerprint()) + "." + path_safe(backend) + ".coefficients.json";
  return (std::filesystem::path(dir) / file).string();
}

std::optional<Coefficients> load_calibrated(const std::string& dir, const Target& target,
                                            const std::string& backend) {
  if (dir.empty()) return std::nullopt;
  const std::string path = calibration_path(dir, target, backend);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  Coefficients c = Coefficients::load(path);
  if (c.fingerprint != target.fingerprint() || c.backend != backend) {
    fail(ErrorCategory::Usage, "coefficients file '" + path + "' was fitted for " + c.target + " (" + c.fingerprint +
                                   ") on " + c.backend + ", not for " + target.name + " (" + target.fingerprint() +
                                   ") on " + backend + "; remove it or calibrate again");
  }
  return c;
}

std::optional<Coefficients> usable_calibration(const std::string& dir, const Target& target,
                                               const std::string& backend) {
  try {
    return load_calibrated(dir, target, backend);
  } catch (const Error& e) {
    warn(std::string(e.what()) + "; predicting with the uncalibrated (datasheet) coefficients");
    return std::nullopt;
  }
}

Coefficients calibrated_coefficients(const Target& target, const std::string& backend) {
  return calibrated_coefficients(target, backend, default_calibration_dir());
}

Coefficients calibrated_coefficients(const Target& target, const std::string& backend, const std::string& dir) {
  if (auto fitted = usable_calibration(dir, target, backend)) return *fitted;
  return Coefficients::defaults(target);
}

SaveOutcome save_calibration(const std::string& dir, const Target& target, const std::string& backend,
                             const Coefficients& fit, bool replace_better) {
  if (dir.empty()) usage_error("no calibration folder: neither PTO_TUNE_HOME nor HOME is set to derive it from");
  SaveOutcome outcome;
  outcome.path = calibration_path(dir, target, backend);
  if (!replace_better) {
    if (auto saved = load_calibrated(dir, target, backend); saved && saved->samples > fit.samples) {
      outcome.kept_because = "the saved fit was made on " + std::to_string(saved->samples) +
                             " samples, this one on " + std::to_string(fit.samples);
      return outcome;
    }
  }
  Coefficients stamped = fit;
  stamped.target = target.name;
  stamped.fingerprint = target.fingerprint();
  stamped.backend = backend;
  stamped.save(outcome.path);
  outcome.saved = true;
  return outcome;
}

}  // namespace pto
