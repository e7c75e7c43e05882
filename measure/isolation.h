// Isolation: runs a piece of work in a child process under a time limit, so that a
// candidate that crashes, aborts or hangs costs the tuner one result, not the run.
//
// Three ways to start the child, one way to collect it (the result, text, JSON by
// convention, travels back over a pipe; the child's stderr is kept for the error
// message; a timeout kills it):
//
// - run_in_child forks this process. The child sees the workload's inputs and
//   reference outputs copy-on-write, which is what the CLI's cpu runner wants.
// - run_in_worker spawns a fresh `pto-tune-worker` process and writes it a request
//   on stdin. A process that must not be forked — a Python interpreter, with its own
//   threads, locks and state — measures this way; the worker rebuilds the fixture
//   from the request's seed. worker_executable() says where the worker is found.
// - run_command runs a user's shell command (`/bin/sh -c`, the command backend) the same
//   way, in a process group of its own that a timeout kills as a whole.
//
// libgomp does not survive a fork: the child inherits the forking thread's OpenMP
// thread pool, whose threads do not exist there, and the first parallel region on
// that thread waits for them forever. A forked child therefore runs the work on a fresh
// thread, which libgomp treats as a new initial thread with a pool of its own
// (tests/measure/isolation_test.cpp checks this after the parent ran parallel regions).
// One trace of the parent stays: libgomp still counts the parent's pool threads as its
// own, so with more threads than cores its idle threads yield sooner (throttled
// spinning) than in a fresh process. Every candidate of a tuning run is measured under
// that same condition. A spawned worker is a fresh process and has none of this.
//
// run_in_child calls must not overlap from several threads: a child forked by one call
// would hold the other call's pipe open and delay its end. run_in_worker calls may:
// the spawned worker inherits only its own pipes.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace pto::measure {

struct ChildResult {
  enum class End { Exited, Signaled, TimedOut };
  End end = End::Exited;
  int exit_code = 0;         // End::Exited
  int signal = 0;            // End::Signaled
  std::string output;        // what the work returned; complete only when exit_code is 0
  std::string stderr_tail;   // the last few hundred bytes the child wrote to stderr
  double wall_s = 0;

  bool succeeded() const { return end == End::Exited && exit_code == 0; }
  // "killed by signal 11 (Segmentation fault)", "exited with code 70: <stderr tail>",
  // "no result within 2 s; killed".
  std::string describe() const;
};

// Exit code of a child whose work threw; the exception's message goes to its stderr.
constexpr int kWorkThrewExitCode = 70;

// Forks, runs `work` in the child and returns its result, or how the child ended.
// Kills the child (SIGKILL) after `timeout_s`. io Error when the pipe or the fork fails.
ChildResult run_in_child(const std::function<std::string()>& work, double timeout_s);

// Spawns `executable` (argv: itself, then `args`), writes `request` to its stdin and
// returns what it printed on stdout, or how it ended. Kills it (SIGKILL) after
// `timeout_s`. io Error when the pipes or the spawn fail.
ChildResult run_in_worker(const std::string& executable, const std::vector<std::string>& args,
                          const std::string& request, double timeout_s);

// Runs `/bin/sh -c shell_command` in a new process group, writes `request` to its stdin
// and returns what it printed on stdout, or how it ended. Kills the whole group
// (SIGKILL) after `timeout_s`. io Error when the pipes or the spawn fail.
ChildResult run_command(const std::string& shell_command, const std::string& request, double timeout_s);

// The pto-tune-worker executable: $PTO_TUNE_WORKER when set, else the one next to the
// binary or shared library holding this code (the pto-tune executable, or the Python
// extension module), else next to /proc/self/exe, else the one this build made. io Error
// naming the places looked at when none exists.
std::string worker_executable();

// The argument the worker takes to tie its life to its parent's (see worker_main).
constexpr const char* kWorkerParentFlag = "--parent";

}  // namespace pto::measure
