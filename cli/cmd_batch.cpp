// `pto-tune batch FILE`: offline tuning of a list of workloads before a release
// (search/batch_file.h says what FILE holds). Each workload is tuned through a
// search::TuningSession into the tuning database; the run ends with a summary (tuned,
// skipped, failed, total time, geometric-mean speedup over the defaults).
//
// Budgets. Without --total-budget or --time-limit each workload is tuned to its own
// budget, in file order. --total-budget N (or --time-limit alone) is shared out by a
// search::TaskScheduler: a warm-up round for every workload, then rounds by expected
// gain (search/task_scheduler.h); --equal-split splits N evenly instead. N is for the
// whole file: every task carries its equal share of N, and a shard or worker spends
// the sum of its tasks' shares.
//
// Resume. A workload the database already holds a usable record for, made under this
// pto-tune's compiler and cost-model versions on the same target fingerprint and
// backend, is skipped (--retune tunes it again). The tuner commits every measurement
// as it comes, so a killed run loses at most the batch in flight; a journal beside
// the database (DB.batch-journal) notes each workload started and finished. A
// workload a killed run left half-tuned goes on from its stored records, and what the
// journal's workloads have stored counts against a shared budget.
// SIGINT and SIGTERM stop after the measurement in flight and print the summary.
//
// Scale. --jobs N runs N worker processes (this executable, `--worker J/N`) over the
// same database; --shard I/N (or the Slurm / Kubernetes array index, search/shard.h)
// takes a stable share for one machine of a cluster, whose databases `pto-tune db
// merge` combines. A worker dies with its parent, so a batch killed even by SIGKILL
// leaves none measuring beside a rerun, which goes on from what was stored and measures
// nothing twice.
//
// Every core busy. The workloads go out longest first (search/tune_cost.h), and each
// worker claims the next one when it is done with its last (cli/claim_file.h), so a
// worker is idle only when nothing is left to claim, and the batch ends about when its
// longest workload could. With a shared budget (--total-budget, --time-limit) a worker
// runs its scheduler over a fixed share instead, every N-th workload of that order.
// A long workload is not left on one core either: the sim backend simulates each
// batch of candidates on as many threads as the machine has cores
// (measure/sim/sim_runner.cpp), so the cores of the workers that ran out of work go
// to the ones still tuning; the simulator's times do not depend on load, so that is
// exact. Threads were chosen over workers that take part of another's candidates
// because a worker is a process with its own session and strategy: sharing a batch
// across processes would need a protocol for candidates and results, for nothing the
// threads do not already give. The summary says how it went: each worker's busy
// seconds (tuning a workload) and their fraction of N x the wall time, the critical
// path (the longest workload's own time, and which), and the CPU time used.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/claim_file.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/format_number.h"
#include "cli/interrupt.h"
#include "cli/progress.h"
#include "core/error.h"
#include "db/tuning_db.h"
#include "search/batch_file.h"
#include "search/shard.h"
#include "search/task_scheduler.h"
#include "search/tune_request.h"
#include "search/tuner.h"
#include "search/tuning_session.h"
#include "search/tune_cost.h"

namespace pto::cli {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// One workload of the batch, resolved against its target and backend.
struct Task {
  search::BatchEntry entry;
  Target target;
  std::string backend;
  search::RecordKey key;
  int64_t budget = 0;  // its own measurements (0: the strategy decides)
  int64_t share = 0;   // with --total-budget: its share in an equal split of the total
  double cost = 0;     // search::predicted_tune_cost: what orders the batch
};

// Per-workload outcome, and the run's totals (a worker's are summed by its parent).
struct Summary {
  std::map<std::string, int64_t> workloads;       // tuned, skipped, failed, interrupted, bad_entry
  std::map<std::string, int64_t> failed_measurements;  // status -> count, over all tuned workloads
  int64_t measurements = 0;
  double log_speedup_sum = 0;  // over the tuned workloads that have a feasible default
  int64_t speedups = 0;        // how many those are
  double elapsed_s = 0;
  double busy_s = 0;                 // spent tuning workloads, summed over the workers
  std::vector<double> worker_busy_s;  // each worker's
  json results = json::array();

