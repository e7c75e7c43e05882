// `pto-tune batch FILE`: offline tuning of a list of workloads before a release
// (batch/batch_file.h says what FILE holds). Each workload is tuned through a
// search::TuningSession into the tuning database by the batch engine
// (batch/batch_run.h); the run ends with a summary (tuned, skipped, failed, total time,
// geometric-mean speedup over the defaults). This file turns the flags into
// batch::BatchOptions, starts the worker processes, handles the signals and prints.
//
// Budgets. Without --total-budget or --time-limit each workload is tuned to its own
// budget, in file order. --total-budget N (or --time-limit alone) is shared out by a
// batch::TaskScheduler: a warm-up round for every workload, then rounds by expected
// gain (batch/task_scheduler.h); --equal-split splits N evenly instead. N is for the
// whole file: every task carries its equal share of N, and a shard or worker spends
// the sum of its tasks' shares.
//
// Resume. A workload the database already holds a usable record for, made under this
// pto-tune's compiler and cost-model versions on the same target fingerprint and
// backend, is skipped (--retune tunes it again). The tuner commits every measurement
// as it comes, so a killed run loses at most the batch in flight; a journal beside
// the database (DB.batch-journal) notes each workload started and finished. A
// workload a killed run left half-tuned goes on from its stored records, and what the
// journal's workloads have stored counts against a shared budget (batch/batch_journal.h).
// SIGINT and SIGTERM stop after the measurement in flight and print the summary.
//
// Scale. --jobs N runs N worker processes (this executable, `--worker J/N`) over the
// same database; --shard I/N (or the Slurm / Kubernetes array index, batch/shard.h)
// takes a stable share for one machine of a cluster, whose databases `pto-tune db
// merge` combines. A worker dies with its parent, so a batch killed even by SIGKILL
// leaves none measuring beside a rerun, which goes on from what was stored and measures
// nothing twice.
//
// Every core busy. The workloads go out longest first (batch/tune_cost.h), and each
// worker claims the next one when it is done with its last (batch/claim_file.h), so a
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
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include <nlohmann/json.hpp>

#include "batch/batch_file.h"
#include "batch/batch_journal.h"
#include "batch/batch_run.h"
#include "batch/batch_task.h"
#include "batch/claim_file.h"
#include "batch/shard.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/interrupt.h"
#include "cli/progress.h"
#include "core/error.h"
#include "core/format_number.h"
#include "db/tuning_db.h"

namespace pto::cli {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// SIGTERM (a cluster's scheduler ending a job) is handled as Ctrl-C is.
extern "C" void on_sigterm(int) { raise(SIGINT); }

// The run's options from the flags. The flags every tuning command shares are read as
// `tune` reads them (tune_request_from), so the two commands cannot read them apart; the
// workload and target of that request are placeholders, each task has its own.
batch::BatchOptions batch_options_from(const po::variables_map& vm) {
  const search::TuneRequest flags = tune_request_from(vm, Workload{}, Target{});
  batch::BatchOptions o;
  o.target = vm["target"].as<std::string>();
  o.backend = flags.backend;
  o.strategy = flags.strategy;
  o.budget = flags.budget;
  o.seed = flags.seed;
  o.runner = flags.runner;
  if (vm.count("total-budget")) o.total_budget = vm["total-budget"].as<int64_t>();
  o.equal_split = vm["equal-split"].as<bool>();
  o.time_limit_s = vm["time-limit"].as<double>();
  o.retune = vm["retune"].as<bool>();
  o.strict = vm["strict"].as<bool>();
  o.names = tune_flag_names();
  o.warn = [](const std::string& message) { std::cerr << "pto-tune: batch: " << message << "\n"; };
  return o;
}

std::optional<batch::Shard> shard_of(const po::variables_map& vm) {
  const std::optional<uint64_t> count =
      vm.count("shard-count") ? std::optional<uint64_t>(vm["shard-count"].as<uint64_t>()) : std::nullopt;
  if (vm.count("shard")) return batch::parse_shard(vm["shard"].as<std::string>());
  return batch::shard_from_env(count);
}

// A worker's fixed share with a shared budget: every N-th workload, longest first.
std::vector<batch::BatchTask> worker_share(const std::vector<batch::BatchTask>& tasks, const std::string& worker) {
  const batch::Shard w = batch::parse_shard(worker, "--worker");
  std::vector<batch::BatchTask> mine;
  for (size_t i = w.index; i < tasks.size(); i += w.count) mine.push_back(tasks[i]);
  return mine;
}

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
void run_workers(const Args& args, int jobs, bool pin, const InterruptStop& interrupt, batch::BatchSummary& summary) {
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

void print_summary(const batch::BatchSummary& s, const json& utilisation, const std::string& db_path, bool interrupted) {
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
      ("claims", po::value<std::string>(), "internal: the file a worker claims its workloads from (batch/claim_file.h)")
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
  batch::BatchOptions run_options = batch_options_from(*vm);
  batch::check(run_options);  // before the file is read: a bad flag is the run's usage error, not each entry's
  if (run_options.equal_split && !run_options.total_budget) usage_error("--equal-split splits a --total-budget; none was given");

  const auto start = Clock::now();
  batch::BatchSummary summary;
  const bool worker = vm->count("worker") > 0;
  std::vector<batch::BatchTask> tasks =
      batch::resolve_tasks(file, batch::read_batch_file(file), run_options, !worker, summary);
  tasks = batch::plan_tasks(std::move(tasks), run_options, shard_of(*vm));  // the long ones start at once (head comment)
  const std::string db_path = db::resolve_db_path(vm->count("db") ? std::optional((*vm)["db"].as<std::string>()) : std::nullopt);
  const std::unique_ptr<db::TuningDb> db = db::TuningDb::open(db_path);  // a bad file stops here, before any work

  InterruptStop interrupt;
  struct sigaction term {};
  term.sa_handler = on_sigterm;
  sigemptyset(&term.sa_mask);
  sigaction(SIGTERM, &term, nullptr);
  if (jobs > 1 && !worker) {
    bool cpu = false;
    for (const batch::BatchTask& t : tasks) cpu = cpu || t.backend == "cpu";
    if (cpu)
      std::cerr << "pto-tune: batch: warning: " << jobs << " workers time the cpu backend on shared cores: the "
                << "timings are noisy" << ((*vm)["pin"].as<bool>() ? "" : " (--pin gives each worker its own core)") << "\n";
    Args worker_args(args.begin(), args.end());
    run_workers(worker_args, jobs, (*vm)["pin"].as<bool>(), interrupt, summary);
  } else {
    std::optional<batch::ClaimFile> claims;
    if (worker && !run_options.scheduled() && vm->count("claims")) claims.emplace((*vm)["claims"].as<std::string>());
    else if (worker) tasks = worker_share(tasks, (*vm)["worker"].as<std::string>());
    run_options.stop = interrupt.flag();
    run_options.on_start = [&db](const batch::BatchTask& t) { db->remember_target(t.target); };
    ProgressBar bar("batch");
    if (!worker) run_options.progress = [&bar](int64_t done, int64_t planned) { bar.update(done, planned); };
    batch::BatchRun(run_options, *db, batch::journal_path(db->location()), summary, claims ? &*claims : nullptr).run(tasks);
    bar.finish();
    summary.worker_busy_s = {summary.busy_s};
  }
  summary.elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
  const json used = batch::utilisation(summary, jobs);
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
  return summary.count("bad_entry") > 0 ? 2 : 0;
}

}  // namespace pto::cli
