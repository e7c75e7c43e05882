// ForkGuard: lookup() and reload() stay usable in a child made by fork() (os.fork,
// multiprocessing's fork start method) while other threads of the parent were inside
// them. fork() copies the calling thread only: a lock another thread held at that
// moment (the providers' map, a provider's memo, SQLite's while a database loads) would
// stay locked in the child for ever, and the child's first lookup would hang.
//
// So the native part of every lookup and reload runs inside a ForkGuard::Section, and
// a pthread_atfork handler, before the fork, waits until no section runs and holds new
// ones back until the fork is done: the child starts with every such lock free. A
// section never waits for the GIL (the forking thread holds it while it waits).
//
// The child also runs its OpenMP regions on one thread: libgomp's pool of the parent
// is gone, and a tune in a child of a process that had tuned hung in its first
// parallel region. tune() and run() as a whole are no sections: they call back into
// Python (the measure function, Ctrl-C polls) and would wait for the GIL the forking
// thread holds; tune's database calls are (tune.cpp, ForkSafeStore), for SQLite's
// process-wide mutexes.
#pragma once

namespace pto::python {

class ForkGuard {
 public:
  // Registers the fork handlers; once, when the module is imported.
  static void install();

  // While one lives, no fork() starts; it waits for a fork in progress.
  class Section {
   public:
    Section();
    ~Section();
    Section(const Section&) = delete;
    Section& operator=(const Section&) = delete;
  };
};

}  // namespace pto::python