  double geomean_speedup() const { return speedups ? std::exp(log_speedup_sum / static_cast<double>(speedups)) : 1; }
  json to_json() const {
    return json{{"workloads", workloads},        {"failed_measurements", failed_measurements},
                {"measurements", measurements},  {"log_speedup_sum", log_speedup_sum},
                {"speedups", speedups},          {"geomean_speedup", geomean_speedup()},
                {"elapsed_s", elapsed_s},        {"busy_s", busy_s},
                {"results", results}};
  }
  void add(const json& j) {
    for (const auto& [k, v] : j["workloads"].items()) workloads[k] += v.get<int64_t>();
    for (const auto& [k, v] : j["failed_measurements"].items()) failed_measurements[k] += v.get<int64_t>();
    measurements += j["measurements"].get<int64_t>();
    log_speedup_sum += j["log_speedup_sum"].get<double>();
    speedups += j["speedups"].get<int64_t>();
    busy_s += j["busy_s"].get<double>();
    worker_busy_s.push_back(j["busy_s"].get<double>());
    for (const json& r : j["results"]) results.push_back(r);
  }
};

// Which workloads a run started and finished, one line each, appended (O_APPEND keeps
// the short lines of parallel workers whole).
class Journal {
 public:
  explicit Journal(const std::string& db_path) : path_(db_path + ".batch-journal") {
    std::ifstream in(path_);
    for (std::string word, key; in >> word && std::getline(in >> std::ws, key);) {
      if (word == "start") unfinished_.insert(key), started_.insert(key);
      if (word == "done") unfinished_.erase(key);
    }
  }
  bool unfinished(const std::string& key) const { return unfinished_.contains(key); }
  bool started(const std::string& key) const { return started_.contains(key); }
  void note(const std::string& word, const std::string& key) const {
    const std::string line = word + " " + key + "\n";
    const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0) fail(ErrorCategory::Io, "cannot write the batch journal '" + path_ + "'");
    const bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
    ::close(fd);
    if (!ok) fail(ErrorCategory::Io, "cannot write the batch journal '" + path_ + "'");
  }

 private:
  std::string path_;
  std::set<std::string> unfinished_, started_;
};

std::string journal_key(const search::RecordKey& k) { return k.workload + " " + k.target_fingerprint + " " + k.backend; }

// SIGTERM (a cluster's scheduler ending a job) is handled as Ctrl-C is.
extern "C" void on_sigterm(int) { raise(SIGINT); }

// The tuning job of a task (search/tune_request.h): the batch's flags, with the entry's
// own backend and budget where it gives them. The batch's time limit is the whole run's,
// shared out by the rounds, so no job has one of its own.
search::TuneRequest request_for(const Task& t, const po::variables_map& vm) {
  search::TuneRequest r = tune_request_from(vm, t.entry.workload, t.target);
  if (t.entry.backend) r.backend = t.entry.backend;
  r.budget = t.budget;
  return r;
}

// An entry's own budget is named as the file names it, the batch's as its flag.
search::FieldNames field_names(const search::BatchEntry& e) {
  search::FieldNames names = tune_flag_names();
  if (e.budget) names.budget = "budget";
  return names;
}

void report_problem(const std::string& file, const search::BatchProblem& p, bool strict) {
  if (strict) usage_error(file + ": " + p.where + ": " + p.message);
  std::cerr << "pto-tune: batch: " << file << ": " << p.where << ": " << p.message << " (skipped)\n";
}

// The tasks of the file's good entries; the bad ones are reported and counted when
// `report` (a worker leaves that to its parent).
std::vector<Task> resolve(const std::string& file, const search::BatchFile& batch, const po::variables_map& vm,
                          bool report, Summary& summary) {
  std::map<std::string, Target> targets;
  const auto target_named = [&](const std::string& name) -> const Target& {
    if (!targets.contains(name)) targets.emplace(name, load_target(name));
    return targets.at(name);
  };
  const bool strict = vm["strict"].as<bool>();
  const auto problem = [&](const search::BatchProblem& p) {
    if (!report) return;
    report_problem(file, p, strict);
    ++summary.workloads["bad_entry"];
  };
  for (const search::BatchProblem& p : batch.problems) problem(p);
  std::vector<Task> tasks;
  // Entries that differ only in what the defaults fill in (`matmul 64,64,64` and
  // `matmul 64,64,64 fp16` where fp16 is the target's dtype) are one task: tuned once.
  std::map<search::RecordKey, std::string> where_first;
  for (const search::BatchEntry& e : batch.entries) {
    try {
      Task t{e, target_named(e.target.value_or(vm["target"].as<std::string>())), "", {}, 0, 0, 0};
      if (!e.dtype_given) t.entry.workload.dtype = default_dtype(t.target);
      t.budget = e.budget.value_or(vm["budget"].as<int64_t>());
      // Before anything runs: a bad entry, not a failed run.
      t.backend = search::check(request_for(t, vm), field_names(e));
      t.key = {t.entry.workload.key(), t.target.fingerprint(), t.backend};
      if (const auto [first, added] = where_first.try_emplace(t.key, e.where); !added) {
        if (report)
          std::cerr << "pto-tune: batch: " << file << ": " << e.where << " (" << t.key.workload << ") is "
                    << first->second << " again once defaults are filled in (tuned once)\n";
        continue;
      }
      t.cost = search::predicted_tune_cost(t.entry.workload, t.target, t.budget);
      tasks.push_back(std::move(t));
    } catch (const Error& err) {
      if (err.category() != ErrorCategory::Usage && err.category() != ErrorCategory::Infeasible) throw;
      problem({e.where + " (" + e.workload.key() + ")", err.what()});
    }
  }
  return tasks;
}

