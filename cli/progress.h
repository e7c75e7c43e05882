// A progress bar with an ETA on stderr, drawn only when stderr is a terminal: a person
// watching sees the work move, while a script, a pipe or a log file gets nothing (as
// Halide's autoscheduler does). The ETA is the mean time per step so far times the
// steps left.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace pto::cli {

class ProgressBar {
 public:
  explicit ProgressBar(std::string label);
  ~ProgressBar();  // finish()
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // `done` of `planned` steps (planned 0: unknown, no bar and no ETA).
  void update(int64_t done, int64_t planned);
  // Ends the line, when one was drawn.
  void finish();

 private:
  std::string label_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace pto::cli
