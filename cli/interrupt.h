// Ctrl-C for long jobs: the first SIGINT sets a stop flag that the job polls, so it
// stops after the measurement in flight and keeps (and prints) everything measured so
// far; a second SIGINT ends the process at once. After the job has reported, the
// command re-raises SIGINT so that a calling shell loop sees the interrupt too
// (a process that catches SIGINT and exits 0 would let `for ...; do pto-tune ...` go on).
#pragma once

#include <atomic>

namespace pto::cli {

class InterruptStop {
 public:
  InterruptStop();   // installs the handler
  ~InterruptStop();  // restores the previous one
  InterruptStop(const InterruptStop&) = delete;
  InterruptStop& operator=(const InterruptStop&) = delete;

  const std::atomic<bool>* flag() const;
  bool interrupted() const;
  // When interrupted: restores the default action and raises SIGINT (does not return).
  void reraise_if_interrupted();
};

}  // namespace pto::cli