std::optional<search::Shard> shard_of(const po::variables_map& vm) {
  const std::optional<uint64_t> count =
      vm.count("shard-count") ? std::optional<uint64_t>(vm["shard-count"].as<uint64_t>()) : std::nullopt;
  if (vm.count("shard")) return search::parse_shard(vm["shard"].as<std::string>());
  return search::shard_from_env(count);
}

// --total-budget is for the whole file: each task carries the share an equal split of
// the total over the file's good entries gives it, so that the shards and workers,
// each spending the shares of its own tasks, together spend no more than the total.
void give_equal_shares(std::vector<Task>& tasks, int64_t total) {
  const std::vector<int64_t> shares = search::equal_split(total, tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) tasks[i].share = shares[i];
}

// The tasks, the longest to tune (search::predicted_tune_cost) first.
std::vector<Task> longest_first(std::vector<Task> tasks) {
  std::vector<double> costs;
  for (const Task& t : tasks) costs.push_back(t.cost);
  std::vector<Task> ordered;
  for (size_t i : search::longest_first(costs)) ordered.push_back(std::move(tasks[i]));
  return ordered;
}

int64_t total_share(const std::vector<Task>& tasks) {
  int64_t sum = 0;
  for (const Task& t : tasks) sum += t.share;
  return sum;
}

// The records stored for the tasks the journal names (a batch run on this database
// started them; `finished_too`: also those it finished), made by this pto-tune's
// versions, by key in the order measured: what a resumed run goes on from, and with a
// shared budget what it counts as spent.
using RecordsByKey = std::map<search::RecordKey, std::vector<search::TuningRecord>>;

RecordsByKey stored_records(db::TuningDb& db, const std::vector<Task>& tasks, const Journal& journal,
                            bool finished_too) {
  std::set<search::RecordKey> named;
  for (const Task& t : tasks) {
    const std::string key = journal_key(t.key);
    if (journal.unfinished(key) || (finished_too && journal.started(key))) named.insert(t.key);
  }
  RecordsByKey by_key;
  if (named.empty()) return by_key;
  for (search::TuningRecord& r : db.records())
    if (named.contains(r.key()) && r.versions == search::Versions::current()) by_key[r.key()].push_back(std::move(r));
  return by_key;
}

// A workload a killed run left half-tuned is not tuned, whatever it holds.
bool tuned_already(db::TuningDb& db, const Task& t, const Journal& journal) {
  return !journal.unfinished(journal_key(t.key)) && search::is_tuned(db, t.key);
}

// One batch run in this process: each workload tuned through a search::TuningSession,
// either one after another, each to its own budget, as this process claims them (from
// the workers' claim file, or all in order), or in rounds a search::TaskScheduler hands
// out (--total-budget, --time-limit). The sessions held open at once are bounded (a
// session of a large space holds its scored candidates); one let go is opened again
// from its records, which measures nothing twice.
class BatchRun {
 public:
  // `claims`: where a worker claims its next workload; null: this process takes them all.
  BatchRun(const po::variables_map& vm, db::TuningDb& db, const InterruptStop& interrupt, Summary& summary,
           const ClaimFile* claims)
      : vm_(vm), db_(db), interrupt_(interrupt), summary_(summary), claims_(claims), journal_(db.location()),
        limit_s_(vm["time-limit"].as<double>()), start_(Clock::now()) {}

