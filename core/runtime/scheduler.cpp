// Dependency-counting dispatch: one ready queue under a mutex, threads from OpenMP.
#include "core/runtime/scheduler.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>

#include <omp.h>

#include "core/error.h"

namespace pto::runtime {

struct TaskScheduler::State {
  std::vector<int> deps_left;
  std::vector<int> after_left;
  std::vector<int> tasks_left;
  std::vector<char> open;
  std::deque<int> ready;
  int finished = 0;
};

TaskScheduler::TaskScheduler(const Program& program) {
  task_count_ = static_cast<int>(program.tasks.size());
  const int kernels = static_cast<int>(program.kernels.size());
  kernel_tasks_.resize(static_cast<size_t>(kernels));
  kernel_of_.assign(static_cast<size_t>(task_count_), -1);
  after_count_.assign(static_cast<size_t>(kernels), 0);
  kernel_successors_.resize(static_cast<size_t>(kernels));
  for (int k = 0; k < kernels; ++k) {
    const Kernel& kernel = program.kernels[k];
    for (int t : kernel.tasks) {
      kernel_of_[t] = k;
      kernel_tasks_[k].push_back(t);
    }
    for (int a : kernel.after) {
      ++after_count_[k];
      kernel_successors_[a].push_back(k);
    }
  }
  dep_count_.assign(static_cast<size_t>(task_count_), 0);
  dependents_.resize(static_cast<size_t>(task_count_));
  for (int t = 0; t < task_count_; ++t) {
    for (int d : program.tasks[t].deps) {
      ++dep_count_[t];
      dependents_[d].push_back(t);
    }
  }
}

TaskScheduler::State TaskScheduler::fresh_state() const {
  State s;
  s.deps_left = dep_count_;
  s.after_left = after_count_;
  s.tasks_left.resize(kernel_tasks_.size());
  for (size_t k = 0; k < kernel_tasks_.size(); ++k) s.tasks_left[k] = static_cast<int>(kernel_tasks_[k].size());
  s.open.assign(kernel_tasks_.size(), 0);
  for (size_t k = 0; k < kernel_tasks_.size(); ++k)  // open: an empty kernel may have opened it already
    if (s.after_left[k] == 0 && !s.open[k]) open_kernel(s, static_cast<int>(k));
  return s;
}

void TaskScheduler::open_kernel(State& s, int kernel) const {
  s.open[kernel] = 1;
  for (int t : kernel_tasks_[kernel])
    if (s.deps_left[t] == 0) s.ready.push_back(t);
  if (!kernel_tasks_[kernel].empty()) return;
  for (int next : kernel_successors_[kernel])  // an empty kernel finishes as it opens
    if (--s.after_left[next] == 0) open_kernel(s, next);
}

void TaskScheduler::finish_task(State& s, int task) const {
  ++s.finished;
  for (int t : dependents_[task])
    if (--s.deps_left[t] == 0 && s.open[kernel_of_[t]]) s.ready.push_back(t);
  const int k = kernel_of_[task];
  if (--s.tasks_left[k] > 0) return;
  for (int next : kernel_successors_[k])
    if (--s.after_left[next] == 0) open_kernel(s, next);
}

void TaskScheduler::run(int threads, const std::function<void(int, int)>& run_task) const {
  State s = fresh_state();
  // No more threads than tasks: an idle team member only adds a barrier to wait at,
  // which costs a scheduler tick whenever another process preempts it.
  threads = std::min(threads, task_count_);
  if (threads <= 1) {
    while (!s.ready.empty()) {
      const int t = s.ready.front();
      s.ready.pop_front();
      run_task(t, 0);
      finish_task(s, t);
    }
    return;
  }
  std::mutex mu;
  std::condition_variable cv;
  std::exception_ptr error;
#pragma omp parallel num_threads(threads)
  {
    const int me = omp_get_thread_num();
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      cv.wait(lock, [&] { return error || !s.ready.empty() || s.finished == task_count_; });
      if (error || s.ready.empty()) break;
      const int t = s.ready.front();
      s.ready.pop_front();
      lock.unlock();
      try {
        run_task(t, me);
      } catch (...) {
        lock.lock();
        if (!error) error = std::current_exception();
        cv.notify_all();
        break;
      }
      lock.lock();
      const size_t before = s.ready.size();
      finish_task(s, t);
      if (s.ready.size() > before + 1 || s.finished == task_count_) {
        cv.notify_all();
      } else if (s.ready.size() > before) {
        cv.notify_one();
      }
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace pto::runtime
