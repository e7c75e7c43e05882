#include "batch/batch_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "batch/batch_journal.h"
#include "batch/task_scheduler.h"
#include "core/error.h"
#include "search/tune_request.h"
#include "search/tuner.h"
#include "search/tuning_session.h"

namespace pto::batch {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using RecordsByKey = std::map<search::RecordKey, std::vector<search::TuningRecord>>;

// The records stored for the tasks the journal names (a batch run on this store started
// them; `finished_too`: also those it finished), made by this pto-tune's versions, by
// key in the order measured: what a resumed run goes on from, and with a shared budget
// what it counts as spent.
RecordsByKey stored_records(search::TuningStore& store, const std::vector<BatchTask>& tasks,
                            const BatchJournal& journal, bool finished_too) {
  RecordsByKey by_key;
  for (const BatchTask& t : tasks) {
    if (!journal.unfinished(t.key) && !(finished_too && journal.started(t.key))) continue;
    for (search::TuningRecord& r : store.records_of(t.key))
      if (r.versions == search::Versions::current()) by_key[t.key].push_back(std::move(r));
  }
  return by_key;
}

// A workload a killed run left half-tuned is not tuned, whatever it holds.
bool tuned_already(search::TuningStore& store, const BatchTask& t, const BatchJournal& journal) {
  return !journal.unfinished(t.key) && search::is_tuned(store, t.key);
}

}  // namespace

class BatchRun::Impl {
 public:
  Impl(const BatchOptions& options, search::TuningStore& store, const std::string& journal, BatchSummary& summary,
       const ClaimFile* claims)
      : options_(options), store_(store), summary_(summary), claims_(claims), journal_(journal),
        start_(Clock::now()) {}

  void run(const std::vector<BatchTask>& tasks) {
    RecordsByKey stored;
    if (!options_.retune) stored = stored_records(store_, tasks, journal_, /*finished_too=*/options_.scheduled());
    int64_t total = 0;  // the tasks' shares of a total budget
    for (const BatchTask& t : tasks) {
      Work w;
      w.task = &t;
      if (!options_.retune) {
        w.records = std::move(stored[t.key]);
        w.skip = tuned_already(store_, t, journal_);
      }
      w.prior = static_cast<int64_t>(w.records.size());
      works_.push_back(std::move(w));
      total += t.share;
    }
    if (options_.scheduled()) run_scheduled(total);
    else run_in_order();
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
    const BatchTask* task = nullptr;
    std::vector<search::TuningRecord> records;  // while no session is open: every measurement so far
    int64_t prior = 0;                          // measured by an earlier run
    int64_t measured = 0;                       // measured by this run's rounds
    bool skip = false, opened = false;
    bool claimed = false;                       // this process's to tune (or to report)
    double seconds = 0;                         // wall time this process spent tuning it
    std::optional<search::ResolvedTune> job;    // its runners and options, made when first opened
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

  bool stopped() const { return options_.stop && options_.stop->load(); }
  void progress(int64_t done, int64_t planned) const {
    if (options_.progress) options_.progress(done, planned);
  }

  // A workload not yet started that another process sharing the store (another batch
  // run) has tuned since this run looked: not measured again.
  bool tuned_meanwhile(const Work& w) {
    return !options_.retune && w.prior == 0 && tuned_already(store_, *w.task, journal_);
  }

  // Out of time or stopped: no more rounds.
  bool over() const { return stopped() || (options_.time_limit_s > 0 && seconds_left() <= 0); }
  double seconds_left() const {
    return options_.time_limit_s > 0
               ? options_.time_limit_s - std::chrono::duration<double>(Clock::now() - start_).count()
               : 0;
  }

  // Each workload this process claims, to its own budget, until none is left. A
  // stopped run goes on claiming (and tunes nothing), so that every workload is
  // reported, as not started, by the worker that claimed it.
  void run_in_order() {
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
      if (w.status.empty() && !stopped()) finish(w);
      progress(static_cast<int64_t>(++taken), static_cast<int64_t>(works_.size()));
    }
  }

  void run_scheduled(int64_t total) {
    for (Work& w : works_) {
      w.claimed = true;
      if (w.skip) end(w, "skipped");
    }
    std::vector<ScheduledTask> specs;
    for (const Work& w : works_) specs.push_back({w.task->entry.weight, total > 0 ? 0 : w.task->budget, w.prior, w.skip});
    TaskScheduler scheduler(std::move(specs), {.total_budget = total});
    while (!over()) {
      const std::optional<Grant> grant = scheduler.next();
      if (!grant) break;
      Work& w = works_[grant->task];
      const TaskProgress progress_made = round(w, grant->measurements);
      scheduler.report(*grant, progress_made);
      if (progress_made.finished && w.status.empty() && !stopped()) finish(w);
      if (total > 0) progress(scheduler.spent(), total);
      else progress(ended(), static_cast<int64_t>(works_.size()));
    }
    if (stopped()) return;
    for (Work& w : works_)
      if (w.status.empty() && w.opened) finish(w);  // the budget or the time is spent
  }

  // One round of up to `measurements` for the workload; what it left behind.
  TaskProgress round(Work& w, int64_t measurements) {
    const BusyTimer busy(w.seconds);
    TaskProgress made;
    try {
      search::TuningSession& session = open(w);
      made.measured = session.advance(measurements, seconds_left());
      made.best_ns = session.best_ns();
      made.best_unmeasured_ns = session.best_unmeasured_ns();
      made.finished = session.exhausted();
    } catch (const Error& e) {
      if (e.category() == ErrorCategory::Db || e.category() == ErrorCategory::Io) throw;
      fail(w, e);
      made.measured = measurements;  // counted in full: the budget is never overspent
      made.finished = true;
    }
    w.measured += made.measured;
    return made;
  }

  search::TuningSession& open(Work& w) {
    w.last_use = ++uses_;
    if (w.session) return *w.session;
    const BatchTask& t = *w.task;
    if (!w.opened) {
      if (options_.on_start) options_.on_start(t);
      journal_.note_start(t.key);
      w.opened = true;
    }
    if (!w.job) w.job = search::resolve(tune_request(t, options_), field_names(t.entry, options_));
    search::TuneOptions o = w.job->options;
    o.stop = options_.stop;
    w.session = std::make_unique<search::TuningSession>(t.entry.workload, t.target, *w.job->runners.search, store_, o,
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
      journal_.note_done(w.task->key);
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
    if (options_.warn) options_.warn(w.task->entry.where + " " + w.task->key.workload + ": " + e.what());
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

  const BatchOptions& options_;
  search::TuningStore& store_;
  BatchSummary& summary_;
  const ClaimFile* claims_;
  const BatchJournal journal_;
  const Clock::time_point start_;
  std::vector<Work> works_;
  uint64_t uses_ = 0;
};

BatchRun::BatchRun(const BatchOptions& options, search::TuningStore& store, const std::string& journal,
                   BatchSummary& summary, const ClaimFile* claims)
    : impl_(std::make_unique<Impl>(options, store, journal, summary, claims)) {}

BatchRun::~BatchRun() = default;

void BatchRun::run(const std::vector<BatchTask>& tasks) { impl_->run(tasks); }

}  // namespace pto::batch