  void run(const std::vector<Task>& tasks, bool scheduled, int64_t total, bool show_progress) {
    const bool retune = vm_["retune"].as<bool>();
    RecordsByKey stored;
    if (!retune) stored = stored_records(db_, tasks, journal_, /*finished_too=*/scheduled);
    for (const Task& t : tasks) {
      Work w;
      w.task = &t;
      if (!retune) {
        w.records = std::move(stored[t.key]);
        w.skip = tuned_already(db_, t, journal_);
      }
      w.prior = static_cast<int64_t>(w.records.size());
      works_.push_back(std::move(w));
    }
    ProgressBar bar("batch");
    if (scheduled) run_scheduled(total, show_progress ? &bar : nullptr);
    else run_in_order(show_progress ? &bar : nullptr);
    bar.finish();
    for (Work& w : works_) {
      if (!w.claimed) continue;  // another worker's
      if (w.status.empty()) end(w, w.opened ? "interrupted" : "not_started");
      w.result["seconds"] = w.seconds;
      summary_.busy_s += w.seconds;
      summary_.results.push_back(std::move(w.result));  // in the order given
    }
  }

 private:
  // Sessions held open at most, and the candidates their strategies hold (a scored
  // candidate takes a few hundred bytes): a session re-opened from its records
  // re-scores its space, which costs more than its measurements on small spaces.
  static constexpr size_t kOpenSessions = 256;
  static constexpr uint64_t kHeldCandidates = 1'000'000;
  static constexpr int64_t kUnlimited = std::numeric_limits<int64_t>::max() / 4;

  struct Work {
    const Task* task = nullptr;
    std::vector<search::TuningRecord> records;  // while no session is open: every measurement so far
    int64_t prior = 0;                          // measured by an earlier run
    int64_t measured = 0;                       // measured by this run's rounds
    bool skip = false, opened = false;
    bool claimed = false;                       // this process's to tune (or to report)
    double seconds = 0;                         // wall time this process spent tuning it
    std::optional<search::ResolvedTune> job;  // its runners and options, made when first opened
    std::unique_ptr<search::TuningSession> session;
    uint64_t last_use = 0;
    std::string status;                         // empty while tuning
    json result;                                // its line of the summary's results
  };

  // Adds the wall time of its scope to a workload's.
  struct BusyTimer {
    explicit BusyTimer(double& seconds) : seconds_(seconds) {}
    ~BusyTimer() { seconds_ += std::chrono::duration<double>(Clock::now() - start_).count(); }
    double& seconds_;
    const Clock::time_point start_ = Clock::now();
  };

  int64_t ended() const {
    return std::count_if(works_.begin(), works_.end(), [](const Work& w) { return !w.status.empty(); });
  }

  // A workload not yet started that another process sharing the database (another
  // batch run) has tuned since this run looked: not measured again.
  bool tuned_meanwhile(const Work& w) {
    return !vm_["retune"].as<bool>() && w.prior == 0 && tuned_already(db_, *w.task, journal_);
  }

  // Out of time or stopped by a signal: no more rounds.
  bool over() const { return interrupt_.interrupted() || (limit_s_ > 0 && seconds_left() <= 0); }
  double seconds_left() const {
    return limit_s_ > 0 ? limit_s_ - std::chrono::duration<double>(Clock::now() - start_).count() : 0;
  }

  // Each workload this process claims, to its own budget, until none is left. A
  // stopped run goes on claiming (and tunes nothing), so that every workload is
  // reported, as not started, by the worker that claimed it.
  void run_in_order(ProgressBar* bar) {
    size_t next = 0, taken = 0;
    for (size_t i; (i = claims_ ? claims_->claim() : next++) < works_.size();) {
      Work& w = works_[i];
      w.claimed = true;
      if (w.skip) end(w, "skipped");
      if (!w.status.empty() || over()) continue;
      if (tuned_meanwhile(w)) {
        end(w, "skipped");
        continue;
      }
      const int64_t budget = w.task->share ? w.task->share : w.task->budget;
      round(w, budget > 0 ? std::max<int64_t>(0, budget - w.prior) : kUnlimited);
      if (w.status.empty() && !interrupt_.interrupted()) finish(w);
      if (bar) bar->update(static_cast<int64_t>(++taken), static_cast<int64_t>(works_.size()));
    }
  }

  void run_scheduled(int64_t total, ProgressBar* bar) {
    for (Work& w : works_) {
      w.claimed = true;
      if (w.skip) end(w, "skipped");
    }
    std::vector<search::ScheduledTask> specs;
    for (const Work& w : works_) specs.push_back({w.task->entry.weight, total > 0 ? 0 : w.task->budget, w.prior, w.skip});
    search::TaskScheduler scheduler(std::move(specs), {.total_budget = total});
    while (!over()) {
      const std::optional<search::Grant> grant = scheduler.next();
      if (!grant) break;
      Work& w = works_[grant->task];
      const search::TaskProgress progress = round(w, grant->measurements);
      scheduler.report(*grant, progress);
      if (progress.finished && w.status.empty() && !interrupt_.interrupted()) finish(w);
      if (bar) total > 0 ? bar->update(scheduler.spent(), total) : bar->update(ended(), static_cast<int64_t>(works_.size()));
    }
    if (interrupt_.interrupted()) return;
    for (Work& w : works_)
      if (w.status.empty() && w.opened) finish(w);  // the budget or the time is spent
  }

