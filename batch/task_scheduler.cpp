#include "batch/task_scheduler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "core/error.h"

namespace pto::batch {

namespace {

void check_total(int64_t total, size_t n) {
  if (total < TaskScheduler::kMinShare * static_cast<int64_t>(n))
    usage_error("--total-budget " + std::to_string(total) + " is below " + std::to_string(TaskScheduler::kMinShare) +
                " measurements for each of " + std::to_string(n) + " workloads");
}

}  // namespace

TaskScheduler::TaskScheduler(std::vector<ScheduledTask> tasks, const TaskScheduleOptions& options)
    : options_(options) {
  for (const ScheduledTask& t : tasks) {
    if (!(t.weight > 0) || !std::isfinite(t.weight))
      usage_error("task scheduler: a weight must be > 0, got " + std::to_string(t.weight));
    tasks_.push_back(Task{t, {}, std::nullopt, t.done});
  }
  if (options_.total_budget > 0 && !tasks_.empty()) {
    check_total(options_.total_budget, tasks_.size());
    round_ = std::clamp<int64_t>(options_.total_budget / (2 * static_cast<int64_t>(tasks_.size())), kMinShare,
                                 kMaxShare);
  }
}

int64_t TaskScheduler::spent() const {
  int64_t sum = 0;
  for (const Task& t : tasks_) sum += t.spec.spent;
  return sum;
}

int64_t TaskScheduler::room(const Task& t) const {
  int64_t room = round_;
  if (t.spec.cap > 0) room = std::min(room, t.spec.cap - t.spec.spent);
  if (options_.total_budget > 0) room = std::min(room, options_.total_budget - spent());
  return std::max<int64_t>(room, 0);
}

bool TaskScheduler::open(const Task& t) const { return !t.finished && room(t) > 0; }

std::optional<Grant> TaskScheduler::next() {
  while (warmup_next_ < tasks_.size()) {
    const size_t i = warmup_next_++;
    const Task& t = tasks_[i];
    if (t.finished) continue;
    // A resumed task may have its warm-up measured already: a grant of what is missing
    // (maybe nothing) lets the caller report its state.
    const int64_t missing = std::min(room(t), std::max<int64_t>(0, round_ - t.spec.spent));
    if (missing > 0 || t.spec.spent > 0) return Grant{i, missing};
    if (room(t) == 0 && options_.total_budget > 0) return std::nullopt;  // the budget is spent
  }
  std::optional<size_t> pick;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    if (!open(tasks_[i])) continue;
    if (!pick) {
      pick = i;
      continue;
    }
    const double g = expected_gain(i), best = expected_gain(*pick);
    if (g > best || (g == best && tasks_[i].spec.spent < tasks_[*pick].spec.spent)) pick = i;
  }
  if (!pick) return std::nullopt;
  return Grant{*pick, room(tasks_[*pick])};
}

void TaskScheduler::report(const Grant& grant, const TaskProgress& progress) {
  Task& t = tasks_.at(grant.task);
  t.spec.spent += progress.measured;
  t.finished = t.finished || progress.finished;
  if (progress.best_ns > 0) t.log_best.push_back(std::log(progress.best_ns));
  t.log_headroom.reset();
  if (progress.best_ns > 0 && progress.best_unmeasured_ns && *progress.best_unmeasured_ns > 0)
    t.log_headroom = std::max(0.0, std::log(progress.best_ns / *progress.best_unmeasured_ns));
}

double TaskScheduler::expected_gain(size_t task) const {
  const Task& t = tasks_.at(task);
  if (t.log_best.empty()) return 0;
  const size_t n = t.log_best.size();
  const size_t back = std::min(options_.window, n - 1);
  const double recent = back ? (t.log_best[n - 1 - back] - t.log_best[n - 1]) / static_cast<double>(back) : 0;
  const double headroom = t.log_headroom.value_or(recent);
  return t.spec.weight * (options_.alpha * recent + (1 - options_.alpha) * headroom);
}

std::vector<int64_t> equal_split(int64_t total, size_t n) {
  if (n == 0) return {};
  check_total(total, n);
  const auto count = static_cast<int64_t>(n);
  std::vector<int64_t> budgets(n, total / count);
  for (int64_t i = 0; i < total % count; ++i) ++budgets[static_cast<size_t>(i)];
  return budgets;
}

}  // namespace pto::batch
