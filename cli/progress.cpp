#include "cli/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>

namespace pto::cli {

namespace {

constexpr int kBarWidth = 30;

std::string duration(double seconds) {
  char text[32];
  if (seconds >= 3600) {
    std::snprintf(text, sizeof text, "%dh%02dm", static_cast<int>(seconds / 3600), static_cast<int>(seconds / 60) % 60);
  } else if (seconds >= 60) {
    std::snprintf(text, sizeof text, "%dm%02ds", static_cast<int>(seconds / 60), static_cast<int>(seconds) % 60);
  } else {
    std::snprintf(text, sizeof text, "%.0fs", std::ceil(seconds));
  }
  return text;
}

}  // namespace

ProgressBar::ProgressBar(std::string label)
    : label_(std::move(label)), enabled_(::isatty(STDERR_FILENO) != 0), start_(std::chrono::steady_clock::now()) {}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::update(int64_t done, int64_t planned) {
  if (!enabled_) return;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  // Appended piecewise: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string&&.
  std::string line = "\r";
  line += label_ + ' ';
  if (planned > 0) {
    const int64_t shown = std::min(done, planned);
    const int filled = static_cast<int>(kBarWidth * shown / planned);
    line += '[';
    line += std::string(filled, '#') + std::string(kBarWidth - filled, '.') + "] ";
    line += std::to_string(done) + "/" + std::to_string(planned);
    if (done > 0 && done < planned) {
      line += "  ETA ";
      line += duration(elapsed / static_cast<double>(done) * (planned - done));
    }
  } else {
    line += std::to_string(done);
  }
  line += "  " + duration(elapsed) + " elapsed\033[K";
  std::cerr << line << std::flush;
  drawn_ = true;
}

void ProgressBar::finish() {
  if (drawn_) std::cerr << "\n" << std::flush;
  drawn_ = false;
}

}  // namespace pto::cli