  // One round of up to `measurements` for the workload; what it left behind.
  search::TaskProgress round(Work& w, int64_t measurements) {
    const BusyTimer busy(w.seconds);
    search::TaskProgress progress;
    try {
      search::TuningSession& session = open(w);
      progress.measured = session.advance(measurements, seconds_left());
      progress.best_ns = session.best_ns();
      progress.best_unmeasured_ns = session.best_unmeasured_ns();
      progress.finished = session.exhausted();
    } catch (const Error& e) {
      if (e.category() == ErrorCategory::Db || e.category() == ErrorCategory::Io) throw;
      fail(w, e);
      progress.measured = measurements;  // counted in full: the budget is never overspent
      progress.finished = true;
    }
    w.measured += progress.measured;
    return progress;
  }

  search::TuningSession& open(Work& w) {
    w.last_use = ++uses_;
    if (w.session) return *w.session;
    const Task& t = *w.task;
    if (!w.opened) {
      db_.remember_target(t.target);
      journal_.note("start", journal_key(t.key));
      w.opened = true;
    }
    if (!w.job) w.job = search::resolve(request_for(t, vm_), field_names(t.entry));
    search::TuneOptions o = w.job->options;
    o.stop = interrupt_.flag();
    w.session = std::make_unique<search::TuningSession>(t.entry.workload, t.target, *w.job->runners.search, db_, o,
                                                        std::move(w.records));
    w.records.clear();
    close_least_used();
    return *w.session;
  }

  void close_least_used() {
    std::vector<Work*> open_works;
    uint64_t held = 0;
    for (Work& w : works_) {
      if (!w.session) continue;
      open_works.push_back(&w);
      held += w.session->candidates_held();
    }
    std::sort(open_works.begin(), open_works.end(), [](const Work* a, const Work* b) { return a->last_use < b->last_use; });
    for (size_t i = 0; i + 1 < open_works.size() && (open_works.size() - i > kOpenSessions || held > kHeldCandidates); ++i) {
      held -= open_works[i]->session->candidates_held();
      close(*open_works[i]);
    }
  }

  void close(Work& w) {
    if (!w.session) return;
    w.records = w.session->records();
    w.session.reset();
  }

  void finish(Work& w) {
    const BusyTimer busy(w.seconds);
    try {
      const search::TuneResult r = open(w).finish();
      w.session.reset();
      journal_.note("done", journal_key(w.task->key));
      for (const auto& [status, n] : r.counts.failed) summary_.failed_measurements[status] += n;
      w.measured = r.counts.measured + r.counts.reused - w.prior;  // a re-opened session reuses this run's records
      if (r.has_default()) summary_.log_speedup_sum += std::log(r.speedup_vs_default), ++summary_.speedups;
      end(w, "tuned", json{{"speedup_vs_default", r.has_default() ? json(r.speedup_vs_default) : json(nullptr)},
                           {"provenance", r.best.measurement.provenance()},
                           {"best_" + r.best.measurement.time_key(), r.best.time_ns()},
                           {"resumed_from", w.prior}});
    } catch (const Error& e) {
      if (e.category() == ErrorCategory::Db || e.category() == ErrorCategory::Io) throw;
      fail(w, e);
    }
  }

  void fail(Work& w, const Error& e) {
    w.session.reset();
    std::cerr << "pto-tune: batch: " << w.task->entry.where << " " << w.task->key.workload << ": " << e.what() << "\n";
    end(w, "failed", json{{"error", e.what()}});
  }

  // Ends the workload's part in this run with `status`, into the summary.
  void end(Work& w, const std::string& status, json result = json::object()) {
    w.status = status;
    result["workload"] = w.task->key.workload;
    result["target"] = w.task->target.name;
    result["backend"] = w.task->backend;
    result["where"] = w.task->entry.where;
    result["status"] = status;
    if (status != "skipped" && status != "not_started") result["measured"] = w.measured;
    summary_.measurements += w.measured;
    ++summary_.workloads[status];
    w.result = std::move(result);
  }

