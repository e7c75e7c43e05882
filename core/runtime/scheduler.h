// Dispatch of a program's tasks over threads, following the execute graph.
//
// A task becomes ready when its kernel is open (every kernel in Kernel::after has
// finished) and its Task::deps have finished. Ready tasks queue in dispatch order
// (Kernel::tasks order as kernels open, then in the order dependencies release them)
// and free threads take them from the front, as NPU cores take tasks when they come
// free. Dependency counting keeps this linear in tasks + edges.
#pragma once

#include <functional>
#include <vector>

#include "core/program.h"

namespace pto::runtime {

class TaskScheduler {
 public:
  // The program must be verified (core/program_verify.h): ids exist, no cycle.
  explicit TaskScheduler(const Program& program);

  // Calls run_task(task, thread) once per task, thread in [0, threads). The first
  // exception a task throws stops dispatch and is rethrown here.
  void run(int threads, const std::function<void(int task, int thread)>& run_task) const;

 private:
  struct State;
  void open_kernel(State& s, int kernel) const;
  void finish_task(State& s, int task) const;
  State fresh_state() const;

  int task_count_ = 0;
  std::vector<std::vector<int>> kernel_tasks_;   // dispatch order
  std::vector<int> kernel_of_;                   // per task
  std::vector<int> dep_count_;                   // per task
  std::vector<std::vector<int>> dependents_;     // per task
  std::vector<int> after_count_;                 // per kernel
  std::vector<std::vector<int>> kernel_successors_;
};

}  // namespace pto::runtime
