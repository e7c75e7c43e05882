#include "batch/batch_task.h"

#include <map>
#include <utility>

#include "batch/task_scheduler.h"
#include "batch/tune_cost.h"
#include "core/error.h"

namespace pto::batch {

namespace {

void say(const BatchOptions& options, const std::string& message) {
  if (options.warn) options.warn(message);
}

// The task of one entry, checked as a job; a usage or infeasible Error for a bad entry.
BatchTask resolve_task(const BatchEntry& e, const Target& target, const BatchOptions& options) {
  BatchTask t{e, target, "", {}, 0, 0, 0};
  if (!e.dtype_given) t.entry.workload.dtype = search::default_dtype(t.target);
  t.budget = e.budget.value_or(options.budget);
  t.backend = search::check(tune_request(t, options), field_names(e, options));  // before anything runs
  t.key = {t.entry.workload.key(), t.target.fingerprint(), t.backend};
  return t;
}

}  // namespace

search::TuneRequest tune_request(const BatchTask& task, const BatchOptions& options) {
  search::TuneRequest r(task.entry.workload, task.target);
  r.backend = task.entry.backend ? task.entry.backend : options.backend;
  r.strategy = options.strategy;
  r.budget = task.budget;
  r.seed = options.seed;
  r.runner = options.runner;
  return r;
}

search::FieldNames field_names(const BatchEntry& entry, const BatchOptions& options) {
  search::FieldNames names = options.names;
  if (entry.budget) names.budget = "budget";
  return names;
}

std::vector<BatchTask> resolve_tasks(const std::string& file, const BatchFile& batch, const BatchOptions& options,
                                     bool report, BatchSummary& summary) {
  std::map<std::string, Target> targets;
  const auto target_named = [&](const std::string& name) -> const Target& {
    if (!targets.contains(name)) targets.emplace(name, load_target(name));
    return targets.at(name);
  };
  const auto problem = [&](const BatchProblem& p) {
    if (!report) return;
    if (options.strict) usage_error(file + ": " + p.where + ": " + p.message);
    say(options, file + ": " + p.where + ": " + p.message + " (skipped)");
    ++summary.workloads["bad_entry"];
  };
  for (const BatchProblem& p : batch.problems) problem(p);
  std::vector<BatchTask> tasks;
  std::map<search::RecordKey, std::string> where_first;
  for (const BatchEntry& e : batch.entries) {
    try {
      BatchTask t = resolve_task(e, target_named(e.target.value_or(options.target)), options);
      if (const auto [first, added] = where_first.try_emplace(t.key, e.where); !added) {
        if (report)
          say(options, file + ": " + e.where + " (" + t.key.workload + ") is " + first->second +
                           " again once defaults are filled in (tuned once)");
        continue;
      }
      t.cost = predicted_tune_cost(t.entry.workload, t.target, t.budget);
      tasks.push_back(std::move(t));
    } catch (const Error& err) {
      if (err.category() != ErrorCategory::Usage && err.category() != ErrorCategory::Infeasible) throw;
      problem({e.where + " (" + e.workload.key() + ")", err.what()});
    }
  }
  return tasks;
}

std::vector<BatchTask> plan_tasks(std::vector<BatchTask> tasks, const BatchOptions& options,
                                  const std::optional<Shard>& shard) {
  if (options.total_budget) {
    const std::vector<int64_t> shares = equal_split(*options.total_budget, tasks.size());
    for (size_t i = 0; i < tasks.size(); ++i) tasks[i].share = shares[i];
  }
  if (shard) std::erase_if(tasks, [&](const BatchTask& t) { return !in_shard(t.key, *shard); });
  std::vector<double> costs;
  for (const BatchTask& t : tasks) costs.push_back(t.cost);
  std::vector<BatchTask> ordered;
  for (size_t i : longest_first(costs)) ordered.push_back(std::move(tasks[i]));
  return ordered;
}

}  // namespace pto::batch