  const po::variables_map& vm_;
  db::TuningDb& db_;
  const InterruptStop& interrupt_;
  Summary& summary_;
  const ClaimFile* claims_;
  const Journal journal_;
  const double limit_s_;
  const Clock::time_point start_;
  std::vector<Work> works_;
  uint64_t uses_ = 0;
};

// A fresh folder only this user can enter, for the workers' summaries: mkdtemp picks a
// name nobody could guess and plant a link at beforehand (a name made of the pid could
// be, and the summaries written through the links).
std::filesystem::path private_temp_dir() {
  std::string name = (std::filesystem::temp_directory_path() / "pto-batch-XXXXXX").string();
  if (!::mkdtemp(name.data()))
    fail(ErrorCategory::Io, "batch: cannot create a temporary folder '" + name + "': " + std::strerror(errno));
  return name;
}

// --jobs N: N copies of this executable, each with `--worker J/N --claims FILE --json`,
// their stdout into a file the parent reads back; SIGTERM to the parent is passed on,
// and its death (even by SIGKILL) kills them (PR_SET_PDEATHSIG).
void run_workers(const Args& args, int jobs, bool pin, const InterruptStop& interrupt, Summary& summary) {
  const std::filesystem::path dir = private_temp_dir();
  const std::string claims = (dir / "claims").string();
  std::vector<pid_t> pids;
  const long cores = std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
  const pid_t parent = ::getpid();
  for (int j = 0; j < jobs; ++j) {
    std::vector<std::string> words{"/proc/self/exe", "batch"};
    std::copy_if(args.begin(), args.end(), std::back_inserter(words), [](const std::string& w) { return w != "--json"; });
    for (const std::string& w :
         {std::string("--worker"), std::to_string(j) + "/" + std::to_string(jobs), std::string("--claims"), claims, std::string("--json")})
      words.push_back(w);
    const std::string out = (dir / (std::to_string(j) + ".json")).string();
    const pid_t pid = ::fork();
    if (pid < 0) fail(ErrorCategory::Internal, "batch: cannot start worker " + std::to_string(j));
    if (pid == 0) {
      // A worker dies with its parent: a batch killed by SIGKILL (which it cannot pass
      // on) leaves no worker measuring beside a rerun. A parent that died before the
      // request took effect is seen in getppid().
      if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(127);
      if (pin) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(j % cores, &set);
        ::sched_setaffinity(0, sizeof set, &set);
      }
      // A new file of our own, never one that is already there, nor through a link.
      const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
      if (fd < 0 || ::dup2(fd, STDOUT_FILENO) < 0) ::_exit(127);
      std::vector<char*> argv;
      for (std::string& w : words) argv.push_back(w.data());
      argv.push_back(nullptr);
      ::execv("/proc/self/exe", argv.data());
      ::_exit(127);
    }
    pids.push_back(pid);
  }
  bool passed_on = false;
  for (size_t left = pids.size(); left > 0;) {
    if (interrupt.interrupted() && !passed_on) {
      for (pid_t p : pids) ::kill(p, SIGTERM);
      passed_on = true;
    }
    int status = 0;
    const pid_t done = ::waitpid(-1, &status, WNOHANG);
    if (done > 0) --left;
    else if (done == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    else if (errno != EINTR) break;
  }
  for (int j = 0; j < jobs; ++j) {
    std::ifstream in(dir / (std::to_string(j) + ".json"));
    try {
      summary.add(json::parse(in));
    } catch (const json::exception&) {
      std::cerr << "pto-tune: batch: worker " << j << " ended without a summary\n";
      ++summary.workloads["worker_lost"];
    }
  }
  std::filesystem::remove_all(dir);
}

double cpu_seconds(int who) {
  rusage u{};
  ::getrusage(who, &u);
  const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
  return seconds(u.ru_utime) + seconds(u.ru_stime);
}

// How busy the batch kept its `jobs` workers: each one's seconds spent tuning and
// their sum over jobs x the wall time; the critical path, the workload that took
// longest on its own (the batch cannot end before it); the CPU time of this process
// and its workers, against the machine's cores.
json utilisation(const Summary& s, int jobs) {
  json critical = nullptr;
  for (const json& r : s.results)
    if (r.contains("seconds") && (critical.is_null() || r["seconds"].get<double>() > critical["seconds"].get<double>()))
      critical = {{"workload", r["workload"]}, {"where", r["where"]}, {"seconds", r["seconds"]}};
  const double wall = s.elapsed_s;
  return json{{"workers", {{"count", jobs},
                           {"busy_s", s.worker_busy_s},
                           {"busy_fraction", wall > 0 ? s.busy_s / (jobs * wall) : 0.0},
                           {"cpu_s", cpu_seconds(RUSAGE_SELF) + cpu_seconds(RUSAGE_CHILDREN)},
                           {"cores", std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN))}}},
              {"critical_path", critical}};
}

