#include "cli/calibration_dir.h"

#include <cstdlib>
#include <filesystem>

namespace pto::cli {

std::string default_calibration_dir() {
  namespace fs = std::filesystem;
  if (const char* home = std::getenv("PTO_TUNE_HOME"); home && *home) return (fs::path(home) / "calibration").string();
  if (const char* home = std::getenv("HOME"); home && *home) {
    return (fs::path(home) / ".cache" / "pto-tune" / "calibration").string();
  }
  return "";
}

}  // namespace pto::cli
