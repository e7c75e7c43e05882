// TaskScheduler: shares one measurement budget (or one stretch of wall time) across
// the workloads of a batch, after TVM MetaSchedule's gradient-based task scheduler.
// Every workload first gets a small share, the warm-up round, in order; after that
// each round goes to the one workload where the next measurements are expected to
// gain the most, until the budget is spent, the caller's time is up, or every
// workload's search has finished.
//
// The batch's objective is the weighted geometric-mean speedup over the defaults,
// sum(weight * log speedup), so gains are in log time. A workload's expected gain per
// round is
//     weight * (alpha * recent + (1 - alpha) * headroom)
//   headroom = log(best measured / the strategy's expected time of its best candidate
//              not yet measured), >= 0 — the cost model, corrected by what the search
//              measured (Strategy::best_unproposed_ns); where the strategy does not
//              rank by a model, its recent gain stands in for it
//   recent   = the drop of log(best measured) over its last `window` rounds, per round
// MetaSchedule's forward term is an optimistic best / trials; pto-tune has a cost
// model that says how much faster the best untried candidate should be, so the
// headroom takes its place. A workload with no expected gain gets nothing while
// another expects one; when none does, the rounds go to the least-measured workload
// whose search is not finished (the strategies' own stop rules end them).
//
// The scheduler only decides: the caller tunes (search/tuning_session.h) and reports
// what each round left behind. It is deterministic: ties go to the least-measured
// workload, then the first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace pto::batch {

struct ScheduledTask {
  double weight = 1;    // > 0: how much its speedup matters (e.g. calls per model)
  int64_t cap = 0;      // most measurements it may get in all; 0 = no cap
  int64_t spent = 0;    // measured for it before (a resumed run), counted against the budget
  bool done = false;    // finished before (a resumed run): its spent counts, it gets nothing
};

struct TaskScheduleOptions {
  int64_t total_budget = 0;  // measurements for all tasks, spent ones included; 0 = no total
  double alpha = 0.2;        // the weight of the recent gain against the headroom
  size_t window = 3;         // rounds the recent gain is taken over
};

// What one round of a task left behind.
struct TaskProgress {
  int64_t measured = 0;                      // measurements the round made
  double best_ns = 0;                        // best measured time so far; 0 = none usable
  std::optional<double> best_unmeasured_ns;  // Strategy::best_unproposed_ns
  bool finished = false;                     // the search has nothing left (or failed)
};

struct Grant {
  size_t task = 0;
  int64_t measurements = 0;  // 0 only for a resumed task whose warm-up is already measured
};

class TaskScheduler {
 public:
  // Usage Error when a weight is not > 0, or a total is below kMinShare measurements
  // for each task.
  TaskScheduler(std::vector<ScheduledTask> tasks, const TaskScheduleOptions& options);

  // The next round: every task's warm-up first, in order, then the largest expected
  // gain. Absent when the budget is spent or no task can take more.
  std::optional<Grant> next();
  // What the round `grant` made; every grant is reported before the next one is asked.
  void report(const Grant& grant, const TaskProgress& progress);

  // The expected log gain of the task's next round (0 before its warm-up is reported).
  double expected_gain(size_t task) const;
  int64_t spent(size_t task) const { return tasks_[task].spec.spent; }
  int64_t spent() const;
  int64_t round_size() const { return round_; }

  // The warm-up share, which is also the size of every later round: half of the total
  // spread evenly, within [kMinShare, kMaxShare] (kMaxShare without a total), so that
  // at least half of the total is left to steer by gain.
  static constexpr int64_t kMinShare = 2;  // the default config and one candidate
  static constexpr int64_t kMaxShare = 8;  // the tuner's batch of candidates

 private:
  struct Task {
    ScheduledTask spec;
    std::vector<double> log_best;  // after each reported round with a usable best
    std::optional<double> log_headroom;
    bool finished = false;
  };
  bool open(const Task& t) const;  // may take more measurements
  int64_t room(const Task& t) const;

  std::vector<Task> tasks_;
  TaskScheduleOptions options_;
  int64_t round_ = kMaxShare;
  size_t warmup_next_ = 0;
};

// The equal split the shared budget is compared with: `total` over `n` tasks, the
// remainder to the first ones. Usage Error when a task would get less than kMinShare.
std::vector<int64_t> equal_split(int64_t total, size_t n);

}  // namespace pto::batch