std::string utilisation_line(const json& u) {
  const json& w = u["workers"];
  std::string line = std::to_string(w["count"].get<int>()) + " busy " +
                     format_number("%.0f%%", 100 * w["busy_fraction"].get<double>()) + " of the time; " +
                     format_number("CPU %.1f s", w["cpu_s"].get<double>()) + " on " + std::to_string(w["cores"].get<long>()) +
                     " cores";
  if (const json& c = u["critical_path"]; !c.is_null())
    line += format_number("; critical path %.1f s", c["seconds"].get<double>()) + " (" + c["workload"].get<std::string>() + ")";
  return line;
}

void print_summary(const Summary& s, const json& utilisation, const std::string& db_path, bool interrupted) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& [status, n] : s.workloads) rows.push_back({status, std::to_string(n)});
  std::string failed;
  for (const auto& [status, n] : s.failed_measurements) failed += (failed.empty() ? "" : ", ") + status + " " + std::to_string(n);
  rows.push_back({"measurements", std::to_string(s.measurements) + (failed.empty() ? "" : " (failed: " + failed + ")")});
  rows.push_back({"speedup", format_number("%.3fx", s.geomean_speedup()) +
                                " geometric mean over the defaults of the tuned workloads"});
  rows.push_back({"elapsed", format_number("%.1f s", s.elapsed_s)});
  rows.push_back({"workers", utilisation_line(utilisation)});
  rows.push_back({"stored in", db_path});
  if (interrupted) rows.push_back({"stopped", "by a signal; everything measured is stored, run again to go on"});
  std::cout << "# batch summary\n";
  print_table(std::cout, {}, rows);
}

}  // namespace

