// ForkGuard (see fork_guard.h): a count of running sections under a mutex, which the
// prepare handler holds across fork() once the count is zero.
#include "fork_guard.h"

#include <omp.h>
#include <pthread.h>

#include <condition_variable>
#include <mutex>

namespace pto::python {

namespace {

struct State {
  std::mutex mutex;
  std::condition_variable changed;  // running reached 0, or a fork ended
  int running = 0;
  bool forking = false;
};

// Never destroyed (a section may end while the interpreter exits). The child gets a new
// one: the old condition variable may list waiters that the child does not have.
State* state = new State;

void before_fork() {
  std::unique_lock lock(state->mutex);
  state->changed.wait(lock, [] { return !state->forking; });  // another thread's fork
  state->forking = true;
  state->changed.wait(lock, [] { return state->running == 0; });
  lock.release();  // held across fork(): no section starts meanwhile
}

void after_fork_in_parent() {
  state->forking = false;
  state->mutex.unlock();
  state->changed.notify_all();
}

// libgomp's thread pool does not survive fork(): the child has none of the pool's
// threads, and its first parallel region (a tune's scoring) waits for them for ever,
// whichever thread of the parent ran OpenMP. One thread per region needs no pool.
void after_fork_in_child() {
  state = new State;
  omp_set_num_threads(1);
}

}  // namespace

void ForkGuard::install() {
  static const bool installed = pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child) == 0;
  (void)installed;
}

ForkGuard::Section::Section() {
  std::unique_lock lock(state->mutex);
  state->changed.wait(lock, [] { return !state->forking; });
  ++state->running;
}

ForkGuard::Section::~Section() {
  std::lock_guard lock(state->mutex);
  if (--state->running == 0) state->changed.notify_all();
}

}  // namespace pto::python
