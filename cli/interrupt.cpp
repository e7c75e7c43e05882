#include "cli/interrupt.h"

#include <signal.h>

#include <iostream>

namespace pto::cli {

namespace {

std::atomic<bool> g_stop{false};
struct sigaction g_previous {};

extern "C" void on_sigint(int) { g_stop.store(true); }  // lock-free: safe in a handler

}  // namespace

InterruptStop::InterruptStop() {
  static_assert(std::atomic<bool>::is_always_lock_free);
  g_stop.store(false);
  struct sigaction action {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND;  // the second Ctrl-C gets the default action: exit now
  sigaction(SIGINT, &action, &g_previous);
}

InterruptStop::~InterruptStop() { sigaction(SIGINT, &g_previous, nullptr); }

const std::atomic<bool>* InterruptStop::flag() const { return &g_stop; }

bool InterruptStop::interrupted() const { return g_stop.load(); }

void InterruptStop::reraise_if_interrupted() {
  if (!interrupted()) return;
  std::cout.flush();
  std::cerr.flush();
  signal(SIGINT, SIG_DFL);
  raise(SIGINT);
}

}  // namespace pto::cli