int run_batch(const Args& args) {
  const bool has_file = !args.empty() && !args[0].starts_with("--");
  const Args rest = has_file ? Args(args.begin() + 1, args.end()) : args;
  po::options_description options;
  add_target_option(options, "host");
  options.add_options()
      ("backend", po::value<std::string>(), "cpu, sim, model, command or npu (with --measure-cmd) for every entry without its own; default: cpu on the host, sim on an NPU target")
      ("strategy", po::value<std::string>()->default_value("auto"), "the tuner's strategy for every workload")
      ("budget", po::value<int64_t>()->default_value(16), "measurements per workload without its own budget= (0: the strategy decides)")
      ("total-budget", po::value<int64_t>(), "measurements for the whole batch (all shards and workers), shared out in rounds by expected gain (overrides the per-workload budgets)")
      ("equal-split", po::bool_switch(), "with --total-budget: split it evenly instead (the baseline the shared budget is compared with)")
      ("time-limit", po::value<double>()->default_value(0), "wall-time limit for the whole batch in seconds, shared out in rounds by expected gain (each workload at most its budget); 0 = none")
      ("seed", po::value<uint64_t>()->default_value(1), "seed of each search")
      ("db", po::value<std::string>(), "tuning database file; default: $PTO_TUNE_DB, else ~/.cache/pto-tune/tune.db")
      ("retune", po::bool_switch(), "tune workloads the database already holds a fresh record for")
      ("strict", po::bool_switch(), "stop at the first bad entry instead of skipping it")
      ("jobs", po::value<int>()->default_value(1), "worker processes writing into the one database")
      ("pin", po::bool_switch(), "pin each worker to its own core (sched_setaffinity)")
      ("shard", po::value<std::string>(), "I/N: tune only shard I of N (default: from $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT or $JOB_COMPLETION_INDEX)")
      ("shard-count", po::value<uint64_t>(), "the N of $JOB_COMPLETION_INDEX (or $PTO_TUNE_SHARD_COUNT)")
      ("worker", po::value<std::string>(), "internal: J/N, the J-th of N local workers")
      ("claims", po::value<std::string>(), "internal: the file a worker claims its workloads from (cli/claim_file.h)")
      ("json", po::bool_switch(), "print the summary as JSON");
  add_measure_options(options);
  const auto vm = parse_command(
      rest, options,
      {"batch", "FILE [options]",
       "Tunes every workload of FILE (a JSON list of {op, shapes, dtype, attrs, target,\n"
       "backend, budget, weight}, or lines 'op shapes [dtype] [key=value ...]'; a dim may be\n"
       "a range LO..HI:pow2 or LO..HI:stepS) into the tuning database. Workloads already\n"
       "tuned under this version are skipped; a killed run goes on where it stopped.\n"
       "Ctrl-C or SIGTERM stops after the measurement in flight and prints the summary.\n"
       "See docs/offline_tuning.md for clusters (Slurm, Kubernetes) and the release export.",
       "pto-tune batch release.txt --target ascend910b1 --backend sim --jobs 2 --db release.db"});
  if (!vm) return 0;
  if (!has_file) usage_error("batch needs a FILE (see 'pto-tune batch --help')");
  const std::string file = args[0];
  const int jobs = (*vm)["jobs"].as<int>();
  // One worker per core, four times over at most: more only adds processes, not speed.
  const int most_jobs = 4 * static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (jobs < 1 || jobs > most_jobs)
    usage_error("--jobs: expected 1 to " + std::to_string(most_jobs) + " (4 per core here), got " + std::to_string(jobs));
  // The flags every workload's job shares, before the file is read: a bad one is the
  // run's usage error, not each entry's.
  const search::FieldNames flags = tune_flag_names();
  search::check_strategy((*vm)["strategy"].as<std::string>(), flags.strategy);
  search::check_budget((*vm)["budget"].as<int64_t>(), flags.budget);
  const double limit = (*vm)["time-limit"].as<double>();
  search::check_time_limit(limit, flags.time_limit);
  const bool equal_split = (*vm)["equal-split"].as<bool>();
  if (equal_split && !vm->count("total-budget")) usage_error("--equal-split splits a --total-budget; none was given");

  const auto start = Clock::now();
  Summary summary;
  const bool worker = vm->count("worker") > 0;
  std::vector<Task> tasks = resolve(file, search::read_batch_file(file), *vm, !worker, summary);
  const bool total_given = vm->count("total-budget") > 0;
  if (total_given) give_equal_shares(tasks, (*vm)["total-budget"].as<int64_t>());
  if (const auto shard = shard_of(*vm)) {
    std::erase_if(tasks, [&](const Task& t) { return !search::in_shard(t.key, *shard); });
  }
  tasks = longest_first(std::move(tasks));  // the long ones start at once (head comment)
  const std::string db_path = db::resolve_db_path(vm->count("db") ? std::optional((*vm)["db"].as<std::string>()) : std::nullopt);
  const std::unique_ptr<db::TuningDb> db = db::TuningDb::open(db_path);  // a bad file stops here, before any work

  InterruptStop interrupt;
  struct sigaction term {};
  term.sa_handler = on_sigterm;
  sigemptyset(&term.sa_mask);
  sigaction(SIGTERM, &term, nullptr);
  if (jobs > 1 && !worker) {
    bool cpu = false;
    for (const Task& t : tasks) cpu = cpu || t.backend == "cpu";
    if (cpu)
      std::cerr << "pto-tune: batch: warning: " << jobs << " workers time the cpu backend on shared cores: the "
                << "timings are noisy" << ((*vm)["pin"].as<bool>() ? "" : " (--pin gives each worker its own core)") << "\n";
    Args worker_args(args.begin(), args.end());
    run_workers(worker_args, jobs, (*vm)["pin"].as<bool>(), interrupt, summary);
  } else {
    const bool scheduled = total_given ? !equal_split : limit > 0;
    std::optional<ClaimFile> claims;
    if (worker && !scheduled && vm->count("claims")) claims.emplace((*vm)["claims"].as<std::string>());
    else if (worker) {  // a fixed share: every N-th workload, longest first
      const search::Shard w = search::parse_shard((*vm)["worker"].as<std::string>(), "--worker");
      std::vector<Task> mine;
      for (size_t i = w.index; i < tasks.size(); i += w.count) mine.push_back(tasks[i]);
      tasks = std::move(mine);
    }
    BatchRun(*vm, *db, interrupt, summary, claims ? &*claims : nullptr).run(tasks, scheduled, total_share(tasks), !worker);
    summary.worker_busy_s = {summary.busy_s};
  }
  summary.elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
  const json used = utilisation(summary, jobs);
  if ((*vm)["json"].as<bool>()) {
    json j = summary.to_json();
    if (!worker) j.update(used);
    j["db"] = db_path;
    j["interrupted"] = interrupt.interrupted();
    print_json(std::cout, j);
  } else {
    print_summary(summary, used, db_path, interrupt.interrupted());
  }
  if (!worker) interrupt.reraise_if_interrupted();
  return summary.workloads.contains("bad_entry") && summary.workloads.at("bad_entry") > 0 ? 2 : 0;
}

}  // namespace pto::cli
